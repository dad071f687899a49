//! The machine's own speed, read between a run's rounds: a short CPU-bound loop and a short
//! memory-bound walk, neither of which enters the kernel. A host that shares its cores, a clock
//! that settles at another frequency or a neighbour that fills the shared cache moves them; an
//! operating-system change does not. Kept with every run, they let a comparison tell "the whole
//! machine was slower" from "the system was slower" without the user selecting `cpu.reference`.
//!
//! Each reading takes a few tens of milliseconds in a fresh measuring process on the measuring
//! CPU, so that it sees what the figures of that round saw.

use serde::{Deserialize, Serialize};
use std::time::Instant;

/// One reading of both yardsticks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct YardstickReading {
    /// Nanoseconds per step of a dependent chain of integer arithmetic (registers only).
    pub cpu_ns: f64,
    /// Nanoseconds per step of a dependent walk through a buffer larger than the caches.
    pub memory_ns: f64,
    /// When it was taken, in milliseconds from the start of the run.
    pub at_ms: u64,
}

/// The readings of one run, in the order they were taken.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Yardstick {
    pub readings: Vec<YardstickReading>,
}

impl Yardstick {
    pub fn cpu(&self) -> Vec<f64> {
        self.readings.iter().map(|r| r.cpu_ns).collect()
    }
    pub fn memory(&self) -> Vec<f64> {
        self.readings.iter().map(|r| r.memory_ns).collect()
    }
}

/// Steps of the CPU loop per repetition: about 0.2 ms on a current core, shorter than a
/// scheduler's time slice, so that the fastest of a few repetitions is one no other process cut
/// into. The yardstick is the machine's speed (its clock, its host, a sibling thread), not how
/// busy it is: that is the run's machine verdict.
const CPU_STEPS: u64 = 1 << 17;
/// The memory walk's buffer: past the last-level cache of the machines osmeter meets (a shared L3
/// of 32 MiB and beyond is rare in one VM; larger buffers cost more to lay out than they add).
const MEMORY_BYTES: usize = 64 << 20;
/// One node per cache line, so every step is a fresh line.
const LINE: usize = 64;
/// Steps of the walk per repetition: about 3 ms at DRAM latency.
const MEMORY_STEPS: usize = 1 << 14;
/// Repetitions of each; the fastest counts (a preemption only ever slows one down).
const CPU_REPETITIONS: usize = 16;
const MEMORY_REPETITIONS: usize = 8;

/// Takes one reading (`at_ms` left at 0 for the caller to set).
pub fn measure() -> YardstickReading {
    let cpu_ns = (0..CPU_REPETITIONS)
        .map(|_| cpu_loop(CPU_STEPS))
        .fold(f64::INFINITY, f64::min);
    let ring = Ring::new(MEMORY_BYTES / LINE);
    let memory_ns = (0..MEMORY_REPETITIONS)
        .map(|_| ring.walk(MEMORY_STEPS))
        .fold(f64::INFINITY, f64::min);
    YardstickReading {
        cpu_ns,
        memory_ns,
        at_ms: 0,
    }
}

/// Nanoseconds per step of a chain in which every step needs the one before (so the compiler
/// cannot fold it and the core cannot overlap steps).
fn cpu_loop(steps: u64) -> f64 {
    let t = Instant::now();
    let mut x = std::hint::black_box(0x9e37_79b9_7f4a_7c15u64);
    for i in 0..steps {
        x = x.wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(i) ^ (x >> 29);
    }
    std::hint::black_box(x);
    t.elapsed().as_nanos() as f64 / steps as f64
}

/// A single cycle through every cache line of a buffer, in a random order (Sattolo's shuffle),
/// so that neither the prefetcher nor the TLB's reach shortens the walk.
struct Ring {
    /// next[i * STRIDE] is the index of the node after node i; the rest of each line is unused.
    next: Vec<u32>,
}

const STRIDE: usize = LINE / std::mem::size_of::<u32>();

impl Ring {
    fn new(nodes: usize) -> Ring {
        let mut order: Vec<u32> = (0..nodes as u32).collect();
        // A fixed seed: the same walk in every reading, so readings differ only by the machine.
        let mut rng = osmeter_stats::rng::Rng::new(0x7961_7264);
        for i in (1..nodes).rev() {
            let j = rng.below(i);
            order.swap(i, j);
        }
        let mut next = vec![0u32; nodes * STRIDE];
        for (i, &to) in order.iter().enumerate() {
            next[i * STRIDE] = to;
        }
        Ring { next }
    }

    /// Nanoseconds per step of `steps` dependent steps from node 0.
    fn walk(&self, steps: usize) -> f64 {
        let t = Instant::now();
        let mut at = 0usize;
        for _ in 0..steps {
            at = self.next[at * STRIDE] as usize;
        }
        std::hint::black_box(at);
        t.elapsed().as_nanos() as f64 / steps as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_is_one_cycle_through_every_node() {
        let ring = Ring::new(1000);
        let mut seen = vec![false; 1000];
        let mut at = 0usize;
        for _ in 0..1000 {
            assert!(!seen[at], "node {at} visited twice before the cycle closed");
            seen[at] = true;
            at = ring.next[at * STRIDE] as usize;
        }
        assert_eq!(at, 0, "the walk returns to its start after every node");
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn a_reading_is_positive_and_finite() {
        let r = YardstickReading {
            cpu_ns: cpu_loop(1 << 12),
            memory_ns: Ring::new(1 << 12).walk(1 << 12),
            at_ms: 0,
        };
        assert!(r.cpu_ns > 0.0 && r.cpu_ns.is_finite(), "{r:?}");
        assert!(r.memory_ns > 0.0 && r.memory_ns.is_finite(), "{r:?}");
    }
}
