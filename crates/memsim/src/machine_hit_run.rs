//! The word loop of `Machine::run`: takes packed references while they hit the first level,
//! counting them in registers.

use crate::memsim::cache::{HitView, Level, EMPTY};
use crate::memsim::trace::packed::{
    self, BLOCK_BITS, CLASS_IN_BLOCK, CLASS_KERNEL, CLASS_SIDE, CLASS_UNCACHED, CLASS_WRITE,
};

/// What `hit_run` asks of the machine around the first level.
pub(super) struct Lookups<A, T> {
    /// What keys the current address space in virtually indexed caches.
    pub(super) key: u64,
    /// Some kernel addresses bypass translation or the caches: kernel references stop the run.
    pub(super) kernel_ranges: bool,
    /// The address a word's cache is indexed by, or None to stop at it.
    pub(super) addr_of: A,
    /// Where a write that hits a write-through data cache goes on (see `hit_run`); without it,
    /// such a write stops the run.
    pub(super) through: Option<T>,
}

/// `hit_run` over first-level caches `l1` (one unified, or instruction and data).
#[inline(always)]
pub(super) fn first_level_run(
    l1: &mut [Level],
    words: &[u64],
    lookups: Lookups<impl FnMut(u64) -> Option<u64>, impl FnMut(u64, usize, u64)>,
) -> (usize, PlainHits) {
    match l1 {
        [one] => hit_run(&mut [view(one)], words, lookups),
        [i, d] => hit_run(&mut [view(i), view(d)], words, lookups),
        _ => unreachable!("one or two first-level caches"),
    }
}

/// Takes words from the front of `words` while each is a first-level hit that the general path
/// would count and change in the same way: cached, outside the kernel's special ranges, not a
/// write that goes on to the next level, not kept aside, and one or two lines that are present.
/// Returns how many it took and what they were. `views` holds the instruction then the data
/// cache, or the unified one alone; all are of the current address space.
///
/// With `lookups.through`, a write that hits a write-through data cache is taken too, and
/// `through` gets each line it writes: the first byte written there, the mode, and the
/// instructions taken before it in this run (the clock has not counted them yet).
///
/// The reference that stops it may have been touched in its first line already (when its second
/// missed); that is harmless, because a touch that hits is idempotent: the general path touches
/// the same line again first and finds it as the first touch left it.
#[inline(always)]
fn hit_run<const N: usize>(
    views: &mut [HitView<'_>; N],
    words: &[u64],
    lookups: Lookups<impl FnMut(u64) -> Option<u64>, impl FnMut(u64, usize, u64)>,
) -> (usize, PlainHits) {
    if views.iter().any(|v| v.line_bits != views[0].line_bits) {
        return hit_run_with::<N, false>(views, words, |v| v.line_bits, lookups);
    }
    // One line size for all: a constant of the loop, kept in a register.
    let shift = views[0].line_bits;
    // A reference inside one aligned block is inside one line when lines are no shorter than
    // blocks and the address space's key leaves the offset in a block as it is (a physical
    // address keeps the offset in its page).
    if shift >= BLOCK_BITS && lookups.key & ((1 << BLOCK_BITS) - 1) == 0 {
        hit_run_with::<N, true>(views, words, move |_| shift, lookups)
    } else {
        hit_run_with::<N, false>(views, words, move |_| shift, lookups)
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
    line_bits: impl Fn(&HitView<'_>) -> u32,
    lookups: Lookups<impl FnMut(u64) -> Option<u64>, impl FnMut(u64, usize, u64)>,
) -> (usize, PlainHits) {
    let Lookups {
        kernel_ranges,
        mut addr_of,
        through,
        ..
    } = lookups;
    let mut hits = PlainHits::default();
    // Only data references write; a write-back data cache keeps them, and a write-through one
    // sends each on, to `through` or else to the general path.
    let mut through = through.filter(|_| !views[N - 1].mark_writes());
    // Class bits that send a reference to the general path.
    let stop = CLASS_UNCACHED
        | CLASS_SIDE
        | if kernel_ranges { CLASS_KERNEL } else { 0 }
        | if views[N - 1].mark_writes() || through.is_some() {
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
            if let Some(write_on) = through.as_mut().filter(|_| class & CLASS_WRITE != 0) {
                // Instructions lie in lane 0 (user) and lane 4 (kernel).
                let instructions = hits.by_class[0][0]
                    + hits.by_class[1][0]
                    + (lanes & 0xff)
                    + ((lanes >> 32) & 0xff);
                let mode = ((class >> 2) & 1) as usize;
                write_on(addr, mode, instructions);
                if end != line {
                    write_on(end << bits, mode, instructions);
                }
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
pub(in crate::memsim::machine) struct PlainHits {
    /// By mode then kind (instruction, read, write).
    pub(in crate::memsim::machine) by_class: [[u64; 3]; 2],
    /// References that touched two lines, by mode and cache (instruction, data): each was one
    /// more first-level access.
    pub(in crate::memsim::machine) second_lines: [[u64; 2]; 2],
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
