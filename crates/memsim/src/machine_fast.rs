//! The fast paths of `Machine`: `run`'s loop over packed words for machines whose first level
//! it can read directly (with the TLB and mapping looked up in the loop when there are any), the
//! 3C twin's loop, and `access`'s hit path. All must leave exactly the state and counts the
//! general path would (tested in `fast_path_tests.rs`).

use super::{space_key, write_through_to_buffer, Machine};
use crate::memsim::mapping::Mapper;
use crate::memsim::trace::packed::{
    self, Batch, Refs, CLASS_KERNEL, CLASS_SIDE, CLASS_UNCACHED, CLASS_WRITE,
};
use crate::memsim::trace::{Kind, Mode, Ref};
use hit_run::{first_level_run, Lookups, PlainHits};

impl Machine {
    /// Simulates references in order; the same as `access` on each, faster.
    pub fn run(&mut self, refs: &[Ref]) {
        self.run_packed(Batch::from_refs(refs).view());
    }

    /// `run` on packed references, as a pass hands them over.
    pub fn run_packed(&mut self, refs: Refs<'_>) {
        if self.is_classifier() {
            if refs.has_paddrs() {
                for r in refs.iter() {
                    self.classify(&r);
                }
            } else {
                for (asid, run) in refs.by_space() {
                    self.classify_words(asid, run);
                }
            }
        } else if self.plain || (self.words && !refs.has_paddrs()) {
            for (asid, run) in refs.by_space() {
                self.run_words(asid, run);
            }
        } else if let Some(whole) = refs.whole() {
            for r in whole {
                self.access(r);
            }
        } else {
            for r in refs.iter() {
                self.access(&r);
            }
        }
    }

    /// `run` over packed references of one address space: `hit_run` takes references while
    /// they hit the first level (and a TLB knows their pages present), and `access` takes the
    /// one that stopped it (and switches to the address space first, if need be).
    fn run_words(&mut self, asid: u32, refs: Refs<'_>) {
        let words = refs.words();
        let mut at = 0;
        while at < words.len() {
            let (taken, hits) = if asid != self.cur_asid {
                (0, PlainHits::default())
            } else {
                self.take_hits(asid, &words[at..])
            };
            self.add_hits(&hits);
            at += taken;
            if at < words.len() {
                for l in &mut self.l1 {
                    l.forget_last();
                }
                self.access(&refs.get(at));
                at += 1;
            }
        }
    }

    /// `hit_run` over this machine's first level, with the address each cache is indexed by:
    /// the virtual one keyed by address space (the plain shape), or the mapping's physical one
    /// when a view is physical. A TLB must know the page present.
    pub(super) fn take_hits(&mut self, asid: u32, words: &[u64]) -> (usize, PlainHits) {
        let key = self.space_key;
        let kernel_ranges = self.kernel_ranges;
        let at = self.addressing(asid);
        // A write through the first level goes straight to the write buffer when no level lies
        // between them: as the general path's `write_down` and `charge` for a write hit, its
        // stall goes to the clock and to the write buffer's component.
        let (stats, now, space) = (&mut self.stats, &mut self.now, &mut self.cur_space);
        let through = match &mut self.wbuf {
            Some(w) if self.lower.is_empty() => Some(move |lo, m, instructions| {
                write_through_to_buffer(w, stats, now, space, (m, lo, instructions));
            }),
            _ => None,
        };
        if self.plain {
            let lookups = Lookups {
                key,
                kernel_ranges,
                addr_of: move |w| Some(packed::vaddr(w) ^ key),
                through,
            };
            return first_level_run(&mut self.l1, words, lookups);
        }
        let tlb = self.tlb.as_ref();
        let mapper = &mut self.mapper;
        let addr_of = move |w| {
            let vaddr = packed::vaddr(w);
            let kernel = packed::class(w) & CLASS_KERNEL != 0;
            if tlb.is_some_and(|t| !t.known_hit(asid, vaddr, kernel)) {
                return None;
            }
            Some(at.address(mapper, w))
        };
        let lookups = Lookups {
            key,
            kernel_ranges,
            addr_of,
            through,
        };
        first_level_run(&mut self.l1, words, lookups)
    }

    /// How the first level of this machine addresses references of `asid`.
    fn addressing(&self, asid: u32) -> Addressing {
        Addressing {
            asid,
            key: self.space_key,
            needs_paddr: self.needs_paddr,
            physical: self.route.map(|l| self.l1[l].cfg.physical),
        }
    }

    /// `classify` over packed references of one address space, with a reference to the line
    /// its cache touched last counted at once: a hit that changes nothing, not even the 3C
    /// shadow.
    fn classify_words(&mut self, asid: u32, refs: Refs<'_>) {
        if asid != self.cur_asid {
            self.cur_asid = asid;
            self.space_key = space_key(asid);
        }
        let at = self.addressing(asid);
        let stop = CLASS_UNCACHED | CLASS_SIDE | if self.kernel_ranges { CLASS_KERNEL } else { 0 };
        // By mode, then cache (instruction, data).
        let mut last_line_hits = [[0u64; 2]; 2];
        for (i, &w) in refs.words().iter().enumerate() {
            let class = packed::class(w);
            if class & stop != 0 {
                self.classify(&refs.get(i));
                continue;
            }
            let data = class & 3 != 0;
            let write = class & CLASS_WRITE != 0;
            let mode = ((class >> 2) & 1) as usize;
            let addr = at.address(&mut self.mapper, w);
            let walk = self.walk(self.route[usize::from(data)], addr, packed::size(w));
            let line = addr >> walk.line_bits;
            // With a 3C shadow, `try_hit` takes only the line touched last.
            if line == walk.end >> walk.line_bits && self.l1[walk.level].try_hit(line, write) {
                last_line_hits[mode][usize::from(data)] += 1;
                continue;
            }
            // As `classify` does, without building the reference.
            self.classify_walk(&walk, mode, data, write);
        }
        for (mode, [i, d]) in self.stats.mode.iter_mut().zip(last_line_hits) {
            mode.l1i.accesses += i;
            mode.l1d.accesses += d;
        }
    }

    /// Adds hits counted as `hit_run` counts them, and brings the clock up to date (the general
    /// path and the write buffer read it).
    fn add_hits(&mut self, hits: &PlainHits) {
        for (counts, new) in self.hits.iter_mut().zip(hits.by_class) {
            for (c, n) in counts.iter_mut().zip(new) {
                *c += n;
            }
        }
        for (extra, new) in self.second_lines.iter_mut().zip(hits.second_lines) {
            for (c, n) in extra.iter_mut().zip(new) {
                *c += n;
            }
        }
        let instrs = hits.by_class[0][0] + hits.by_class[1][0];
        self.now += instrs;
        self.cur_space.instructions += instrs;
        self.stats.refs += hits.by_class.iter().flatten().sum::<u64>();
    }

    /// The common case done quickly: a reference of the current address space that hits its
    /// first-level cache in one line or two and needs nothing from a TLB; a write to a
    /// write-through cache also goes to the write buffer, when nothing lies between them.
    /// Returns false, having changed nothing that `access_general` would not change in the same
    /// way, for everything else.
    #[inline(always)]
    pub(super) fn try_hit(&mut self, r: &Ref) -> bool {
        let kernel = r.mode == Mode::Kernel;
        if r.asid != self.cur_asid || r.uncached || (kernel && self.kernel_ranges) {
            return false;
        }
        let data = r.kind != Kind::Instr;
        if let Some(t) = &self.tlb {
            if !t.known_hit(r.asid, r.vaddr, kernel) {
                return false;
            }
        }
        let write = r.kind == Kind::Write;
        let li = self.route[usize::from(data)];
        let (physical, line_bits, write_back) = {
            let l = &self.l1[li];
            (l.cfg.physical, l.line_bits(), l.cfg.write_back)
        };
        // A write-through write always goes on: the hit path takes it only when it goes
        // straight to the write buffer (no lower level to look up).
        let through = write && !write_back;
        if through && !(self.lower.is_empty() && self.wbuf.is_some()) {
            return false;
        }
        // Translating here too keeps first-touch mappings in reference order; a second
        // translation of the same page (in `access_general`) changes nothing. No kernel range
        // reaches here, so nothing is unmapped.
        let paddr = if physical || self.needs_paddr {
            self.physical_address(r, None)
        } else {
            r.vaddr
        };
        let addr = if physical {
            paddr
        } else {
            r.vaddr ^ self.space_key
        };
        let line = addr >> line_bits;
        // As the general path's walk: an access running past the top stops there.
        let end = addr.saturating_add(u64::from(r.size.max(1)) - 1) >> line_bits;
        let two_lines = end == line + 1;
        // Touching the first line and then finding the second absent is harmless: a touch that
        // hits is idempotent, and the general path touches the first line again first.
        let l1 = &mut self.l1[li];
        if !(line == end || two_lines)
            || !l1.try_hit(line, write)
            || (two_lines && !l1.try_hit(end, write))
        {
            return false;
        }
        let m = r.mode as usize;
        self.hits[m][r.kind as usize] += 1;
        if two_lines {
            self.second_lines[m][usize::from(data)] += 1;
        }
        if through {
            // Line by line, as the general path writes them.
            let w = self
                .wbuf
                .as_mut()
                .expect("a write buffer takes write-through hits");
            let firsts = [addr, end << line_bits];
            for &lo in &firsts[..1 + usize::from(two_lines)] {
                let (stats, now, space) = (&mut self.stats, &mut self.now, &mut self.cur_space);
                write_through_to_buffer(w, stats, now, space, (m, lo, 0));
            }
        }
        let instr = u64::from(!data);
        self.now += instr;
        self.cur_space.instructions += instr;
        self.stats.refs += 1;
        true
    }
}

/// How a machine's first level addresses the references of one address space: by the
/// virtual address keyed by the space, or by the physical one its mapping gives.
#[derive(Clone, Copy)]
struct Addressing {
    asid: u32,
    key: u64,
    needs_paddr: bool,
    /// Whether the cache of instruction and of data references is physical.
    physical: [bool; 2],
}

impl Addressing {
    /// The address the first-level cache of word `w` is indexed by.
    #[inline(always)]
    fn address(&self, mapper: &mut Mapper, w: u64) -> u64 {
        let class = packed::class(w);
        let vaddr = packed::vaddr(w);
        if self.needs_paddr {
            // Translating here too keeps first-touch mappings in reference order; the general
            // path's translation of a reference stopped here changes nothing.
            let space = if class & CLASS_KERNEL != 0 {
                u32::MAX
            } else {
                self.asid
            };
            let paddr = mapper.translate(space, vaddr);
            if self.physical[usize::from(class & 3 != 0)] {
                return paddr;
            }
        }
        vaddr ^ self.key
    }
}

#[path = "machine_hit_run.rs"]
mod hit_run;
