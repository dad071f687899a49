use super::*;
use proptest::prelude::*;

fn arb_ref() -> impl Strategy<Value = Ref> {
    (
        0u8..3,
        any::<bool>(),
        prop::bool::weighted(0.05),
        prop_oneof![8 => Just(1u32), 2 => 2u32..4, 1 => any::<u32>()],
        prop_oneof![8 => 0u32..=16, 1 => 0u32..=16384],
        prop_oneof![
            8 => 0u64..(1 << 47),
            4 => 0xffff_8000_0000_0000u64..=u64::MAX,
            1 => any::<u64>()
        ],
        prop_oneof![9 => Just(0u8), 1 => any::<u8>()],
    )
        .prop_map(|(k, kernel, uncached, asid, size, vaddr, tag)| Ref {
            kind: [Kind::Instr, Kind::Read, Kind::Write][k as usize],
            mode: if kernel { Mode::Kernel } else { Mode::User },
            uncached,
            asid,
            size,
            vaddr,
            paddr: None,
            tag,
        })
}

/// References of a trace: physical addresses on all of them or on none.
fn arb_refs() -> impl Strategy<Value = Vec<Ref>> {
    (
        any::<bool>(),
        prop::collection::vec((arb_ref(), any::<u64>()), 0..300),
    )
        .prop_map(|(physical, v)| {
            v.into_iter()
                .map(|(mut r, p)| {
                    r.paddr = physical.then_some(p);
                    r
                })
                .collect()
        })
}

#[test]
fn common_references_fit_one_word_and_the_rest_go_aside() {
    let user = Ref::new(Kind::Write, Mode::User, 3, 8, 0x7fff_ffff_f000);
    let w = pack(&user).unwrap();
    assert_eq!(vaddr(w), 0x7fff_ffff_f000);
    assert_eq!((size(w), class(w)), (8, CLASS_WRITE | CLASS_IN_BLOCK));
    let kernel = Ref::new(Kind::Instr, Mode::Kernel, 0, 4, 0xffff_ffff_8100_0000);
    let w = pack(&kernel).unwrap();
    assert_eq!(vaddr(w), 0xffff_ffff_8100_0000);
    assert_eq!(class(w), CLASS_KERNEL | CLASS_IN_BLOCK);
    // Not canonical, too long, or attributed: kept whole.
    assert_eq!(pack(&Ref::new(Kind::Read, Mode::User, 0, 4, 1 << 50)), None);
    assert_eq!(pack(&Ref::new(Kind::Read, Mode::User, 0, 512, 64)), None);
    assert_eq!(pack(&Ref { tag: 3, ..user }), None);
    let b = Batch::from_refs(&[user, Ref::new(Kind::Read, Mode::User, 3, 512, 64), kernel]);
    assert_eq!(b.side.len(), 1);
    assert_eq!(class(b.words[1]), CLASS_SIDE);
    assert_eq!(b.spaces, vec![(0, 3), (2, 0)]);
    assert!(b.paddrs.is_empty());
}

proptest! {
    /// Every reference comes back whole, by index and in order, in any split of the batch.
    #[test]
    fn unpacking_gives_back_what_was_packed(refs in arb_refs(), cut in any::<prop::sample::Index>()) {
        let b = Batch::from_refs(&refs);
        let v = b.view();
        prop_assert_eq!(v.len(), refs.len());
        prop_assert_eq!(&v.iter().collect::<Vec<_>>(), &refs);
        for (i, r) in refs.iter().enumerate() {
            prop_assert_eq!(&v.get(i), r);
        }
        let mid = if refs.is_empty() { 0 } else { cut.index(refs.len() + 1) };
        let mut unpacked = Vec::new();
        v.unpack_into(&mut unpacked);
        // Read from the words, and from references unpacked once beside them: the same.
        for v in [v, v.with_whole(&unpacked)] {
            let (a, c) = v.split_at(mid);
            let again: Vec<Ref> = a.iter().chain(c.iter()).collect();
            prop_assert_eq!(&again, &refs);
            for (i, r) in refs[mid..].iter().enumerate() {
                prop_assert_eq!(&c.get(i), r);
            }
        }
    }

    /// The runs of one address space cover the references in order, each with its own space,
    /// and two neighbouring runs are of different spaces.
    #[test]
    fn runs_of_one_space_cover_the_batch(refs in arb_refs(), cut in any::<prop::sample::Index>()) {
        let b = Batch::from_refs(&refs);
        let mid = if refs.is_empty() { 0 } else { cut.index(refs.len() + 1) };
        let (_, tail) = b.view().split_at(mid);
        let mut seen = Vec::new();
        let mut last = None;
        for (asid, run) in tail.by_space() {
            prop_assert!(!run.is_empty());
            prop_assert_ne!(Some(asid), last);
            last = Some(asid);
            for r in run.iter() {
                prop_assert_eq!(r.asid, asid);
                seen.push(r);
            }
        }
        prop_assert_eq!(&seen, &refs[mid..].to_vec());
    }
}

#[test]
fn a_reference_inside_one_block_says_so() {
    let at = |vaddr: u64, size: u32| {
        class(pack(&Ref::new(Kind::Read, Mode::User, 0, size, vaddr)).unwrap()) & CLASS_IN_BLOCK
            != 0
    };
    assert!(at(0x1000, 64) && at(0x103c, 4) && at(0x103f, 0) && at(0x103f, 1));
    assert!(!at(0x103d, 4) && !at(0x1001, 64) && !at(0x103f, 2));
}

proptest! {
    /// The in-block mark is exactly "the first and last byte share a block".
    #[test]
    fn the_in_block_mark_is_exact(r in arb_ref()) {
        if let Some(w) = pack(&r) {
            let last = r.vaddr.wrapping_add(u64::from(r.size.max(1)) - 1);
            let same = r.vaddr >> BLOCK_BITS == last >> BLOCK_BITS;
            prop_assert_eq!(class(w) & CLASS_IN_BLOCK != 0, same);
        }
    }
}
