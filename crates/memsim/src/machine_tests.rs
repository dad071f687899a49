use super::*;
use crate::memsim::cache::Replacement;
use proptest::prelude::*;

fn tiny() -> MachineConfig {
    let mut i = CacheConfig::new(32, 1, 16);
    i.write_back = false;
    let mut d = CacheConfig::new(32, 1, 16);
    d.write_back = false;
    MachineConfig {
        name: "tiny".into(),
        l1i: Some(i),
        l1d: d,
        lower: vec![],
        memory_cycles: 15,
        uncached_cycles: 20,
        write_cycles: 0,
        write_buffer: None,
        tlb: None,
        mapping: Mapping::Identity,
        page_size: 4096,
        kernel_unmapped: vec![],
        kernel_uncached: vec![],
        three_c: true,
    }
}

fn run(cfg: &MachineConfig, refs: &[Ref]) -> Stats {
    let mut m = Machine::new(cfg);
    for r in refs {
        m.access(r);
    }
    m.stats()
}

fn i(a: u64) -> Ref {
    Ref::new(Kind::Instr, Mode::User, 1, 4, a)
}
fn rd(a: u64, size: u32) -> Ref {
    Ref::new(Kind::Read, Mode::User, 1, size, a)
}
fn wr(a: u64) -> Ref {
    Ref::new(Kind::Write, Mode::User, 1, 4, a)
}

#[test]
fn stalls_by_component_on_a_hand_trace() {
    // I-cache: 0x0 miss, 0x4 hit, 0x20 miss (evicts 0x0), 0x0 miss: 3 misses = 45 cycles.
    // D-cache: 0x100 miss, 0x104 hit, 0x110 miss: 2 misses = 30 cycles.
    let refs = [
        i(0),
        rd(0x100, 4),
        i(4),
        rd(0x104, 4),
        i(0x20),
        rd(0x110, 4),
        i(0),
    ];
    let s = run(&tiny(), &refs);
    let u = &s.mode[0];
    assert_eq!(u.instructions, 4);
    assert_eq!((u.l1i.accesses, u.l1i.misses), (4, 3));
    assert_eq!((u.l1d.accesses, u.l1d.misses), (3, 2));
    assert_eq!(u.stall, [45, 30, 0, 0, 0]);
    assert_eq!(u.l1i.classes, [2, 0, 1], "0x0 again is a conflict miss");
    assert_eq!(
        s.by_asid[&1],
        SpaceStats {
            instructions: 4,
            stall: 75
        }
    );
}

#[test]
fn straddling_access_touches_two_lines() {
    let s = run(&tiny(), &[rd(0x10c, 8)]);
    assert_eq!((s.mode[0].l1d.accesses, s.mode[0].l1d.misses), (2, 2));
    assert_eq!(s.mode[0].stall[1], 30);
}

#[test]
fn an_access_past_the_top_of_the_address_space_stops_there() {
    // It used to overflow (a panic in debug builds, no line at all in release).
    let mut m = Machine::new(&tiny());
    m.run(&[rd(u64::MAX - 3, 16), wr(u64::MAX - 1)]);
    let s = m.stats();
    assert_eq!((s.mode[0].l1d.accesses, s.mode[0].l1d.misses), (2, 1));
}

#[test]
fn write_through_writes_fill_the_write_buffer() {
    let mut c = tiny();
    c.l1d.write_allocate = false;
    c.write_buffer = Some(WriteBufferConfig {
        depth: 2,
        page_cycles: 1,
        other_cycles: 5,
        page_size: 4096,
        merge_bytes: 0,
    });
    // Three writes to different pages at time 0: the third waits 5 cycles for the first.
    let s = run(&c, &[wr(0x0), wr(0x2000), wr(0x4000)]);
    assert_eq!(s.mode[0].stall[2], 5);
    assert_eq!(s.mode[0].wbuf_full_stalls, 1);
    // The same with a read miss behind a started write: it waits for that write.
    let s = run(&c, &[wr(0x0), rd(0x3000, 4)]);
    assert_eq!(s.mode[0].stall[2], 5);
    assert_eq!(s.mode[0].stall[1], 15);
}

#[test]
fn write_back_level_counts_dirty_victims() {
    let mut c = tiny();
    c.l1d.write_back = true;
    let s = run(&c, &[wr(0x0), rd(0x20, 4), rd(0x40, 4)]);
    assert_eq!(s.mode[0].l1d.writebacks, 1);
}

#[test]
fn lower_level_hit_costs_its_hit_cycles() {
    let mut c = tiny();
    let mut l2 = CacheConfig::new(1024, 4, 16);
    l2.hit_cycles = 4;
    c.lower = vec![l2];
    // 0x0 (memory), 0x20 (memory, evicts 0x0 from L1), 0x0 (L2 hit).
    let s = run(&c, &[rd(0, 4), rd(0x20, 4), rd(0, 4)]);
    assert_eq!(s.mode[0].stall[1], 15 + 15 + 4);
    assert_eq!(
        (s.mode[0].lower[0].accesses, s.mode[0].lower[0].misses),
        (3, 2)
    );
}

#[test]
fn tlb_unmapped_kernel_and_uncached_regions() {
    let mut c = tiny();
    c.tlb = Some(TlbConfig {
        entries: 4,
        assoc: 0,
        page_size: 4096,
        kernel_entries: 1,
        replacement: Replacement::Lru,
        seed: 0,
        user_miss_cycles: 10,
        kernel_miss_cycles: 50,
    });
    c.kernel_unmapped = vec![(0x8000_0000, 0xc000_0000)];
    c.kernel_uncached = vec![(0xa000_0000, 0xc000_0000)];
    let k = |a| Ref::new(Kind::Read, Mode::Kernel, 1, 4, a);
    let s = run(
        &c,
        &[
            rd(0x1000, 4),
            rd(0x1004, 4),
            k(0x8000_1000),
            k(0xc000_0000),
            k(0xa000_0000),
        ],
    );
    assert_eq!((s.mode[0].tlb_refs, s.mode[0].tlb_misses), (2, 1));
    assert_eq!(s.mode[0].stall[3], 10);
    assert_eq!(
        (s.mode[1].tlb_refs, s.mode[1].tlb_misses),
        (1, 1),
        "only the mapped kernel ref"
    );
    assert_eq!(s.mode[1].stall[3], 50);
    assert_eq!(s.mode[1].uncached, 1);
    assert_eq!(s.mode[1].stall[4], 20);
}

#[test]
fn trace_physical_addresses_override_the_mapping() {
    let mut c = tiny();
    c.mapping = Mapping::Random { seed: 3 };
    let mut a = rd(0x100, 4);
    a.paddr = Some(0x0);
    let mut b = rd(0x900, 4);
    b.paddr = Some(0x20);
    let s = run(&c, &[a, b, a]);
    assert_eq!(s.mode[0].l1d.misses, 3, "physical 0x0 and 0x20 conflict");
}

proptest! {
    /// A cache indexed only by page-offset bits cannot tell mappings apart (one address space:
    /// identity mapping aliases address spaces, the others do not).
    #[test]
    fn page_offset_indexed_cache_ignores_the_mapping(
        trace in prop::collection::vec((0u64..64, 0u64..4096, 0u8..3, 1u32..2), 1..400)
    ) {
        let refs: Vec<Ref> = trace.iter().map(|&(page, off, k, asid)| {
            let kind = [Kind::Instr, Kind::Read, Kind::Write][k as usize];
            Ref::new(kind, Mode::User, asid, 4, page << 12 | (off & !3))
        }).collect();
        let mut c = tiny();
        c.l1i = Some(CacheConfig::new(4096, 1, 16));
        c.l1d = CacheConfig::new(8192, 2, 32);
        let results: Vec<[u64; 5]> = [
            Mapping::Identity, Mapping::FirstTouch, Mapping::Random { seed: 9 },
            Mapping::Hash { colours: 16 }, Mapping::Colour { colours: 4 },
        ].into_iter().map(|m| { c.mapping = m; run(&c, &refs).mode[0].stall }).collect();
        for r in &results[1..] {
            prop_assert_eq!(r, &results[0]);
        }
    }
}
