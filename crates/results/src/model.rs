//! The run document: what one `osmeter run` produced, in a shape that can be printed, serialised as
//! `osmeter.run/1` JSON and stored unchanged.

pub use crate::results::figure::Role;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const RUN_SCHEMA: &str = "osmeter.run/1";

pub use crate::meter::counts::{CounterScopes, CounterValues, SampleInterference};
pub use crate::results::document::Sections;
pub use crate::stats::summary::Summary;
pub use crate::units::Unit;

/// Parameters of one measurement, e.g. `{"size": 16384, "placement": "cross"}`.
pub type Params = BTreeMap<String, serde_json::Value>;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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
    pub fingerprint: Option<crate::results::fingerprint::Fingerprint>,
    /// Events that could not be counted on this machine, with the reason (once per run, not per figure).
    pub counters_unavailable: BTreeMap<String, String>,
    /// The harness's own cost, subtracted from every figure.
    pub overhead: Option<Overhead>,
    pub measurements: Vec<Measurement>,
    /// True when the run was stopped early (Ctrl-C): what is here was measured, the rest was not.
    pub interrupted: bool,
    /// Results of the other parts of osmeter (latency, memsim, stat), each its own versioned
    /// document with a "schema" key, kept beside the microbenchmark measurements.
    #[serde(default, skip_serializing_if = "Sections::is_empty")]
    pub sections: Sections,
    /// Whether other work disturbed the run, and what; absent in runs stored before it was judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::results::machine::Machine>,
    /// Where each figure's time goes (`run --profile`); absent in runs without profiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiles: Option<crate::results::profile::Profiles>,
    /// The machine's own speed, read between rounds; absent in runs stored before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yardstick: Option<crate::meter::yardstick::Yardstick>,
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
            fingerprint: None,
            counters_unavailable: BTreeMap::new(),
            overhead: None,
            measurements: Vec::new(),
            interrupted: false,
            sections: Sections::default(),
            machine: None,
            profiles: None,
            yardstick: None,
        }
    }

    /// The machine was judged busy during the run.
    pub fn busy(&self) -> bool {
        self.machine.as_ref().is_some_and(|m| m.busy())
    }

    /// The host name from the fingerprint, when it was recorded.
    pub fn host(&self) -> Option<String> {
        self.fingerprint.as_ref()?.hostname.clone()
    }

    /// The class of the machine that took the run, from its fingerprint: CPU model and count,
    /// kernel release and preemption model. A fleet sets hosts of one class against each other;
    /// the store keeps it beside each run (`runs.host_class`).
    pub fn class(&self) -> String {
        machine_class(self.fingerprint.as_ref())
    }

    /// What produced the run: microbenchmarks, or the command whose document it holds.
    pub fn kind(&self) -> RunKind {
        if !self.measurements.is_empty() {
            return RunKind::Run;
        }
        self.sections.first_kind().unwrap_or(RunKind::Run)
    }
}

/// The class of a machine (see [`Run::class`]) from its fingerprint, if one was taken.
pub fn machine_class(fingerprint: Option<&crate::results::fingerprint::Fingerprint>) -> String {
    let Some(f) = fingerprint else {
        return "unknown machine".to_string();
    };
    let or = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".to_string());
    format!(
        "{} x{} | {} | {}",
        or(&f.cpu_model),
        f.cpus_online.map_or("?".to_string(), |n| n.to_string()),
        or(&f.kernel_release),
        or(&f.preempt_model)
    )
}

/// What produced a run. Runs of one kind can be compared with each other.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// `osmeter run`: microbenchmarks.
    Run,
    Stat,
    Latency,
    Memsim,
    /// `osmeter run --guest`: probes counted inside a QEMU guest.
    Guest,
    /// `osmeter ab`: two set-ups of the same probes measured in pairs.
    Ab,
}

impl RunKind {
    /// Every kind, for the checks that none is forgotten where kinds are listed.
    pub const ALL: [RunKind; 6] = [
        RunKind::Run,
        RunKind::Stat,
        RunKind::Latency,
        RunKind::Memsim,
        RunKind::Guest,
        RunKind::Ab,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Run => "run",
            RunKind::Stat => "stat",
            RunKind::Latency => "latency",
            RunKind::Memsim => "memsim",
            RunKind::Guest => "guest",
            RunKind::Ab => "ab",
        }
    }

    pub fn parse(name: &str) -> Option<RunKind> {
        RunKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl std::fmt::Display for RunKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct RunOptions {
    pub probes: Vec<String>,
    pub samples: usize,
    pub min_sample_ms: f64,
    pub warmup_samples: usize,
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority of the measuring thread, when one was asked for.
    pub fifo_priority: Option<i32>,
    /// The run kept the system's address-space randomisation in every measuring process
    /// (`--system-aslr`); otherwise process.fork_exit and process.exec start without it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub system_aslr: bool,
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Overhead {
    /// Fixed cost of one sample (clock and counter reads), nanoseconds.
    pub per_sample_ns: f64,
    /// Cost of one turn of an empty timed loop, nanoseconds.
    pub per_iteration_ns: f64,
    /// Counter deltas of one empty sample, by scope then event.
    pub per_sample_counters: CounterScopes,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Skipped,
    Failed,
}

/// What else happened on the machine while the samples were taken: totals, and each sample's own.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Interference {
    pub irq_timer: u64,
    pub irq_other: u64,
    pub csw_voluntary: u64,
    pub csw_involuntary: u64,
    pub steal_ms: f64,
    /// Samples during which the hypervisor stole time.
    pub disturbed_samples: usize,
    /// Samples of a figure that runs alone (the CPU reference, hardware figures) that another task
    /// preempted, taken again and not kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retaken_samples: usize,
    /// Of those, the ones in which the machine took a share worth judging it by (see
    /// `SampleInterference::lost_time`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retaken_lost_time: usize,
    /// Per kept sample, in the order of `samples`.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub per_sample: Vec<SampleInterference>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Measurement {
    pub probe: String,
    pub params: Params,
    pub unit: Unit,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    /// Per-operation figure of each sample, overhead already subtracted.
    pub samples: Vec<f64>,
    /// The same samples grouped by round, when the run measured in rounds (each in a process of
    /// its own): the variation between rounds is what a comparison with another run must clear.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<Vec<f64>>,
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
    /// What each round gave (its value, the median of `rounds[i]`, and where it ran), in round
    /// order. Empty in runs stored before rounds existed.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub round_values: Vec<RoundValue>,
    /// What the probe measures (an OS primitive, the hardware, the CPU reference, the harness's
    /// own loop), as its registry entry declares.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub role: Option<Role>,
    /// The probe's claims about what one operation costs in counters, checked against what the
    /// counters saw; a check that does not hold means the figure is not what its name says.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub checks: Vec<ClaimCheck>,
    /// Which pages backed a placement-sensitive figure's buffers (2 MiB or 4 KiB); compared only
    /// with runs that had the same. Absent for other figures and in older runs.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pages: Option<crate::meter::pages::Pages>,
}

/// One claim of a probe checked against a figure's counters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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

impl ClaimCheck {
    /// Whether the check is about a software counter (per operation) rather than a condition the
    /// probe checked itself.
    fn is_counter(&self) -> bool {
        crate::meter::perf::events::SOFTWARE_GROUP
            .iter()
            .any(|e| e.name == self.event)
    }

    /// The sentence a reader sees for a check that does not hold.
    pub fn contradiction(&self) -> String {
        let (what, per) = if self.is_counter() {
            ("counters contradict the probe", " per operation")
        } else {
            ("the probe's own check failed", "")
        };
        format!(
            "{what}: {} {}{per} where {}-{} is expected ({})",
            self.event,
            crate::units::compact(self.seen),
            crate::units::compact(self.expected[0]),
            crate::units::compact(self.expected[1]),
            self.why
        )
    }
}

/// What one round of a figure gave: the median of its samples, and where it ran.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct RoundValue {
    /// Round number, from 0.
    pub round: usize,
    /// Place of this round in the run's shuffled order of all rounds, from 0.
    pub position: usize,
    /// Median of the round's samples, in the figure's unit.
    pub value: f64,
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
            rounds: Vec::new(),
            summary: None,
            iterations: 0,
            bytes_per_op: None,
            counters: CounterScopes::default(),
            interference: Interference::default(),
            derived: BTreeMap::new(),
            warnings: Vec::new(),
            round_values: Vec::new(),
            role: None,
            checks: Vec::new(),
            pages: None,
        }
    }

    pub fn label(&self) -> String {
        label(&self.probe, &self.params)
    }

    /// A whole-number parameter of this figure; the error names the figure and the parameter.
    pub fn u64_param(&self, name: &str) -> anyhow::Result<u64> {
        use anyhow::Context;
        crate::results::params::param_u64(&self.params, name).with_context(|| self.label())
    }

    /// A text parameter of this figure; the error names the figure and the parameter.
    pub fn str_param(&self, name: &str) -> anyhow::Result<&str> {
        use anyhow::Context;
        crate::results::params::param_str(&self.params, name).with_context(|| self.label())
    }

    /// Each round's value (the median of its samples), in round order; empty for runs without
    /// rounds.
    pub fn round_medians(&self) -> Vec<f64> {
        self.round_values.iter().map(|r| r.value).collect()
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
    // Shown in tables and messages: a stored probe name or value may hold anything.
    crate::text::escape_controls(&s).into_owned()
}

#[cfg(test)]
pub mod tests {
    use super::*;
    pub use crate::fixtures::empty_run;

    /// A figure measured in rounds, for tests: `rounds[i]` holds round i's samples.
    pub fn in_rounds(probe: &str, rounds: Vec<Vec<f64>>) -> Measurement {
        let mut m = Measurement::not_measured(
            probe,
            Params::new(),
            Unit::Nanoseconds,
            Status::Ok,
            String::new(),
        );
        m.reason = None;
        m.samples = rounds.iter().flatten().copied().collect();
        m.summary = Some(crate::stats::summary::summarize(&m.samples));
        m.rounds = rounds;
        m
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
        assert!(run.measurements[0].round_medians().is_empty());
        assert_eq!(run.measurements[0].role, None);
    }

    #[test]
    fn typed_params_name_the_figure_and_the_parameter() {
        let m = Measurement::not_measured(
            "memory.latency",
            crate::params![("pattern", "random"), ("size", 4096)],
            Unit::Nanoseconds,
            Status::Ok,
            String::new(),
        );
        assert_eq!(m.u64_param("size").unwrap(), 4096);
        assert_eq!(m.str_param("pattern").unwrap(), "random");
        let wrong = format!("{:#}", m.u64_param("pattern").unwrap_err());
        assert!(
            wrong.starts_with("memory.latency pattern=random size=4096: ")
                && wrong.contains("parameter pattern"),
            "{wrong}"
        );
        let missing = format!("{:#}", m.str_param("stride").unwrap_err());
        assert!(missing.contains("parameter stride is missing"), "{missing}");
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
        m.rounds = vec![vec![2.0, 3.0], vec![4.0]];
        m.role = Some(Role::Os);
        m.round_values = vec![
            RoundValue {
                round: 0,
                position: 4,
                value: 2.5,
                iterations: 100,
                cut_short: false,
            },
            RoundValue {
                round: 1,
                position: 9,
                value: 4.0,
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
