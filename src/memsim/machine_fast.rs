//! The fast paths of `Machine`: `run`'s specialised loop for machines whose hit path is only
//! first-level caches, and `access`'s hit path. Both must leave exactly the state and counts the
//! general path would (tested in `fast_path_tests.rs`).

use super::{space_key, Machine, Walk, WBUF};
use crate::memsim::cache::{HitView, Level, EMPTY};
use crate::memsim::mapping::Mapper;
use crate::memsim::trace::packed::{
    self, Batch, Refs, BLOCK_BITS, CLASS_IN_BLOCK, CLASS_KERNEL, CLASS_SIDE, CLASS_UNCACHED,
    CLASS_WRITE,
};
use crate::memsim::trace::{Kind, Mode, Ref};

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
        if self.plain {
            return first_level_run(&mut self.l1, words, key, kernel_ranges, move |w| {
                Some(packed::vaddr(w) ^ key)
            });
        }
        let at = self.addressing(asid);
        let tlb = self.tlb.as_ref();
        let mapper = &mut self.mapper;
        first_level_run(&mut self.l1, words, key, kernel_ranges, move |w| {
            let vaddr = packed::vaddr(w);
            let kernel = packed::class(w) & CLASS_KERNEL != 0;
            if tlb.is_some_and(|t| !t.known_hit(asid, vaddr, kernel)) {
                return None;
            }
            Some(at.address(mapper, w))
        })
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
        let three_c = self.cfg.three_c;
        for (i, &w) in refs.words().iter().enumerate() {
            let class = packed::class(w);
            if class & stop != 0 {
                self.classify(&refs.get(i));
                continue;
            }
            let data = class & 3 != 0;
            let write = class & CLASS_WRITE != 0;
            let mode = ((class >> 2) & 1) as usize;
            let li = self.route[usize::from(data)];
            let level = &mut self.l1[li];
            let addr = at.address(&mut self.mapper, w);
            let walk = Walk {
                level: li,
                line_bits: level.line_bits(),
                line_size: u64::from(level.cfg.line),
                write_back: level.cfg.write_back,
                addr,
                end: addr.saturating_add(u64::from(packed::size(w).max(1)) - 1),
            };
            let line = addr >> walk.line_bits;
            // With a 3C shadow, `try_hit` takes only the line touched last.
            if line == walk.end >> walk.line_bits && level.try_hit(line, write) {
                last_line_hits[mode][usize::from(data)] += 1;
                continue;
            }
            // As `classify` does, without building the reference.
            let counts = if data {
                &mut self.stats.mode[mode].l1d
            } else {
                &mut self.stats.mode[mode].l1i
            };
            for (line, _, whole) in walk.lines() {
                let out = level.access(line, write, whole, &mut |_| {});
                counts.count(out, write, level, three_c);
            }
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
        let addr = if physical || self.needs_paddr {
            // Translating here too keeps first-touch mappings in reference order; a second
            // translation of the same page (in `access_general`) changes nothing.
            let paddr = match r.paddr {
                Some(p) => p,
                None if self.needs_paddr => {
                    let space = if kernel { u32::MAX } else { r.asid };
                    self.mapper.translate(space, r.vaddr)
                }
                None => r.vaddr,
            };
            if physical {
                paddr
            } else {
                r.vaddr ^ self.space_key
            }
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
            // As the general path's `write_down` and `charge` for a write hit, line by line:
            // the write buffer's stall goes to the clock and to the write buffer's component.
            let firsts = [addr, end << line_bits];
            for &lo in &firsts[..1 + usize::from(two_lines)] {
                let stall = self.write_down(m, lo);
                self.stats.mode[m].stall[WBUF] += stall;
                self.now += stall;
                self.cur_space.stall += stall;
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

/// Takes words from the front of `words` while each is a first-level hit that the general path
/// would count and change in the same way: cached, outside the kernel's special ranges, not a
/// write that goes on to the next level, not kept aside, and one or two lines that are present.
/// Returns how many it took and what they were. `views` holds the instruction then the data
/// cache, or the unified one alone; all are of the current address space.
///
/// The reference that stops it may have been touched in its first line already (when its second
/// missed); that is harmless, because a touch that hits is idempotent: the general path touches
/// the same line again first and finds it as the first touch left it.
#[inline(always)]
fn hit_run<const N: usize>(
    views: &mut [HitView<'_>; N],
    words: &[u64],
    key: u64,
    kernel_ranges: bool,
    addr_of: impl FnMut(u64) -> Option<u64>,
) -> (usize, PlainHits) {
    if views.iter().any(|v| v.line_bits != views[0].line_bits) {
        return hit_run_with::<N, false>(views, words, kernel_ranges, |v| v.line_bits, addr_of);
    }
    // One line size for all: a constant of the loop, kept in a register.
    let shift = views[0].line_bits;
    // A reference inside one aligned block is inside one line when lines are no shorter than
    // blocks and the address space's key leaves the offset in a block as it is (a physical
    // address keeps the offset in its page).
    if shift >= BLOCK_BITS && key & ((1 << BLOCK_BITS) - 1) == 0 {
        hit_run_with::<N, true>(views, words, kernel_ranges, move |_| shift, addr_of)
    } else {
        hit_run_with::<N, false>(views, words, kernel_ranges, move |_| shift, addr_of)
    }
}

/// `hit_run` over first-level caches `l1` (one unified, or instruction and data).
#[inline(always)]
fn first_level_run(
    l1: &mut [Level],
    words: &[u64],
    key: u64,
    kernel_ranges: bool,
    addr_of: impl FnMut(u64) -> Option<u64>,
) -> (usize, PlainHits) {
    match l1 {
        [one] => hit_run(&mut [view(one)], words, key, kernel_ranges, addr_of),
        [i, d] => hit_run(&mut [view(i), view(d)], words, key, kernel_ranges, addr_of),
        _ => unreachable!("one or two first-level caches"),
    }
}

/// What `hit_run` remembers of the lines the views touched last, by slot: the instruction (or
/// unified) view's line, the data view's line, and the line known dirty in the view that takes
/// writes. Each is the most recent line of its set, present: a reference to it again within one
/// line is a hit that changes no state (a write only when the line is dirty already), since under
/// LRU touching the most recent way moves nothing, and under FIFO or random a hit moves nothing
/// at all. `EMPTY` is the free-way marker and never a line a reference reaches here.
const SLOT_LINE_I: usize = 0;
const SLOT_LINE_D: usize = 1;
const SLOT_DIRTY: usize = 2;

/// The slot a reference of each kind (instruction, read, write) is known by, with two views and
/// with one.
const KNOWN_SLOT: [[usize; 4]; 2] = [
    [SLOT_LINE_I, SLOT_LINE_I, SLOT_DIRTY, SLOT_DIRTY],
    [SLOT_LINE_I, SLOT_LINE_D, SLOT_DIRTY, SLOT_DIRTY],
];

/// References counted in eight 8-bit lanes of one word, one lane per class (kind, and the mode
/// in bit 2): one register instead of a counter per class. Emptied every `LANE_MAX` references.
const LANE_MAX: usize = 255;

#[inline(always)]
fn hit_run_with<const N: usize, const BLOCKS_IN_LINES: bool>(
    views: &mut [HitView<'_>; N],
    words: &[u64],
    kernel_ranges: bool,
    line_bits: impl Fn(&HitView<'_>) -> u32,
    mut addr_of: impl FnMut(u64) -> Option<u64>,
) -> (usize, PlainHits) {
    let mut hits = PlainHits::default();
    // Class bits that send a reference to the general path. Only data references write, and a
    // write-through data cache sends every write on.
    let stop = CLASS_UNCACHED
        | CLASS_SIDE
        | if kernel_ranges { CLASS_KERNEL } else { 0 }
        | if views[N - 1].mark_writes() {
            0
        } else {
            CLASS_WRITE
        };
    let known_slot = &KNOWN_SLOT[N - 1];
    // Within this run only its own references touch a view, so what a slot holds stays the most
    // recent line of its set.
    let mut recent = [EMPTY; 3];
    let mut taken = words.len();
    'chunks: for (c, chunk) in words.chunks(LANE_MAX).enumerate() {
        let mut lanes = 0u64;
        for (j, &w) in chunk.iter().enumerate() {
            let class = packed::class(w);
            if class & stop != 0 {
                taken = c * LANE_MAX + j;
                hits.add_lanes(lanes);
                break 'chunks;
            }
            let kind = (class & 3) as usize;
            let bits = line_bits(&views[usize::from(kind != 0).min(N - 1)]);
            let Some(addr) = addr_of(w) else {
                taken = c * LANE_MAX + j;
                hits.add_lanes(lanes);
                break 'chunks;
            };
            let line = addr >> bits;
            let end = if BLOCKS_IN_LINES && class & CLASS_IN_BLOCK != 0 {
                line
            } else {
                addr.wrapping_add(u64::from(packed::size(w).max(1)) - 1) >> bits
            };
            if (line != end || line != recent[known_slot[kind]])
                && !touch_and_remember(views, &mut recent, &mut hits, class, line, end)
            {
                taken = c * LANE_MAX + j;
                hits.add_lanes(lanes);
                break 'chunks;
            }
            lanes += 1 << ((class & 7) << 3);
        }
        hits.add_lanes(lanes);
    }
    (taken, hits)
}

/// The part of `hit_run` for a reference that is not the line its view touched last: touches
/// its line or two (false, for the general path, when one is absent) and remembers them. Kept out
/// of line, so that the loop around it keeps its own values in registers.
#[inline(never)]
fn touch_and_remember<const N: usize>(
    views: &mut [HitView<'_>; N],
    recent: &mut [u64; 3],
    hits: &mut PlainHits,
    class: u64,
    line: u64,
    end: u64,
) -> bool {
    let d = usize::from(class & 3 != 0);
    let vi = d.min(N - 1);
    let write = class & CLASS_WRITE != 0;
    let v = &mut views[vi];
    let last = if line == end {
        if !v.touch(line, write) {
            return false;
        }
        line
    } else if end == line + 1 && v.touch(line, write) && v.touch(end, write) {
        hits.second_lines[((class >> 2) & 1) as usize][d] += 1;
        // `end` was touched last, so it is the most recent of its set (`line` may share it);
        // nothing is known of `line` any more.
        if recent[SLOT_DIRTY] == line && (N == 1 || d == 1) {
            recent[SLOT_DIRTY] = EMPTY;
        }
        end
    } else {
        return false;
    };
    // The slot of the view's line, and the dirty slot when this view has it.
    if write {
        recent[SLOT_DIRTY] = last;
    } else if (N == 1 || d == 1) && recent[SLOT_DIRTY] != last {
        recent[SLOT_DIRTY] = EMPTY;
    }
    recent[if N == 1 { SLOT_LINE_I } else { vi }] = last;
    true
}

/// References that `hit_run` took.
#[derive(Default)]
pub(super) struct PlainHits {
    /// By mode then kind (instruction, read, write).
    pub(super) by_class: [[u64; 3]; 2],
    /// References that touched two lines, by mode and cache (instruction, data): each was one
    /// more first-level access.
    pub(super) second_lines: [[u64; 2]; 2],
}

impl PlainHits {
    /// Adds counts kept in lanes (see `LANE_MAX`).
    fn add_lanes(&mut self, lanes: u64) {
        for (mode, counts) in self.by_class.iter_mut().enumerate() {
            for (kind, n) in counts.iter_mut().enumerate() {
                *n += (lanes >> ((mode * 4 + kind) * 8)) & 0xff;
            }
        }
    }
}

fn view(l: &mut Level) -> HitView<'_> {
    l.hit_view()
        .expect("the plain shape has power-of-two first levels")
}
