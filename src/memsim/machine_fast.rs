//! The fast paths of `Machine`: `run`'s specialised loop for machines whose hit path is only
//! first-level caches, and `access`'s hit path. Both must leave exactly the state and counts the
//! general path would (tested in `fast_path_tests.rs`).

use super::{Machine, WBUF};
use crate::memsim::cache::{HitView, Level, EMPTY};
use crate::memsim::trace::packed::{
    self, Batch, Refs, CLASS_KERNEL, CLASS_SIDE, CLASS_UNCACHED, CLASS_WRITE,
};
use crate::memsim::trace::{Kind, Mode, Ref};

impl Machine {
    /// Simulates references in order; the same as `access` on each, faster.
    pub fn run(&mut self, refs: &[Ref]) {
        self.run_packed(Batch::from_refs(refs).view());
    }

    /// `run` on packed references, as a pass hands them over.
    pub fn run_packed(&mut self, refs: Refs<'_>) {
        if self.plain {
            for (asid, run) in refs.by_space() {
                self.run_plain(asid, run);
            }
        } else {
            for r in refs.iter() {
                self.access(&r);
            }
        }
    }

    /// `run` for the plain shape over references of one address space: `hit_run` takes
    /// references while they hit the first level, and `access_general` takes the one that
    /// stopped it (and switches to the address space first, if need be).
    fn run_plain(&mut self, asid: u32, refs: Refs<'_>) {
        let words = refs.words();
        let mut at = 0;
        while at < words.len() {
            let (taken, hits) = if asid != self.cur_asid {
                (0, PlainHits::default())
            } else {
                let key = self.space_key;
                match self.l1.as_mut_slice() {
                    [one] => hit_run(&mut [view(one)], &words[at..], key, self.kernel_ranges),
                    [i, d] => hit_run(
                        &mut [view(i), view(d)],
                        &words[at..],
                        key,
                        self.kernel_ranges,
                    ),
                    _ => unreachable!("one or two first-level caches"),
                }
            };
            self.add_hits(&hits);
            at += taken;
            if at < words.len() {
                for l in &mut self.l1 {
                    l.forget_last();
                }
                self.access_general(&refs.get(at));
                at += 1;
            }
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
    /// first-level cache within one line and needs nothing from a TLB; a write to a write-through
    /// cache also goes to the write buffer, when nothing lies between them. Returns false, having changed nothing that `access_general` would not
    /// change in the same way, for everything else.
    #[inline(always)]
    pub(super) fn try_hit(&mut self, r: &Ref) -> bool {
        let kernel = r.mode == Mode::Kernel;
        if r.asid != self.cur_asid || r.uncached || (kernel && self.kernel_ranges) {
            return false;
        }
        let data = r.kind != Kind::Instr;
        if let Some(t) = &self.tlb {
            if !t.known_hit(r.asid, r.vaddr, kernel, usize::from(data)) {
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
                    self.mapper
                        .translate_stream(space, r.vaddr, usize::from(data))
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
        let end = addr.wrapping_add(u64::from(r.size.max(1)) - 1) >> line_bits;
        if line != end || !self.l1[li].try_hit(line, write) {
            return false;
        }
        self.hits[r.mode as usize][r.kind as usize] += 1;
        if through {
            // As the general path's `write_down` and `charge` for a write hit: the write
            // buffer's stall goes to the clock and to the write buffer's component.
            let m = r.mode as usize;
            let stall = self.write_down(m, addr);
            self.stats.mode[m].stall[WBUF] += stall;
            self.now += stall;
            self.cur_space.stall += stall;
        }
        let instr = u64::from(!data);
        self.now += instr;
        self.cur_space.instructions += instr;
        self.stats.refs += 1;
        true
    }
}

/// The line a view's previous reference touched (the most recent line of its set, present),
/// and the same line when it is also known to be dirty. A reference to it again within one line
/// is a hit that changes no state (a write only when the line is dirty already): under LRU
/// touching the most recent way moves nothing, and under FIFO or random a hit moves nothing at
/// all. `EMPTY` is the free-way marker and never a line a reference reaches here.
#[derive(Clone, Copy)]
struct Recent {
    line: u64,
    dirty: u64,
}

impl Recent {
    const EMPTY: Recent = Recent {
        line: EMPTY,
        dirty: EMPTY,
    };

    /// After a hit on `line` through `touch` (a write marks it dirty: `hit_run` only takes
    /// writes to levels that mark them).
    #[inline(always)]
    fn touched(&mut self, line: u64, write: bool) {
        if write {
            self.dirty = line;
        } else if self.dirty != line {
            self.dirty = EMPTY;
        }
        self.line = line;
    }
}

/// References that `hit_run` took.
#[derive(Default)]
struct PlainHits {
    /// By mode then kind (instruction, read, write).
    by_class: [[u64; 3]; 2],
    /// References that touched two lines, by mode and cache (instruction, data): each was one
    /// more first-level access.
    second_lines: [[u64; 2]; 2],
}

fn view(l: &mut Level) -> HitView<'_> {
    l.hit_view()
        .expect("the plain shape has power-of-two first levels")
}

/// Takes references from the front of `refs` while each is a first-level hit that the general
/// path would count and change in the same way: the current address space, cached, outside the
/// kernel's special ranges, not a write that goes on to the next level, and one or two lines that
/// are present. Returns how many it took and what they were. `views` holds the instruction then
/// the data cache, or the unified one alone.
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
) -> (usize, PlainHits) {
    let mut hits = PlainHits::default();
    // Counted in registers as sums of class bits (a counter array indexed by class would chain
    // every reference to the previous one's store): kernel, data, write, kernel data and kernel
    // write references; `taken` is the total.
    let (mut kernel, mut data, mut writes, mut kernel_data, mut kernel_writes) = (0, 0, 0, 0, 0);
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
    // What each view was last touched at: within this run only its own references touch a
    // view, so its previous line is still the most recent of its set.
    let mut recent = [Recent::EMPTY; N];
    let mut taken = words.len();
    for (i, &w) in words.iter().enumerate() {
        let class = packed::class(w);
        if class & stop != 0 {
            taken = i;
            break;
        }
        let kind = class & 3;
        let d = usize::from(kind != 0);
        let write = class & CLASS_WRITE != 0;
        let k = (class >> 2) & 1;
        let vi = d.min(N - 1);
        let v = &mut views[vi];
        let addr = packed::vaddr(w) ^ key;
        let line = addr >> v.line_bits;
        let end = addr.wrapping_add(u64::from(packed::size(w).max(1)) - 1) >> v.line_bits;
        let known = if write {
            recent[vi].dirty
        } else {
            recent[vi].line
        };
        if line == end && line == known {
            // The most recent line of its set again: a hit that changes nothing.
        } else if line == end {
            if !v.touch(line, write) {
                taken = i;
                break;
            }
            recent[vi].touched(line, write);
        } else if end == line + 1 && v.touch(line, write) && v.touch(end, write) {
            hits.second_lines[k as usize][d] += 1;
            // `end` was touched last, so it is the most recent of its set (`line` may share it).
            recent[vi] = Recent::EMPTY;
            recent[vi].touched(end, write);
        } else {
            taken = i;
            break;
        }
        let (dd, ww) = (d as u64, u64::from(write));
        kernel += k;
        data += dd;
        writes += ww;
        kernel_data += k & dd;
        kernel_writes += k & ww;
    }
    let total = taken as u64;
    hits.by_class[1] = [
        kernel - kernel_data,
        kernel_data - kernel_writes,
        kernel_writes,
    ];
    let (user, user_data, user_writes) =
        (total - kernel, data - kernel_data, writes - kernel_writes);
    hits.by_class[0] = [user - user_data, user_data - user_writes, user_writes];
    (taken, hits)
}
