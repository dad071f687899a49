//! The fast paths (`Machine::run`'s specialised loop, `access`'s hit path, each level's memory of
//! its previous line) against the general path with every shortcut off, on random machines and
//! random traces: the stall counters must agree after every reference and the final `Stats`
//! exactly.

use super::*;
use crate::memsim::cache::Replacement;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

fn arb_repl() -> impl Strategy<Value = Replacement> {
    prop_oneof![
        3 => Just(Replacement::Lru),
        1 => Just(Replacement::Fifo),
        1 => Just(Replacement::Random)
    ]
}

/// Caches from direct-mapped to fully associative, with power-of-two and other set counts,
/// every write policy, fetch blocks of one to four lines, virtual or physical.
fn arb_cache(scale: u64) -> impl Strategy<Value = CacheConfig> {
    (
        prop::sample::select(vec![4u32, 16, 64, 128]),
        prop::sample::select(vec![0u32, 1, 1, 2, 3, 4, 8]),
        prop::sample::select(vec![1u64, 2, 3, 4, 8, 16]),
        0u32..3,
        arb_repl(),
        (any::<bool>(), any::<bool>(), any::<bool>()),
        0u64..1000,
    )
        .prop_map(
            move |(line, assoc, sets, fetch_log, repl, (wb, alloc, phys), seed)| {
                let ways = if assoc == 0 {
                    2 + sets
                } else {
                    u64::from(assoc)
                };
                let sets = if assoc == 0 { 1 } else { sets * scale };
                let mut c = CacheConfig::new(u64::from(line) * ways * sets, assoc, line);
                c.fetch = if fetch_log == 0 {
                    0
                } else {
                    (line << fetch_log).min(c.size as u32)
                };
                c.replacement = repl;
                c.seed = seed;
                c.write_back = wb;
                c.write_allocate = alloc;
                c.physical = phys;
                c.hit_cycles = 3;
                c
            },
        )
        .prop_filter("valid geometry", |c| c.validate().is_ok())
}

fn arb_tlb() -> impl Strategy<Value = Option<TlbConfig>> {
    prop_oneof![
        Just(None),
        (
            prop::sample::select(vec![(4u32, 0u32, 0u32), (8, 2, 0), (8, 0, 2), (6, 2, 2)]),
            arb_repl(),
        )
            .prop_map(|((entries, assoc, kernel), repl)| Some(TlbConfig {
                entries,
                assoc,
                page_size: 4096,
                kernel_entries: kernel,
                replacement: repl,
                seed: 5,
                user_miss_cycles: 10,
                kernel_miss_cycles: 50,
            })),
    ]
}

fn arb_mapping() -> impl Strategy<Value = Mapping> {
    prop_oneof![
        3 => Just(Mapping::Identity),
        1 => Just(Mapping::FirstTouch),
        1 => Just(Mapping::Random { seed: 7 }),
        1 => Just(Mapping::Hash { colours: 4 }),
        1 => Just(Mapping::Colour { colours: 2 }),
    ]
}

prop_compose! {
    fn arb_machine()(
        l1d in arb_cache(1),
        l1i in prop::option::weighted(0.7, arb_cache(1)),
        lower in prop::collection::vec(arb_cache(4), 0..3),
        tlb in arb_tlb(),
        wbuf in prop::option::of((1u32..4, 1u32..3, 3u32..6, prop::sample::select(vec![0u64, 4, 16, 64]))),
        mapping in arb_mapping(),
        three_c in any::<bool>(),
        ranges in any::<bool>(),
    ) -> MachineConfig {
        MachineConfig {
            name: "random".into(),
            l1i,
            l1d,
            lower,
            memory_cycles: 15,
            uncached_cycles: 20,
            write_cycles: 2,
            write_buffer: wbuf.map(|(depth, page_cycles, other_cycles, merge_bytes)| WriteBufferConfig {
                depth,
                page_cycles,
                other_cycles,
                page_size: 4096,
                merge_bytes,
            }),
            tlb,
            mapping,
            page_size: 4096,
            kernel_unmapped: if ranges { vec![(0x8000_0000, 0xc000_0000)] } else { vec![] },
            kernel_uncached: if ranges { vec![(0xa000_0000, 0xc000_0000)] } else { vec![] },
            three_c,
        }
    }
}

/// Short sequential runs within a few pages (so that lines repeat and hit), some kernel
/// references in the unmapped and uncached regions, address-space switches, uncached flags,
/// sizes that straddle lines, and physical addresses in some traces.
fn arb_trace() -> impl Strategy<Value = Vec<Ref>> {
    let step = (
        0u8..3,
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.03),
        prop::bool::weighted(0.02),
        prop::sample::select(vec![4u32, 4, 4, 4, 1, 2, 8, 0, 16, 64]),
        prop_oneof![6 => 0u64..2, 3 => 0u64..24, 1 => 0u64..3000],
        0u64..3,
    );
    (prop::collection::vec(step, 1..700), any::<bool>()).prop_map(|(steps, physical)| {
        let mut at = [0x1000u64, 0x4000, 0x9000];
        // The third space's key (see `space_key`) moves addresses within a line.
        const SPACES: [u32; 3] = [1, 2, 0x5_0021];
        let mut space = 0;
        let mut asid = SPACES[0];
        steps
            .into_iter()
            .map(|(k, kernel, new_space, uncached, size, jump, region)| {
                let kind = [Kind::Instr, Kind::Read, Kind::Write][k as usize];
                let s = (k as usize).min(2);
                at[s] = (at[s] + jump * 4) % 0x6000;
                if new_space {
                    space = (space + 1) % SPACES.len();
                    asid = SPACES[space];
                }
                let (mode, vaddr) = if kernel {
                    let base = [0x1000_0000u64, 0x8000_0000, 0xa000_0000][region as usize];
                    (Mode::Kernel, base + at[s])
                } else {
                    (Mode::User, at[s])
                };
                let mut r = Ref::new(kind, mode, asid, size, vaddr);
                r.uncached = uncached;
                if physical {
                    r.paddr = Some(vaddr.rotate_left(3) & 0xf_ffff);
                }
                r
            })
            .collect()
    })
}

/// Runs `refs` three ways and checks they agree: the reference path (no shortcut at all),
/// `access` reference by reference (stall counters compared after each), and `run` on chunks.
fn check_agree(cfg: &MachineConfig, refs: &[Ref], chunk: usize) -> Result<(), TestCaseError> {
    let mut reference = Machine::new(cfg);
    let mut stepped = Machine::new(cfg);
    for (i, r) in refs.iter().enumerate() {
        reference.access_reference(r);
        stepped.access(r);
        prop_assert_eq!(
            stepped.stall_snapshot(),
            reference.stall_snapshot(),
            "stall counters after reference {} ({:?})",
            i,
            r
        );
    }
    let mut batched = Machine::new(cfg);
    for part in refs.chunks(chunk) {
        batched.run(part);
    }
    let want = reference.stats();
    prop_assert_eq!(&stepped.stats(), &want, "access");
    prop_assert_eq!(&batched.stats(), &want, "run");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn fast_paths_match_the_general_path(
        cfg in arb_machine(), refs in arb_trace(), chunk in 1usize..300,
    ) {
        prop_assume!(cfg.validate().is_ok());
        check_agree(&cfg, &refs, chunk)?;
    }

    /// The plain shape (only first-level caches on the hit path), where `run` takes its own
    /// loop, is rare among random machines: this one always has it.
    #[test]
    fn plain_loop_matches_the_general_path(
        mut cfg in arb_machine(), refs in arb_trace(), chunk in 1usize..300,
        ways_log in 0u32..4, sets_log in 0u32..4, split in any::<bool>(),
    ) {
        cfg.tlb = None;
        cfg.three_c = false;
        cfg.mapping = Mapping::Identity;
        for c in [Some(&mut cfg.l1d), cfg.l1i.as_mut()].into_iter().flatten() {
            c.assoc = 1 << ways_log;
            c.size = u64::from(c.line) << (ways_log + sets_log);
            c.fetch = c.fetch.min(c.size as u32);
            c.physical = false;
        }
        for c in &mut cfg.lower {
            c.physical = false;
        }
        if !split {
            cfg.l1i = None;
        }
        prop_assume!(cfg.validate().is_ok());
        prop_assert_eq!(Machine::new(&cfg).fast_paths(), (true, true, true));
        check_agree(&cfg, &refs, chunk)?;
    }

    /// The word loop that looks pages up (in a TLB without LRU order, through the mapping for
    /// physical caches), as the ds5000-200 takes it, with write-through and write-back first
    /// levels, lower levels and write buffers as they come.
    #[test]
    fn word_loop_with_lookups_matches_the_general_path(
        mut cfg in arb_machine(), refs in arb_trace(), chunk in 1usize..300,
        ways_log in 0u32..4, sets_log in 0u32..4, physical in any::<(bool, bool)>(),
        tlb in arb_tlb(),
    ) {
        cfg.three_c = false;
        cfg.tlb = tlb.map(|mut t| {
            t.replacement = Replacement::Random;
            t
        });
        for (c, physical) in [(Some(&mut cfg.l1d), physical.0), (cfg.l1i.as_mut(), physical.1)] {
            if let Some(c) = c {
                c.assoc = 1 << ways_log;
                c.size = u64::from(c.line) << (ways_log + sets_log);
                c.fetch = c.fetch.min(c.size as u32);
                c.physical = physical;
            }
        }
        prop_assume!(cfg.validate().is_ok());
        let (fast, words, plain) = Machine::new(&cfg).fast_paths();
        prop_assert!(fast && words);
        prop_assume!(!plain);
        check_agree(&cfg, &refs, chunk)?;
    }
}

/// The random machines do reach every path: the word loop with a TLB or a mapping to look up,
/// the hit path alone (a first level with no word loop), and the general path alone (an LRU
/// TLB). The plain loop has its own test.
#[test]
fn random_machines_cover_every_shape() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..400 {
        let cfg = arb_machine().new_tree(&mut runner).unwrap().current();
        if cfg.validate().is_ok() {
            seen.insert(Machine::new(&cfg).fast_paths());
        }
    }
    assert!(seen.contains(&(true, true, false)), "{seen:?}");
    assert!(seen.contains(&(true, false, false)), "{seen:?}");
    assert!(seen.contains(&(false, false, false)), "{seen:?}");
}

/// The word loop takes the ds5000-200's hits itself, through its physical caches, its mapping
/// and its TLB, and its write-through writes to the write buffer: warmed up once, a loop of
/// fetches, (two-line) reads and writes is taken whole. An address the loop got wrong would only
/// stop it, which the agreement tests cannot see.
#[test]
fn the_word_loop_takes_a_warm_loop_whole_on_the_ds5000() {
    let mut cfg = crate::memsim::config::preset("ds5000-200").unwrap();
    cfg.three_c = false;
    let mut m = Machine::new(&cfg);
    assert_eq!(m.fast_paths(), (true, true, false));
    let refs: Vec<Ref> = (0..2000u64)
        .flat_map(|i| {
            [
                Ref::new(Kind::Instr, Mode::User, 1, 4, 0x40_0000 + (i % 256) * 4),
                Ref::new(Kind::Read, Mode::User, 1, 8, 0x7fff_0000 + (i % 64) * 8),
                Ref::new(Kind::Write, Mode::User, 1, 4, 0x7fff_0800 + (i % 32) * 4),
            ]
        })
        .collect();
    m.run(&refs);
    let batch = crate::memsim::trace::packed::Batch::from_refs(&refs);
    let (taken, hits) = m.take_hits(1, batch.view().words());
    assert_eq!(taken, refs.len());
    assert_eq!(hits.by_class[0], [2000, 2000, 2000]);
    let stats = m.stats();
    assert_eq!(
        stats.mode[0].wbuf_writes,
        2 * 2000,
        "each write, warming up and in the loop"
    );
    assert_eq!(hits.second_lines[0], [0, 2000]);
}

/// The plain loop's memory of each cache's previous line: runs of references to one line
/// (instruction fetches within a line, reads then writes then reads of one data line, in user
/// and kernel mode) between references that move the line or evict it, on a split and a unified
/// write-back first level. Counts must agree by mode and kind with the general path.
#[test]
fn repeated_lines_in_the_plain_loop_match_the_general_path() {
    let mut refs = Vec::new();
    for i in 0..4000u64 {
        let mode = if i % 7 < 2 { Mode::Kernel } else { Mode::User };
        refs.push(Ref::new(Kind::Instr, mode, 1, 4, 0x1000 + (i % 48) * 4));
        let kind = [Kind::Read, Kind::Write, Kind::Read, Kind::Instr][(i % 4) as usize];
        // Mostly the same data line; now and then two other lines of its set, which evict it
        // (it comes back clean, so the next write must mark it again), or a reference that
        // straddles two lines.
        let addr = match i % 13 {
            0 => 0x9000 + (i % 5) * 0x1000,
            1 => 0x2_0000 + (i % 3) * 0x1000,
            2 => 0x4000 + 62,
            _ => 0x4000 + (i % 16) * 4,
        };
        refs.push(Ref::new(kind, mode, 1, 4, addr));
    }
    for split in [true, false] {
        let mut c = CacheConfig::new(1024, 2, 64);
        c.physical = false;
        let cfg = MachineConfig {
            name: "plain".into(),
            l1i: split.then(|| c.clone()),
            l1d: c,
            lower: vec![],
            memory_cycles: 15,
            uncached_cycles: 20,
            write_cycles: 2,
            write_buffer: None,
            tlb: None,
            mapping: Mapping::Identity,
            page_size: 4096,
            kernel_unmapped: vec![],
            kernel_uncached: vec![],
            three_c: false,
        };
        assert_eq!(Machine::new(&cfg).fast_paths(), (true, true, true));
        for chunk in [1, 17, 4096, refs.len()] {
            check_agree(&cfg, &refs, chunk).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// A pass with a core to spare classifies a machine's misses on a twin (see
    /// `sweep::classifier_twins`): every count, the 3C classes included, equals the machine
    /// simulated alone.
    #[test]
    fn a_three_c_twin_gives_what_the_machine_gives_alone(
        cfg in arb_machine(), refs in arb_trace(),
    ) {
        let mut cfg = cfg;
        cfg.lower.clear();
        cfg.three_c = true;
        prop_assume!(cfg.validate().is_ok());
        let pass = |threads| {
            let mut src = crate::memsim::kernel::testutil::VecSource::new(refs.clone());
            crate::memsim::sweep::simulate(&mut src, std::slice::from_ref(&cfg), threads)
                .unwrap()
                .stats
        };
        let alone = pass(1);
        prop_assert_eq!(&pass(2), &alone);
    }
}
