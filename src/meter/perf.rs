//! perf_event counter groups. (Placeholder API; the full implementation lands with the meter work.)

use super::{CounterReading, Scope};
use std::collections::BTreeMap;

/// Whether one event can be counted here, and if not why (for `osmeter info`).
#[derive(Debug, Clone)]
pub struct EventStatus {
    pub scope: Scope,
    pub name: &'static str,
    pub available: bool,
    /// Why not: "not supported by this CPU or VM", "perf_event_paranoid is 3", "permission denied" ...
    pub reason: Option<String>,
}

/// Tries every event osmeter knows, user and kernel apart, and says which can be opened.
pub fn event_availability() -> Vec<EventStatus> {
    Vec::new()
}

/// The open counters of the calling thread, or of a child process and its descendants.
#[derive(Default)]
pub struct CounterSet {
    unavailable: BTreeMap<String, String>,
}

impl CounterSet {
    /// A set that counts nothing (for `--no-counters` and tests).
    pub fn none() -> Self {
        CounterSet::default()
    }

    /// Opens every event osmeter knows on the calling thread. Never fails: what cannot be opened is
    /// recorded in [`CounterSet::unavailable`] with its reason.
    pub fn open_all() -> Self {
        CounterSet::default()
    }

    /// Opens every event on process `pid` and the children it creates, enabled when it calls exec
    /// (for `osmeter stat`, which holds the child back until the counters are open).
    pub fn open_for_process(_pid: libc::pid_t) -> Self {
        CounterSet::default()
    }

    pub fn read(&mut self) -> CounterReading {
        CounterReading::default()
    }

    /// Event name (`user:cycles`, `software:page-faults`, ...) to the reason it is not counted.
    pub fn unavailable(&self) -> &BTreeMap<String, String> {
        &self.unavailable
    }
}
