//! `osmeter run`: measure the selected probes and print (or emit as JSON) one run document.

use crate::cli::RunArgs;
use crate::config::RunConfig;
use crate::harness::{self, Workload};
use crate::interrupt;
use crate::meter::{placement, SystemSensors};
use crate::probes::{Built, ProbeEnv};
use crate::results::model::{Measurement, Overhead, Params, Run, RunOptions, Status, RUN_SCHEMA};
use crate::results::{fingerprint, table};
use anyhow::{Context, Result};
use std::io::Write;

fn progress(enabled: bool, text: &str) {
    if enabled {
        eprint!("\r\x1b[2K{text}");
        let _ = std::io::stderr().flush();
    }
}

pub fn run(args: &RunArgs) -> Result<i32> {
    let config = RunConfig::from_args(args)?;
    let run = measure(&config)?;
    if config.json {
        super::emit_json(&run)?;
    } else {
        super::emit(&(table::render(&run) + &crate::papers::brief::text(&run)))?;
    }
    // The figures are already on stdout; a PostgreSQL store that fails gets a local copy.
    config.keeper.save(&run)?;
    if run.interrupted {
        return Ok(crate::error::EXIT_INTERRUPTED);
    }
    Ok(crate::error::EXIT_OK)
}

/// Measures the configured probes and returns the annotated run (marked interrupted after Ctrl-C,
/// holding what was measured).
pub fn measure(config: &RunConfig) -> Result<Run> {
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
    if let Some(prio) = config.fifo {
        placement::set_fifo(prio)?;
    }
    let mut sensors = SystemSensors::new(config.counters, Some(config.cpu));

    let started_at = crate::clock::now_rfc3339();
    let show_progress = super::stderr_is_terminal();
    progress(show_progress, "measuring the harness's own cost");
    let overhead = harness::measure_overhead(&mut sensors, &config.harness)?;

    let env = ProbeEnv {
        scratch: scratch.path(),
        cpu: config.cpu,
        scale: crate::probes::Scale::Quick,
    };
    let total: usize = config.selected.iter().map(|s| s.variants.len()).sum();
    let mut measurements = Vec::with_capacity(total);
    let mut interrupted = false;
    'probes: for sel in &config.selected {
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
            match measure_one(
                &mut sensors,
                &env,
                sel.probe,
                params.clone(),
                config,
                &overhead,
            ) {
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

    // The parent, not the fresh subdirectory: its path is stable from run to run.
    let fingerprint = fingerprint::collect(Some(&config.scratch_parent));
    let mut run = Run {
        schema: RUN_SCHEMA.to_string(),
        id: crate::clock::new_run_id(),
        started_at,
        finished_at: Some(crate::clock::now_rfc3339()),
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
        tags: config.keeper.tags().clone(),
        fingerprint: fingerprint.clone(),
        counters_unavailable: sensors.unavailable().clone(),
        overhead: Some(overhead),
        measurements,
        interrupted,
        sections: Default::default(),
    };
    drop(scratch);
    crate::results::derive::annotate(&mut run);
    Ok(run)
}

fn measure_one(
    sensors: &mut SystemSensors,
    env: &ProbeEnv,
    probe: &crate::probes::ProbeDef,
    params: Params,
    config: &RunConfig,
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
                &config.harness,
                overhead,
                probe.id,
                params,
                probe.unit,
            )
        }
    }
}
