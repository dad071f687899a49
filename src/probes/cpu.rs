//! A CPU-bound reference, so OS figures can be set against how fast the processor itself is
//! (the papers' "relative to MIPS" columns).

use super::syscall::no_params;
use super::{Built, Origin, ProbeDef};
use crate::harness::Workload;
use crate::results::model::Unit;
use anyhow::Result;

pub const PROBES: &[ProbeDef] = &[
    ProbeDef {
        id: "cpu.null",
        summary: "the null measurement: one turn of the empty timed loop, the harness's own cost (nothing subtracted)",
        params: "",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Chen96],
        variants: no_params,
        build: |_, _| Ok(Built::Ready(Box::new(Null))),
    },
    ProbeDef {
    id: "cpu.reference",
    summary: "CPU-bound reference: 1000 steps of a dependent integer hash, no memory traffic",
    params: "",
    unit: Unit::Nanoseconds,
    origins: &[Origin::Ousterhout89, Origin::Osmeter],
    variants: no_params,
    build: |_, _| {
        Ok(Built::Ready(Box::new(Reference {
            state: 0x9E37_79B9_7F4A_7C15,
        })))
    },
    },
];

/// The harness's empty loop, measured like any operation but with nothing subtracted from it.
struct Null;

impl Workload for Null {
    fn run(&mut self, iters: u64) -> Result<()> {
        crate::harness::NullWorkload.run(iters)
    }
    fn subtract_loop_overhead(&self) -> bool {
        false
    }
}

/// Steps per operation: long enough that the loop itself does not matter.
const STEPS: u64 = 1000;

struct Reference {
    state: u64,
}

impl Workload for Reference {
    fn run(&mut self, iters: u64) -> Result<()> {
        let mut x = self.state;
        for _ in 0..iters {
            for _ in 0..STEPS {
                // xorshift-multiply: each step depends on the last, so the CPU cannot overlap them.
                x ^= x >> 31;
                x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
                x ^= x >> 29;
            }
        }
        self.state = std::hint::black_box(x);
        Ok(())
    }
}
