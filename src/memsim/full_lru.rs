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

/// Fully associative LRU over `capacity` keys: a hash map into an intrusive doubly linked list.
pub struct FullLru {
    map: FastMap<u64, u32>,
    key: Vec<u64>,
    dirty: Vec<bool>,
    /// (previous, next) of each node, side by side: relinking a node touches one cache line of
    /// it instead of two.
    links: Vec<[u32; 2]>,
    head: u32,
    tail: u32,
    /// The key at the head (most recent), so touching it again needs no map lookup.
    head_key: u64,
    capacity: usize,
}

const NIL: u32 = u32::MAX;
const PREV: usize = 0;
const NEXT: usize = 1;

impl FullLru {
    pub fn new(capacity: usize) -> FullLru {
        // Room grows with use, so a huge store costs only what a trace fills.
        let start = capacity.min(1 << 16);
        FullLru {
            map: FastMap::with_capacity_and_hasher(start * 2, Default::default()),
            key: Vec::with_capacity(start),
            dirty: Vec::with_capacity(start),
            links: Vec::with_capacity(start),
            head: NIL,
            tail: NIL,
            head_key: EMPTY,
            capacity,
        }
    }

    fn unlink(&mut self, i: u32) {
        let [p, n] = self.links[i as usize];
        if p == NIL {
            self.head = n;
        } else {
            self.links[p as usize][NEXT] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.links[n as usize][PREV] = p;
        }
    }

    fn push_front(&mut self, i: u32) {
        self.links[i as usize] = [NIL, self.head];
        if self.head != NIL {
            self.links[self.head as usize][PREV] = i;
        }
        self.head = i;
        self.head_key = self.key[i as usize];
        if self.tail == NIL {
            self.tail = i;
        }
    }

    /// Hit: moves the key to the front and ORs in `dirty`.
    #[inline]
    pub fn touch(&mut self, k: u64, dirty: bool) -> bool {
        if k == self.head_key && self.head != NIL {
            self.dirty[self.head as usize] |= dirty;
            return true;
        }
        match self.map.get(&k) {
            Some(&i) => {
                self.unlink(i);
                self.push_front(i);
                self.dirty[i as usize] |= dirty;
                true
            }
            None => false,
        }
    }

    /// Whether `k` is the most recent key.
    #[inline]
    pub fn is_first(&self, k: u64) -> bool {
        k == self.head_key && self.head != NIL
    }

    pub fn contains(&self, k: u64) -> bool {
        self.map.contains_key(&k)
    }

    /// Inserts an absent key; returns the evicted key and whether it was dirty.
    pub fn insert(&mut self, k: u64, dirty: bool) -> Option<(u64, bool)> {
        if self.key.len() < self.capacity {
            let i = self.key.len() as u32;
            self.key.push(k);
            self.dirty.push(dirty);
            self.links.push([NIL, NIL]);
            self.push_front(i);
            self.map.insert(k, i);
            return None;
        }
        let i = self.tail;
        let old = (self.key[i as usize], self.dirty[i as usize]);
        self.map.remove(&old.0);
        self.unlink(i);
        self.key[i as usize] = k;
        self.dirty[i as usize] = dirty;
        self.push_front(i);
        self.map.insert(k, i);
        Some(old)
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
