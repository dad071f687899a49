//! What the harness counts around a sample, in the shape it is stored: counter values per operation
//! by privilege level, and the interference one sample saw.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Counter values per operation, by event name.
pub type CounterValues = BTreeMap<String, f64>;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct SampleInterference {
    pub irq_timer: u64,
    pub irq_other: u64,
    pub csw_voluntary: u64,
    pub csw_involuntary: u64,
    pub steal_ms: f64,
    /// Time the measuring thread waited, runnable, while another task had its CPU
    /// (/proc/thread-self/schedstat); None where the kernel does not keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_delay_ns: Option<u64>,
}

/// Waiting this long for the CPU in one sample is a disturbance worth a verdict: a tenth of a
/// quick-scale sample. Shorter waits (a kernel worker, a daemon waking for a moment) cost a
/// sample less than its own spread.
pub const LOST_TIME_NS: u64 = 1_000_000;

impl SampleInterference {
    pub fn delta(&self, before: &SampleInterference) -> SampleInterference {
        SampleInterference {
            irq_timer: self.irq_timer.saturating_sub(before.irq_timer),
            irq_other: self.irq_other.saturating_sub(before.irq_other),
            csw_voluntary: self.csw_voluntary.saturating_sub(before.csw_voluntary),
            csw_involuntary: self.csw_involuntary.saturating_sub(before.csw_involuntary),
            steal_ms: (self.steal_ms - before.steal_ms).max(0.0),
            run_delay_ns: match (self.run_delay_ns, before.run_delay_ns) {
                (Some(now), Some(then)) => Some(now.saturating_sub(then)),
                _ => None,
            },
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

    /// The machine took a share of the sample worth judging it by: the hypervisor stole time, or
    /// the thread waited at least [`LOST_TIME_NS`] for its CPU (where the kernel does not say how
    /// long, any preemption counts). A hog on the other CPU pushes the system's daemons onto the
    /// measuring one: they preempt most samples, for a few microseconds each, which is not a busy
    /// machine.
    pub fn lost_time(&self) -> bool {
        self.steal_ms > 0.0
            || match self.run_delay_ns {
                Some(waited) => waited >= LOST_TIME_NS,
                None => self.csw_involuntary > 0,
            }
    }
}
