//! Runs made up for the papers' unit tests: figures with a known median, a run holding the CPU
//! reference and two of Ousterhout's primitives, and runs holding the memsim and latency documents
//! the other two papers read.

use crate::latency::accounting::GumbelFit;
use crate::latency::document::{Distribution, Estimate, LatencyDoc, StoredHistogram, StreamDoc};
use crate::latency::threads::{ClassName, Path};
use crate::memsim::document::{AssertionDoc, AssertionVerdict, AssertionsDoc, MemsimDoc, TraceRef};
use crate::params;
use crate::results::model::{Measurement, Params, Run, Status, Summary, Unit};

pub fn measured(probe: &str, params: Params, unit: Unit, median: f64) -> Measurement {
    let mut m = Measurement::not_measured(probe, params, unit, Status::Ok, String::new());
    m.reason = None;
    m.summary = Some(Summary {
        median,
        ci95: [median * 0.9, median * 1.1],
        ..Default::default()
    });
    m
}

/// A run where 1000 instructions of the reference mix take `reference_ns` (so the machine runs
/// 1e6 / reference_ns MIPS), getpid takes `getpid_ns` and an in-cache memcpy moves
/// `copy_bytes_per_s`.
pub fn ousterhout_run(reference_ns: f64, getpid_ns: f64, copy_bytes_per_s: f64) -> Run {
    let mut run = crate::results::fixtures::empty_run();
    run.measurements = vec![
        measured(
            "cpu.reference",
            params![("instructions", 1000)],
            Unit::Nanoseconds,
            reference_ns,
        ),
        measured("syscall.null", Params::new(), Unit::Nanoseconds, getpid_ns),
        measured(
            "memory.copy",
            params![("cache", "hot")],
            Unit::BytesPerSecond,
            copy_bytes_per_s,
        ),
    ];
    run
}

/// A run holding memsim's document of a small synthetic trace on the DECstation 5000/200 preset,
/// with Chen and Bershad's first assertion judged.
pub fn memsim_run() -> Run {
    let cfgs = [crate::memsim::config::preset("ds5000-200").unwrap()];
    let mut synth = crate::memsim::trace::synth::Synth::new(20_000, 1);
    let result = crate::memsim::sweep::simulate(&mut synth, &cfgs, 1).unwrap();
    let trace = TraceRef {
        path: "synth".into(),
        format: None,
    };
    let mut doc = MemsimDoc::new(trace, &cfgs, &result);
    doc.assertions = Some(AssertionsDoc {
        machine: "ds5000-200".into(),
        significant: 0.05,
        assertions: vec![AssertionDoc {
            number: 1,
            assertion: "made up for a test".into(),
            implication: "none".into(),
            verdict: AssertionVerdict::Holds,
            detail: "system MCPI 0.3 against user 0.1".into(),
            figures: [("system_mcpi".to_string(), Some(0.3))].into(),
        }],
        idle_excluded: false,
        variants: Vec::new(),
    });
    let mut run = crate::results::fixtures::empty_run();
    run.sections.put(doc);
    run
}

/// A run holding a latency document whose high and medium classes, on the timer and futex paths,
/// have a Gumbel fit of their one-second maxima at `location_ns`, with a fifth of it as scale.
pub fn latency_run(location_ns: f64) -> Run {
    let mut streams = Vec::new();
    for class in [ClassName::High, ClassName::Medium] {
        for path in [Path::Timer, Path::Futex] {
            streams.push(fitted_stream(class, path, location_ns));
        }
    }
    let mut run = crate::results::fixtures::empty_run();
    run.sections.put(LatencyDoc::for_tests(streams));
    run
}

fn fitted_stream(class: ClassName, path: Path, location_ns: f64) -> StreamDoc {
    StreamDoc {
        class,
        policy: "SCHED_FIFO".into(),
        priority: Some(80),
        path,
        cpu: 1,
        error: None,
        periods_planned: 60_000,
        periods: 60_000,
        woken: 60_000,
        missed: 0,
        measured_s: 60.0,
        cpu_time_ms: 10.0,
        raw: Distribution::default(),
        corrected: Distribution::default(),
        histogram_corrected: StoredHistogram::default(),
        windows: Vec::new(),
        estimate: Estimate::Fitted {
            label: "estimate (Gumbel fit of window maxima)".into(),
            fit: GumbelFit {
                method: "made up".into(),
                window: "1s".into(),
                windows: 60,
                location_ns,
                scale_ns: location_ns / 5.0,
                ks_distance: 0.05,
                estimates: Vec::new(),
            },
        },
        buffers: Vec::new(),
        seconds: Vec::new(),
        stages: None,
        compute: None,
    }
}
