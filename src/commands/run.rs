//! `osmeter run`: validate the arguments, measure (one call into [`crate::run`]), print (or emit as
//! JSON) the run document, keep it.

use crate::cli::RunArgs;
use crate::config::RunConfig;
use crate::results::model::{Measurement, Status};
use crate::results::table;
use anyhow::Result;

pub fn run(args: &RunArgs) -> Result<i32> {
    if !args.guest.kernels.is_empty() {
        return super::guest::run(args);
    }
    let config = RunConfig::from_args(args)?;
    crate::tracefs::sweep_stale_instances();
    let run = crate::run::measure(&config)?;
    // A PostgreSQL store that fails gets a local copy.
    super::keep_then_print(&config.keeper, &run, || {
        if config.json {
            super::emit_json(&run)
        } else {
            super::emit(
                &(table::render(&run)
                    + &crate::apps::summary::text(&run)
                    + &crate::papers::brief::text(&run, config.keeper.keeps())
                    + &run
                        .profiles
                        .as_ref()
                        .map(|p| {
                            let id = config.keeper.keeps().then_some(run.id.as_str());
                            crate::results::profile::render_brief(p, id)
                        })
                        .unwrap_or_default()),
            )
        }
    })?;
    if run.interrupted {
        return Ok(crate::error::EXIT_INTERRUPTED);
    }
    if let Some(failed) = nothing_measured(&run.measurements) {
        eprintln!(
            "osmeter: every figure failed ({failed} failed, none measured); the reasons are in \
             the table above"
        );
        return Ok(crate::error::EXIT_RUNTIME);
    }
    Ok(crate::error::EXIT_OK)
}

/// How many figures failed, when some did and none was measured (skipped ones are neither).
fn nothing_measured(measurements: &[Measurement]) -> Option<usize> {
    let failed = measurements
        .iter()
        .filter(|m| m.status == Status::Failed)
        .count();
    let measured = measurements.iter().any(|m| m.status == Status::Ok);
    (failed > 0 && !measured).then_some(failed)
}
