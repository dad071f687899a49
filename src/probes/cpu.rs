//! A CPU-bound reference, so OS figures can be set against how fast the processor itself is
//! (the papers' "relative to MIPS" columns): an integer mix whose instructions are counted, so its
//! speed is a MIPS figure of the same kind as the ratings Ousterhout gave his machines.

pub mod calibrate;
mod mix;

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
        summary: "CPU-bound reference: time of 1000 instructions of an integer mix (LZ compression, \
                  sorting, hashing, a bytecode interpreter) in the first-level caches; MIPS = 10^6 / \
                  figure. The mix's instructions per pass are counted once per osmeter build by callgrind \
                  (or the hardware counter)",
        params: "instructions: instructions per operation (1000)",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Ousterhout89, Origin::Osmeter],
        variants: |_| vec![crate::params![("instructions", INSTRUCTIONS_PER_OP)]],
        build: |_, p| {
            let per_op = super::util::param_u64(p, "instructions")?;
            if !(100..=1_000_000_000).contains(&per_op) {
                anyhow::bail!(
                    "instructions={per_op}: an operation must be 100 to 10^9 instructions of the mix"
                );
            }
            Ok(match calibrate::instructions_per_pass() {
                Ok(c) => Built::Ready(Box::new(Reference::new(c, per_op))),
                Err(why) => Built::Skip(why),
            })
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

/// Instructions of the mix that make one operation of `cpu.reference`: small enough that a figure
/// in nanoseconds reads as "costs as much as N thousand instructions", large enough to time.
pub const INSTRUCTIONS_PER_OP: u64 = 1000;

/// Runs whole passes of the mix, as many as the instruction budget of the operations asked for
/// allows; what a sample leaves over (less than one pass) is carried to the next, so over a sample
/// of thousands of passes the count is exact to a fraction of a pass.
struct Reference {
    mix: mix::Mix,
    instructions_per_pass: f64,
    instructions_per_op: f64,
    owed: f64,
    checksum: u64,
}

impl Reference {
    fn new(c: calibrate::Calibration, per_op: u64) -> Reference {
        Reference {
            mix: mix::Mix::new(),
            instructions_per_pass: c.instructions_per_pass,
            instructions_per_op: per_op as f64,
            owed: 0.0,
            checksum: 0,
        }
    }
}

impl Workload for Reference {
    fn run(&mut self, iters: u64) -> Result<()> {
        self.owed += iters as f64 * self.instructions_per_op;
        let passes = (self.owed / self.instructions_per_pass).floor();
        self.owed -= passes * self.instructions_per_pass;
        self.checksum ^= mix::cpu_mix_count_region(&mut self.mix, passes as u64);
        Ok(())
    }
    /// The loop runs over passes, not operations: there is no per-operation loop turn to remove.
    fn subtract_loop_overhead(&self) -> bool {
        false
    }
}

/// The hidden `osmeter cpu-mix --cycles N`: what callgrind counts.
pub fn run_counted_cycles(cycles: u64) -> u64 {
    calibrate::run_counted_cycles(cycles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_paid_in_whole_passes_and_the_rest_carried() {
        let c = calibrate::Calibration {
            instructions_per_pass: 2500.0,
            method: calibrate::Method::Callgrind,
        };
        let mut r = Reference::new(c, 1000);
        r.run(2).unwrap(); // 2000 instructions: no whole pass yet
        assert_eq!(r.owed, 2000.0);
        r.run(3).unwrap(); // 5000: two passes
        assert_eq!(r.owed, 0.0);
        r.run(7).unwrap(); // 7000: two passes, 2000 left
        assert_eq!(r.owed, 2000.0);
    }
}
