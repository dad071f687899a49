//! What a simulated machine counts: references, cache accesses and misses (with their 3C
//! classes), write-buffer and TLB events and stall cycles, by mode (user, kernel), by level and by
//! component, and instructions and stalls by address space. `Machine` fills them in; the
//! document, the intervals and the report read them.

use crate::memsim::cache::{Level, Outcome};
use serde::Serialize;
use std::collections::BTreeMap;

/// Components that stalls are charged to; the indices below name them in `ModeStats::stall`.
pub const COMPONENTS: [&str; 5] = ["icache", "dcache", "wbuffer", "tlb", "uncached"];
pub(super) const ICACHE: usize = 0;
pub(super) const DCACHE: usize = 1;
pub(super) const WBUF: usize = 2;
pub(super) const TLB: usize = 3;
pub(super) const UNCACHED: usize = 4;

#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CacheCounts {
    pub accesses: u64,
    pub misses: u64,
    pub read_misses: u64,
    pub write_misses: u64,
    /// compulsory, capacity, conflict (when classified)
    pub classes: [u64; 3],
    pub writebacks: u64,
}

impl CacheCounts {
    #[inline]
    pub(super) fn count(&mut self, out: Outcome, write: bool, level: &Level, three_c: bool) {
        self.accesses += 1;
        if out != Outcome::Hit {
            self.misses += 1;
            if write {
                self.write_misses += 1;
            } else {
                self.read_misses += 1;
            }
            if three_c {
                self.classes[level.last_class as usize] += 1;
            }
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ModeStats {
    pub instructions: u64,
    pub reads: u64,
    pub writes: u64,
    pub uncached: u64,
    /// Stall cycles by component, in the order of `COMPONENTS`.
    pub stall: [u64; 5],
    pub l1i: CacheCounts,
    pub l1d: CacheCounts,
    pub lower: Vec<CacheCounts>,
    pub tlb_refs: u64,
    pub tlb_misses: u64,
    pub wbuf_writes: u64,
    pub wbuf_full_stalls: u64,
    pub wbuf_read_waits: u64,
    /// Writes that merged into a waiting write-buffer entry.
    pub wbuf_merges: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SpaceStats {
    pub instructions: u64,
    pub stall: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Stats {
    /// Indexed by `Mode`: user, kernel.
    pub mode: [ModeStats; 2],
    pub by_asid: BTreeMap<u32, SpaceStats>,
    pub refs: u64,
}

/// References that took a hit fast path, by mode then kind (instruction, read, write). Each was
/// one first-level access (and one TLB reference when there is a TLB) that hit; `Machine::stats`
/// adds them in.
pub(super) type HitCounts = [[u64; 3]; 2];

/// Miss class names in the order of `CacheCounts::classes`.
pub const CLASSES: [&str; 3] = ["compulsory", "capacity", "conflict"];
