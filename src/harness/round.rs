//! One round of one figure, in the process that measures it: calibrate (from an earlier round's
//! iteration count when there is one), warm up, take the timing samples, then the counting ones, and
//! subtract the harness's own cost. What comes out is plain numbers, handed to the parent process.

use super::{
    between_samples, calibrate_from, check_between, median_counters, take_sample, HarnessConfig,
    Workload, MAX_PREALLOCATED_SAMPLES,
};
use crate::meter::{Cut, Sensors};
use crate::results::model::{ClaimCheck, CounterScopes, Overhead, SampleInterference, Unit};
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// What one round measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RoundOutcome {
    /// Each kept sample's per-operation figure, in the figure's unit, overhead subtracted.
    pub samples: Vec<f64>,
    /// Operations per sample.
    pub iterations: u64,
    pub bytes_per_op: Option<u64>,
    /// Median over this round's counting samples of each counter, per operation.
    pub counters: CounterScopes,
    /// What else happened during each kept sample.
    pub interference: Vec<SampleInterference>,
    /// Kept samples that lasted no longer than the harness's own cost (figure 0 or unbounded).
    pub at_floor: usize,
    /// Why the round stopped early, if it did.
    pub cut: Option<Cut>,
    /// Samples taken again because another task preempted them (see
    /// [`HarnessConfig::retake_preempted`]), with what they saw.
    #[serde(default)]
    pub retaken: Vec<SampleInterference>,
    /// Which pages backed the workload's buffers, when it says.
    #[serde(default)]
    pub pages: Option<crate::meter::pages::Pages>,
    /// The workload's notes on conditions that change what the figure means.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The workload's checks of its own conditions, made after the round.
    #[serde(default)]
    pub checks: Vec<ClaimCheck>,
}

impl RoundOutcome {
    /// A round of plain samples and nothing else, for tests of what is made of rounds.
    #[cfg(test)]
    pub fn of_samples(samples: Vec<f64>, iterations: u64) -> RoundOutcome {
        RoundOutcome {
            samples,
            iterations,
            bytes_per_op: None,
            counters: CounterScopes::default(),
            interference: Vec::new(),
            at_floor: 0,
            cut: None,
            retaken: Vec::new(),
            pages: None,
            notes: Vec::new(),
            checks: Vec::new(),
        }
    }
}

/// Measures one round. `iterations_hint` is what an earlier round of this figure settled on.
pub fn measure_round<S: Sensors, W: Workload + ?Sized>(
    sensors: &mut S,
    work: &mut W,
    config: &HarnessConfig,
    overhead: &Overhead,
    unit: Unit,
    iterations_hint: Option<u64>,
) -> Result<RoundOutcome> {
    if config.samples == 0 {
        bail!("at least one sample is needed");
    }
    // Timing samples with the counters detached (they would tax every context switch), then a few
    // counting samples of the same length for the counter figures.
    sensors.set_counting(false);
    // Under `ab --lockstep` the partner's samples alternate with this round's (see turns): the
    // token is held from here to the end of each timing sample.
    super::turns::begin();
    let iters = calibrate_from(sensors, work, config, iterations_hint.unwrap_or(1))?;
    // Calibration's last sample ran the workload at the final iteration count, as a warm-up
    // sample would: it counts as the first one (a whole-workload operation of a second or more
    // is not run again just to be thrown away).
    for _ in 1..config.warmup_samples {
        check_between(sensors, config)?;
        take_sample(sensors, work, iters)?;
    }
    // A cut (Ctrl-C, the real-time limit) keeps the samples already taken.
    let mut cut = None;
    let mut raws = Vec::with_capacity(config.samples.min(MAX_PREALLOCATED_SAMPLES));
    let mut retaken = Vec::new();
    while raws.len() < config.samples {
        if let Some(c) = between_samples(sensors, config) {
            cut = Some(c);
            break;
        }
        let s = take_sample(sensors, work, iters)?;
        super::turns::pass();
        super::turns::wait();
        if config.retake_preempted && s.interference.preempted() && retaken.len() < config.samples {
            retaken.push(s.interference);
            continue;
        }
        raws.push(s);
    }
    if raws.is_empty() {
        return Err(cut.unwrap_or(Cut::Interrupted).into_error());
    }
    let mut counting = Vec::with_capacity(config.counting_samples.min(MAX_PREALLOCATED_SAMPLES));
    if sensors.can_count() && config.counting_samples > 0 && cut.is_none() {
        sensors.set_counting(true);
        for _ in 0..config.counting_samples {
            if let Some(c) = between_samples(sensors, config) {
                cut = Some(c);
                break;
            }
            match take_sample(sensors, work, iters) {
                Ok(s) => counting.push(s.counters),
                Err(e) => {
                    sensors.set_counting(false);
                    return Err(e);
                }
            }
        }
        sensors.set_counting(false);
    }
    super::turns::leave();

    let bytes = work.bytes_per_op();
    let loop_ns = if work.subtract_loop_overhead() {
        overhead.per_iteration_ns
    } else {
        0.0
    };
    let per_op_ns: Vec<f64> = raws
        .iter()
        .map(|r| {
            let t = (r.elapsed_ns as f64 - overhead.per_sample_ns) / iters as f64 - loop_ns;
            t.max(0.0)
        })
        .collect();
    Ok(RoundOutcome {
        samples: in_unit(&per_op_ns, unit, bytes),
        iterations: iters,
        bytes_per_op: bytes,
        counters: median_counters(&counting, iters as f64, &overhead.per_sample_counters),
        interference: raws.iter().map(|r| r.interference).collect(),
        at_floor: per_op_ns.iter().filter(|&&t| t == 0.0).count(),
        cut,
        retaken,
        pages: work.pages(),
        notes: work.notes(),
        checks: work.checks(),
    })
}

/// Per-operation times as the figure's unit: time itself, bytes per second or operations per
/// second (a sample no longer than the harness's cost has no rate: 0).
fn in_unit(per_op_ns: &[f64], unit: Unit, bytes: Option<u64>) -> Vec<f64> {
    let rate = |numerator: f64| -> Vec<f64> {
        per_op_ns
            .iter()
            .map(|t| if *t > 0.0 { numerator * 1e9 / t } else { 0.0 })
            .collect()
    };
    match unit {
        Unit::BytesPerSecond => rate(bytes.unwrap_or(0) as f64),
        Unit::OpsPerSecond => rate(1.0),
        // Probes state their figures per operation: a time, or one of the rates above.
        _ => per_op_ns.to_vec(),
    }
}
