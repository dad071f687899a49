//! One simulated memory system: caches, write buffer, TLB and page mapping driven by a reference
//! stream, with stall cycles charged to user or system and to a component.
//!
//! Timing is deliberately simple: every instruction fetch is one cycle, and stalls add to that
//! clock. The clock matters only to the write buffer, which drains while the CPU runs.

use super::cache::{CacheConfig, Level, Outcome};
use super::mapping::{Mapper, Mapping};
use super::tlb::{Tlb, TlbConfig};
use super::trace::{Kind, Mode, Ref};
use super::wbuf::{WriteBuffer, WriteBufferConfig};
use serde::{Deserialize, Serialize};

/// Everything that defines a simulated machine; also the format of `--config FILE` (JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    pub name: String,
    /// Instruction cache; absent for a unified first level (`l1d` serves both).
    #[serde(default)]
    pub l1i: Option<CacheConfig>,
    pub l1d: CacheConfig,
    /// Second and further levels, unified, nearest first.
    #[serde(default)]
    pub lower: Vec<CacheConfig>,
    /// Stall cycles of a read that goes to memory.
    pub memory_cycles: u32,
    /// Stall cycles of an uncached read.
    #[serde(default)]
    pub uncached_cycles: u32,
    /// Stall cycles of a write that leaves a write-through cache when there is no write buffer.
    #[serde(default)]
    pub write_cycles: u32,
    #[serde(default)]
    pub write_buffer: Option<WriteBufferConfig>,
    #[serde(default)]
    pub tlb: Option<TlbConfig>,
    pub mapping: Mapping,
    /// Page size of the mapping policy.
    pub page_size: u64,
    /// Kernel virtual ranges [start, end) that bypass translation; physical = virtual - start.
    #[serde(default)]
    pub kernel_unmapped: Vec<(u64, u64)>,
    /// Kernel virtual ranges [start, end) that also bypass the caches.
    #[serde(default)]
    pub kernel_uncached: Vec<(u64, u64)>,
    /// Classify misses into compulsory, capacity and conflict (costs speed).
    #[serde(default)]
    pub three_c: bool,
}

impl MachineConfig {
    pub fn validate(&self) -> Result<(), String> {
        let named = |what: &str, c: &CacheConfig| c.validate().map_err(|e| format!("{what}: {e}"));
        if let Some(c) = &self.l1i {
            named("l1i", c)?;
        }
        named("l1d", &self.l1d)?;
        for (i, c) in self.lower.iter().enumerate() {
            named(&format!("l{}", i + 2), c)?;
        }
        if let Some(t) = &self.tlb {
            t.validate()?;
        }
        if let Some(w) = &self.write_buffer {
            w.validate()?;
        }
        if !self.page_size.is_power_of_two() {
            return Err(format!(
                "page size {} is not a power of two",
                self.page_size
            ));
        }
        Ok(())
    }
}

pub struct Machine {
    pub cfg: MachineConfig,
    /// First-level caches: instruction then data when split, the unified one alone otherwise.
    l1: Vec<Level>,
    /// Index into `l1` for instruction (0) and data (1) references.
    route: [usize; 2],
    lower: Vec<Level>,
    wbuf: Option<WriteBuffer>,
    tlb: Option<Tlb>,
    mapper: Mapper,
    now: u64,
    stats: Stats,
    hits: HitCounts,
    /// References among `hits` that touched a second line, by mode then cache (instruction,
    /// data): one more first-level access each.
    second_lines: [[u64; 2]; 2],
    cur_asid: u32,
    /// What keys the current address space in virtually indexed caches.
    space_key: u64,
    cur_space: SpaceStats,
    victims: Vec<u64>,
    needs_paddr: bool,
    /// Only the first level's accesses and their 3C classes are simulated (`classify`).
    classifying: bool,
    /// The shape admits the hit fast path (no TLB, or one whose hits can be known unchanged).
    fast: bool,
    /// The first-level caches are set-associative with power-of-two sets and ways and have no
    /// 3C shadow, and a TLB, if any, can know its hits: `run` takes its loop over packed words.
    words: bool,
    /// Besides, nothing but the first-level caches is on the hit path (no TLB, no translation):
    /// that loop looks nothing up.
    plain: bool,
    /// Some kernel addresses bypass translation or the caches: kernel references take the
    /// general path.
    kernel_ranges: bool,
}

/// Address-space key mixed into virtual cache addresses, so spaces do not alias.
#[inline(always)]
pub(crate) fn space_key(asid: u32) -> u64 {
    u64::from(asid).rotate_right(16)
}

impl Machine {
    pub fn new(cfg: &MachineConfig) -> Machine {
        let three_c = cfg.three_c;
        let mut stats = Stats::default();
        for m in &mut stats.mode {
            m.lower = vec![CacheCounts::default(); cfg.lower.len()];
        }
        let needs_paddr = cfg
            .l1i
            .iter()
            .chain([&cfg.l1d])
            .chain(&cfg.lower)
            .any(|c| c.physical);
        let mut l1: Vec<Level> = cfg.l1i.iter().map(|c| Level::new(c, three_c)).collect();
        l1.push(Level::new(&cfg.l1d, three_c));
        let route = if l1.len() == 2 { [0, 1] } else { [0, 0] };
        let tlb = cfg.tlb.as_ref().map(Tlb::new);
        let fast = tlb.as_ref().is_none_or(Tlb::has_known_hits);
        let words = fast && l1.iter().all(Level::has_pow2_sets);
        let plain = words && tlb.is_none() && !needs_paddr;
        Machine {
            l1,
            route,
            lower: cfg.lower.iter().map(|c| Level::new(c, three_c)).collect(),
            wbuf: cfg.write_buffer.as_ref().map(WriteBuffer::new),
            fast,
            tlb,
            mapper: Mapper::new(&cfg.mapping, cfg.page_size),
            now: 0,
            stats,
            hits: HitCounts::default(),
            second_lines: Default::default(),
            words,
            plain,
            cur_asid: 0,
            space_key: space_key(0),
            cur_space: SpaceStats::default(),
            victims: Vec::new(),
            needs_paddr,
            classifying: false,
            kernel_ranges: !cfg.kernel_unmapped.is_empty() || !cfg.kernel_uncached.is_empty(),
            cfg: cfg.clone(),
        }
    }

    /// Reads `cycles` from the lower levels and memory for a miss at `addr`; returns the stall
    /// and the part of it spent waiting for the write buffer.
    fn fill(&mut self, mode: usize, addr: u64) -> (u64, u64) {
        for (i, l) in self.lower.iter_mut().enumerate() {
            let line = addr >> l.line_bits();
            let out = l.access(line, false, false, &mut |_| {});
            self.stats.mode[mode].lower[i].count(out, false, l, self.cfg.three_c);
            if out == Outcome::Hit {
                return (u64::from(l.cfg.hit_cycles), 0);
            }
        }
        let mem = u64::from(self.cfg.memory_cycles);
        let wait = match &mut self.wbuf {
            Some(w) => w.read(self.now, mem),
            None => 0,
        };
        if wait > 0 {
            self.stats.mode[mode].wbuf_read_waits += 1;
        }
        (mem, wait)
    }

    /// A write leaving the first level (write-through or a dirty victim); returns its stall.
    fn write_down(&mut self, mode: usize, addr: u64) -> u64 {
        for (i, l) in self.lower.iter_mut().enumerate() {
            let line = addr >> l.line_bits();
            let out = l.access(line, true, true, &mut |_| {});
            self.stats.mode[mode].lower[i].count(out, true, l, self.cfg.three_c);
            if out == Outcome::Hit || l.cfg.write_back {
                // Absorbed by a write-back level.
                return 0;
            }
        }
        match &mut self.wbuf {
            Some(w) => buffer_write(w, &mut self.stats.mode[mode], self.now, addr),
            None => u64::from(self.cfg.write_cycles),
        }
    }

    #[inline]
    fn in_ranges(ranges: &[(u64, u64)], a: u64) -> Option<u64> {
        ranges.iter().find(|r| a >= r.0 && a < r.1).map(|r| r.0)
    }

    /// Simulates one reference.
    #[inline]
    pub fn access(&mut self, r: &Ref) {
        if !(self.fast && self.try_hit(r)) {
            self.access_general(r);
        }
    }

    #[inline(never)]
    fn access_general(&mut self, r: &Ref) {
        let m = r.mode as usize;
        if r.asid != self.cur_asid {
            self.flush_space();
            self.cur_asid = r.asid;
            self.space_key = space_key(r.asid);
        }
        let mut stall = [0u64; 5];
        let write = r.kind == Kind::Write;
        match r.kind {
            Kind::Instr => {
                self.stats.mode[m].instructions += 1;
                self.cur_space.instructions += 1;
                self.now += 1;
            }
            Kind::Read => self.stats.mode[m].reads += 1,
            Kind::Write => self.stats.mode[m].writes += 1,
        }
        let kernel = r.mode == Mode::Kernel;
        let unmapped = self.unmapped_base(r);
        if unmapped.is_none() {
            if let Some(t) = &mut self.tlb {
                self.stats.mode[m].tlb_refs += 1;
                if !t.access(r.asid, r.vaddr, kernel) {
                    self.stats.mode[m].tlb_misses += 1;
                    let c = self.cfg.tlb.as_ref().map_or(0, |c| {
                        if kernel {
                            c.kernel_miss_cycles
                        } else {
                            c.user_miss_cycles
                        }
                    });
                    stall[TLB] += u64::from(c);
                }
            }
        }
        let paddr = self.physical_address(r, unmapped);
        if self.is_uncached(r) {
            self.stats.mode[m].uncached += 1;
            if write {
                let s = self.write_down(m, paddr);
                stall[WBUF] += s;
                self.now += s;
            } else {
                let c = u64::from(self.cfg.uncached_cycles);
                let wait = self.wbuf.as_mut().map_or(0, |w| w.read(self.now, c));
                self.now += wait;
                stall[WBUF] += wait;
                stall[UNCACHED] += c;
            }
            self.charge(m, &stall);
            return;
        }
        let instr = r.kind == Kind::Instr;
        let comp = if instr { ICACHE } else { DCACHE };
        let walk = self.first_level_walk(r, paddr);
        let (li, line_bits, write_back) = (walk.level, walk.line_bits, walk.write_back);
        let mut victims = std::mem::take(&mut self.victims);
        for (line, lo, whole) in walk.lines() {
            let level = &mut self.l1[li];
            let out = level.access(line, write, whole, &mut |v| victims.push(v));
            // A unified first level still reports instruction traffic as icache.
            let counts = if instr {
                &mut self.stats.mode[m].l1i
            } else {
                &mut self.stats.mode[m].l1d
            };
            counts.count(out, write, level, self.cfg.three_c);
            if let Outcome::Miss { fetch: true } = out {
                let (c, wait) = self.fill(m, line << line_bits);
                stall[comp] += c;
                stall[WBUF] += wait;
                self.now += c + wait;
            }
            for v in victims.drain(..) {
                let counts = if instr {
                    &mut self.stats.mode[m].l1i
                } else {
                    &mut self.stats.mode[m].l1d
                };
                counts.writebacks += 1;
                let s = self.write_down(m, v);
                stall[WBUF] += s;
                self.now += s;
            }
            if write && !write_back {
                let s = self.write_down(m, lo);
                stall[WBUF] += s;
                self.now += s;
            }
        }
        self.victims = victims;
        self.charge(m, &stall);
    }

    /// The base of the kernel's unmapped range `r` falls in, if it is a kernel reference there.
    #[inline]
    fn unmapped_base(&self, r: &Ref) -> Option<u64> {
        if r.mode == Mode::Kernel {
            Self::in_ranges(&self.cfg.kernel_unmapped, r.vaddr)
        } else {
            None
        }
    }

    /// The physical address of `r`: from the unmapped range's base, from the trace, or from the
    /// mapping policy (whose first touches happen in reference order on every path).
    #[inline]
    fn physical_address(&mut self, r: &Ref, unmapped: Option<u64>) -> u64 {
        if let Some(base) = unmapped {
            return r.vaddr - base;
        }
        match r.paddr {
            Some(p) => p,
            None if self.needs_paddr => {
                let space = if r.mode == Mode::Kernel {
                    u32::MAX
                } else {
                    r.asid
                };
                self.mapper.translate(space, r.vaddr)
            }
            None => r.vaddr,
        }
    }

    /// Whether `r` bypasses the caches (marked so, or in the kernel's uncached range).
    #[inline]
    fn is_uncached(&self, r: &Ref) -> bool {
        r.uncached
            || (r.mode == Mode::Kernel
                && Self::in_ranges(&self.cfg.kernel_uncached, r.vaddr).is_some())
    }

    /// The first-level cache `r` goes to and the lines it touches there.
    #[inline]
    fn first_level_walk(&self, r: &Ref, paddr: u64) -> Walk {
        let level = self.route[usize::from(r.kind != Kind::Instr)];
        let addr = if self.l1[level].cfg.physical {
            paddr
        } else {
            r.vaddr ^ self.space_key
        };
        self.walk(level, addr, r.size)
    }

    /// The lines an access of `size` bytes at `addr` (as first-level cache `level` indexes it)
    /// touches there.
    #[inline]
    fn walk(&self, level: usize, addr: u64, size: u32) -> Walk {
        let l = &self.l1[level];
        Walk {
            level,
            line_bits: l.line_bits(),
            line_size: u64::from(l.cfg.line),
            write_back: l.cfg.write_back,
            addr,
            // An access running past the top of the address space stops there.
            end: addr.saturating_add(u64::from(size.max(1)) - 1),
        }
    }

    /// A machine that simulates only the first level's accesses and their 3C classes: a 3C
    /// twin. It never reads a TLB or write buffer, so it makes none (a big TLB would be memory
    /// spent twice).
    pub(crate) fn classifier(cfg: &MachineConfig) -> Machine {
        let first_level = MachineConfig {
            tlb: None,
            write_buffer: None,
            ..cfg.clone()
        };
        Machine {
            classifying: true,
            ..Machine::new(&first_level)
        }
    }

    /// Whether this machine only classifies (`classifier`).
    pub(crate) fn is_classifier(&self) -> bool {
        self.classifying
    }

    /// Only the first level's accesses of `r`, counted with their 3C classes: what a 3C twin
    /// (see `sweep::classifier_twins`) does in place of `access`. Stalls, the TLB, the write
    /// buffer and lower levels are not simulated.
    pub(crate) fn classify(&mut self, r: &Ref) {
        if r.asid != self.cur_asid {
            self.cur_asid = r.asid;
            self.space_key = space_key(r.asid);
        }
        let unmapped = self.unmapped_base(r);
        let paddr = self.physical_address(r, unmapped);
        if self.is_uncached(r) {
            return;
        }
        let walk = self.first_level_walk(r, paddr);
        self.classify_walk(
            &walk,
            r.mode as usize,
            r.kind != Kind::Instr,
            r.kind == Kind::Write,
        );
    }

    /// The first-level accesses of `walk`, counted with their 3C classes under `mode` and the
    /// instruction or data counts.
    #[inline]
    fn classify_walk(&mut self, walk: &Walk, mode: usize, data: bool, write: bool) {
        let level = &mut self.l1[walk.level];
        let counts = if data {
            &mut self.stats.mode[mode].l1d
        } else {
            &mut self.stats.mode[mode].l1i
        };
        for (line, _, whole) in walk.lines() {
            let out = level.access(line, write, whole, &mut |_| {});
            counts.count(out, write, level, self.cfg.three_c);
        }
    }

    /// Adds one reference's stalls to the totals. Every path that stalls comes through here,
    /// before `access` returns, so `stall_snapshot` is exact between any two references.
    #[inline]
    fn charge(&mut self, m: usize, stall: &[u64; 5]) {
        let mut total = 0;
        for (s, d) in self.stats.mode[m].stall.iter_mut().zip(stall) {
            *s += d;
            total += d;
        }
        // Time advanced for cache stalls already; TLB and uncached stalls advance it here.
        self.now += stall[TLB] + stall[UNCACHED];
        self.cur_space.stall += total;
        self.stats.refs += 1;
    }

    /// `access` without any shortcut: the general path alone, with every level's memory of its
    /// previous line forgotten first. The fast paths are tested against this.
    #[cfg(test)]
    pub(crate) fn access_reference(&mut self, r: &Ref) {
        for l in self.l1.iter_mut().chain(&mut self.lower) {
            l.forget_last();
        }
        self.access_general(r);
    }

    /// Whether `run` takes this machine's references as packed words (a 3C twin reads them
    /// too).
    pub(crate) fn reads_words(&self) -> bool {
        self.words || self.classifying
    }

    /// Which fast paths this machine's shape takes (for tests that must cover each): the hit
    /// path, the word loop, and the word loop without lookups.
    #[cfg(test)]
    pub(crate) fn fast_paths(&self) -> (bool, bool, bool) {
        (self.fast, self.words, self.plain)
    }

    /// Stall cycles so far by mode (user, kernel) and component (in the order of `COMPONENTS`).
    /// Exact after every `access`, so the difference of two snapshots is what the references
    /// between them cost.
    #[inline]
    pub fn stall_snapshot(&self) -> [[u64; 5]; 2] {
        [self.stats.mode[0].stall, self.stats.mode[1].stall]
    }

    fn flush_space(&mut self) {
        let s = self.stats.by_asid.entry(self.cur_asid).or_default();
        s.instructions += self.cur_space.instructions;
        s.stall += self.cur_space.stall;
        self.cur_space = SpaceStats::default();
    }

    /// The counts so far.
    pub fn stats(&mut self) -> Stats {
        self.flush_space();
        self.stats
            .by_asid
            .retain(|_, s| s.instructions > 0 || s.stall > 0);
        let mut out = self.stats.clone();
        for ((mode, &[i, r, w]), &[i2, d2]) in
            out.mode.iter_mut().zip(&self.hits).zip(&self.second_lines)
        {
            mode.instructions += i;
            mode.reads += r;
            mode.writes += w;
            mode.l1i.accesses += i + i2;
            mode.l1d.accesses += r + w + d2;
            if self.tlb.is_some() {
                mode.tlb_refs += i + r + w;
            }
        }
        out
    }
}

/// A write that leaves a write-through first level straight for write buffer `w` (no level
/// between them), `ahead` cycles after `now`: counted and charged as `write_down` and `charge`
/// charge a write hit, its stall going to the clock and to the write buffer's component.
fn write_through_to_buffer(
    w: &mut WriteBuffer,
    stats: &mut Stats,
    now: &mut u64,
    space: &mut SpaceStats,
    (mode, lo, ahead): (usize, u64, u64),
) {
    let counts = &mut stats.mode[mode];
    let stall = buffer_write(w, counts, *now + ahead, lo);
    counts.stall[WBUF] += stall;
    *now += stall;
    space.stall += stall;
}

/// A write entering write buffer `w` at time `now`, counted in `counts`; returns its stall.
fn buffer_write(w: &mut WriteBuffer, counts: &mut ModeStats, now: u64, addr: u64) -> u64 {
    counts.wbuf_writes += 1;
    let merges = w.merges;
    let stall = w.write(now, addr);
    if stall > 0 {
        counts.wbuf_full_stalls += 1;
    }
    counts.wbuf_merges += w.merges - merges;
    stall
}

/// Where one reference goes in the first level: the cache, its geometry, and the byte range.
struct Walk {
    level: usize,
    line_bits: u32,
    line_size: u64,
    write_back: bool,
    addr: u64,
    end: u64,
}

impl Walk {
    /// Each line touched: its number, the first byte touched in it, and whether the access
    /// covers the whole line.
    fn lines(&self) -> impl Iterator<Item = (u64, u64, bool)> + '_ {
        (self.addr >> self.line_bits..=self.end >> self.line_bits).map(move |line| {
            let start = line << self.line_bits;
            let lo = start.max(self.addr);
            (
                line,
                lo,
                lo == start && self.end - start >= self.line_size - 1,
            )
        })
    }
}

// What a machine counts (by mode, level and component) is its own file, read by the document,
// the intervals and the tests without the simulation around it.
#[path = "machine_counts.rs"]
mod counts;
pub use counts::{CacheCounts, ModeStats, SpaceStats, Stats, CLASSES, COMPONENTS};
use counts::{HitCounts, DCACHE, ICACHE, TLB, UNCACHED, WBUF};

#[path = "machine_fast.rs"]
mod fast;

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "fast_path_tests.rs"]
mod fast_path_tests;
