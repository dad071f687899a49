//! `osmeter run`: measure the selected probes (in rounds, through the harness's suite runner) and
//! print (or emit as JSON) one run document.

use crate::cli::RunArgs;
use crate::config::RunConfig;
use crate::harness;
use crate::harness::suite::{SuiteConfig, Variant};
use crate::harness::worker::WorkerCommand;
use crate::interrupt;
use crate::meter::perf;
use crate::results::model::{Run, RunOptions, RUN_SCHEMA};
use crate::results::{fingerprint, table};
use anyhow::{Context, Result};
use std::io::Write;

/// RFC 3339 UTC time from the system clock, without pulling in a date crate.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (proleptic Gregorian), Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A run id that sorts by time and does not collide between hosts: time, then random bits.
pub fn new_run_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut rnd = [0u8; 4];
    // SAFETY: getrandom writes at most rnd.len() bytes into rnd.
    unsafe { libc::getrandom(rnd.as_mut_ptr().cast(), rnd.len(), 0) };
    format!("{:x}-{:08x}", now.as_secs(), u32::from_ne_bytes(rnd))
}

fn progress(enabled: bool, text: &str) {
    if enabled {
        eprint!("\r\x1b[2K{text}");
        let _ = std::io::stderr().flush();
    }
}

pub fn run(args: &RunArgs) -> Result<i32> {
    let config = RunConfig::from_args(args)?;
    interrupt::install();
    let scratch = tempfile::Builder::new()
        .prefix("osmeter-")
        .tempdir_in(&config.scratch_parent)
        .with_context(|| {
            format!(
                "cannot create a scratch directory in {}",
                config.scratch_parent.display()
            )
        })?;
    let suite = SuiteConfig {
        variants: config
            .selected
            .iter()
            .flat_map(|sel| {
                sel.variants.iter().map(|params| Variant {
                    probe: sel.probe,
                    scale: sel.scale,
                    params: params.clone(),
                })
            })
            .collect(),
        harness: config.harness.clone(),
        rounds: config.rounds,
        seed: config.seed,
        cpu: config.cpu,
        fifo: config.fifo,
        counters: config.counters,
        scratch: scratch.path(),
        worker: WorkerCommand::this_executable(),
    };

    let started_at = now_rfc3339();
    let show_progress = super::stderr_is_terminal();
    let outcome = harness::suite::run(&suite, &mut |p| {
        let what = p.label.unwrap_or("the harness's own cost");
        progress(
            show_progress,
            &format!(
                "[{}/{}] round {}/{}: {what}",
                p.done + 1,
                p.total,
                p.round + 1,
                p.rounds
            ),
        )
    })?;
    progress(show_progress, "");

    // The parent, not the fresh subdirectory: its path is stable from run to run.
    let fingerprint = fingerprint::collect(Some(&config.scratch_parent));
    let counters_unavailable = if config.counters {
        perf::CounterSet::open_all().unavailable().clone()
    } else {
        Default::default()
    };
    let mut run = Run {
        schema: RUN_SCHEMA.to_string(),
        id: new_run_id(),
        started_at,
        finished_at: Some(now_rfc3339()),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        suite: config.suite.clone(),
        options: RunOptions {
            probes: config
                .selected
                .iter()
                .map(|s| s.probe.id.to_string())
                .collect(),
            samples: config.harness.samples,
            min_sample_ms: config.harness.min_sample_ns as f64 / 1e6,
            warmup_samples: config.harness.warmup_samples,
            cpu: Some(config.cpu),
            fifo_priority: config.fifo,
            scratch_dir: config.scratch_parent.display().to_string(),
            scratch_fs: fingerprint
                .get("scratch_fs_type")
                .and_then(|v| v.as_str())
                .map(str::to_string),
            rounds: config.rounds,
            seed: Some(config.seed),
        },
        tags: config.tags.clone(),
        fingerprint: fingerprint.clone(),
        counters_unavailable,
        overhead: outcome.overhead,
        measurements: outcome.measurements,
        interrupted: outcome.interrupted,
        sections: Default::default(),
    };
    drop(scratch);
    crate::results::derive::annotate(&mut run);

    if config.json {
        super::emit_json(&run)?;
    } else {
        super::emit(&table::render(&run))?;
    }
    if let Some(location) = &config.store {
        // The figures are already on stdout; a PostgreSQL store that fails gets a local copy.
        let saved = crate::results::store::save_with_fallback(location, &run)?;
        eprintln!("osmeter: run {} saved to {}", run.id, saved.store);
    }
    if run.interrupted {
        return Ok(crate::error::EXIT_INTERRUPTED);
    }
    Ok(crate::error::EXIT_OK)
}
