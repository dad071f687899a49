//! How a measurement is run: calibrate the iteration count to a minimum sample time, warm up, take
//! repeated samples, subtract the harness's own cost, and summarise.

pub mod aggregate;
pub mod env;
pub mod round;
pub mod schedule;
pub mod turns;
pub mod usual;

use crate::meter::{counter_delta, rt_limit, Cut, Sensors};
use crate::results::model::{
    ClaimCheck, CounterScopes, CounterValues, Measurement, Overhead, Params, Unit,
};
use crate::stats::summary as stats;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a probe runs. Set-up (buffers, files, partner processes) happens when the workload is built,
/// so that `run` does only the operation, `iters` times.
pub trait Workload {
    /// Work that must precede a sample of `iters` operations but must not be timed (for example
    /// mapping the fresh pages a page-fault probe will touch).
    fn prepare(&mut self, _iters: u64) -> Result<()> {
        Ok(())
    }
    /// Performs the operation `iters` times. This is the timed region.
    fn run(&mut self, iters: u64) -> Result<()>;
    /// Untimed clean-up after a sample.
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
    /// Bytes moved by one operation, for figures reported as bandwidth.
    fn bytes_per_op(&self) -> Option<u64> {
        None
    }
    /// Largest iteration count a sample may use (memory, file count or descriptor limits).
    fn max_iters(&self) -> u64 {
        u64::MAX / 2
    }
    /// Whether one turn of the empty timed loop is part of each operation's cost. False for bodies
    /// whose loop control is amortised (unrolled) or hidden behind a chain of dependent loads, where
    /// subtracting it would understate the operation.
    fn subtract_loop_overhead(&self) -> bool {
        true
    }
    /// Conditions of this machine that change what the figure means (a file system state, say),
    /// for the reader.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
    /// Which pages back the workload's buffers, for figures that depend on where those lie in
    /// physical memory (see [`crate::meter::pages`]).
    fn pages(&self) -> Option<crate::meter::pages::Pages> {
        None
    }
    /// What the probe checked about its own conditions after the round (a file system that held
    /// freed inodes back, say): a check that does not hold marks the figure as the counter claims
    /// do (see `probes::claims`).
    fn checks(&self) -> Vec<ClaimCheck> {
        Vec::new()
    }
    /// Counts of everything the last sample ran, for workloads whose work happens in other
    /// processes (application workloads count a cgroup of their own, as the apps do): when
    /// it returns Some, that is the sample's counters instead of the measuring thread's. Called
    /// after the timed region of every sample, before [`Workload::finish`].
    fn counted(&mut self) -> Option<CounterScopes> {
        None
    }
    /// The cgroup (v2 directory) every process of the workload runs in, for workloads that have
    /// one of their own (application workloads): `--profile` samples it whole.
    fn cgroup(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// For workloads that time each operation themselves and whose figure is a statistic of
    /// those times (a percentile of request latency): the last sample's figure times its
    /// operations, in ns, used instead of the sample's elapsed time.
    fn timed_ns(&mut self) -> Option<u64> {
        None
    }
}

/// An empty timed loop: what the harness costs per iteration when the body does nothing.
pub struct NullWorkload;

impl Workload for NullWorkload {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            // An empty asm statement keeps the loop (the compiler must assume it does something)
            // and adds no instruction: the loop is the probes' `for _ in 0..iters { op }` with
            // nothing in the body. `black_box(i)` also stored the counter on every turn (and in
            // a debug build called a function), which no probe's loop does, so the subtracted
            // loop outweighed whole operations: sched_yield counted -4 user instructions.
            // SAFETY: an empty statement touches nothing.
            unsafe { std::arch::asm!("", options(nostack, preserves_flags)) };
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HarnessConfig {
    /// A sample lasts at least this long once calibrated.
    pub min_sample_ns: u64,
    /// Samples kept per round.
    pub samples: usize,
    /// Samples run and thrown away after calibration.
    pub warmup_samples: usize,
    /// Samples taken with the counters attached, after the timing samples, for the counter figures
    /// (per round). One is enough: the counters are a per-operation count over a whole sample,
    /// and the figure's counters are the median over its rounds.
    pub counting_samples: usize,
    /// The measuring thread runs at SCHED_FIFO: it blocks for a moment between samples so that
    /// RLIMIT_RTTIME only ever catches a single runaway sample.
    pub realtime: bool,
    /// The workload runs alone on the measuring thread and never blocks (the CPU reference, the
    /// hardware figures): a sample another task preempted, or the hypervisor stole time in, is
    /// taken again, at most `samples` times a round (when every sample is preempted, the machine
    /// is busy and the run says so).
    #[serde(default)]
    pub retake_preempted: bool,
}

impl Default for HarnessConfig {
    fn default() -> Self {
        HarnessConfig {
            min_sample_ns: 10_000_000,
            samples: 10,
            warmup_samples: 1,
            counting_samples: 1,
            realtime: false,
            retake_preempted: false,
        }
    }
}

/// Sample vectors are filled as samples come; a huge --repeat must not reserve memory up front.
const MAX_PREALLOCATED_SAMPLES: usize = 4096;

/// What one sample saw, before any overhead is subtracted.
#[derive(Debug, Clone)]
struct RawSample {
    elapsed_ns: u64,
    counters: CounterScopes,
    interference: crate::meter::InterferenceReading,
}

fn take_sample<S: Sensors, W: Workload + ?Sized>(
    sensors: &mut S,
    work: &mut W,
    iters: u64,
) -> Result<RawSample> {
    work.prepare(iters)?;
    let i0 = sensors.interference();
    let c0 = sensors.counters();
    let t0 = sensors.now_ns();
    work.run(iters)?;
    let t1 = sensors.now_ns();
    let c1 = sensors.counters();
    let i1 = sensors.interference();
    let counters = work.counted().unwrap_or_else(|| counter_delta(&c0, &c1));
    work.finish()?;
    Ok(RawSample {
        elapsed_ns: work.timed_ns().unwrap_or(t1.saturating_sub(t0)),
        counters,
        interference: i1.delta(&i0),
    })
}

/// What runs between two samples: the check for a reason to stop, and at SCHED_FIFO a moment of
/// blocking (see [`rt_limit::block_briefly`]).
fn between_samples<S: Sensors>(sensors: &mut S, config: &HarnessConfig) -> Option<Cut> {
    if config.realtime {
        rt_limit::block_briefly();
    }
    sensors.cut()
}

/// [`between_samples`] for phases that keep nothing: a reason to stop ends the measurement.
fn check_between<S: Sensors>(sensors: &mut S, config: &HarnessConfig) -> Result<()> {
    match between_samples(sensors, config) {
        Some(cut) => Err(cut.into_error()),
        None => Ok(()),
    }
}

/// Grows the iteration count until one sample lasts at least `min_sample_ns`. The samples taken on the
/// way double as warm-up.
fn calibrate<S: Sensors, W: Workload + ?Sized>(
    sensors: &mut S,
    work: &mut W,
    config: &HarnessConfig,
) -> Result<u64> {
    calibrate_from(sensors, work, config, 1)
}

/// [`calibrate`] starting from `start` iterations (what an earlier round of the same figure used),
/// so that a later round usually needs one calibrating sample and rounds stay comparable.
fn calibrate_from<S: Sensors, W: Workload + ?Sized>(
    sensors: &mut S,
    work: &mut W,
    config: &HarnessConfig,
    start: u64,
) -> Result<u64> {
    let min_sample_ns = config.min_sample_ns;
    let cap = work.max_iters().max(1);
    let mut iters = start.clamp(1, cap);
    loop {
        check_between(sensors, config)?;
        let s = take_sample(sensors, work, iters)?;
        if s.elapsed_ns >= min_sample_ns || iters >= cap {
            return Ok(iters);
        }
        // Aim 20 % past the target, but never grow more than 10x per step so a first sample
        // distorted by a cold cache or a page fault does not overshoot wildly. A sample just short
        // of the target grows by the 20 % only: doubling it made samples up to 2.4 times the
        // asked length, and a round's CPU time with them.
        let factor = if s.elapsed_ns == 0 {
            10.0
        } else {
            (min_sample_ns as f64 * 1.2 / s.elapsed_ns as f64).clamp(1.2, 10.0)
        };
        iters = ((iters as f64 * factor).ceil() as u64).min(cap);
    }
}

/// Measures the harness's own cost: the fixed cost of one sample (clock and counter reads around an
/// empty body) and the per-iteration cost of an empty loop.
pub fn measure_overhead<S: Sensors>(sensors: &mut S, config: &HarnessConfig) -> Result<Overhead> {
    measure_overhead_with(sensors, config, &mut NullWorkload)
}

/// [`measure_overhead`] with a given empty body (tests pass one that advances a fake clock).
pub fn measure_overhead_with<S: Sensors, N: Workload + ?Sized>(
    sensors: &mut S,
    config: &HarnessConfig,
    null: &mut N,
) -> Result<Overhead> {
    let reps = config.samples.max(5);
    sensors.set_counting(false);
    let mut fixed = Vec::with_capacity(reps.min(MAX_PREALLOCATED_SAMPLES));
    for _ in 0..reps {
        check_between(sensors, config)?;
        fixed.push(take_sample(sensors, null, 0)?.elapsed_ns as f64);
    }
    fixed.sort_by(f64::total_cmp);
    let per_sample_ns = stats::median(&fixed);

    let iters = calibrate(sensors, null, config)?;
    let mut per_iter = Vec::with_capacity(config.samples.min(MAX_PREALLOCATED_SAMPLES));
    for _ in 0..config.samples.max(1) {
        check_between(sensors, config)?;
        let s = take_sample(sensors, null, iters)?;
        per_iter.push((s.elapsed_ns as f64 - per_sample_ns).max(0.0) / iters as f64);
    }
    per_iter.sort_by(f64::total_cmp);
    let mut fixed_counters = Vec::with_capacity(reps.min(MAX_PREALLOCATED_SAMPLES));
    if sensors.can_count() {
        sensors.set_counting(true);
        for _ in 0..reps {
            if let Err(e) = check_between(sensors, config) {
                sensors.set_counting(false);
                return Err(e);
            }
            fixed_counters.push(take_sample(sensors, null, 0)?.counters);
        }
        sensors.set_counting(false);
    }
    Ok(Overhead {
        per_sample_ns,
        per_iteration_ns: stats::median(&per_iter),
        per_sample_counters: median_counters(&fixed_counters, 1.0, &CounterScopes::default()),
    })
}

/// Median over samples of each counter, after subtracting the fixed per-sample cost and dividing by
/// the operations per sample.
pub(crate) fn median_counters(
    samples: &[CounterScopes],
    ops: f64,
    fixed: &CounterScopes,
) -> CounterScopes {
    fn per_map(
        samples: &[CounterScopes],
        pick: fn(&CounterScopes) -> &CounterValues,
        fixed: &CounterValues,
        ops: f64,
    ) -> CounterValues {
        let mut by_event: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for s in samples {
            for (name, v) in pick(s) {
                let base = fixed.get(name).copied().unwrap_or(0.0);
                by_event
                    .entry(name)
                    .or_default()
                    .push((v - base).max(0.0) / ops);
            }
        }
        by_event
            .into_iter()
            .map(|(name, mut vs)| {
                let v = if crate::meter::machine::tick_counted(name) {
                    stats::mean(&vs)
                } else {
                    stats::median_of(&mut vs)
                };
                (name.to_string(), v)
            })
            .collect()
    }
    CounterScopes {
        user: per_map(samples, |s| &s.user, &fixed.user, ops),
        kernel: per_map(samples, |s| &s.kernel, &fixed.kernel, ops),
        software: per_map(samples, |s| &s.software, &fixed.software, ops),
        scaled: samples.iter().any(|s| s.scaled),
    }
}

/// Runs one probe variant as a single round and summarises it (the whole of a measurement made in
/// one process; `osmeter run` measures several rounds through [`suite`]).
pub fn measure<S: Sensors, W: Workload + ?Sized>(
    sensors: &mut S,
    work: &mut W,
    config: &HarnessConfig,
    overhead: &Overhead,
    probe: &str,
    params: Params,
    unit: Unit,
) -> Result<Measurement> {
    let outcome = round::measure_round(sensors, work, config, overhead, unit, None)?;
    let record = aggregate::RoundRecord {
        round: 0,
        position: 0,
        outcome,
    };
    Ok(aggregate::measurement(
        probe,
        params,
        unit,
        &[record],
        config,
        usual::Usual::Probe {
            cv: usual::DEFAULT_CV,
        },
        0,
    ))
}

#[cfg(test)]
mod tests;
