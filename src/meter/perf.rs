//! perf_event counter groups. (Placeholder API; the full implementation lands with the meter work.)

use super::CounterReading;
use std::collections::BTreeMap;

/// The open counters of the calling thread.
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

    pub fn read(&mut self) -> CounterReading {
        CounterReading::default()
    }

    /// Event name (`user:cycles`, `software:page-faults`, ...) to the reason it is not counted.
    pub fn unavailable(&self) -> &BTreeMap<String, String> {
        &self.unavailable
    }
}
