//! Set-associative storage of line (or page) numbers with LRU, FIFO or random replacement, a fully
//! associative LRU store with constant-time updates (used for big fully associative caches and for
//! the 3C shadow), and `Level`, one cache level with its write policy, fetch size and 3C counts.

pub use super::full_lru::{FastHash, FastMap, FullLru, SeenLines};
use super::trace::synth;
use crate::stats::rng::SplitMix64;

/// A free way (no line number is this large in practice).
pub(crate) const EMPTY: u64 = u64::MAX;

/// Set-associative store; within a set, ways are kept most recent (LRU) or newest (FIFO) first.
///
/// Tags are stored inverted (`!key`), so a free way (`EMPTY`) is a zero: a new store is then
/// zeroed memory, which the kernel hands out lazily, and a huge cache costs only the sets a trace
/// fills.
pub struct SetAssoc {
    ways: usize,
    set_mask: u64,
    sets: u64,
    pow2: bool,
    /// Sets and ways are both powers of two: the first way of a set is then at
    /// `(k & set_mask) << way_shift`.
    pow2_ways: bool,
    way_shift: u32,
    tags: Vec<u64>,
    dirty: Vec<bool>,
    repl: Replacement,
    rng: SplitMix64,
}

impl SetAssoc {
    pub fn new(sets: u64, ways: usize, repl: Replacement, seed: u64) -> SetAssoc {
        SetAssoc {
            ways,
            set_mask: sets.wrapping_sub(1),
            sets,
            pow2: sets.is_power_of_two(),
            pow2_ways: sets.is_power_of_two() && ways.is_power_of_two(),
            way_shift: ways.trailing_zeros(),
            tags: vec![!EMPTY; sets as usize * ways],
            dirty: vec![false; sets as usize * ways],
            repl,
            rng: synth::rng(seed),
        }
    }

    #[inline(always)]
    fn base(&self, k: u64) -> usize {
        let set = if self.pow2 {
            k & self.set_mask
        } else {
            k % self.sets
        };
        set as usize * self.ways
    }

    #[inline(always)]
    pub fn touch(&mut self, k: u64, dirty: bool) -> bool {
        let b = self.base(k);
        // The most recent way first: most hits land there, and then nothing moves.
        if self.tags[b] == !k {
            self.dirty[b] |= dirty;
            return true;
        }
        self.ways > 1 && self.touch_older(b, k, dirty)
    }

    /// `touch` for the ways after the first of the set at `b`.
    #[inline(never)]
    fn touch_older(&mut self, b: usize, k: u64, dirty: bool) -> bool {
        let lru = self.repl == Replacement::Lru;
        touch_older(&mut self.tags, &mut self.dirty, b, self.ways, lru, k, dirty)
    }

    pub fn contains(&self, k: u64) -> bool {
        let b = self.base(k);
        self.tags[b..b + self.ways].contains(&!k)
    }

    /// Inserts an absent key; returns the evicted key and whether it was dirty.
    pub fn insert(&mut self, k: u64, dirty: bool) -> Option<(u64, bool)> {
        let b = self.base(k);
        let w = self.ways;
        let victim = if self.repl == Replacement::Random {
            match self.tags[b..b + w].iter().position(|&t| t == !EMPTY) {
                Some(p) => p,
                None => self.rng.scaled(w as u64) as usize,
            }
        } else {
            w - 1
        };
        let old = (!self.tags[b + victim], self.dirty[b + victim]);
        if self.repl == Replacement::Random {
            self.tags[b + victim] = !k;
            self.dirty[b + victim] = dirty;
        } else {
            // Newest at the front: shift the others down over the victim (the last way).
            self.tags[b..b + w].rotate_right(1);
            self.dirty[b..b + w].rotate_right(1);
            self.tags[b] = !k;
            self.dirty[b] = dirty;
        }
        (old.0 != EMPTY).then_some(old)
    }
}

/// `SetAssoc::touch` for the ways after the first of the set that starts at `b`: finds `k`, moves
/// it to the front under LRU, sets its dirty bit if asked; false (nothing changed) when absent.
#[inline(never)]
fn touch_older(
    tags: &mut [u64],
    dirty: &mut [bool],
    b: usize,
    ways: usize,
    lru: bool,
    k: u64,
    mark: bool,
) -> bool {
    let set = &mut tags[b..b + ways];
    let Some(p) = set.iter().position(|&t| t == !k) else {
        return false;
    };
    let mark = dirty[b + p] | mark;
    if lru {
        // Move way p to the front; a short shift beats a general rotation.
        let flags = &mut dirty[b..=b + p];
        for j in (1..=p).rev() {
            set[j] = set[j - 1];
            flags[j] = flags[j - 1];
        }
        set[0] = !k;
        flags[0] = mark;
    } else {
        dirty[b + p] = mark;
    }
    true
}

/// What a hit in a power-of-two set-associative level needs, borrowed out of the level so that a
/// loop over many references keeps it in registers (`Machine::run`'s plain loop). Touching through
/// it is exactly `SetAssoc::touch` with the level's write policy.
pub(crate) struct HitView<'a> {
    tags: &'a mut [u64],
    dirty: &'a mut [bool],
    set_mask: u64,
    way_shift: u32,
    ways: usize,
    lru: bool,
    /// Writes set the dirty bit (a write-back level).
    mark_writes: bool,
    pub line_bits: u32,
}

impl HitView<'_> {
    /// Whether writes set the dirty bit (a write-back level).
    #[inline(always)]
    pub fn mark_writes(&self) -> bool {
        self.mark_writes
    }

    /// Touches `line` as a hit would; false, having changed nothing, when it is absent.
    #[inline(always)]
    pub fn touch(&mut self, line: u64, write: bool) -> bool {
        let mark = write & self.mark_writes;
        let b = ((line & self.set_mask) as usize) << self.way_shift;
        debug_assert!(b < self.tags.len() && self.tags.len() == self.dirty.len());
        // SAFETY: `b` is a set number (at most `set_mask`) times the ways, inside both arrays,
        // which hold `set_mask + 1` sets of `1 << way_shift` ways (checked in `hit_view`).
        if unsafe { *self.tags.get_unchecked(b) } == !line {
            // Stored whether or not it changes (a branch on the kind of reference would be
            // mispredicted as often as reads and writes interleave).
            // SAFETY: as above.
            unsafe { *self.dirty.get_unchecked_mut(b) |= mark };
            true
        } else {
            self.touch_older(b, !line, mark)
        }
    }

    /// `touch` for the ways after the first of the set at `b`, scanned in place (the same as
    /// the store's `touch_older`, without the call).
    #[inline(always)]
    fn touch_older(&mut self, b: usize, want: u64, mark: bool) -> bool {
        let ways = self.ways;
        // SAFETY: a set's ways are inside both arrays (see `touch`).
        let (tags, dirty) = unsafe {
            (
                self.tags.get_unchecked_mut(b..b + ways),
                self.dirty.get_unchecked_mut(b..b + ways),
            )
        };
        let mut p = 1;
        while p < ways && tags[p] != want {
            p += 1;
        }
        if p >= ways {
            return false;
        }
        let mark = dirty[p] | mark;
        if self.lru {
            for j in (1..=p).rev() {
                tags[j] = tags[j - 1];
                dirty[j] = dirty[j - 1];
            }
            tags[0] = want;
            dirty[0] = mark;
        } else {
            dirty[p] = mark;
        }
        true
    }
}

/// Either storage, chosen by geometry.
pub enum Store {
    Set(SetAssoc),
    Full(FullLru),
}

impl Store {
    /// `ways == 0` means fully associative.
    pub fn new(entries: u64, ways: u32, repl: Replacement, seed: u64) -> Store {
        let ways = if ways == 0 { entries } else { u64::from(ways) };
        if ways == entries && repl == Replacement::Lru && entries > 16 {
            Store::Full(FullLru::new(entries as usize))
        } else {
            Store::Set(SetAssoc::new(entries / ways, ways as usize, repl, seed))
        }
    }
    #[inline]
    pub fn touch(&mut self, k: u64, dirty: bool) -> bool {
        match self {
            Store::Set(s) => s.touch(k, dirty),
            Store::Full(f) => f.touch(k, dirty),
        }
    }
    #[inline]
    pub fn contains(&self, k: u64) -> bool {
        match self {
            Store::Set(s) => s.contains(k),
            Store::Full(f) => f.contains(k),
        }
    }
    #[inline]
    pub fn insert(&mut self, k: u64, dirty: bool) -> Option<(u64, bool)> {
        match self {
            Store::Set(s) => s.insert(k, dirty),
            Store::Full(f) => f.insert(k, dirty),
        }
    }
    /// Whether `k` is the most recent (LRU) or newest (FIFO) key of its set.
    #[inline]
    pub fn is_first(&self, k: u64) -> bool {
        match self {
            Store::Set(s) => s.tags[s.base(k)] == !k,
            Store::Full(f) => f.is_first(k),
        }
    }
}

/// Miss classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Compulsory = 0,
    Capacity = 1,
    Conflict = 2,
}

/// What one access to one line did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Hit,
    /// Missed; `fetch` when the block must be read from the next level (false for a write that
    /// does not allocate or that overwrites whole lines of a write-through cache).
    Miss {
        fetch: bool,
    },
}

/// One cache with its policies and optional 3C shadow.
pub struct Level {
    pub cfg: CacheConfig,
    store: Store,
    line_bits: u32,
    fetch_lines: u64,
    shadow: Option<(FullLru, SeenLines)>,
    /// Miss classes of the last miss (valid when 3C is on).
    pub last_class: Class,
    /// The line of this level's previous access when that access left it present and most
    /// recent in its set and in the shadow; `EMPTY` otherwise. Accessing it again is a hit that
    /// changes nothing, except that a write to a write-back level may have to set the dirty bit.
    last: u64,
    /// `last` is known to be dirty already (a write to it needs no store update).
    last_dirty: bool,
}

impl Level {
    pub fn new(cfg: &CacheConfig, three_c: bool) -> Level {
        let lines = cfg.lines();
        Level {
            store: Store::new(lines, cfg.assoc, cfg.replacement, cfg.seed),
            line_bits: cfg.line.trailing_zeros(),
            fetch_lines: u64::from(cfg.fetch_bytes() / cfg.line),
            shadow: three_c.then(|| (FullLru::new(lines as usize), SeenLines::default())),
            last_class: Class::Compulsory,
            last: EMPTY,
            last_dirty: false,
            cfg: cfg.clone(),
        }
    }

    #[inline]
    pub fn line_bits(&self) -> u32 {
        self.line_bits
    }

    /// The hit-only part of `access`: when `line` is present and the access needs no more than
    /// a reordering and a dirty bit (no 3C shadow to update), does that and returns true;
    /// otherwise changes nothing and returns false, leaving the access to `access`.
    #[inline(always)]
    pub fn try_hit(&mut self, line: u64, write: bool) -> bool {
        let mark = write && self.cfg.write_back;
        if line == self.last && (!mark || self.last_dirty) {
            return true;
        }
        if self.shadow.is_some() || !self.store.touch(line, mark) {
            return false;
        }
        self.last = line;
        self.last_dirty = mark;
        true
    }

    /// Whether `hit_view` is available: a set-associative store whose sets and ways are powers of
    /// two, and no 3C shadow.
    pub fn has_pow2_sets(&self) -> bool {
        self.shadow.is_none() && matches!(&self.store, Store::Set(s) if s.pow2_ways)
    }

    /// Forgets the previous line, for users of `hit_view`, which does not keep it.
    #[inline]
    pub fn forget_last(&mut self) {
        self.last = EMPTY;
    }

    /// The hit path of a level where `has_pow2_sets` holds, borrowed for a loop over many
    /// references; `None` otherwise. Touching through it does not keep the previous line: call
    /// `forget_last` before the next `access` or `try_hit`.
    pub(crate) fn hit_view(&mut self) -> Option<HitView<'_>> {
        if self.shadow.is_some() {
            return None;
        }
        let mark_writes = self.cfg.write_back;
        match &mut self.store {
            Store::Set(s) if s.pow2_ways => {
                let len = ((s.set_mask + 1) as usize) << s.way_shift;
                assert!(s.tags.len() == len && s.dirty.len() == len, "set geometry");
                Some(HitView {
                    tags: &mut s.tags,
                    dirty: &mut s.dirty,
                    set_mask: s.set_mask,
                    way_shift: s.way_shift,
                    ways: s.ways,
                    lru: s.repl == Replacement::Lru,
                    mark_writes,
                    line_bits: self.line_bits,
                })
            }
            _ => None,
        }
    }

    /// Accesses one line; dirty victims are passed to `evicted` as line addresses (bytes).
    #[inline]
    pub fn access(
        &mut self,
        line: u64,
        write: bool,
        whole_line: bool,
        evicted: &mut impl FnMut(u64),
    ) -> Outcome {
        let mark = write && self.cfg.write_back;
        if line == self.last && (!mark || self.last_dirty) {
            return Outcome::Hit;
        }
        let hit = self.store.touch(line, mark);
        let shadow_hit = match &mut self.shadow {
            Some((s, _)) => s.touch(line, false),
            None => true,
        };
        let fetch = if !write {
            true
        } else if !self.cfg.write_allocate {
            false
        } else {
            self.cfg.write_back || !whole_line
        };
        let allocate = !write || self.cfg.write_allocate;
        // Lines a miss brings in: the aligned fetch block, or the line alone.
        let single = !fetch || self.fetch_lines == 1;
        // A block of several lines is inserted in address order, so `line` may end up behind
        // its neighbours; only a single inserted line is sure to be the most recent.
        let shadow_mru = shadow_hit || self.shadow.is_none() || (allocate && single);
        let store_mru = hit || (allocate && single);
        if store_mru && shadow_mru {
            self.last = line;
            self.last_dirty = mark;
        } else {
            self.last = EMPTY;
        }
        if !hit {
            if let Some((_, seen)) = &mut self.shadow {
                self.last_class = if seen.insert(line) {
                    Class::Compulsory
                } else if !shadow_hit {
                    Class::Capacity
                } else {
                    Class::Conflict
                };
            }
            if allocate {
                let first = if fetch {
                    line & !(self.fetch_lines - 1)
                } else {
                    line
                };
                let n = if fetch { self.fetch_lines } else { 1 };
                for l in first..first + n {
                    if l == line || !self.store.contains(l) {
                        if let Some((victim, true)) = self.store.insert(l, mark && l == line) {
                            evicted(victim << self.line_bits);
                        }
                    }
                }
            }
        }
        if !shadow_hit && allocate {
            if let Some((s, seen)) = &mut self.shadow {
                let first = if fetch {
                    line & !(self.fetch_lines - 1)
                } else {
                    line
                };
                let n = if fetch { self.fetch_lines } else { 1 };
                for l in first..first + n {
                    if !s.contains(l) {
                        s.insert(l, false);
                    }
                    // Lines brought in by a wider fetch are no longer cold.
                    seen.insert(l);
                }
            }
        }
        if hit {
            Outcome::Hit
        } else {
            Outcome::Miss {
                fetch: allocate && fetch,
            }
        }
    }
}

// A cache's geometry and policy as a machine's configuration states them, and their checks, are
// their own file: presets, --config files, the TLB and the curves read them without the storage.
#[path = "cache_geometry.rs"]
mod geometry;
pub use geometry::{check_ways, CacheConfig, Replacement, MAX_FETCH_LINES, MAX_SEARCHED_WAYS};

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
