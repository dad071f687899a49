//! The stat document (`osmeter.stat/1`): every run of the command and a summary of every figure,
//! as typed structs stored as they serialise and read back as the same types.

use crate::results::model::CounterScopes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const STAT_SCHEMA: &str = "osmeter.stat/1";

/// What one run of the command measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunRecord {
    pub wall_ns: u64,
    /// CPU time of the command and the descendants it waited for (wait4 rusage).
    pub user_ns: u64,
    pub system_ns: u64,
    pub max_rss_kib: u64,
    pub csw_voluntary: u64,
    pub csw_involuntary: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Whole counts over the run, scaled where the kernel multiplexed them.
    pub counters: CounterScopes,
    /// System-wide, during the run: interrupts on all CPUs and time stolen by the hypervisor.
    pub irq_timer: u64,
    pub irq_other: u64,
    pub steal_ms: f64,
}

impl RunRecord {
    pub fn failed(&self) -> bool {
        self.signal.is_some() || self.exit_code != Some(0)
    }
}

/// The units the stat document states its figures in (stored as written since schema 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum StatUnit {
    #[serde(rename = "ns")]
    Nanoseconds,
    #[serde(rename = "ms")]
    Milliseconds,
    #[serde(rename = "KiB")]
    KiB,
    #[serde(rename = "count")]
    Count,
    #[serde(rename = "ratio")]
    Ratio,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FigureSummary {
    pub unit: StatUnit,
    /// Runs that gave a value for this figure.
    pub n: usize,
    pub mean: f64,
    /// 95 % confidence interval of the mean (Student t).
    pub ci95: [f64; 2],
    pub stddev: f64,
    /// Coefficient of variation, stddev / mean.
    pub cv: f64,
    pub min: f64,
    pub max: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StatDoc {
    pub schema: String,
    pub command: Vec<String>,
    /// Runs asked for; `runs` holds those that happened (fewer after a failure or Ctrl-C).
    pub repeat: usize,
    pub runs: Vec<RunRecord>,
    /// Figure key (`time:wall`, `software:page-faults`, `user:instructions`, ...) to its summary.
    pub summary: BTreeMap<String, FigureSummary>,
    #[serde(default)]
    pub counters_unavailable: BTreeMap<String, String>,
    /// True when some count was extrapolated from time enabled / time running.
    #[serde(default)]
    pub counters_scaled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    pub interrupted: bool,
}
