//! A timeline a document can be drawn as, for the trace viewers (`export --format trace-event`):
//! tracks, grouped (a CPU and its rows), holding named slices of time that nest. The results layer
//! knows no latency or trace; a document that has a timeline builds one of these.

use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    pub tracks: Vec<Track>,
}

/// One row of slices; tracks of one group are shown together (a process in trace-event terms).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Track {
    /// The group, e.g. "CPU 1"; groups appear in the order their first track does.
    pub group: String,
    pub name: String,
    pub slices: Vec<Slice>,
}

/// A stretch of time. Slices of a track nest by time: one that starts inside another is drawn
/// below it (the writer keeps every slice inside the one it starts in).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Slice {
    pub name: String,
    /// What kind of stretch it is (a viewer can colour or filter by it).
    pub category: String,
    /// From the timeline's origin, whatever it is (the first event drawn).
    pub start_ns: u64,
    pub dur_ns: u64,
    /// Details shown beside the slice.
    pub args: BTreeMap<String, String>,
}
