use super::super::read_all;
use super::*;
use proptest::prelude::*;

fn encode(refs: &[Ref], flags: u8) -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), flags).unwrap();
    for r in refs {
        w.write(r).unwrap();
    }
    w.finish(0).unwrap()
}

fn decode(bytes: &[u8]) -> Result<Vec<Ref>> {
    let mut r = TraceReader::new(bytes)?;
    read_all(&mut r)
}

fn arb_ref(physical: bool) -> impl Strategy<Value = Ref> {
    (
        0u8..3,
        any::<bool>(),
        any::<bool>(),
        prop_oneof![Just(0u32), Just(1u32), any::<u32>()],
        prop_oneof![1u32..=16, 0..=MAX_ACCESS_BYTES],
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(move |(k, m, u, asid, size, v, p)| Ref {
            kind: [Kind::Instr, Kind::Read, Kind::Write][k as usize],
            mode: if m { Mode::Kernel } else { Mode::User },
            uncached: u,
            asid,
            size,
            vaddr: v,
            paddr: physical.then_some(p),
            tag: 0,
        })
}

/// Hands out its bytes a few at a time, so records straddle every possible refill point.
struct Dribble<'a> {
    bytes: &'a [u8],
    chunk: usize,
}

impl Read for Dribble<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.chunk.min(out.len()).min(self.bytes.len());
        out[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

/// Mostly the records the fast decoder takes (small deltas, sizes in the tag or in one byte after
/// it, the same asid), with a few of every other shape mixed in: deltas of 7, 8 and 9 varint
/// bytes (the fast decoder's limit is 8), sizes of two varint bytes, new address spaces. With
/// `physical`, each record also has a physical address that moves on its own.
fn arb_walk(physical: bool) -> impl Strategy<Value = Vec<Ref>> {
    let delta = || {
        prop_oneof![
            200 => -300i64..300,
            50 => -(1i64 << 40)..(1i64 << 40),
            10 => -(1i64 << 56)..(1i64 << 56),
            1 => any::<i64>(),
        ]
    };
    prop::collection::vec(
        (
            0u8..3,
            prop::bool::weighted(0.1),
            prop::bool::weighted(0.05),
            prop::bool::weighted(0.003),
            prop_oneof![
                200 => Just(4u32),
                50 => 0u32..=8,
                20 => 9u32..=127,
                1 => 128u32..=MAX_ACCESS_BYTES
            ],
            delta(),
            delta(),
        ),
        0..3000,
    )
    .prop_map(move |steps| {
        let mut addr = [0x40_0000u64, 0x7fff_0000, 0xffff_8000_0000_0000, 0x1000];
        let mut phys = [0x1000u64; 4];
        let mut asid = 1u32;
        steps
            .into_iter()
            .map(|(k, kernel, uncached, new_asid, size, delta, pdelta)| {
                let kind = [Kind::Instr, Kind::Read, Kind::Write][k as usize];
                let mode = if kernel { Mode::Kernel } else { Mode::User };
                if new_asid {
                    asid = asid.wrapping_mul(7).wrapping_add(3);
                }
                let s = stream(kind, mode);
                addr[s] = addr[s].wrapping_add(delta as u64);
                phys[s] = phys[s].wrapping_add(pdelta as u64);
                let mut r = Ref::new(kind, mode, asid, size, addr[s]);
                r.uncached = uncached;
                r.paddr = physical.then_some(phys[s]);
                r
            })
            .collect()
    })
}

/// Decodes `bytes` handed out `chunk` bytes at a time into batches of at most `max`.
fn dribbled(bytes: &[u8], chunk: usize, max: usize, pext: bool) -> Vec<Ref> {
    let mut r = TraceReader::new(Dribble { bytes, chunk }).unwrap();
    if !pext {
        r = r.without_pext();
    }
    let mut got = Vec::new();
    while r.next_batch(&mut got, max).unwrap() > 0 {}
    got
}

/// The same, decoded straight into packed batches of at most `max`, unpacked again.
fn dribbled_packed(bytes: &[u8], chunk: usize, max: usize, pext: bool) -> Vec<Ref> {
    let mut r = TraceReader::new(Dribble { bytes, chunk }).unwrap();
    if !pext {
        r = r.without_pext();
    }
    let mut got = Vec::new();
    let mut batch = Batch::default();
    loop {
        batch.clear();
        let n = r.next_packed(&mut batch, max).unwrap();
        assert!(n <= max && n == batch.len());
        if n == 0 {
            return got;
        }
        got.extend(batch.view().iter());
    }
}

proptest! {
    #[test]
    fn round_trip(refs in prop::collection::vec(arb_ref(false), 0..400)) {
        prop_assert_eq!(decode(&encode(&refs, 0)).unwrap(), refs);
    }

    /// Whatever the mix of records the fast decoder takes and leaves, and wherever the input's
    /// reads and the batches end, every record comes back as written, with or without `pext`
    /// and with or without physical addresses.
    #[test]
    fn fast_and_general_decoders_agree_at_any_refill_point(
        (physical, refs) in any::<bool>().prop_flat_map(|p| (Just(p), arb_walk(p))),
        chunk in 1usize..200, max in 1usize..5000,
    ) {
        let bytes = encode(&refs, if physical { FLAG_PHYSICAL } else { 0 });
        prop_assert_eq!(&dribbled(&bytes, chunk, max, true), &refs);
        prop_assert_eq!(&dribbled(&bytes, chunk, max, false), &refs);
        prop_assert_eq!(&dribbled_packed(&bytes, chunk, max, true), &refs);
        prop_assert_eq!(&dribbled_packed(&bytes, chunk, max, false), &refs);
    }

    /// `pext` (where this CPU has it fast) and the portable fold give the same number for every
    /// varint of up to 8 bytes.
    #[test]
    fn pext_and_portable_folds_agree(v in any::<u64>(), bits in 0u32..57) {
        let v = v & ((1u64 << bits) - 1).max(1);
        let mut bytes = Vec::new();
        put_varint(&mut bytes, v);
        bytes.resize(8, 0xff);
        let window = u64::from_le_bytes(bytes[..8].try_into().unwrap());
        let portable = window_varint(window, fold_groups);
        prop_assert_eq!(portable.map(|(v, _)| v), Some(v));
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("bmi2") {
            // SAFETY: the CPU has BMI2.
            let pext = window_varint(window, |x| unsafe { std::arch::x86_64::_pext_u64(x, GROUPS) });
            prop_assert_eq!(pext, portable);
        }
    }

    #[test]
    fn round_trip_physical(refs in prop::collection::vec(arb_ref(true), 0..400)) {
        prop_assert_eq!(decode(&encode(&refs, FLAG_PHYSICAL)).unwrap(), refs);
    }

    #[test]
    fn any_truncation_is_an_error(refs in prop::collection::vec(arb_ref(false), 1..50), cut in 0usize..1000) {
        let bytes = encode(&refs, 0);
        let cut = cut % bytes.len();
        prop_assert!(decode(&bytes[..cut]).is_err());
    }
}

#[test]
fn sequential_records_are_compact() {
    let refs: Vec<Ref> = (0..10_000u64)
        .map(|i| Ref::new(Kind::Instr, Mode::User, 7, 4, 0x40_0000 + 4 * i))
        .collect();
    let bytes = encode(&refs, 0);
    assert!(bytes.len() < 2 * refs.len() + 32, "{} bytes", bytes.len());
}

#[test]
fn header_errors_name_the_problem() {
    let e = decode(b"XXXX\x01\0\0\0\x03\0\0").unwrap_err().to_string();
    assert!(e.contains("wrong magic"), "{e}");
    let e = decode(b"OSMT\x09\0\0\0\x03\0\0").unwrap_err().to_string();
    assert!(e.contains("version 9"), "{e}");
    let e = decode(b"OSM").unwrap_err().to_string();
    assert!(e.contains("header"), "{e}");
    let e = decode(b"OSMT\x01\0\0\0\x07").unwrap_err().to_string();
    assert!(e.contains("byte 8"), "{e}");
}

#[test]
fn trailer_flags_are_merged_and_garbage_after_it_rejected() {
    let mut w = TraceWriter::new(Vec::new(), 1).unwrap();
    w.write(&Ref::new(Kind::Read, Mode::User, 0, 4, 16))
        .unwrap();
    let mut bytes = w.finish(super::super::FLAG_INCOMPLETE).unwrap();
    let mut r = TraceReader::new(&bytes[..]).unwrap();
    read_all(&mut r).unwrap();
    assert!(r.meta().incomplete() && r.meta().user_only());
    bytes.push(0);
    assert!(decode(&bytes)
        .unwrap_err()
        .to_string()
        .contains("after the trailer"));
}

#[test]
fn sizes_past_what_an_instruction_touches_are_refused_with_the_offset() {
    // A 4 GiB access: the tag says a varint size follows (code 0), then 0xffff_ffff, then the
    // address delta. The reader used to hand it on and the simulator walked every line of it.
    let mut bytes = b"OSMT\x01\0\0\0".to_vec();
    bytes.extend([0x41, 0x02]); // an ordinary read of 2 bytes at byte 8
    bytes.extend([0x01, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00]);
    bytes.extend([0x03, 0x02, 0x00]);
    let e = decode(&bytes).unwrap_err().to_string();
    assert!(
        e.contains("byte 10") && e.contains("4294967295 bytes"),
        "{e}"
    );
    let mut ok = encode(
        &[Ref::new(Kind::Write, Mode::User, 0, MAX_ACCESS_BYTES, 64)],
        0,
    );
    assert_eq!(decode(&ok).unwrap()[0].size, MAX_ACCESS_BYTES);
    // One more byte than the bound, written by hand (the writer refuses it).
    ok.truncate(8);
    ok.extend([0x02, 0x81, 0x80, 0x01, 0x80, 0x01, 0x03, 0x01, 0x00]);
    assert!(decode(&ok).unwrap_err().to_string().contains("16385 bytes"));
    let mut w = TraceWriter::new(Vec::new(), 0).unwrap();
    let e = w
        .write(&Ref::new(
            Kind::Read,
            Mode::User,
            0,
            MAX_ACCESS_BYTES + 1,
            0,
        ))
        .unwrap_err()
        .to_string();
    assert!(e.contains("16385"), "{e}");
}
