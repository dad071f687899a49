//! Runs made up for the papers' unit tests: figures with a known median, and a run holding the
//! CPU reference and two of Ousterhout's primitives.

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
    let mut run = crate::results::model::tests::empty_run();
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
