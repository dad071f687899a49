//! Translation buffer: a store of (address space, virtual page) keys with an optional partition of
//! entries reserved for kernel mappings (the MIPS R3000's wired entries: user mappings can never
//! evict them). Kernel mappings are global (the same in every address space).

use super::cache::{check_ways, Replacement, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlbConfig {
    pub entries: u32,
    /// Ways; 0 for fully associative.
    pub assoc: u32,
    pub page_size: u64,
    /// Entries reserved for kernel mappings (0: kernel and user share all entries).
    #[serde(default)]
    pub kernel_entries: u32,
    #[serde(default = "lru")]
    pub replacement: Replacement,
    #[serde(default)]
    pub seed: u64,
    /// Stall cycles of a miss on a user address and on a mapped kernel address.
    pub user_miss_cycles: u32,
    pub kernel_miss_cycles: u32,
}

fn lru() -> Replacement {
    Replacement::Lru
}

impl TlbConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !self.page_size.is_power_of_two() || self.page_size < 256 {
            return Err(format!(
                "TLB page size {} is not a power of two of at least 256",
                self.page_size
            ));
        }
        let shared = self.entries.saturating_sub(self.kernel_entries);
        if shared == 0 {
            return Err(format!(
                "TLB of {} entries leaves none for user pages after {} kernel entries",
                self.entries, self.kernel_entries
            ));
        }
        let ways = if self.assoc == 0 { shared } else { self.assoc };
        if shared % ways != 0 {
            return Err(format!(
                "TLB entries {} (after {} kernel entries) are not a multiple of associativity {}",
                shared, self.kernel_entries, self.assoc
            ));
        }
        check_ways(u64::from(shared), self.assoc, self.replacement)
            .and_then(|()| check_ways(u64::from(self.kernel_entries), 0, self.replacement))
            .map_err(|e| format!("TLB: {e}"))
    }
}

const KERNEL_ASID: u64 = 0xfff;

pub struct Tlb {
    main: Store,
    kernel: Option<Store>,
    page_shift: u32,
    /// Keys known present, plus one (0: none), each at the slot of its page's low bits. Without
    /// LRU order to maintain a hit changes no state, so a key known present needs no search; any
    /// insertion may evict, so it forgets them all. Several slots, because the instruction stream
    /// and the data stream's stack, heap and arrays take turns on different pages.
    known: [u64; KNOWN_SLOTS],
    memo_ok: bool,
}

const KNOWN_SLOTS: usize = 32;

impl Tlb {
    pub fn new(cfg: &TlbConfig) -> Tlb {
        let shared = cfg.entries - cfg.kernel_entries;
        let kernel = (cfg.kernel_entries > 0).then(|| {
            Store::new(
                u64::from(cfg.kernel_entries),
                0,
                cfg.replacement,
                cfg.seed ^ 1,
            )
        });
        Tlb {
            main: Store::new(u64::from(shared), cfg.assoc, cfg.replacement, cfg.seed),
            kernel,
            page_shift: cfg.page_size.trailing_zeros(),
            known: [0; KNOWN_SLOTS],
            memo_ok: cfg.replacement != Replacement::Lru,
        }
    }

    /// Looks up and on a miss loads the translation; true on a hit.
    #[inline]
    pub fn access(&mut self, asid: u32, vaddr: u64, kernel: bool) -> bool {
        let key = self.key(asid, vaddr, kernel);
        let slot = &mut self.known[key as usize % KNOWN_SLOTS];
        if self.memo_ok && *slot == key.wrapping_add(1) {
            return true;
        }
        let store = match (&mut self.kernel, kernel) {
            (Some(k), true) => k,
            _ => &mut self.main,
        };
        let hit = store.touch(key, false);
        if !hit {
            store.insert(key, false);
            self.known = [0; KNOWN_SLOTS];
        }
        self.known[key as usize % KNOWN_SLOTS] = key.wrapping_add(1);
        hit
    }

    #[inline(always)]
    fn key(&self, asid: u32, vaddr: u64, kernel: bool) -> u64 {
        let vpn = vaddr >> self.page_shift;
        let tag = if kernel {
            KERNEL_ASID
        } else {
            u64::from(asid) & 0x7ff
        };
        // Page bits low so that the set index is the page number, as in hardware.
        (vpn & ((1 << 52) - 1)) | tag << 52
    }

    /// True when `access` with these arguments would hit without changing any state (a key known
    /// present, in a TLB without LRU order); false when it must be asked.
    #[inline(always)]
    pub fn known_hit(&self, asid: u32, vaddr: u64, kernel: bool) -> bool {
        let key = self.key(asid, vaddr, kernel);
        self.memo_ok && self.known[key as usize % KNOWN_SLOTS] == key.wrapping_add(1)
    }

    /// Whether `known_hit` can ever be true (replacement other than LRU).
    pub fn has_known_hits(&self) -> bool {
        self.memo_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(entries: u32, kernel_entries: u32) -> TlbConfig {
        TlbConfig {
            entries,
            assoc: 0,
            page_size: 4096,
            kernel_entries,
            replacement: Replacement::Lru,
            seed: 0,
            user_miss_cycles: 10,
            kernel_miss_cycles: 50,
        }
    }

    #[test]
    fn wired_kernel_entries_survive_user_pressure() {
        let mut t = Tlb::new(&cfg(4, 1));
        assert!(!t.access(1, 0xc000_0000, true));
        for p in 0..10u64 {
            t.access(1, p << 12, false);
        }
        assert!(
            t.access(1, 0xc000_0000, true),
            "user pages cannot evict the kernel entry"
        );
        // Without the reservation the same sweep evicts it.
        let mut t = Tlb::new(&cfg(4, 0));
        t.access(1, 0xc000_0000, true);
        for p in 0..10u64 {
            t.access(1, p << 12, false);
        }
        assert!(!t.access(1, 0xc000_0000, true));
    }

    #[test]
    fn address_spaces_are_tagged_and_kernel_is_global() {
        let mut t = Tlb::new(&cfg(8, 0));
        assert!(!t.access(1, 0x1000, false));
        assert!(
            !t.access(2, 0x1000, false),
            "another address space: another translation"
        );
        assert!(t.access(1, 0x1fff, false));
        assert!(!t.access(1, 0xc000_0000, true));
        assert!(t.access(2, 0xc000_0000, true));
    }

    #[test]
    fn memo_agrees_with_searching() {
        let mut c = cfg(16, 2);
        c.replacement = Replacement::Random;
        let mut a = Tlb::new(&c);
        let mut b = Tlb::new(&c);
        b.memo_ok = false;
        let mut rng = crate::memsim::trace::synth::rng(4);
        let mut known_hits = 0;
        for _ in 0..20_000 {
            // Mostly a working set that fits (user pages 0-6 and 32-38, kernel pages 7 and 39;
            // a page and the page 32 on share a slot), now and then a page that evicts.
            let page = if rng.scaled(20) == 0 {
                rng.scaled(64)
            } else {
                rng.scaled(8) + (rng.scaled(2) << 5)
            };
            let kernel = page % 32 == 7;
            let addr = page << 12;
            let known = a.known_hit(1, addr, kernel);
            let hit = a.access(1, addr, kernel);
            assert!(!known || hit, "page {page} was known present and missed");
            assert_eq!(hit, b.access(1, addr, kernel), "page {page}");
            known_hits += u32::from(known);
        }
        assert!(known_hits > 1000, "{known_hits} known hits");
    }

    #[test]
    fn validation() {
        assert!(cfg(64, 8).validate().is_ok());
        assert!(cfg(8, 8).validate().is_err());
        let mut c = cfg(64, 0);
        c.assoc = 3;
        assert!(c.validate().is_err());
    }
}
