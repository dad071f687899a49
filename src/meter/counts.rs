//! What the harness counts around a sample, in the shape it is stored: counter values per operation
//! by privilege level, and the interference one sample saw.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Counter values per operation, by event name.
pub type CounterValues = BTreeMap<String, f64>;

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

    /// Another task took the CPU from the measuring thread, or the hypervisor took time: for a
    /// workload that runs alone and never blocks, the sample holds time that was not its own.
    pub fn preempted(&self) -> bool {
        self.csw_involuntary > 0 || self.steal_ms > 0.0
    }
}
