//! `osmeter paper [NAME]`: the seed papers, and one paper's tables with today's figures beside them,
//! measured now or taken from stored runs.

use crate::cli::{JsonArg, PaperArgs};
use crate::latency::session::Verdict;
use crate::papers::data::Paper;
use crate::papers::view::{self, Here};
use crate::papers::{latency_side, plan, render, spec, PaperId};
use crate::results::model::Run;
use crate::results::store::{resolve_id, Location};
use anyhow::Result;
use std::fmt::Write;

pub fn paper(args: &PaperArgs) -> Result<i32> {
    let Some(id) = args.name else {
        return list(args.output);
    };
    let paper = Paper::load(id)?;
    if !args.guests.is_empty() {
        return super::paper_guest::paper(id, &paper, args);
    }
    if let Some(t) = &args.table {
        if paper.table(t).is_none() {
            let ids: Vec<&str> = paper.tables.iter().map(|t| t.id.as_str()).collect();
            return Err(crate::usage!(
                "--table {t}: {} has no table {t:?}; its tables are {}",
                id.name(),
                ids.join(", ")
            ));
        }
    }
    latency_side::check_flags(id, &crate::config::paper::latency_request(args))?;
    let measures_probes = args.runs.is_empty()
        && !latency_side::wanted(id, args.table.as_deref())
        && !traced(id, args);
    let given = probe_flags(args);
    if !measures_probes && args.runs.is_empty() && !given.is_empty() {
        return Err(crate::usage!(
            "{} set how probes are sampled, and {}{} measures no probes: {}",
            given.join(", "),
            id.name(),
            args.table
                .as_deref()
                .map(|t| format!(" table {t}"))
                .unwrap_or_default(),
            match spec::spec(id).today() {
                spec::Today::Latency => {
                    "its today's side is a latency run, set by --duration, --load, --cpu and --dir"
                }
                spec::Today::Memsim => {
                    "its today's side is a traced memsim run, set by --workload, --install and --dir"
                }
                spec::Today::Probes => "that table has nothing of today's beside it",
            }
        ));
    }
    if args.workload.is_some() && !traced(id, args) {
        return Err(crate::usage!(
            "--workload applies only to chen-bershad93 (the tables memsim fills), whose today's \
             side is a full-system trace of that workload"
        ));
    }
    let mut failed = None;
    let mut code = crate::error::EXIT_OK;
    let (runs, interrupted) = if !args.runs.is_empty() {
        let runs = load(args)?;
        for m in plan::check_runs(id, args.table.as_deref(), &runs)? {
            eprintln!("osmeter: warning: {m} is not in the given runs; its cells stay empty");
        }
        (runs, false)
    } else if latency_side::wanted(id, args.table.as_deref()) {
        let (run, verdict) = measure_latency(id, args)?;
        code = super::latency::exit_code(verdict);
        (vec![run], verdict == Verdict::Interrupted)
    } else if traced(id, args) {
        match super::paper_memsim::measure(args, id.key())? {
            super::paper_memsim::Outcome::Kept(run) => (vec![*run], false),
            super::paper_memsim::Outcome::CaptureFailed(code) => return Ok(code),
        }
    } else if spec::spec(id).probes_of(args.table.as_deref()).is_empty() {
        (Vec::new(), false)
    } else {
        let config = crate::config::paper::measuring_config(id, args)?;
        let run = crate::run::measure(&config)?;
        config.keeper.save(&run)?;
        let interrupted = run.interrupted;
        failed = plan::nothing_measured(&run);
        (vec![run], interrupted)
    };
    let doc = view::build(&paper, spec::spec(id), &runs, &Here::detect())?;
    if args.output.json {
        super::emit_json(&doc)?;
    } else {
        super::emit(&render::render(&paper, &doc, args.table.as_deref()))?;
        // Today's side measured on a busy machine is not today's machine quiet: said once.
        for machine in runs
            .iter()
            .filter_map(|r| r.machine.as_ref().filter(|m| m.busy()))
        {
            super::emit(&format!("\n{}", machine.text()))?;
        }
    }
    if interrupted {
        return Ok(crate::error::EXIT_INTERRUPTED);
    }
    if let Some(failed) = failed {
        eprintln!(
            "osmeter: every figure failed ({failed} failed, none measured); the reasons are in \
             `osmeter show {}`",
            runs.first().map(|r| r.id.as_str()).unwrap_or("latest")
        );
        return Ok(crate::error::EXIT_RUNTIME);
    }
    Ok(code)
}

/// The sampling flags of `run` given on the command line, which only papers measured by probes
/// use.
fn probe_flags(args: &PaperArgs) -> Vec<&'static str> {
    let m = &args.measure;
    [
        ("--quick", args.quick),
        ("--repeat", m.repeat.is_some()),
        ("--rounds", m.rounds.is_some()),
        ("--seed", m.seed.is_some()),
        ("--min-time", m.min_time.is_some()),
        ("--fifo", m.fifo.is_some()),
        ("--no-counters", m.no_counters),
        ("--fs", m.fs.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, given)| given.then_some(name))
    .collect()
}

/// Whether `osmeter paper` traces the whole system for this paper and table: Chen and Bershad's
/// tables that memsim fills (not the paper-only ones such as its workloads' list).
fn traced(id: PaperId, args: &PaperArgs) -> bool {
    let s = spec::spec(id);
    s.today() == spec::Today::Memsim
        && s.comparisons
            .iter()
            .any(|c| args.table.as_deref().is_none_or(|t| t == c.table))
}

/// Measures the paper's latency run and keeps it as `osmeter latency` keeps its own, saying on
/// stderr which classes could not run here and why.
fn measure_latency(id: PaperId, args: &PaperArgs) -> Result<(Run, Verdict)> {
    let settings = latency_side::settings(id, &crate::config::paper::latency_request(args))?;
    let keeper = super::keeper(&args.keep)?;
    if let Some(w) = latency_side::short_warning(settings.duration_ns) {
        eprintln!("{w}");
    }
    let (run, verdict) = crate::latency::run::measure_run(&settings, &keeper, id.key())?;
    if let Some(doc) = run.sections.get::<crate::latency::document::LatencyDoc>() {
        for s in &doc.skipped {
            eprintln!(
                "osmeter: warning: the {} class was not measured: {}",
                s.class.as_str(),
                s.reason
            );
        }
    }
    keeper.save(&run)?;
    Ok((run, verdict))
}

fn load(args: &PaperArgs) -> Result<Vec<Run>> {
    let mut store = Location::resolve(args.keep.store.store.as_ref())?.open()?;
    let mut runs = Vec::new();
    for wanted in &args.runs {
        let id = resolve_id(store.as_mut(), wanted)?;
        let run = store.load(&id)?.ok_or_else(|| {
            anyhow::anyhow!("run {id} vanished from {} while reading", store.describe())
        })?;
        runs.push(run);
    }
    Ok(runs)
}

fn list(output: JsonArg) -> Result<i32> {
    let catalogue = plan::catalogue()?;
    if output.json {
        super::emit_json(&catalogue)?;
        return Ok(0);
    }
    let mut out = String::new();
    for l in &catalogue {
        writeln!(out, "{:<16} {}: {}", l.paper.key(), l.name, l.title)?;
        writeln!(
            out,
            "{:<16} {} tables, {} published values",
            "", l.tables, l.values
        )?;
        match (l.probes.is_empty(), l.elsewhere.as_deref()) {
            (false, _) => writeln!(out, "{:<16} measures: {}", "", l.probes.join(", "))?,
            (true, Some(e)) => writeln!(out, "{:<16} {e}", "")?,
            (true, None) => {}
        }
    }
    out.push_str(
        "\n`osmeter paper NAME` measures and shows one; `--run ID` reuses a stored run.\n",
    );
    super::emit(&out)?;
    Ok(0)
}
