//! Fully associative LRU storage with constant-time updates (big fully associative caches and
//! TLBs, and the 3C shadow), the set of lines ever seen (compulsory misses), and the fast hash
//! both use.

use super::cache::EMPTY;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Multiplicative hashing is enough for line numbers and much faster than SipHash.
#[derive(Default, Clone, Copy)]
pub struct FastHash(u64);

impl Hasher for FastHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHash>>;

/// Fully associative LRU over `capacity` keys: an open-addressed table (linear probing) whose
/// slots are also the nodes of the recency list. A touch finds its key and relinks it inside the
/// table, so it reaches three cache lines (its slot and its two neighbours in recency), where a
/// map into a separate list reaches seven; this is most of the 3C shadow's cost.
pub struct FullLru {
    slots: Vec<Slot>,
    /// Whether each slot's key is dirty; apart, because the shadow and TLBs never mark one.
    dirty: Vec<bool>,
    /// `slots.len() - 1`; the table is a power of two at most half full.
    mask: usize,
    /// Leading bits of the hash that pick a group of `GROUP` slots (see `home`).
    group_shift: u32,
    len: usize,
    head: u32,
    tail: u32,
    /// The key at the head (most recent), so touching it again needs no search.
    head_key: u64,
    capacity: usize,
}

#[derive(Clone, Copy)]
struct Slot {
    key: u64,
    /// The slot of the next more recent key (`NIL` at the head), or `VACANT`.
    prev: u32,
    /// The slot of the next less recent key (`NIL` at the tail).
    next: u32,
}

const NIL: u32 = u32::MAX - 1;
const VACANT: u32 = u32::MAX;
const FREE: Slot = Slot {
    key: 0,
    prev: VACANT,
    next: NIL,
};
/// Consecutive keys (neighbouring lines) share a group of slots, one cache line of the table,
/// when nothing collides; groups are placed by a multiplicative hash.
const GROUP_BITS: u32 = 2;
const FIBONACCI: u64 = 0x9e37_79b9_7f4a_7c15;

impl FullLru {
    pub fn new(capacity: usize) -> FullLru {
        // Room grows with use, so a huge store costs only what a trace fills.
        let start = capacity.clamp(1, 1 << 16);
        Self::with_slots(
            capacity,
            (2 * start).next_power_of_two().max(2 << GROUP_BITS),
        )
    }

    fn with_slots(capacity: usize, slots: usize) -> FullLru {
        assert!(
            slots < NIL as usize,
            "a fully associative store of {slots} slots"
        );
        FullLru {
            slots: vec![FREE; slots],
            dirty: vec![false; slots],
            mask: slots - 1,
            group_shift: 64 - (slots.trailing_zeros() - GROUP_BITS),
            len: 0,
            head: NIL,
            tail: NIL,
            head_key: EMPTY,
            capacity,
        }
    }

    /// The slot where the search for `k` starts.
    #[inline(always)]
    fn home(&self, k: u64) -> usize {
        let group = (k >> GROUP_BITS).wrapping_mul(FIBONACCI) >> self.group_shift;
        ((group as usize) << GROUP_BITS) | (k as usize & ((1 << GROUP_BITS) - 1))
    }

    #[inline(always)]
    fn find(&self, k: u64) -> Option<usize> {
        let mut i = self.home(k);
        loop {
            let s = &self.slots[i];
            if s.prev == VACANT {
                return None;
            }
            if s.key == k {
                return Some(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Sets what slot `i`'s neighbours in recency hold where they point to it: the more recent
    /// one's `next` (or the head) to `next_of_prev`, the less recent one's `prev` (or the tail)
    /// to `prev_of_next`.
    #[inline(always)]
    fn repoint_neighbours(&mut self, i: usize, next_of_prev: u32, prev_of_next: u32) {
        let Slot { prev, next, .. } = self.slots[i];
        if prev == NIL {
            self.head = next_of_prev;
        } else {
            self.slots[prev as usize].next = next_of_prev;
        }
        if next == NIL {
            self.tail = prev_of_next;
        } else {
            self.slots[next as usize].prev = prev_of_next;
        }
    }

    #[inline(always)]
    fn unlink(&mut self, i: usize) {
        let Slot { prev, next, .. } = self.slots[i];
        self.repoint_neighbours(i, next, prev);
    }

    #[inline(always)]
    fn push_front(&mut self, i: usize) {
        let old = self.head;
        self.slots[i].prev = NIL;
        self.slots[i].next = old;
        if old == NIL {
            self.tail = i as u32;
        } else {
            self.slots[old as usize].prev = i as u32;
        }
        self.head = i as u32;
        self.head_key = self.slots[i].key;
    }

    /// Hit: moves the key to the front and ORs in `dirty`.
    #[inline]
    pub fn touch(&mut self, k: u64, dirty: bool) -> bool {
        let i = if k == self.head_key && self.head != NIL {
            self.head as usize
        } else {
            let Some(i) = self.find(k) else {
                return false;
            };
            self.unlink(i);
            self.push_front(i);
            i
        };
        if dirty {
            self.dirty[i] = true;
        }
        true
    }

    /// Whether `k` is the most recent key.
    #[inline]
    pub fn is_first(&self, k: u64) -> bool {
        k == self.head_key && self.head != NIL
    }

    pub fn contains(&self, k: u64) -> bool {
        self.find(k).is_some()
    }

    /// Inserts an absent key; returns the evicted key and whether it was dirty.
    pub fn insert(&mut self, k: u64, dirty: bool) -> Option<(u64, bool)> {
        let evicted = (self.len >= self.capacity && self.tail != NIL).then(|| {
            let t = self.tail as usize;
            let old = (self.slots[t].key, self.dirty[t]);
            self.unlink(t);
            self.vacate(t);
            old
        });
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        let mut i = self.home(k);
        while self.slots[i].prev != VACANT {
            i = (i + 1) & self.mask;
        }
        self.slots[i].key = k;
        self.dirty[i] = dirty;
        self.push_front(i);
        self.len += 1;
        evicted
    }

    /// Empties slot `i` (already out of the list), moving later keys of its probe run back so
    /// that every key stays reachable from its home slot.
    fn vacate(&mut self, mut hole: usize) {
        let mut j = hole;
        loop {
            j = (j + 1) & self.mask;
            if self.slots[j].prev == VACANT {
                break;
            }
            let home = self.home(self.slots[j].key);
            // The key at j may fill the hole unless its home lies cyclically in (hole, j].
            let stays = if hole < j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                self.repoint_neighbours(j, hole as u32, hole as u32);
                self.slots[hole] = self.slots[j];
                self.dirty[hole] = self.dirty[j];
                hole = j;
            }
        }
        self.slots[hole] = FREE;
        self.dirty[hole] = false;
        self.len -= 1;
    }

    /// Twice the room, the keys placed again from least to most recent.
    fn grow(&mut self) {
        let mut bigger = Self::with_slots(self.capacity, 2 * self.slots.len());
        let mut at = self.tail;
        while at != NIL {
            let s = self.slots[at as usize];
            bigger.insert(s.key, self.dirty[at as usize]);
            at = s.prev;
        }
        *self = bigger;
    }
}

/// Every line ever seen, for telling compulsory misses: a bitmap per aligned chunk of 4096
/// lines, found through a map, with the last chunk remembered (misses cluster). A hash set of
/// lines would hold millions of entries for a cache of 4-byte lines.
#[derive(Default)]
pub struct SeenLines {
    chunks: FastMap<u64, u32>,
    bits: Vec<[u64; 64]>,
    last: Option<(u64, u32)>,
}

impl SeenLines {
    /// Records `line`; true when it had not been seen before.
    #[inline]
    pub fn insert(&mut self, line: u64) -> bool {
        let chunk = line >> 12;
        let at = match self.last {
            Some((c, at)) if c == chunk => at,
            _ => {
                let next = self.bits.len() as u32;
                let at = *self.chunks.entry(chunk).or_insert(next);
                if at == next {
                    self.bits.push([0; 64]);
                }
                self.last = Some((chunk, at));
                at
            }
        };
        let (word, bit) = (((line >> 6) & 63) as usize, line & 63);
        let w = &mut self.bits[at as usize][word];
        let new = *w & (1 << bit) == 0;
        *w |= 1 << bit;
        new
    }
}

#[cfg(test)]
#[path = "full_lru_tests.rs"]
mod tests;
