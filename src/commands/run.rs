//! `osmeter run`: measure the selected probes and print (or emit as JSON) one run document.

use crate::cli::RunArgs;
use crate::config::RunConfig;
use crate::harness::{self, Workload};
use crate::interrupt;
use crate::meter::rt_limit::{self, OnLimit, RtTimeLimit};
use crate::meter::{placement, SystemSensors};
use crate::probes::{Built, ProbeEnv};
use crate::results::model::{Measurement, Overhead, Params, Run, RunOptions, Status, RUN_SCHEMA};
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

    let restore_affinity = placement::usable_cpus();
    let restore_sched = placement::current_sched();
    placement::pin_current_thread(config.cpu)?;
    let harness_config = harness::HarnessConfig {
        realtime: config.fifo.is_some(),
        ..config.harness.clone()
    };
    let rt_limit = config.fifo.map(|_| {
        let soft = harness::realtime_limit_us(&harness_config);
        RtTimeLimit::set(soft, Some(soft + 2_000_000), OnLimit::Notify)
    });
    if let Some(prio) = config.fifo {
        placement::set_fifo(prio)?;
    }
    let mut sensors = SystemSensors::new(config.counters, Some(config.cpu));

    let started_at = now_rfc3339();
    let show_progress = super::stderr_is_terminal();
    progress(show_progress, "measuring the harness's own cost");
    let mut interrupted = false;
    let overhead = match harness::measure_overhead(&mut sensors, &harness_config) {
        Ok(o) => Some(o),
        // Stopped before any figure: the run is still kept, empty and marked interrupted.
        Err(e) if interrupt::is_interrupt(&e) => {
            interrupted = true;
            None
        }
        Err(e) => {
            let _ = placement::restore_sched(restore_sched);
            return Err(e);
        }
    };

    let env = ProbeEnv {
        scratch: scratch.path(),
        cpu: config.cpu,
        scale: crate::probes::Scale::Quick,
    };
    let total: usize = config.selected.iter().map(|s| s.variants.len()).sum();
    let mut measurements = Vec::with_capacity(total);
    'probes: for sel in config.selected.iter().filter(|_| overhead.is_some()) {
        let env = ProbeEnv {
            scale: sel.scale,
            ..env
        };
        for params in sel.variants.iter().cloned() {
            if interrupt::requested() {
                interrupted = true;
                break 'probes;
            }
            let label = crate::results::model::label(sel.probe.id, &params);
            progress(
                show_progress,
                &format!("[{}/{}] {label}", measurements.len() + 1, total),
            );
            let result = measure_one(
                &mut sensors,
                &env,
                sel.probe,
                params.clone(),
                &harness_config,
                overhead.as_ref().expect("measured before any probe"),
            );
            if rt_limit::take_tripped() {
                if let Some(limit) = &rt_limit {
                    limit.rearm();
                }
            }
            match result {
                // A figure cut short by Ctrl-C keeps its samples, and is the last one.
                Ok(m) if interrupt::requested() => {
                    measurements.push(m);
                    interrupted = true;
                    break 'probes;
                }
                Ok(m) => measurements.push(m),
                Err(e) if interrupt::is_interrupt(&e) => {
                    interrupted = true;
                    break 'probes;
                }
                Err(e) => measurements.push(Measurement::not_measured(
                    sel.probe.id,
                    params,
                    sel.probe.unit,
                    Status::Failed,
                    format!("{e:#}"),
                )),
            }
        }
    }
    progress(show_progress, "");
    // Undo placement and class before collecting the fingerprint so nothing else inherits them.
    let _ = placement::restore_sched(restore_sched);
    let _ = placement::set_affinity(&restore_affinity);
    drop(rt_limit);

    // The parent, not the fresh subdirectory: its path is stable from run to run.
    let fingerprint = fingerprint::collect(Some(&config.scratch_parent));
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
        },
        tags: config.tags.clone(),
        fingerprint: fingerprint.clone(),
        counters_unavailable: sensors.unavailable().clone(),
        overhead,
        measurements,
        interrupted,
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
    if interrupted {
        return Ok(crate::error::EXIT_INTERRUPTED);
    }
    Ok(crate::error::EXIT_OK)
}

fn measure_one(
    sensors: &mut SystemSensors,
    env: &ProbeEnv,
    probe: &crate::probes::ProbeDef,
    params: Params,
    harness_config: &harness::HarnessConfig,
    overhead: &Overhead,
) -> Result<Measurement> {
    match (probe.build)(env, &params).with_context(|| format!("setting up {}", probe.id))? {
        Built::Skip(reason) => Ok(Measurement::not_measured(
            probe.id,
            params,
            probe.unit,
            Status::Skipped,
            reason,
        )),
        Built::Ready(mut work) => {
            let w: &mut dyn Workload = work.as_mut();
            harness::measure(
                sensors,
                w,
                harness_config,
                overhead,
                probe.id,
                params,
                probe.unit,
            )
        }
    }
}
