use super::*;
use crate::memsim::cache::CacheConfig;
use crate::memsim::machine::{Machine, MachineConfig};
use crate::memsim::mapping::Mapping;
use crate::memsim::trace::packed::Batch;
use crate::memsim::trace::Ref;
use proptest::prelude::*;

fn curve(spec: &str, refs: &[Ref]) -> CurveResult {
    let mut c = CurveSim::new(&CurveSpec::parse(spec).unwrap());
    c.run(Batch::from_refs(refs).view());
    c.finish()
}

fn rd(mode: Mode, addr: u64) -> Ref {
    Ref::new(Kind::Read, mode, 0, 4, addr)
}

#[test]
fn specs_parse_and_bad_ones_say_why() {
    let s = CurveSpec::parse("l1d:8K-1M:8:64").unwrap();
    assert_eq!(
        (s.cache, s.min, s.max, s.assoc, s.line),
        (CurveCache::L1d, 8192, 1 << 20, 8, 64)
    );
    assert_eq!(s.sizes().len(), 8);
    assert_eq!(s.label(), "l1d:8K-1M:8:64");
    assert_eq!(CurveSpec::parse("unified:4K-4K:full:32").unwrap().assoc, 0);
    for (bad, why) in [
        ("l1d:8K-1M:8", "CACHE:MIN-MAX:ASSOC:LINE"),
        ("l2:8K-1M:8:64", "not l1i, l1d or unified"),
        ("l1d:8K:8:64", "MIN-MAX"),
        ("l1d:1M-8K:8:64", "the smaller first"),
        ("l1d:12K-1M:8:64", "powers of two"),
        ("l1d:8K-1M:3:64", "power of two"),
        ("l1d:256-1M:8:64", "at least 8 ways x 64 bytes"),
        ("l1d:8K-1M:eight:64", "not an associativity"),
        ("l1d:8K-1M:8:48", "line size 48"),
        ("l1d:1-1T:1:1", "not a size"),
        ("l1d:64K-1M:8192:1", "at most 4096 ways"),
        ("l1d:1-8G:1:1", "more than 32 sizes"),
    ] {
        let e = CurveSpec::parse(bad).unwrap_err();
        assert!(e.contains(why), "{bad}: {e}");
    }
}

#[test]
fn fully_associative_known_answer() {
    // Lines A B C A B D A with 16-byte lines: two lines of LRU miss all seven; four lines miss
    // only the first touches (A B C D).
    let seq = [0x000, 0x010, 0x020, 0x000, 0x010, 0x030, 0x000];
    let refs: Vec<Ref> = seq.iter().map(|&a| rd(Mode::User, a)).collect();
    let c = curve("l1d:32-64:full:16", &refs);
    let misses: Vec<u64> = c.points.iter().map(|p| p.misses).collect();
    assert_eq!(misses, [7, 4]);
    assert_eq!(c.accesses, ModeCount { user: 7, kernel: 0 });
    assert!((c.points[1].miss_rate - 4.0 / 7.0).abs() < 1e-12);
    assert_eq!(c.kernel.iter().map(|p| p.misses).sum::<u64>(), 0);
}

#[test]
fn set_associative_known_answer_with_modes_apart() {
    // Direct-mapped, 16-byte lines: at 32 bytes (2 sets) lines 0 and 2 share a set; at 64 bytes
    // (4 sets) they do not. User touches line 0, the kernel line 2, alternately, four times.
    let refs: Vec<Ref> = (0..8)
        .map(|i| {
            if i % 2 == 0 {
                rd(Mode::User, 0)
            } else {
                rd(Mode::Kernel, 0x20)
            }
        })
        .collect();
    let c = curve("l1d:32-64:1:16", &refs);
    assert_eq!(c.user.iter().map(|p| p.misses).collect::<Vec<_>>(), [4, 1]);
    assert_eq!(
        c.kernel.iter().map(|p| p.misses).collect::<Vec<_>>(),
        [4, 1]
    );
    assert_eq!(c.points[0].miss_rate, 1.0);
    // An instruction curve sees none of these.
    assert_eq!(
        curve("l1i:32-64:1:16", &refs).accesses,
        ModeCount::default()
    );
}

/// The first-level misses of a machine with nothing but the curve's cache at one size.
fn separate(spec: &CurveSpec, size: u64, physical: bool, refs: &[Ref]) -> [u64; 2] {
    let mut c = CacheConfig::new(size, spec.assoc, spec.line);
    c.physical = physical;
    let split = spec.cache != CurveCache::Unified;
    let cfg = MachineConfig {
        name: "one".into(),
        l1i: split.then(|| c.clone()),
        l1d: c,
        lower: vec![],
        memory_cycles: 10,
        uncached_cycles: 10,
        write_cycles: 0,
        write_buffer: None,
        tlb: None,
        mapping: Mapping::Identity,
        page_size: 4096,
        kernel_unmapped: vec![],
        kernel_uncached: vec![],
        three_c: false,
    };
    let mut m = Machine::new(&cfg);
    m.run(refs);
    let s = m.stats();
    [0, 1].map(|mode| {
        let st = &s.mode[mode];
        match spec.cache {
            CurveCache::L1i => st.l1i.misses,
            CurveCache::L1d => st.l1d.misses,
            CurveCache::Unified => st.l1i.misses + st.l1d.misses,
        }
    })
}

fn arb_refs(physical: bool) -> impl Strategy<Value = Vec<Ref>> {
    prop::collection::vec(
        (
            0u8..3,
            any::<bool>(),
            0u32..3,
            0u64..3000,
            prop_oneof![8 => Just(4u32), 1 => 1u32..40],
            prop::bool::weighted(0.03),
        ),
        1..3000,
    )
    .prop_map(move |v| {
        v.into_iter()
            .map(|(k, kernel, asid, addr, size, uncached)| {
                let kind = [Kind::Instr, Kind::Read, Kind::Write][usize::from(k)];
                let mode = if kernel { Mode::Kernel } else { Mode::User };
                let mut r = Ref::new(kind, mode, asid, size, addr * 4);
                r.uncached = uncached;
                if physical {
                    r.paddr = Some((addr * 4) ^ (u64::from(asid) << 13));
                }
                r
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_point_equals_a_separate_simulation(
        physical in any::<bool>(),
        refs in arb_refs(true),
        cache in prop::sample::select(vec!["l1i", "l1d", "unified"]),
        assoc in prop::sample::select(vec!["1", "2", "4", "full"]),
        line in prop::sample::select(vec![4u32, 16, 64]),
    ) {
        // Sizes from 4 ways of lines up to 64 times that.
        let ways = if assoc == "full" { 1 } else { assoc.parse::<u64>().unwrap() };
        let min = 4 * ways * u64::from(line);
        let spec = CurveSpec::parse(&format!("{cache}:{min}-{}:{assoc}:{line}", min * 64)).unwrap();
        let refs: Vec<Ref> = refs
            .into_iter()
            .map(|mut r| {
                if !physical {
                    r.paddr = None;
                }
                r
            })
            .collect();
        let mut sim = CurveSim::new(&spec);
        // Batches of any size give the same curve.
        for chunk in refs.chunks(97) {
            sim.run(Batch::from_refs(chunk).view());
        }
        let c = sim.finish();
        // Physical when a reference this cache looks up carried one (not any reference at all).
        let physical = refs
            .iter()
            .any(|r| r.paddr.is_some() && !r.uncached && spec.cache.sees(r.kind));
        prop_assert_eq!(c.physical, physical);
        for (i, &size) in spec.sizes().iter().enumerate() {
            let want = separate(&spec, size, physical, &refs);
            prop_assert_eq!([c.user[i].misses, c.kernel[i].misses], want, "size {}", size);
            prop_assert_eq!(c.points[i].misses, want[0] + want[1]);
        }
        // Inclusion: a bigger LRU cache never misses more.
        prop_assert!(c.points.windows(2).all(|w| w[1].misses <= w[0].misses));
    }
}
