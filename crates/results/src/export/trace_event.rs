//! A run's timeline as Chrome trace-event JSON (the "JSON Object Format" of the Trace Event Format
//! document), which Perfetto's UI and trace processor and chrome://tracing load: complete events
//! (`ph: "X"`, `ts`/`dur` in microseconds) on tracks named by metadata events (`ph: "M"`), one
//! process per group of tracks (a CPU) and one thread per track.

use super::{ExportOptions, Exporter, Needs};
use crate::results::model::{Run, RunKind};
use crate::results::timeline::{Slice, Timeline};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};

pub struct TraceEvent;

impl Exporter for TraceEvent {
    fn name(&self) -> &'static str {
        "trace-event"
    }

    fn needs(&self) -> Option<Needs> {
        Some(Needs {
            what: "a timeline of late wakes (`osmeter latency --trace`)",
            kinds: &[RunKind::Latency],
        })
    }

    fn write(&self, run: &Run, _: &ExportOptions, out: &mut dyn Write) -> io::Result<()> {
        let timeline = run
            .sections
            .of_kind(run.kind())
            .ok_or_else(|| format!("it holds no {} document", run.kind()))
            .and_then(|doc| doc.timeline())
            .map_err(|why| io::Error::other(format!("run {} has no timeline: {why}", run.id)))?;
        serde_json::to_writer(&mut *out, &file(&timeline, &run.id))?;
        writeln!(out)
    }
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct File {
    pub trace_events: Vec<Event>,
    /// How chrome://tracing shows times; the values stay microseconds.
    pub display_time_unit: &'static str,
    pub other_data: OtherData,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct OtherData {
    pub run: String,
    pub exporter: String,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Event {
    pub name: String,
    /// "X" a complete event, "M" metadata.
    pub ph: &'static str,
    pub pid: u32,
    pub tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cat: Option<String>,
    /// Microseconds, with the nanoseconds as the fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dur: Option<f64>,
    pub args: BTreeMap<String, String>,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

fn metadata(name: &str, pid: u32, tid: u32, value: String) -> Event {
    Event {
        name: name.into(),
        ph: "M",
        pid,
        tid,
        cat: None,
        ts: None,
        dur: None,
        args: BTreeMap::from([("name".to_string(), value)]),
    }
}

pub fn file(timeline: &Timeline, run_id: &str) -> File {
    let mut events = Vec::new();
    let mut groups: Vec<&str> = Vec::new();
    for (i, track) in timeline.tracks.iter().enumerate() {
        // Ids from 1: viewers treat 0 as "no process" or the idle thread.
        let pid = match groups.iter().position(|g| *g == track.group) {
            Some(at) => at as u32 + 1,
            None => {
                groups.push(&track.group);
                let pid = groups.len() as u32;
                events.push(metadata("process_name", pid, 0, track.group.clone()));
                pid
            }
        };
        let tid = i as u32 + 1;
        events.push(metadata("thread_name", pid, tid, track.name.clone()));
        for s in nested(&track.slices) {
            events.push(Event {
                name: s.name,
                ph: "X",
                pid,
                tid,
                cat: Some(s.category),
                ts: Some(us(s.start_ns)),
                dur: Some(us(s.dur_ns)),
                args: s.args,
            });
        }
    }
    File {
        trace_events: events,
        display_time_unit: "ns",
        other_data: OtherData {
            run: run_id.to_string(),
            exporter: format!("osmeter {}", env!("CARGO_PKG_VERSION")),
        },
    }
}

/// The slices in start order, each cut to end inside the slice it starts in: viewers stack the
/// slices of one thread by time and misdraw (or drop) one that overlaps another without nesting.
/// A slice cut so says so in its args.
pub fn nested(slices: &[Slice]) -> Vec<Slice> {
    let mut sorted: Vec<Slice> = slices.to_vec();
    // Outer first where two start together.
    sorted.sort_by(|a, b| a.start_ns.cmp(&b.start_ns).then(b.dur_ns.cmp(&a.dur_ns)));
    let mut open: Vec<u64> = Vec::new();
    for s in &mut sorted {
        while open.last().is_some_and(|&end| end <= s.start_ns) {
            open.pop();
        }
        let end = s.start_ns + s.dur_ns;
        if let Some(&outer) = open.last() {
            if end > outer {
                s.dur_ns = outer - s.start_ns;
                s.args.insert(
                    "cut".into(),
                    format!(
                        "ended {:.3} us after the slice it starts in",
                        us(end - outer)
                    ),
                );
            }
        }
        open.push(s.start_ns + s.dur_ns);
    }
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::timeline::Track;
    use proptest::prelude::*;

    fn slice(name: &str, start_ns: u64, dur_ns: u64) -> Slice {
        Slice {
            name: name.into(),
            category: "test".into(),
            start_ns,
            dur_ns,
            args: BTreeMap::new(),
        }
    }

    #[test]
    fn tracks_become_named_threads_of_named_processes() {
        let timeline = Timeline {
            tracks: vec![
                Track {
                    group: "CPU 1".into(),
                    name: "late wakes".into(),
                    slices: vec![slice("wake", 1_000, 2_500), slice("irq", 1_500, 500)],
                },
                Track {
                    group: "CPU 0".into(),
                    name: "late wakes".into(),
                    slices: vec![],
                },
                Track {
                    group: "CPU 1".into(),
                    name: "other".into(),
                    slices: vec![],
                },
            ],
        };
        let v = serde_json::to_value(file(&timeline, "r1")).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        let names: Vec<(String, u64, u64, String)> = events
            .iter()
            .map(|e| {
                (
                    e["ph"].as_str().unwrap().to_string(),
                    e["pid"].as_u64().unwrap(),
                    e["tid"].as_u64().unwrap(),
                    e["name"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let row =
            |ph: &str, pid: u64, tid: u64, name: &str| (ph.to_string(), pid, tid, name.to_string());
        assert_eq!(
            names,
            vec![
                row("M", 1, 0, "process_name"),
                row("M", 1, 1, "thread_name"),
                row("X", 1, 1, "wake"),
                row("X", 1, 1, "irq"),
                row("M", 2, 0, "process_name"),
                row("M", 2, 2, "thread_name"),
                row("M", 1, 3, "thread_name"),
            ]
        );
        assert_eq!(events[0]["args"]["name"], "CPU 1");
        assert_eq!(events[2]["ts"], 1.0);
        assert_eq!(events[2]["dur"], 2.5);
        assert_eq!(events[3]["cat"], "test");
        assert!(events[0].get("ts").is_none(), "metadata has no time");
        assert_eq!(v["otherData"]["run"], "r1");
    }

    #[test]
    fn a_slice_that_outlasts_its_parent_is_cut_to_it_and_says_so() {
        let out = nested(&[
            slice("task", 100, 50),
            slice("wake", 0, 200),
            slice("irq", 140, 30),
            slice("after", 200, 10),
        ]);
        let got: Vec<(&str, u64, u64)> = out
            .iter()
            .map(|s| (s.name.as_str(), s.start_ns, s.dur_ns))
            .collect();
        assert_eq!(
            got,
            [
                ("wake", 0, 200),
                ("task", 100, 50),
                ("irq", 140, 10),
                ("after", 200, 10)
            ]
        );
        assert!(out[2].args["cut"].contains("0.020 us"));
        assert!(!out[1].args.contains_key("cut"));
    }

    proptest! {
        /// Whatever the slices, those written nest: two of a track are apart or one holds the
        /// other; none is lost, and none grows.
        #[test]
        fn written_slices_always_nest(
            raw in prop::collection::vec((0u64..1000, 0u64..400), 0..40)
        ) {
            let slices: Vec<Slice> = raw.iter().map(|&(s, d)| slice("s", s, d)).collect();
            let out = nested(&slices);
            prop_assert_eq!(out.len(), slices.len());
            for (i, a) in out.iter().enumerate() {
                for b in &out[i + 1..] {
                    let (a0, a1, b0, b1) = (a.start_ns, a.start_ns + a.dur_ns, b.start_ns, b.start_ns + b.dur_ns);
                    let apart = a1 <= b0 || b1 <= a0;
                    let a_holds_b = a0 <= b0 && b1 <= a1;
                    let b_holds_a = b0 <= a0 && a1 <= b1;
                    prop_assert!(apart || a_holds_b || b_holds_a, "{:?} and {:?}", (a0, a1), (b0, b1));
                }
            }
            let total = |v: &[Slice]| v.iter().map(|s| s.dur_ns).sum::<u64>();
            prop_assert!(total(&out) <= total(&slices));
        }
    }
}
