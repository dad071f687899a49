//! Virtual-to-physical page mapping for physically indexed caches.

use super::cache::FastMap;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "policy")]
pub enum Mapping {
    /// Physical page = virtual page (address spaces alias one another).
    Identity,
    /// Frames handed out 0, 1, 2, ... in the order pages are first touched.
    FirstTouch,
    /// A distinct pseudo-random frame per page, fixed for the run, from a seed.
    Random { seed: u64 },
    /// A function of (address space, virtual page) that keeps the page's colour (its position
    /// within `colours` consecutive pages), so no two pages of one address space within that span
    /// collide in a cache of `colours` pages: the deterministic policy of Chen and Bershad.
    Hash { colours: u64 },
    /// First touch, but each page gets the next free frame of its own colour (virtual page modulo
    /// `colours`).
    Colour { colours: u64 },
}

/// Frames live below 2^FRAME_BITS pages.
const FRAME_BITS: u32 = 28;
const FRAME_MASK: u64 = (1 << FRAME_BITS) - 1;

pub struct Mapper {
    policy: Mapping,
    page_shift: u32,
    table: FastMap<u64, u64>,
    next: Vec<u64>,
    /// Recently translated (key, frame) pairs, each at the slot of its key's low bits: a frame,
    /// once given, never changes, so an entry stays true. Slot `i` starts with a key that belongs
    /// to another slot, so it matches nothing.
    recent: Box<[(u64, u64); RECENT_SLOTS]>,
}

const RECENT_SLOTS: usize = 64;

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

impl Mapper {
    pub fn new(policy: &Mapping, page_size: u64) -> Mapper {
        let colours = match policy {
            Mapping::Colour { colours } => (*colours).max(1) as usize,
            _ => 1,
        };
        Mapper {
            policy: policy.clone(),
            page_shift: page_size.trailing_zeros(),
            table: FastMap::default(),
            next: vec![0; colours],
            recent: Box::new(std::array::from_fn(|i| (!(i as u64), 0))),
        }
    }

    fn key(asid: u32, vpn: u64) -> u64 {
        vpn ^ u64::from(asid).rotate_right(20)
    }

    fn frame(&mut self, asid: u32, vpn: u64) -> u64 {
        match self.policy {
            Mapping::Identity => vpn,
            Mapping::Hash { colours } => {
                let c = colours.max(1);
                let group = mix(Self::key(asid, vpn / c)) & (FRAME_MASK / c);
                group * c + vpn % c
            }
            Mapping::FirstTouch | Mapping::Random { .. } | Mapping::Colour { .. } => {
                let key = Self::key(asid, vpn);
                if let Some(&f) = self.table.get(&key) {
                    return f;
                }
                let f = match self.policy {
                    Mapping::Random { seed } => {
                        // A bijection on FRAME_BITS-bit numbers, so frames never collide.
                        let mut x = self.next[0];
                        self.next[0] += 1;
                        for r in 0..3 {
                            x = (x ^ (seed.rotate_left(r * 17) & FRAME_MASK)) & FRAME_MASK;
                            x = x.wrapping_mul(0x2545_f491) & FRAME_MASK;
                            x ^= x >> 13;
                        }
                        x
                    }
                    Mapping::Colour { colours } => {
                        let c = colours.max(1);
                        let colour = (vpn % c) as usize;
                        let n = self.next[colour];
                        self.next[colour] += 1;
                        n * c + colour as u64
                    }
                    _ => {
                        let n = self.next[0];
                        self.next[0] += 1;
                        n
                    }
                };
                self.table.insert(key, f);
                f
            }
        }
    }

    /// The physical address of `vaddr` in address space `asid`.
    #[inline]
    pub fn translate(&mut self, asid: u32, vaddr: u64) -> u64 {
        let vpn = vaddr >> self.page_shift;
        let key = Self::key(asid, vpn);
        let slot = key as usize % RECENT_SLOTS;
        let frame = if self.recent[slot].0 == key {
            self.recent[slot].1
        } else {
            let f = self.frame(asid, vpn);
            self.recent[slot] = (key, f);
            f
        };
        frame << self.page_shift | (vaddr & ((1 << self.page_shift) - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(policy: Mapping, pages: &[(u32, u64)]) -> Vec<u64> {
        let mut m = Mapper::new(&policy, 4096);
        pages
            .iter()
            .map(|&(a, p)| m.translate(a, p << 12 | 0x123) >> 12)
            .collect()
    }

    #[test]
    fn identity_and_first_touch() {
        let pages = [(1, 7), (1, 3), (2, 7), (1, 7)];
        assert_eq!(frames(Mapping::Identity, &pages), [7, 3, 7, 7]);
        assert_eq!(frames(Mapping::FirstTouch, &pages), [0, 1, 2, 0]);
        let mut m = Mapper::new(&Mapping::Identity, 4096);
        assert_eq!(m.translate(1, 0x5123), 0x5123, "offset kept");
    }

    #[test]
    fn random_is_distinct_stable_and_seeded() {
        let pages: Vec<(u32, u64)> = (0..5000).map(|p| (1, p)).collect();
        let a = frames(Mapping::Random { seed: 1 }, &pages);
        let set: std::collections::HashSet<_> = a.iter().collect();
        assert_eq!(set.len(), a.len(), "no two pages share a frame");
        assert_eq!(a, frames(Mapping::Random { seed: 1 }, &pages));
        assert_ne!(a, frames(Mapping::Random { seed: 2 }, &pages));
    }

    #[test]
    fn hash_keeps_colour_and_is_deterministic() {
        let pages: Vec<(u32, u64)> = (0..64).map(|p| (3, p)).collect();
        let a = frames(Mapping::Hash { colours: 16 }, &pages);
        for (f, (_, p)) in a.iter().zip(&pages) {
            assert_eq!(f % 16, p % 16);
        }
        // Order of first touch does not matter.
        let rev: Vec<(u32, u64)> = pages.iter().rev().copied().collect();
        let mut b = frames(Mapping::Hash { colours: 16 }, &rev);
        b.reverse();
        assert_eq!(a, b);
        assert_ne!(
            a,
            frames(Mapping::Hash { colours: 16 }, &[(4, 0)]).repeat(64)
        );
    }

    #[test]
    fn colouring_gives_each_colour_its_own_frames() {
        let a = frames(
            Mapping::Colour { colours: 4 },
            &[(1, 5), (1, 9), (1, 2), (2, 5)],
        );
        // Pages 5 and 9 have colour 1: frames 1 and 5; page 2 colour 2: frame 2; (2,5) frame 9.
        assert_eq!(a, [1, 5, 2, 9]);
    }
}
