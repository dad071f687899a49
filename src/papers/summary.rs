//! How each primitive a paper measured fared against the processor since the paper: Ousterhout's
//! question, asked of every paper machine with a MIPS rating at once. One primitive is one compared
//! column of a table (today's first row); its speed-up relative to the CPU is summarised by the
//! geometric mean over the paper's rated machines, with the smallest and largest beside it.
//!
//! Only OS primitives (probes whose role is `os`) count in the OS mean, exactly as compare counts
//! only them in its OS geometric mean: hardware figures (memory copy) say how the memory system kept
//! up, and applications (the Andrew benchmark, role `other`) mostly how the compiler's code did, not
//! the operating system. Both are summarised and plotted, marked, and left out of the mean.

use super::data::Paper;
use super::spec::{Cells, Now, Spec};
use super::view::CellPair;
use crate::results::figure::Role;
use crate::stats::geomean::geomean;
use serde::{Deserialize, Serialize};

/// One primitive against the processor, over the paper's rated machines.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct PrimitiveSummary {
    pub table: String,
    pub column: String,
    /// A short name for plots and lists ("select 10 full").
    pub name: String,
    /// The osmeter probe today's figure comes from.
    pub probe: String,
    pub figure: String,
    /// What the probe measures; only `os` counts in the OS mean.
    pub role: Role,
    pub speedup_min: f64,
    pub speedup_max: f64,
    pub speedup_geomean: f64,
    pub relative_min: f64,
    pub relative_max: f64,
    pub relative_geomean: f64,
    /// Paper rows against which the primitive gained less than the CPU, of `rows`.
    pub rows_behind: usize,
    pub rows: usize,
}

/// The OS primitives' speed-up relative to the CPU, as one number: the geometric mean of their
/// per-primitive geometric means, hardware figures left out.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct OsMean {
    pub relative_geomean: f64,
    pub primitives: usize,
    /// The primitives left out because they are not OS primitives, each with what it is
    /// ("bcopy cached (hardware)").
    pub left_out: Vec<String>,
}

impl PrimitiveSummary {
    /// Whether the primitive counts in the OS mean (its probe's role is `os`, as in compare).
    pub fn counts_as_os(&self) -> bool {
        self.role == Role::Os
    }

    /// The name, marked with what it is when it is not an OS primitive.
    pub fn marked_name(&self) -> String {
        match self.role {
            Role::Os => self.name.clone(),
            Role::Hardware => format!("{} (hardware)", self.name),
            Role::CpuReference => format!("{} (CPU reference)", self.name),
            Role::Other => format!("{} (application)", self.name),
        }
    }
}

/// The table's short name and, when more than one of its columns is compared, the column's label.
fn primitive_name(paper: &Paper, spec: &Spec, table: &str, column: &str) -> String {
    let Some(t) = paper.table(table) else {
        return format!("{table} {column}");
    };
    let short = t.short.clone().unwrap_or_else(|| t.title.clone());
    let compared = spec
        .comparisons
        .iter()
        .filter(|c| c.table == table && matches!(c.cells, Cells::Column(_)))
        .filter(|c| matches!(c.now, Now::Figure(_) | Now::Sum(_)))
        .filter_map(|c| match c.cells {
            Cells::Column(col) => Some(col),
            _ => None,
        })
        .fold(Vec::<&str>::new(), |mut acc, c| {
            if !acc.contains(&c) {
                acc.push(c);
            }
            acc
        });
    let label = t.column(column).map(|(_, c)| c.label.as_str());
    match label {
        Some(l) if compared.len() > 1 => format!("{short} {}", l.trim_matches('"')),
        _ => short,
    }
}

/// The relative speed-ups of each compared column, for the first of today's rows of its table: a
/// figure, or a sum of figures (Andrew's copy, the phases before the compile).
pub fn summarise(paper: &Paper, spec: &Spec, pairs: &[CellPair]) -> Vec<PrimitiveSummary> {
    let mut out: Vec<PrimitiveSummary> = Vec::new();
    for c in spec.comparisons {
        let (column, probe) = match (c.cells, c.now) {
            (Cells::Column(column), Now::Figure(probe)) => (column, probe),
            (Cells::Column(column), Now::Sum([probe, ..])) => (column, *probe),
            _ => continue,
        };
        let primary = spec
            .comparisons
            .iter()
            .find(|o| o.table == c.table)
            .map(|o| o.label);
        if primary != Some(c.label) {
            continue;
        }
        let rel: Vec<(f64, f64, &CellPair)> = pairs
            .iter()
            .filter(|p| p.table == c.table && p.column == column && p.now_label == c.label)
            .filter_map(|p| Some((p.speedup?, p.speedup_relative_to_cpu?, p)))
            .collect();
        let Some((_, _, first)) = rel.first() else {
            continue;
        };
        let min =
            |f: fn(&(f64, f64, &CellPair)) -> f64| rel.iter().map(f).fold(f64::INFINITY, f64::min);
        let max = |f: fn(&(f64, f64, &CellPair)) -> f64| rel.iter().map(f).fold(0.0, f64::max);
        let (Some(speedup_geomean), Some(relative_geomean)) = (
            geomean(rel.iter().map(|r| r.0)),
            geomean(rel.iter().map(|r| r.1)),
        ) else {
            continue;
        };
        out.push(PrimitiveSummary {
            table: c.table.to_string(),
            column: column.to_string(),
            name: primitive_name(paper, spec, c.table, column),
            probe: probe.probe.to_string(),
            figure: first.now_figure.clone().unwrap_or_default(),
            role: crate::probes::find(probe.probe).map_or(Role::Os, |p| p.role()),
            speedup_min: min(|r| r.0),
            speedup_max: max(|r| r.0),
            speedup_geomean,
            relative_min: min(|r| r.1),
            relative_max: max(|r| r.1),
            relative_geomean,
            rows_behind: rel.iter().filter(|r| r.1 < 1.0).count(),
            rows: rel.len(),
        });
    }
    out
}

/// The OS mean of the primitives, `None` when no OS primitive has a figure.
pub fn os_mean(primitives: &[PrimitiveSummary]) -> Option<OsMean> {
    let os: Vec<&PrimitiveSummary> = primitives.iter().filter(|p| p.counts_as_os()).collect();
    Some(OsMean {
        relative_geomean: geomean(os.iter().map(|p| p.relative_geomean))?,
        primitives: os.len(),
        left_out: primitives
            .iter()
            .filter(|p| !p.counts_as_os())
            .map(PrimitiveSummary::marked_name)
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn primitive(name: &str, role: Role, relative: f64) -> PrimitiveSummary {
        PrimitiveSummary {
            table: "2".into(),
            column: "time".into(),
            name: name.into(),
            probe: match role {
                Role::Hardware => "memory.copy",
                Role::Other => "app.andrew",
                _ => "syscall.null",
            }
            .into(),
            figure: String::new(),
            role,
            speedup_min: 1.0,
            speedup_max: 1.0,
            speedup_geomean: 1.0,
            relative_min: relative,
            relative_max: relative,
            relative_geomean: relative,
            rows_behind: 0,
            rows: 1,
        }
    }

    #[test]
    fn hardware_and_applications_stay_out_of_the_os_mean() {
        let ps = [
            primitive("getpid", Role::Os, 0.25),
            primitive("bcopy", Role::Hardware, 100.0),
            primitive("cswitch", Role::Os, 1.0),
            primitive("Andrew total", Role::Other, 0.01),
        ];
        let m = os_mean(&ps).unwrap();
        assert_eq!(m.relative_geomean, 0.5);
        assert_eq!(m.primitives, 2);
        assert_eq!(
            m.left_out,
            vec![
                "bcopy (hardware)".to_string(),
                "Andrew total (application)".to_string()
            ]
        );
        assert_eq!(os_mean(&ps[1..2]), None, "hardware alone gives no OS mean");
    }

    /// Papers and compare summarise ratios by one geometric mean with one rule: the same speed-ups
    /// give the same mean, and a value that is no ratio leaves the papers' summary without one
    /// (compare never reaches the mean with one: it keeps only figures with positive values).
    #[test]
    fn papers_and_compare_give_the_same_mean_of_the_same_ratios() {
        use crate::results::compare::{compare, CompareConfig};
        use crate::results::fixtures::empty_run;
        use crate::results::model::{Measurement, Params, Status};
        use crate::units::Unit;
        // Times of three OS probes before and after: speed-ups 1.25, 1.6 and 0.8.
        let probes = ["syscall.null", "fs.read", "signal.deliver"];
        let run = |id: &str, times: [f64; 3]| {
            let mut r = empty_run();
            r.id = id.into();
            r.measurements = probes
                .iter()
                .zip(times)
                .map(|(p, t)| {
                    let mut m = Measurement::not_measured(
                        p,
                        Params::new(),
                        Unit::Nanoseconds,
                        Status::Ok,
                        String::new(),
                    );
                    m.reason = None;
                    m.samples = vec![t; 5];
                    m.summary = Some(crate::stats::summary::summarize(&m.samples));
                    m
                })
                .collect();
            r
        };
        let (a, b) = (
            run("a", [250.0, 160.0, 100.0]),
            run("b", [200.0, 100.0, 125.0]),
        );
        let c = compare(&[&a], &[&b], &CompareConfig::default()).unwrap();
        let speedups: Vec<f64> = c.figures.iter().map(|f| f.speedup).collect();
        assert_eq!(speedups.len(), 3);
        let primitives: Vec<PrimitiveSummary> = speedups
            .iter()
            .map(|&r| primitive("p", Role::Os, r))
            .collect();
        let papers = os_mean(&primitives).unwrap().relative_geomean;
        assert!(
            (papers - (1.25f64 * 1.6 * 0.8).cbrt()).abs() < 1e-12,
            "{papers}"
        );
        assert_eq!(c.geomean, Some(papers));
        assert_eq!(c.os_speedup, Some(papers));
        let mut failed = primitives;
        failed.push(primitive("q", Role::Os, 0.0));
        assert_eq!(os_mean(&failed), None);
    }

    /// Today's getpid against every rated machine of Table 2, worked out from the published values
    /// with Ousterhout's own formula: (t_paper / t_now) / (mips_now / mips_paper).
    #[test]
    fn getpid_against_the_cpu_known_answer() {
        use crate::papers::data::Paper;
        use crate::papers::spec::spec;
        use crate::papers::view::{build, Here};
        use crate::papers::PaperId;
        // 10,000 MIPS today; getpid in 100 ns; memcpy at 10 GB/s.
        let run = crate::papers::fixtures::ousterhout_run(100.0, 100.0, 1e10);
        let paper = Paper::load(PaperId::Ousterhout89).unwrap();
        let doc = build(
            &paper,
            spec(PaperId::Ousterhout89),
            &[run],
            &Here::default(),
        )
        .unwrap();
        let expected: Vec<f64> = paper
            .cells()
            .unwrap()
            .iter()
            .filter(|c| c.table == "2" && c.column == "time")
            .filter_map(|c| {
                Some((c.value.central() * 1000.0 / 100.0) / (10_000.0 / c.machine.mips?))
            })
            .collect();
        assert_eq!(expected.len(), 9, "Table 2 has nine rated rows");
        let getpid = doc
            .relative_to_cpu
            .iter()
            .find(|p| p.name == "getpid")
            .unwrap();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b;
        assert!(close(
            getpid.relative_geomean,
            geomean(expected.iter().copied()).unwrap()
        ));
        assert!(close(
            getpid.relative_min,
            expected.iter().copied().fold(f64::INFINITY, f64::min)
        ));
        // The M2000 (20 MIPS, 18 us): 180 times faster, the CPU 500 times: 0.36.
        assert!(expected.iter().any(|r| close(*r, 0.36)));
        assert_eq!(getpid.rows, 9);
        assert!(getpid.counts_as_os());
        // memcpy is a hardware figure: summarised, marked, and out of the OS mean.
        let copy = doc
            .relative_to_cpu
            .iter()
            .find(|p| p.probe == "memory.copy")
            .unwrap();
        assert_eq!(copy.role, Role::Hardware);
        assert_eq!(copy.name, "bcopy cached");
        let os = doc.os_relative_to_cpu.as_ref().unwrap();
        assert_eq!(os.primitives, 1);
        assert!(close(os.relative_geomean, getpid.relative_geomean));
        assert_eq!(os.left_out, vec!["bcopy cached (hardware)".to_string()]);
    }

    proptest::proptest! {
        /// However fast the hardware figures are, the OS mean is the OS primitives' alone.
        #[test]
        fn the_os_mean_ignores_hardware_values(
            os in proptest::collection::vec(0.01f64..100.0, 1..6),
            hw in proptest::collection::vec(0.01f64..100.0, 0..4),
        ) {
            let mut ps: Vec<PrimitiveSummary> =
                os.iter().map(|r| primitive("os", Role::Os, *r)).collect();
            let alone = os_mean(&ps).unwrap().relative_geomean;
            ps.extend(hw.iter().map(|r| primitive("hw", Role::Hardware, *r)));
            ps.extend(hw.iter().map(|r| primitive("app", Role::Other, *r)));
            let m = os_mean(&ps).unwrap();
            proptest::prop_assert!((m.relative_geomean - alone).abs() <= 1e-12 * alone);
            proptest::prop_assert_eq!(m.left_out.len(), 2 * hw.len());
            let lo = os.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = os.iter().copied().fold(0.0, f64::max);
            proptest::prop_assert!(m.relative_geomean >= lo * (1.0 - 1e-12));
            proptest::prop_assert!(m.relative_geomean <= hi * (1.0 + 1e-12));
        }
    }
}
