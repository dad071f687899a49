//! A latency measurement made into a run: the one way `latency` and `paper` keep one.

use super::session::{self, Settings, Verdict};
use crate::results::keep::Keeper;
use crate::results::model::{Run, RunOptions, Sections};
use anyhow::Result;

/// Measures with checked settings (progress on stderr, Ctrl-C watched) and makes the run the
/// keeper will keep, under `suite`: the one way a latency measurement becomes a run, for `latency`
/// and for `paper` (whose latency runs carry the paper's name as their suite).
pub fn measure_run(settings: &Settings, keeper: &Keeper, suite: &str) -> Result<(Run, Verdict)> {
    crate::tracefs::sweep_stale_instances();
    crate::interrupt::install();
    let outcome = session::measure(settings)?;
    let verdict = outcome.verdict();
    let run = Run {
        suite: Some(suite.to_string()),
        options: RunOptions {
            cpu: settings.cpus.first().copied(),
            fifo_priority: outcome.fifo_priority,
            ..RunOptions::default()
        },
        ..keeper.run_of(
            Sections::of(outcome.doc),
            outcome.started_at,
            verdict == Verdict::Interrupted,
        )
    };
    Ok((run, verdict))
}
