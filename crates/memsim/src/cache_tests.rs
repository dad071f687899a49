use super::*;
use proptest::prelude::*;

fn level(size: u64, assoc: u32, line: u32, repl: Replacement) -> Level {
    let mut c = CacheConfig::new(size, assoc, line);
    c.replacement = repl;
    Level::new(&c, true)
}

/// Runs byte addresses through a level, returning "H"/"M" per access.
fn pattern(l: &mut Level, addrs: &[u64]) -> String {
    addrs
        .iter()
        .map(|&a| {
            let line = a >> l.line_bits();
            match l.access(line, false, false, &mut |_| {}) {
                Outcome::Hit => 'H',
                Outcome::Miss { .. } => 'M',
            }
        })
        .collect()
}

#[test]
fn direct_mapped_two_sets_conflicts() {
    // 2 sets of 16-byte lines: 0x00 and 0x20 share set 0, 0x10 is set 1.
    let mut l = level(32, 1, 16, Replacement::Lru);
    assert_eq!(
        pattern(&mut l, &[0x00, 0x04, 0x10, 0x20, 0x00, 0x14]),
        "MHMMMH"
    );
}

#[test]
fn lru_and_fifo_differ() {
    // One set of two ways. A B A C A: LRU keeps A (evicts B), FIFO evicts A on C.
    let seq = [0x00, 0x10, 0x00, 0x20, 0x00];
    assert_eq!(
        pattern(&mut level(32, 2, 16, Replacement::Lru), &seq),
        "MMHMH"
    );
    assert_eq!(
        pattern(&mut level(32, 2, 16, Replacement::Fifo), &seq),
        "MMHMM"
    );
}

#[test]
fn random_replacement_is_repeatable_for_a_seed() {
    let seq: Vec<u64> = (0..500u64).map(|i| (i * 7919 % 64) * 16).collect();
    let a = pattern(&mut level(256, 4, 16, Replacement::Random), &seq);
    let b = pattern(&mut level(256, 4, 16, Replacement::Random), &seq);
    assert_eq!(a, b);
}

#[test]
fn three_c_classes() {
    // Direct-mapped, 2 lines of 16 bytes (32 bytes). 0x00,0x20 conflict in set 0 though the
    // fully associative shadow of 2 lines holds both: compulsory, compulsory, conflict.
    let mut l = level(32, 1, 16, Replacement::Lru);
    let mut classes = vec![];
    for a in [0x00u64, 0x20, 0x00] {
        if let Outcome::Miss { .. } = l.access(a >> 4, false, false, &mut |_| {}) {
            classes.push(l.last_class);
        }
    }
    assert_eq!(
        classes,
        [Class::Compulsory, Class::Compulsory, Class::Conflict]
    );
    // Three lines cycling through a 2-line fully associative cache: capacity misses.
    let mut l = level(32, 0, 16, Replacement::Lru);
    let mut classes = vec![];
    for a in [0x00u64, 0x10, 0x20, 0x00] {
        if let Outcome::Miss { .. } = l.access(a >> 4, false, false, &mut |_| {}) {
            classes.push(l.last_class);
        }
    }
    assert_eq!(classes.last(), Some(&Class::Capacity));
}

#[test]
fn dirty_write_back_on_eviction() {
    let mut l = level(32, 1, 16, Replacement::Lru);
    let mut wb = vec![];
    l.access(0, true, false, &mut |a| wb.push(a));
    l.access(0x20 >> 4, false, false, &mut |a| wb.push(a));
    l.access(0x40 >> 4, false, false, &mut |a| wb.push(a));
    assert_eq!(wb, [0x00], "only the written line is written back, once");
}

#[test]
fn write_allocate_versus_no_allocate() {
    let mut c = CacheConfig::new(64, 1, 16);
    c.write_allocate = false;
    let mut l = Level::new(&c, false);
    assert_eq!(
        l.access(0, true, false, &mut |_| {}),
        Outcome::Miss { fetch: false }
    );
    assert_eq!(
        l.access(0, false, false, &mut |_| {}),
        Outcome::Miss { fetch: true }
    );
    c.write_allocate = true;
    let mut l = Level::new(&c, false);
    assert_eq!(
        l.access(0, true, false, &mut |_| {}),
        Outcome::Miss { fetch: true }
    );
    assert_eq!(l.access(0, false, false, &mut |_| {}), Outcome::Hit);
    // Write-through with allocation: a write covering the line needs no fetch.
    c.write_back = false;
    let mut l = Level::new(&c, false);
    assert_eq!(
        l.access(0, true, true, &mut |_| {}),
        Outcome::Miss { fetch: false }
    );
    assert_eq!(l.access(0, false, false, &mut |_| {}), Outcome::Hit);
}

#[test]
fn fetch_larger_than_line_fills_the_aligned_block() {
    // The DECstation data cache: 4-byte lines, a read miss brings 16 aligned bytes.
    let mut c = CacheConfig::new(64 * 1024, 1, 4);
    c.fetch = 16;
    let mut l = Level::new(&c, true);
    assert_eq!(
        pattern(&mut l, &[0x104, 0x100, 0x108, 0x10c, 0x110]),
        "MHHHM"
    );
    assert_eq!(l.last_class, Class::Compulsory);
}

#[test]
fn seen_lines_across_chunks() {
    let mut s = SeenLines::default();
    let lines = [
        0u64,
        1,
        63,
        64,
        4095,
        4096,
        1 << 40,
        (1 << 40) + 7,
        u64::MAX,
    ];
    for &l in &lines {
        assert!(s.insert(l), "{l} is new");
    }
    // Revisit out of order, so the remembered chunk is wrong half the time.
    for &l in lines.iter().rev() {
        assert!(!s.insert(l), "{l} was seen");
    }
    assert!(s.insert(2) && s.insert(4097) && !s.insert(4096));
}

#[test]
fn geometry_validation() {
    assert!(CacheConfig::new(32 * 1024, 8, 64).validate().is_ok());
    assert!(CacheConfig::new(1000, 2, 64)
        .validate()
        .unwrap_err()
        .contains("multiple"));
    assert!(CacheConfig::new(1024, 2, 48)
        .validate()
        .unwrap_err()
        .contains("power of two"));
    assert!(CacheConfig::new(64, 8, 16).validate().is_err());
    // Limits that keep one access short: the fetch block, and ways searched one by one.
    let mut c = CacheConfig::new(1 << 20, 1, 4);
    c.fetch = 4096;
    assert!(c.validate().is_ok());
    c.fetch = 8192;
    assert!(c.validate().unwrap_err().contains("at most 1024 lines"));
    let mut c = CacheConfig::new(1 << 20, 0, 64);
    assert!(
        c.validate().is_ok(),
        "fully associative LRU of 16384 lines is hashed"
    );
    c.replacement = Replacement::Random;
    assert!(c.validate().unwrap_err().contains("16384 ways with random"));
    c.assoc = 4096;
    assert!(c.validate().is_ok());
}

#[test]
fn a_new_store_is_zero_pages_until_used() {
    // A 64 GiB direct-mapped cache of 64-byte lines: a billion free ways, none of them written.
    let mut l = Level::new(&CacheConfig::new(64 << 30, 1, 64), false);
    assert_eq!(
        l.access(5, false, false, &mut |_| {}),
        Outcome::Miss { fetch: true }
    );
    assert_eq!(l.access(5, false, false, &mut |_| {}), Outcome::Hit);
}

/// Deliberately simple reference: each set a list of (line, last use, insertion, dirty).
struct Reference {
    sets: Vec<Vec<(u64, u64, u64, bool)>>,
    ways: usize,
    fifo: bool,
    t: u64,
}

impl Reference {
    fn access(&mut self, line: u64, write: bool) -> (bool, Option<u64>) {
        self.t += 1;
        let n = self.sets.len() as u64;
        let set = &mut self.sets[(line % n) as usize];
        if let Some(e) = set.iter_mut().find(|e| e.0 == line) {
            e.1 = self.t;
            e.3 |= write;
            return (true, None);
        }
        let mut wb = None;
        if set.len() == self.ways {
            let key = |e: &(u64, u64, u64, bool)| if self.fifo { e.2 } else { e.1 };
            let (i, _) = set.iter().enumerate().min_by_key(|(_, e)| key(e)).unwrap();
            let old = set.remove(i);
            if old.3 {
                wb = Some(old.0);
            }
        }
        set.push((line, self.t, self.t, write));
        (false, wb)
    }
}

proptest! {
    #[test]
    fn engine_matches_the_reference_model(
        ways_log in 0u32..4, sets_log in 0u32..4, fifo in any::<bool>(),
        trace in prop::collection::vec((0u64..48, any::<bool>(), 0u8..3), 1..600),
        three_c in any::<bool>(),
    ) {
        let ways = 1u32 << ways_log;
        let sets = 1u64 << sets_log;
        let mut c = CacheConfig::new(sets * u64::from(ways) * 16, ways, 16);
        c.replacement = if fifo { Replacement::Fifo } else { Replacement::Lru };
        let mut fast = Level::new(&c, three_c);
        let pow2 = fast.has_pow2_sets();
        let mut slow = Reference { sets: vec![vec![]; sets as usize], ways: ways as usize, fifo, t: 0 };
        for (line, write, entry) in trace {
            let mut wb = None;
            // Any entry point: `access` (with its previous-line shortcut), or one of the hit
            // paths first, `access` only when it declines.
            let hit_first = match entry {
                1 => fast.try_hit(line, write),
                2 if pow2 => {
                    let hit = fast.hit_view().unwrap().touch(line, write);
                    fast.forget_last();
                    hit
                }
                _ => false,
            };
            let got = if hit_first {
                Outcome::Hit
            } else {
                fast.access(line, write, false, &mut |a| wb = Some(a >> 4))
            };
            let (hit, want_wb) = slow.access(line, write);
            prop_assert_eq!(got == Outcome::Hit, hit);
            prop_assert_eq!(wb, want_wb);
        }
    }

    #[test]
    fn bigger_fully_associative_lru_never_misses_more(
        trace in prop::collection::vec(0u64..64, 1..800), small in 1u64..16, extra in 1u64..16,
    ) {
        let misses = |lines: u64| {
            let mut l = Level::new(&CacheConfig::new(lines * 16, 0, 16), false);
            trace.iter().filter(|&&x| l.access(x, false, false, &mut |_| {}) != Outcome::Hit).count()
        };
        prop_assert!(misses(small + extra) <= misses(small));
    }
}
