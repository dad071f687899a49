//! What `osmeter paper NAME` measures: exactly the probes and parameter points the paper's
//! comparisons need, and the catalogue `osmeter paper` lists.

use super::data::Paper;
use super::spec::{spec, Today};
use super::PaperId;
use crate::probes::{ProbeDef, Scale};
use crate::results::model::{Params, Run, Status};
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// The parameter points of `probe` that the paper's figures need. At the quick scale the quick
/// variants are used where they hold the paper's point, the full ones where only they do.
pub fn variants(
    paper: PaperId,
    table: Option<&str>,
    probe: &ProbeDef,
    scale: Scale,
) -> Vec<Params> {
    let full = (probe.variants)(Scale::Full);
    let base = (probe.variants)(scale);
    let mut out: Vec<Params> = Vec::new();
    for f in spec(paper)
        .figures_of(table)
        .iter()
        .filter(|f| f.probe == probe.id)
    {
        let mut chosen: Vec<&Params> = base.iter().filter(|v| f.wants(v)).collect();
        if chosen.is_empty() {
            chosen = full.iter().filter(|v| f.wants(v)).collect();
        }
        for v in chosen {
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
    }
    out
}

/// How many figures failed when none was measured (`osmeter paper` then exits 1, as `run` does).
pub fn nothing_measured(run: &Run) -> Option<usize> {
    let failed = run
        .measurements
        .iter()
        .filter(|m| m.status == Status::Failed)
        .count();
    let measured = run.measurements.iter().any(|m| m.status == Status::Ok);
    (failed > 0 && !measured).then_some(failed)
}

/// Checks that stored runs can stand for today's side: at least one of the paper's figures must be
/// there. Returns the labels of the figures that are missing.
pub fn check_runs(paper: PaperId, table: Option<&str>, runs: &[Run]) -> Result<Vec<String>> {
    let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    let kinds: Vec<String> = runs
        .iter()
        .map(|r| format!("{} is a {} run", r.id, r.kind()))
        .collect();
    let s = spec(paper);
    let wanted = |present: bool, what: &str| -> Result<Vec<String>> {
        if present {
            return Ok(Vec::new());
        }
        Err(crate::usage!(
            "run {} holds no {what}, which is what {} is set beside ({}); {}",
            ids.join(", "),
            paper.name(),
            kinds.join("; "),
            s.elsewhere.unwrap_or_default()
        ))
    };
    match s.today() {
        Today::Memsim => {
            return wanted(
                runs.iter().any(|r| {
                    r.sections
                        .get::<crate::memsim::document::MemsimDoc>()
                        .is_some()
                }),
                "memsim document",
            )
        }
        Today::Latency => {
            return wanted(
                runs.iter().any(|r| {
                    r.sections
                        .get::<crate::latency::document::LatencyDoc>()
                        .is_some()
                }),
                "latency document",
            )
        }
        Today::Probes => {}
    }
    let figures = s.figures_of(table);
    if figures.is_empty() {
        return Err(crate::usage!(
            "--run: {}{} has nothing of today's to set beside it; run `osmeter paper {}` without \
             --run to see its tables",
            paper.name(),
            table.map(|t| format!(" table {t}")).unwrap_or_default(),
            paper.key()
        ));
    }
    let missing: Vec<String> = figures
        .iter()
        .filter(|f| f.find(runs).is_none())
        .map(|f| f.label())
        .collect();
    if missing.len() == figures.len() {
        return Err(crate::usage!(
            "run {} has none of the figures {} compares ({}); {}. Measure them with `osmeter \
             paper {}`, or `osmeter run {}` and pass that run's id",
            ids.join(", "),
            paper.name(),
            s.probes_of(table).join(", "),
            kinds.join("; "),
            paper.key(),
            s.probes_of(table).join(" ")
        ));
    }
    Ok(missing)
}

/// One line of `osmeter paper` (an element of `osmeter paper --json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Listing {
    pub paper: PaperId,
    pub name: String,
    pub title: String,
    pub tables: usize,
    pub values: usize,
    /// The osmeter probes `osmeter paper NAME` runs.
    pub probes: Vec<String>,
    /// Where today's side comes from when it is not those probes.
    pub elsewhere: Option<String>,
}

pub fn catalogue() -> Result<Vec<Listing>> {
    PaperId::ALL
        .iter()
        .map(|&id| {
            let p = Paper::load(id)?;
            Ok(Listing {
                paper: id,
                name: id.name().to_string(),
                title: id.title().to_string(),
                tables: p.tables.len(),
                values: p.cells()?.len(),
                probes: spec(id).probes().into_iter().map(String::from).collect(),
                elsewhere: spec(id).elsewhere.map(String::from),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_papers_points_are_measured() {
        let select = crate::probes::find("select.select").unwrap();
        let v = variants(PaperId::Ousterhout89, None, select, Scale::Full);
        // Ousterhout's three configurations, not the larger sets of the full suite.
        assert_eq!(v.len(), 3, "{v:?}");
        let create = crate::probes::find("fs.create_delete").unwrap();
        // 0, 10 and 100 KB, with and without fsync; 10 KB is only among the full variants, so
        // the quick scale still measures it.
        assert_eq!(
            variants(PaperId::Ousterhout89, None, create, Scale::Full).len(),
            6
        );
        assert_eq!(
            variants(PaperId::Ousterhout89, None, create, Scale::Quick).len(),
            6
        );
        let read = crate::probes::find("fs.read_cached").unwrap();
        assert!(
            variants(PaperId::Ousterhout89, None, read, Scale::Quick).len()
                < variants(PaperId::Ousterhout89, None, read, Scale::Full).len()
        );
        let unrelated = crate::probes::find("net.tcp_connect").unwrap();
        assert!(variants(PaperId::Ousterhout89, None, unrelated, Scale::Full).is_empty());
    }

    #[test]
    fn a_run_without_the_figures_is_refused_with_what_to_do() {
        let run = crate::results::fixtures::empty_run();
        let err = check_runs(PaperId::Ousterhout89, None, &[run]).unwrap_err();
        assert!(crate::error::exit_code(&err) == crate::error::EXIT_USAGE);
        let text = err.to_string();
        assert!(
            text.contains("none of the figures") && text.contains("osmeter paper ousterhout89"),
            "{text}"
        );
        let err = check_runs(PaperId::CotaRobles99, None, &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("osmeter latency"), "{err}");
    }

    #[test]
    fn nothing_measured_only_when_every_figure_failed() {
        use crate::results::model::Measurement;
        let mut run = crate::results::fixtures::empty_run();
        assert_eq!(nothing_measured(&run), None, "an empty run failed nothing");
        let with = |status: Status| Measurement {
            status,
            ..crate::papers::fixtures::measured(
                "syscall.null",
                crate::params![],
                crate::results::model::Unit::Nanoseconds,
                100.0,
            )
        };
        run.measurements = vec![with(Status::Failed), with(Status::Failed)];
        assert_eq!(nothing_measured(&run), Some(2));
        run.measurements.push(with(Status::Ok));
        assert_eq!(nothing_measured(&run), None);
    }

    #[test]
    fn every_paper_is_listed() {
        let c = catalogue().unwrap();
        assert_eq!(c.len(), 4);
        assert!(c.iter().all(|l| l.values > 20));
        assert!(c[0].probes.iter().any(|p| p == "syscall.null"));
    }
}
