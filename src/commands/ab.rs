//! `osmeter ab`: validate, measure both sides in pairs (one call into [`crate::ab`]), keep the run,
//! then print it.

use crate::ab::AbConfig;
use crate::cli::AbArgs;
use crate::error::{EXIT_INTERRUPTED, EXIT_OK, EXIT_THRESHOLD};
use crate::results::document::Sections;
use crate::results::model::Run;
use anyhow::Result;

pub fn ab(args: &AbArgs) -> Result<i32> {
    let plan = crate::config::ab::from_args(args)?;
    let run_config = &plan.run;
    let scratch = crate::scratch::ScratchDir::create(&run_config.scratch_parent, "ab")?;
    let config = AbConfig {
        variants: crate::suite::variants_of(&run_config.selected),
        harness: run_config.harness.clone(),
        sides: plan.sides.clone(),
        mode: plan.mode,
        min_effect: plan.min_effect,
        budget: plan.budget,
        max_pairs: plan.max_pairs,
        seed: run_config.seed,
        cpus: plan.cpus,
        counters: run_config.counters,
        fifo: run_config.fifo,
        system_aslr: run_config.system_aslr,
        scratch: scratch.path(),
        file_systems: run_config.file_systems,
    };
    let started_at = crate::clock::now_rfc3339();
    let style = crate::progress::style();
    let measured = crate::ab::measure(&config, &mut |line| crate::progress::status(style, line));
    crate::progress::status(style, "");
    let doc = measured?;
    let mut run = Run::new(crate::clock::new_run_id(), started_at);
    run.finished_at = Some(crate::clock::now_rfc3339());
    run.tags = run_config.keeper.tags().clone();
    run.fingerprint = Some(crate::results::fingerprint::collect(Some(
        &run_config.scratch_parent,
    )));
    run.options.probes = run_config
        .selected
        .iter()
        .map(|s| s.probe.id.to_string())
        .collect();
    run.options.seed = Some(run_config.seed);
    run.options.cpu = Some(plan.cpus[0]);
    run.options.system_aslr = run_config.system_aslr;
    run.interrupted = crate::interrupt::requested();
    let slower = plan
        .fail_if_slower
        .map(|pct| (pct, doc.slower_beyond(pct).join(", ")));
    let text = crate::results::document::Document::text(&doc);
    let failure = doc.failure.clone();
    run.sections = Sections::of(doc);
    drop(scratch);
    // Kept before it is printed: output that cannot be written must not lose the pairs.
    super::keep_then_print(&run_config.keeper, &run, || {
        if run_config.json {
            super::emit_json(&run)
        } else {
            super::emit(&text)
        }
    })?;
    if run.interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    if let Some(e) = failure {
        eprintln!("osmeter: ab: the pairs before the error are kept: {e}");
        return Ok(crate::error::EXIT_RUNTIME);
    }
    if let Some((pct, bad)) = slower.filter(|(_, bad)| !bad.is_empty()) {
        eprintln!("osmeter: B is slower than A by more than {pct} % in: {bad}");
        return Ok(EXIT_THRESHOLD);
    }
    Ok(EXIT_OK)
}
