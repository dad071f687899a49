//! `osmeter paper [NAME]`: the seed papers, and one paper's tables with today's figures beside them,
//! measured now or taken from stored runs.

use crate::cli::{JsonArg, PaperArgs, RunArgs};
use crate::config::RunConfig;
use crate::papers::data::Paper;
use crate::papers::view::{self, Here};
use crate::papers::{plan, render, spec, PaperId};
use crate::probes::Scale;
use crate::results::model::Run;
use crate::results::store::{resolve_id, Location};
use anyhow::Result;
use std::fmt::Write;

pub fn paper(args: &PaperArgs) -> Result<i32> {
    let Some(id) = args.name else {
        return list(args.output);
    };
    let paper = Paper::load(id)?;
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
    let (runs, interrupted) = if !args.runs.is_empty() {
        let runs = load(args)?;
        for m in plan::check_runs(id, args.table.as_deref(), &runs)? {
            eprintln!("osmeter: warning: {m} is not in the given runs; its cells stay empty");
        }
        (runs, false)
    } else if spec::spec(id).probes_of(args.table.as_deref()).is_empty() {
        (Vec::new(), false)
    } else {
        let config = measuring_config(id, args)?;
        let run = super::run::measure(&config)?;
        config.keeper.save(&run)?;
        let interrupted = run.interrupted;
        (vec![run], interrupted)
    };
    let doc = view::build(&paper, spec::spec(id), &runs, &Here::detect())?;
    if args.output.json {
        super::emit_json(&doc)?;
    } else {
        super::emit(&render::render(&paper, &doc, args.table.as_deref()))?;
    }
    Ok(if interrupted {
        crate::error::EXIT_INTERRUPTED
    } else {
        crate::error::EXIT_OK
    })
}

/// The run configuration of `osmeter run` for exactly the paper's probes and parameter points.
fn measuring_config(id: PaperId, args: &PaperArgs) -> Result<RunConfig> {
    let run_args = RunArgs {
        targets: spec::spec(id)
            .probes_of(args.table.as_deref())
            .into_iter()
            .map(str::to_string)
            .collect(),
        measure: args.measure.clone(),
        keep: args.keep.clone(),
        ..RunArgs::default()
    };
    let mut config = RunConfig::from_args(&run_args)?;
    let scale = if args.quick {
        Scale::Quick
    } else {
        Scale::Full
    };
    for sel in &mut config.selected {
        sel.scale = scale;
        sel.variants = plan::variants(id, args.table.as_deref(), sel.probe, scale);
    }
    config.selected.retain(|s| !s.variants.is_empty());
    config.suite = Some(id.key().to_string());
    // Settings left to their defaults follow the scale, as `osmeter run quick` sets them.
    if args.quick {
        if args.measure.repeat.is_none() {
            config.harness.samples = crate::config::QUICK_SAMPLES;
        }
        if args.measure.min_time.is_none() {
            config.harness.min_sample_ns = crate::config::QUICK_MIN_SAMPLE_NS;
        }
    }
    Ok(config)
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
        match (l.probes.is_empty(), l.elsewhere) {
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
