//! The run document: what one `osmeter run` produced, in a shape that can be printed, serialised as
//! `osmeter.run/1` JSON and stored unchanged.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const RUN_SCHEMA: &str = "osmeter.run/1";

/// Parameters of one measurement, e.g. `{"size": 16384, "placement": "cross"}`.
pub type Params = BTreeMap<String, serde_json::Value>;

/// Counter values per operation, by event name.
pub type CounterValues = BTreeMap<String, f64>;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Run {
    pub schema: String,
    pub id: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub tool_version: String,
    pub suite: Option<String>,
    pub options: RunOptions,
    /// User labels (`--tag key=value`), e.g. kernel=6.6-patched.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    pub fingerprint: serde_json::Value,
    /// Events that could not be counted on this machine, with the reason (once per run, not per figure).
    pub counters_unavailable: BTreeMap<String, String>,
    /// The harness's own cost, subtracted from every figure.
    pub overhead: Option<Overhead>,
    pub measurements: Vec<Measurement>,
    /// True when the run was stopped early (Ctrl-C): what is here was measured, the rest was not.
    pub interrupted: bool,
    /// Results of the other parts of osmeter ("latency", "memsim", "stat"), each its own versioned
    /// document with a "schema" key, kept beside the microbenchmark measurements.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sections: BTreeMap<String, serde_json::Value>,
}

impl Run {
    /// An empty run of this osmeter version, to be filled in.
    pub fn new(id: String, started_at: String) -> Run {
        Run {
            schema: RUN_SCHEMA.to_string(),
            id,
            started_at,
            finished_at: None,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            suite: None,
            options: RunOptions::default(),
            tags: BTreeMap::new(),
            fingerprint: serde_json::Value::Null,
            counters_unavailable: BTreeMap::new(),
            overhead: None,
            measurements: Vec::new(),
            interrupted: false,
            sections: BTreeMap::new(),
        }
    }

    /// The host name from the fingerprint, when it was recorded.
    pub fn host(&self) -> Option<String> {
        self.fingerprint
            .get("hostname")
            .and_then(|h| h.as_str())
            .map(str::to_string)
    }

    /// What produced the run: "run" for microbenchmarks, else the name of its first section.
    pub fn kind(&self) -> &str {
        if !self.measurements.is_empty() {
            return "run";
        }
        self.sections
            .keys()
            .next()
            .map(String::as_str)
            .unwrap_or("run")
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunOptions {
    pub probes: Vec<String>,
    pub samples: usize,
    pub min_sample_ms: f64,
    pub warmup_samples: usize,
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority of the measuring thread, when one was asked for.
    pub fifo_priority: Option<i32>,
    pub scratch_dir: String,
    pub scratch_fs: Option<String>,
    /// Rounds per figure (each in a fresh process, interleaved across figures); 0 in runs stored
    /// before rounds existed, which measured each figure once.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rounds: usize,
    /// Seed of the shuffled order of the rounds (and of the bootstrap), so the run can be replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Overhead {
    /// Fixed cost of one sample (clock and counter reads), nanoseconds.
    pub per_sample_ns: f64,
    /// Cost of one turn of an empty timed loop, nanoseconds.
    pub per_iteration_ns: f64,
    /// Counter deltas of one empty sample, by scope then event.
    pub per_sample_counters: CounterScopes,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Skipped,
    Failed,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds per operation (lower is better).
    #[serde(rename = "ns")]
    Nanoseconds,
    /// Bytes per second (higher is better).
    #[serde(rename = "B/s")]
    BytesPerSecond,
    /// Operations per second (higher is better).
    #[serde(rename = "op/s")]
    OpsPerSecond,
}

impl Unit {
    pub fn higher_is_better(self) -> bool {
        !matches!(self, Unit::Nanoseconds)
    }
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Nanoseconds => "ns",
            Unit::BytesPerSecond => "B/s",
            Unit::OpsPerSecond => "op/s",
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CounterScopes {
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub user: CounterValues,
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub kernel: CounterValues,
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub software: CounterValues,
    /// True when at least one count was extrapolated from time_enabled/time_running.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub scaled: bool,
}

impl CounterScopes {
    pub fn is_empty(&self) -> bool {
        self.user.is_empty() && self.kernel.is_empty() && self.software.is_empty()
    }
}

/// Interference counters: cumulative at an instant, or the delta over one sample.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct SampleInterference {
    pub irq_timer: u64,
    pub irq_other: u64,
    pub csw_voluntary: u64,
    pub csw_involuntary: u64,
    pub steal_ms: f64,
}

impl SampleInterference {
    pub fn delta(&self, before: &SampleInterference) -> SampleInterference {
        SampleInterference {
            irq_timer: self.irq_timer.saturating_sub(before.irq_timer),
            irq_other: self.irq_other.saturating_sub(before.irq_other),
            csw_voluntary: self.csw_voluntary.saturating_sub(before.csw_voluntary),
            csw_involuntary: self.csw_involuntary.saturating_sub(before.csw_involuntary),
            steal_ms: (self.steal_ms - before.steal_ms).max(0.0),
        }
    }

    /// The hypervisor took time away. (Involuntary context switches are not counted as a
    /// disturbance: in a same-CPU two-party probe the woken partner preempts the measuring thread by
    /// design.)
    pub fn disturbed(&self) -> bool {
        self.steal_ms > 0.0
    }
}

/// What else happened on the machine while the samples were taken: totals, and each sample's own.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Interference {
    pub irq_timer: u64,
    pub irq_other: u64,
    pub csw_voluntary: u64,
    pub csw_involuntary: u64,
    pub steal_ms: f64,
    /// Samples during which the hypervisor stole time.
    pub disturbed_samples: usize,
    /// Per kept sample, in the order of `samples`.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub per_sample: Vec<SampleInterference>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub mean: f64,
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    /// Coefficient of variation, stddev / mean.
    pub cv: f64,
    /// Distribution-free 95 % confidence interval of the median (order statistics).
    pub ci95: [f64; 2],
    /// Confidence actually achieved by `ci95` (below 0.95 when there are too few samples).
    pub ci_level: f64,
    /// Indices of samples flagged as outliers (modified z-score above 3.5).
    pub outliers: Vec<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Measurement {
    pub probe: String,
    pub params: Params,
    pub unit: Unit,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    /// Per-operation figure of each sample, overhead already subtracted.
    pub samples: Vec<f64>,
    #[serde(flatten)]
    pub summary: Option<Summary>,
    /// Operations per sample after calibration.
    pub iterations: u64,
    /// Bytes moved per operation, for bandwidth figures.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub bytes_per_op: Option<u64>,
    /// Median counter values per operation, overhead subtracted.
    pub counters: CounterScopes,
    pub interference: Interference,
    /// Figures derived from this one (cpi.user, bytes_per_instruction, reference_units, ...).
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub derived: BTreeMap<String, f64>,
    /// Things the reader should know about this figure (large spread, outliers, placement changed...).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub warnings: Vec<String>,
    /// One entry per round measured, in round order; `samples` holds their samples one round after
    /// the other. Empty in runs stored before rounds existed.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub rounds: Vec<RoundValue>,
    /// What the figure measures: the operating system, the hardware under it, or the harness.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub subject: Option<Subject>,
    /// The probe's claims about what one operation costs in counters, checked against what the
    /// counters saw; a check that does not hold means the figure is not what its name says.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub checks: Vec<ClaimCheck>,
}

/// What a figure measures. Comparisons of kernels summarise the OS figures apart from the others.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Subject {
    /// A service of the operating system (system calls, faults, scheduling, files, network).
    Os,
    /// The processor and memory themselves (memory copy, load latency, a CPU-bound reference).
    Hardware,
    /// osmeter's own cost (the empty timed loop).
    Harness,
}

/// One claim of a probe checked against a figure's counters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClaimCheck {
    /// Software event, as in `counters.software`.
    pub event: String,
    /// What one operation must cost, inclusive bounds.
    pub expected: [f64; 2],
    /// What the counters saw per operation.
    pub seen: f64,
    pub holds: bool,
    /// Why the probe expects it.
    pub why: String,
}

/// What one round of a figure gave: the median of its samples, and where it ran.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RoundValue {
    /// Round number, from 0.
    pub round: usize,
    /// Place of this round in the run's shuffled order of all rounds, from 0.
    pub position: usize,
    /// Median of the round's samples, in the figure's unit.
    pub value: f64,
    /// How many of the measurement's samples this round contributed.
    pub samples: usize,
    /// Operations per sample in this round.
    pub iterations: u64,
    /// Stopped before all its samples were taken (Ctrl-C, or the real-time limit).
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub cut_short: bool,
}

impl Measurement {
    pub fn not_measured(
        probe: &str,
        params: Params,
        unit: Unit,
        status: Status,
        reason: String,
    ) -> Self {
        Measurement {
            probe: probe.to_string(),
            params,
            unit,
            status,
            reason: Some(reason),
            samples: Vec::new(),
            summary: None,
            iterations: 0,
            bytes_per_op: None,
            counters: CounterScopes::default(),
            interference: Interference::default(),
            derived: BTreeMap::new(),
            warnings: Vec::new(),
            rounds: Vec::new(),
            subject: None,
            checks: Vec::new(),
        }
    }

    pub fn label(&self) -> String {
        label(&self.probe, &self.params)
    }

    /// The round values (each round's median), in round order; empty for runs without rounds.
    pub fn round_values(&self) -> Vec<f64> {
        self.rounds.iter().map(|r| r.value).collect()
    }
}

/// `probe` followed by its parameters, e.g. `ipc.pipe_pingpong placement=cross`.
pub fn label(probe: &str, params: &Params) -> String {
    let mut s = probe.to_string();
    for (k, v) in params {
        let v = match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        s.push_str(&format!(" {k}={v}"));
    }
    s
}

#[cfg(test)]
pub mod tests {
    use super::*;

    pub fn empty_run() -> Run {
        Run {
            tool_version: "0".into(),
            ..Run::new("test".into(), "2026-01-01T00:00:00Z".into())
        }
    }

    #[test]
    fn a_document_from_before_rounds_still_loads() {
        // As stored by osmeter 0.1 before rounds: no "rounds" anywhere.
        let mut v = serde_json::to_value(empty_run()).unwrap();
        v["measurements"] = serde_json::json!([{
            "probe": "a.b", "params": {}, "unit": "ns", "status": "ok", "samples": [1.0, 2.0],
            "median": 1.5, "mean": 1.5, "stddev": 0.7, "min": 1.0, "max": 2.0, "cv": 0.47,
            "ci95": [1.0, 2.0], "ci_level": 0.5, "outliers": [], "iterations": 10,
            "counters": {}, "interference": {"irq_timer": 0, "irq_other": 0, "csw_voluntary": 0,
            "csw_involuntary": 0, "steal_ms": 0.0, "disturbed_samples": 0}
        }]);
        assert!(v["options"].get("rounds").is_none());
        let run: Run = serde_json::from_value(v).unwrap();
        assert_eq!(run.options.rounds, 0);
        assert!(run.measurements[0].rounds.is_empty());
        assert!(run.measurements[0].round_values().is_empty());
    }

    #[test]
    fn measurement_round_trips_through_json() {
        let mut m = Measurement::not_measured(
            "a.b",
            Params::new(),
            Unit::Nanoseconds,
            Status::Ok,
            "x".into(),
        );
        m.summary = Some(Summary {
            median: 3.0,
            ci95: [2.0, 4.0],
            ..Default::default()
        });
        m.samples = vec![2.0, 3.0, 4.0];
        m.rounds = vec![
            RoundValue {
                round: 0,
                position: 4,
                value: 2.5,
                samples: 2,
                iterations: 100,
                cut_short: false,
            },
            RoundValue {
                round: 1,
                position: 9,
                value: 4.0,
                samples: 1,
                iterations: 100,
                cut_short: true,
            },
        ];
        m.counters.kernel.insert("instructions".into(), 10.0);
        let mut run = empty_run();
        run.measurements.push(m);
        let text = serde_json::to_string(&run).unwrap();
        let back: Run = serde_json::from_str(&text).unwrap();
        assert_eq!(back, run);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        // Summary fields sit on the measurement itself, as the run schema says.
        assert_eq!(v["measurements"][0]["median"], 3.0);
        assert_eq!(v["measurements"][0]["ci95"][1], 4.0);
    }
}
