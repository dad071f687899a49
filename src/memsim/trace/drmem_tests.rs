use super::super::{read_all, FLAG_PHYSICAL};
use super::*;
use crate::memsim::trace::synth::Synth;

struct Refs(Vec<Ref>, TraceMeta);
impl RefSource for Refs {
    fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<usize> {
        let n = self.0.len().min(max);
        out.extend(self.0.drain(..n));
        Ok(n)
    }
    fn meta(&self) -> TraceMeta {
        self.1
    }
}

fn export_refs(refs: &[Ref]) -> (Vec<u8>, DrmemCounts) {
    let mut out = Vec::new();
    let c = export(&mut Refs(refs.to_vec(), TraceMeta::default()), &mut out).unwrap();
    (out, c)
}

fn import(bytes: &[u8]) -> Result<(Vec<Ref>, TraceMeta)> {
    let mut r = DrmemReader::new(bytes)?;
    let refs = read_all(&mut r)?;
    Ok((refs, r.meta()))
}

/// Synthetic user and kernel references in several address spaces, with physical addresses
/// from a fixed page mapping when asked (as a system capture has them).
fn synth(physical: bool) -> Vec<Ref> {
    let mut refs = read_all(&mut Synth::new(30_000, 6)).unwrap();
    for r in &mut refs {
        r.tag = 0;
        if physical {
            let page = r.vaddr >> 12;
            let frame = (page.wrapping_mul(0x9e37_79b9) ^ u64::from(r.asid)) & 0xf_ffff;
            r.paddr = Some(frame << 12 | (r.vaddr & 0xfff));
        }
    }
    refs
}

#[test]
fn round_trip_user_kernel_and_address_spaces() {
    for physical in [false, true] {
        let refs = synth(physical);
        assert!(refs.iter().any(|r| r.mode == Mode::Kernel));
        assert!(
            refs.iter()
                .map(|r| r.asid)
                .collect::<std::collections::BTreeSet<_>>()
                .len()
                > 1
        );
        let (bytes, c) = export_refs(&refs);
        assert_eq!(bytes.len() as u64, c.entries * ENTRY as u64);
        assert_eq!(c.references, refs.len() as u64);
        let (back, meta) = import(&bytes).unwrap();
        assert_eq!(meta.physical(), physical);
        assert_eq!(back, refs, "physical {physical}");
        assert!(c.kernel_sections > 0);
        assert_eq!(c.physical_pairs > 0, physical);
    }
}

#[test]
fn known_entries() {
    let mut k = Ref::new(Kind::Read, Mode::Kernel, 0, 8, 0xffff_8880_0000_1010);
    k.paddr = Some(0x1010);
    let refs = [Ref::new(Kind::Instr, Mode::User, 0, 3, 0x40_1000), k];
    let (bytes, _) = export_refs(&refs);
    let entries: Vec<(u16, u16, u64)> = bytes
        .chunks_exact(ENTRY)
        .map(|c| split(c.try_into().unwrap()))
        .collect();
    assert_eq!(entries[0], (HEADER, 0, 3));
    assert_eq!(entries[4], (MARKER, M_FILETYPE, 0x40));
    let body: Vec<_> = entries[9..].to_vec();
    assert_eq!(
        body,
        [
            (INSTR, 3, 0x40_1000),
            (MARKER, M_SYSCALL_TRACE_START, 0),
            (MARKER, M_PHYSICAL_ADDRESS, 0x1000),
            (MARKER, M_VIRTUAL_ADDRESS, 0xffff_8880_0000_1000),
            (READ, 8, 0xffff_8880_0000_1010),
            (MARKER, M_SYSCALL_TRACE_END, 0),
            (THREAD_EXIT, 4, 1),
            (FOOTER, 0, 0),
        ]
    );
    assert!(sniff(&bytes) && !sniff(b"I  0400000,4\n"));
}

#[test]
fn bundles_branches_and_skipped_entries() {
    let mut bytes = Vec::new();
    for (t, s, v) in [
        (HEADER, 0, 5),
        (THREAD, 4, 7),
        (PID, 4, 7),
        (INSTR_TAKEN_JUMP, 2, 0x1000),
        (
            INSTR_BUNDLE,
            2,
            u64::from_le_bytes([3, 5, 0, 0, 0, 0, 0, 0]),
        ),
        (2, 64, 0x5000), // a prefetch: not a reference
        (29, 2, 0x2000), // an instruction without a fetch
        (MARKER, M_CPU_ID, 3),
        (WRITE, 4, 0x6000),
        (FOOTER, 0, 0),
    ] {
        bytes.extend_from_slice(&entry(t, s, v));
    }
    let (refs, meta) = import(&bytes).unwrap();
    assert!(!meta.physical());
    let got: Vec<_> = refs
        .iter()
        .map(|r| (r.kind, r.vaddr, r.size, r.asid))
        .collect();
    assert_eq!(
        got,
        [
            (Kind::Instr, 0x1000, 2, 7),
            (Kind::Instr, 0x1002, 3, 7),
            (Kind::Instr, 0x1005, 5, 7),
            (Kind::Write, 0x6000, 4, 7),
        ]
    );
}

#[test]
fn bad_traces_name_the_entry() {
    let e = import(&entry(READ, 4, 0)).unwrap_err().to_string();
    assert!(e.contains("not a drmemtrace trace"), "{e}");
    let e = import(&entry(HEADER, 0, 99)).unwrap_err().to_string();
    assert!(e.contains("version 99"), "{e}");
    let mut b = entry(HEADER, 0, 3).to_vec();
    b.extend_from_slice(&entry(READ, 60000, 0x10));
    let e = import(&b).unwrap_err().to_string();
    assert!(e.contains("byte 12") && e.contains("60000 bytes"), "{e}");
    let mut b = entry(HEADER, 0, 3).to_vec();
    b.extend_from_slice(&entry(INSTR, 4, 0x10));
    b.extend_from_slice(&entry(700, 0, 0));
    let e = import(&b).unwrap_err().to_string();
    assert!(e.contains("unknown entry type 700 at byte 24"), "{e}");
    let mut b = entry(HEADER, 0, 3).to_vec();
    b.extend_from_slice(&entry(INSTR, 4, 0x10));
    let e = import(&b).unwrap_err().to_string();
    assert!(e.contains("without its footer"), "{e}");
    b.extend_from_slice(&[1, 2, 3]);
    let e = import(&b).unwrap_err().to_string();
    assert!(e.contains("cut short"), "{e}");
}

#[test]
fn gzip_round_trip_through_the_exporters() {
    use super::super::file::{write_trace, Sink, ZSTD_LEVEL};
    use super::super::open;
    let refs = synth(true);
    let d = tempfile::tempdir().unwrap();
    // drmemtrace entries, gzip-compressed because of the name, as `trace convert` writes them.
    let out = d.path().join("t.trace.gz");
    let file = crate::files::AtomicFile::create(&out).unwrap();
    let mut sink = Sink::create(&file, &out, false, ZSTD_LEVEL).unwrap();
    assert!(matches!(sink, Sink::Gzip(_)));
    let c = export(&mut Refs(refs.clone(), TraceMeta::default()), &mut sink).unwrap();
    sink.finish().unwrap();
    file.commit().unwrap();
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(bytes[..2], [0x1f, 0x8b]);
    assert!(
        (bytes.len() as u64) < c.entries * ENTRY as u64 / 4,
        "compressed"
    );
    let mut src = open(&out, None).unwrap();
    assert!(src.meta().physical());
    assert_eq!(read_all(src.as_mut()).unwrap(), refs);
    // osmeter's own format the same way.
    let osmt = d.path().join("t.osmt.gz");
    let meta = TraceMeta {
        flags: FLAG_PHYSICAL,
    };
    let n = write_trace(&mut Refs(refs.clone(), meta), &osmt, false, 0).unwrap();
    assert_eq!(n, refs.len() as u64);
    assert_eq!(std::fs::read(&osmt).unwrap()[..2], [0x1f, 0x8b]);
    assert_eq!(read_all(open(&osmt, None).unwrap().as_mut()).unwrap(), refs);
    // A .gz name and --zstd contradict each other.
    let e = write_trace(&mut Refs(refs, meta), &osmt, true, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("ends in .gz but --zstd"), "{e}");
}
