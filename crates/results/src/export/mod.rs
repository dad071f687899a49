//! Exports of a stored run, one format per module behind one trait.

pub mod csv;
pub mod folded;
pub mod json;
pub mod markdown;
pub mod openmetrics;
pub mod pprof;
mod protobuf;
pub mod speedscope;
pub mod trace_event;

use crate::results::model::{Run, RunKind};
use crate::results::profile::Profiles;
use std::io::{self, Write};

#[derive(Debug, Clone, Copy, Default)]
pub struct ExportOptions {
    /// One row per raw sample instead of one per figure (where the format has rows).
    pub samples: bool,
}

pub trait Exporter {
    fn name(&self) -> &'static str;
    /// What a run must hold for this format, when not every run has it.
    fn needs(&self) -> Option<Needs> {
        None
    }
    /// Whether what it writes is binary (kept off a terminal).
    fn binary(&self) -> bool {
        false
    }
    fn write(&self, run: &Run, options: &ExportOptions, out: &mut dyn Write) -> io::Result<()>;
}

/// What a format is made of, and the kinds of run that can hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// What it needs, with the command that takes it.
    pub what: &'static str,
    pub kinds: &'static [RunKind],
}

/// The formats of profiles: only `osmeter run --profile` takes them.
pub const PROFILES: Needs = Needs {
    what: "profiles (`osmeter run --profile` or `osmeter stat --profile`)",
    kinds: &[RunKind::Run, RunKind::Stat],
};

/// Why `format` cannot be written for a run of this kind, naming what it needs and the formats
/// this kind has; None when it can.
pub fn refusal(format: Format, run: &Run) -> Option<String> {
    let kind = run.kind();
    let needs = format.exporter().needs()?;
    if needs.kinds.contains(&kind) {
        return None;
    }
    let has: Vec<String> = Format::ALL
        .iter()
        .filter(|f| f.exporter().needs().is_none_or(|n| n.kinds.contains(&kind)))
        .map(|f| f.exporter().name().to_string())
        .collect();
    let kinds: Vec<&str> = needs.kinds.iter().map(|k| k.as_str()).collect();
    Some(format!(
        "--format {} needs {}, which runs of kind {} have; run {} is of kind {kind}, whose formats are {}",
        format.exporter().name(),
        needs.what,
        kinds.join(", "),
        run.id,
        has.join(", ")
    ))
}

/// The run's profiles, or why it has none (its kind has them, but they were not taken or the
/// kernel refused).
pub fn profiles_of(run: &Run) -> io::Result<&Profiles> {
    let Some(profiles) = &run.profiles else {
        let command = if run.kind() == RunKind::Stat {
            "stat"
        } else {
            "run"
        };
        return Err(io::Error::other(format!(
            "run {} has no profiles: measure with `osmeter {command} --profile ...` to take them",
            run.id
        )));
    };
    if let Some(reason) = &profiles.refused {
        return Err(io::Error::other(format!(
            "run {} has no profiles: {reason}",
            run.id
        )));
    }
    Ok(profiles)
}

/// The export formats, each mapped to its exporter. The command line's `--format` values, with
/// their help and aliases, are the binary's (src/cli/results_args.rs), one for each of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The whole stored document
    Json,
    /// One row per figure (or per sample with --samples)
    Csv,
    /// Tables to paste into a review (`md` too)
    Markdown,
    /// OpenMetrics / Prometheus text exposition (`prometheus` too)
    Openmetrics,
    /// Folded stacks of the run's profiles (`run --profile`), for flamegraph.pl, inferno, speedscope
    Folded,
    /// The run's profiles as gzip-compressed profile.proto, for `go tool pprof`
    Pprof,
    /// The run's profiles in speedscope's JSON file format, one profile per figure
    Speedscope,
    /// A latency run's late wakes (`latency --trace`) as Chrome trace-event JSON, for Perfetto
    /// and chrome://tracing (`perfetto` and `chrome-trace` too)
    TraceEvent,
}

impl Format {
    /// Every format, in the order the command line lists them.
    pub const ALL: [Format; 8] = [
        Format::Json,
        Format::Csv,
        Format::Markdown,
        Format::Openmetrics,
        Format::Folded,
        Format::Pprof,
        Format::Speedscope,
        Format::TraceEvent,
    ];

    pub fn exporter(self) -> Box<dyn Exporter> {
        match self {
            Format::Json => Box::new(json::Json),
            Format::Csv => Box::new(csv::Csv),
            Format::Markdown => Box::new(markdown::Markdown),
            Format::Openmetrics => Box::new(openmetrics::OpenMetrics),
            Format::Folded => Box::new(folded::Folded),
            Format::Pprof => Box::new(pprof::Pprof),
            Format::Speedscope => Box::new(speedscope::Speedscope),
            Format::TraceEvent => Box::new(trace_event::TraceEvent),
        }
    }
}

/// A fixed run used by every exporter's snapshot test.
#[cfg(test)]
pub fn sample_run() -> Run {
    use crate::results::model::{Measurement, Params, Status, Summary, Unit};
    let mut run = crate::results::model::tests::empty_run();
    run.id = "6750a000-0badcafe".into();
    run.suite = Some("quick".into());
    run.fingerprint = crate::results::fingerprint::Fingerprint::from_json(
        serde_json::json!({"hostname": "box", "kernel_release": "6.1.0", "cpu_model": "Test CPU"}),
    );
    let mut null = Measurement::not_measured(
        "syscall.null",
        Params::new(),
        Unit::Nanoseconds,
        Status::Ok,
        String::new(),
    );
    null.reason = None;
    null.samples = vec![190.0, 200.0, 210.0];
    null.summary = Some(Summary {
        median: 200.0,
        mean: 200.0,
        stddev: 10.0,
        min: 190.0,
        max: 210.0,
        cv: 0.05,
        ci95: [190.0, 210.0],
        ci_level: 0.75,
        outliers: vec![],
    });
    null.counters.kernel.insert("instructions".into(), 812.5);
    null.counters.software.insert("page-faults".into(), 0.0);
    let mut copy = Measurement::not_measured(
        "memory.copy",
        Params::new(),
        Unit::BytesPerSecond,
        Status::Ok,
        String::new(),
    );
    copy.reason = None;
    copy.params.insert("size".into(), serde_json::json!(16384));
    copy.params
        .insert("cache".into(), serde_json::json!("hot, \"warm\""));
    copy.samples = vec![1.5e10, 1.6e10];
    copy.summary = Some(Summary {
        median: 1.55e10,
        mean: 1.55e10,
        stddev: 7.07e8,
        min: 1.5e10,
        max: 1.6e10,
        cv: 0.0456,
        ci95: [1.5e10, 1.6e10],
        ci_level: 0.5,
        outliers: vec![],
    });
    let skipped = Measurement::not_measured(
        "ipc.pipe_pingpong",
        [("placement".to_string(), serde_json::json!("cross"))].into(),
        Unit::Nanoseconds,
        Status::Skipped,
        "cross-CPU placement needs two usable CPUs".into(),
    );
    run.measurements = vec![null, copy, skipped];
    run
}

/// Compares exporter output with its snapshot file; `UPDATE_SNAPSHOTS=1` rewrites the file instead.
#[cfg(test)]
pub fn check_snapshot(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/export/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "snapshot {} missing; run with UPDATE_SNAPSHOTS=1",
            path.display()
        )
    });
    assert_eq!(actual, expected, "output differs from snapshot {name}");
}

#[cfg(test)]
pub fn render(e: &dyn Exporter, run: &Run, options: ExportOptions) -> String {
    let mut buf = Vec::new();
    e.write(run, &options, &mut buf).unwrap();
    String::from_utf8(buf).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_kind_run_refuses_the_timeline_and_names_its_formats() {
        let run = sample_run();
        for f in [
            Format::Json,
            Format::Folded,
            Format::Pprof,
            Format::Speedscope,
        ] {
            assert_eq!(refusal(f, &run), None, "{f:?}");
        }
        let why = refusal(Format::TraceEvent, &run).unwrap();
        assert!(why.contains("runs of kind latency have"), "{why}");
        assert!(
            why.ends_with("json, csv, markdown, openmetrics, folded, pprof, speedscope"),
            "{why}"
        );
    }

    #[test]
    fn a_run_without_profiles_says_how_to_take_them() {
        let mut run = sample_run();
        let err = profiles_of(&run).unwrap_err().to_string();
        assert!(err.contains("osmeter run --profile"), "{err}");
        run.profiles = Some(Profiles::refused("perf_event_paranoid is 3".into()));
        let err = profiles_of(&run).unwrap_err().to_string();
        assert!(
            err.ends_with("no profiles: perf_event_paranoid is 3"),
            "{err}"
        );
    }
}
