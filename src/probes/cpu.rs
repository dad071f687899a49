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

/// Instructions a timed chunk of the mix runs at least (about a third of a millisecond): long
/// next to the cost of reading the thread's CPU clock, short next to a scheduler's time slice, so
/// most chunks run whole between two switches even when another task shares the CPU.
const CHUNK_INSTRUCTIONS: f64 = 1e6;

/// Runs whole passes of the mix, as many as the instruction budget of the operations asked for
/// allows; what a sample leaves over (less than one pass) is carried to the next, so over a sample
/// of thousands of passes the count is exact to a fraction of a pass.
///
/// The yardstick of every CPU-relative figure must not move with the machine's other work, so a
/// sample is not timed by the wall clock: it runs in chunks of whole cycles of the mix's variants,
/// each timed by the thread's own CPU clock (time another task had the CPU is not in it), and the
/// sample's figure is the fastest chunk's (what a chunk that shared its caches and its core with
/// a switch lost is not in it either).
struct Reference {
    mix: mix::Mix,
    instructions_per_pass: f64,
    instructions_per_op: f64,
    owed: f64,
    checksum: u64,
    /// The last sample's time from its fastest chunk, for the harness (see `timed_ns`).
    timed: Option<u64>,
}

impl Reference {
    fn new(c: calibrate::Calibration, per_op: u64) -> Reference {
        Reference {
            mix: mix::Mix::new(),
            instructions_per_pass: c.instructions_per_pass,
            instructions_per_op: per_op as f64,
            owed: 0.0,
            checksum: 0,
            timed: None,
        }
    }

    /// Passes of one timed chunk: whole cycles of the variants, so every chunk runs the same mix
    /// of inputs whatever pass it starts at.
    fn chunk_passes(&self) -> u64 {
        let cycle = mix::VARIANTS as f64 * self.instructions_per_pass;
        mix::VARIANTS * ((CHUNK_INSTRUCTIONS / cycle).ceil() as u64).max(1)
    }
}

/// CPU time of the calling thread, ns.
fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

impl Workload for Reference {
    fn run(&mut self, iters: u64) -> Result<()> {
        self.owed += iters as f64 * self.instructions_per_op;
        let passes = (self.owed / self.instructions_per_pass).floor();
        self.owed -= passes * self.instructions_per_pass;
        let chunk = self.chunk_passes();
        let (mut left, mut fastest, mut total) = (passes as u64, f64::INFINITY, 0u64);
        while left > 0 {
            let n = left.min(chunk);
            let t0 = thread_cpu_ns();
            self.checksum ^= mix::cpu_mix_count_region(&mut self.mix, n);
            let took = thread_cpu_ns().saturating_sub(t0);
            if n == chunk {
                fastest = fastest.min(took as f64 / n as f64);
            }
            total += took;
            left -= n;
        }
        // Less than a whole chunk (while calibrating): all the passes' CPU time.
        let per_pass = if fastest.is_finite() {
            fastest
        } else {
            total as f64 / passes.max(1.0)
        };
        self.timed = (passes > 0.0).then(|| {
            (per_pass * iters as f64 * self.instructions_per_op / self.instructions_per_pass)
                .round() as u64
        });
        Ok(())
    }
    fn timed_ns(&mut self) -> Option<u64> {
        self.timed.take()
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

    #[test]
    fn a_sample_is_timed_by_its_fastest_chunk_of_whole_variant_cycles() {
        // The mechanics do not need the true count (callgrind cannot count a test harness).
        let per_pass = 5000.0;
        let c = calibrate::Calibration {
            instructions_per_pass: per_pass,
            method: calibrate::Method::Callgrind,
        };
        let mut r = Reference::new(c, 1000);
        assert_eq!(r.chunk_passes() % mix::VARIANTS, 0);
        assert!(r.chunk_passes() as f64 * per_pass >= CHUNK_INSTRUCTIONS);
        // Ten chunks' worth of operations.
        let iters = (10.0 * r.chunk_passes() as f64 * per_pass / 1000.0) as u64;
        let t0 = thread_cpu_ns();
        r.run(iters).unwrap();
        let spent = thread_cpu_ns() - t0;
        let timed = r.timed_ns().expect("a time for the sample");
        // The fastest chunk, scaled to the whole sample, is no more than all the CPU time spent.
        assert!(timed > 0 && timed <= spent, "{timed} of {spent}");
        // Taken once: the next sample times itself.
        assert_eq!(r.timed_ns(), None);
    }
}
