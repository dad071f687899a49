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

/// The entries `(type, size, value)` as one stream.
fn stream(entries: &[(u16, u16, u64)]) -> Vec<u8> {
    entries
        .iter()
        .flat_map(|&(t, s, v)| entry(t, s, v))
        .collect()
}

/// Marker sub-types only newer drmemtrace versions write, which the reader skips.
const M_RECORD_ORDINAL: u16 = 22;
const M_SYSCALL: u16 = 25;
const M_MAYBE_BLOCKING_SYSCALL: u16 = 26;
const M_BRANCH_TARGET: u16 = 29;
const M_CHUNK_INSTR_COUNT: u16 = 20;
const M_CHUNK_FOOTER: u16 = 21;
const M_SYSCALL_FAILED: u16 = 30;
const M_VECTOR_LENGTH: u16 = 36;
/// A sub-type past the last this reader was written against ("uncompleted instruction" and
/// others land there).
const M_NEWER: u16 = 41;
/// Offline file type bits: x86-64 (0x40) with encodings (0x200).
const FILETYPE_X86_64_ENCODINGS: u64 = 0x240;

/// A thread as a current drmemtrace writes it at `version` (6 or 7): encodings before each new
/// instruction (two entries for one longer than 8 bytes), taken and untaken conditional jumps,
/// indirect branches after their branch-target marker, a system call bracketed by timestamps,
/// a kernel context-switch sequence, chunk markers and a marker newer than this reader.
fn modern_thread(version: u64) -> Vec<u8> {
    let enc = |bytes: &[u8]| {
        let mut v = [0u8; 8];
        v[..bytes.len()].copy_from_slice(bytes);
        (ENCODING, bytes.len() as u16, u64::from_le_bytes(v))
    };
    stream(&[
        (HEADER, 0, version),
        (THREAD, 4, 77),
        (PID, 4, 70),
        (MARKER, M_VERSION, version),
        (MARKER, M_FILETYPE, FILETYPE_X86_64_ENCODINGS),
        (MARKER, M_CACHE_LINE_SIZE, 64),
        (MARKER, M_CHUNK_INSTR_COUNT, 1 << 20),
        (MARKER, M_PAGE_SIZE, 4096),
        (MARKER, M_TIMESTAMP, 13_360_000_000_000_000),
        (MARKER, M_CPU_ID, 5),
        // movabs $imm64, %rax: 10 bytes, in two encoding entries.
        enc(&[0x48, 0xb8, 1, 2, 3, 4, 5, 6]),
        enc(&[7, 8]),
        (INSTR, 10, 0x40_1000),
        // mov (%rax), %rcx with its load.
        enc(&[0x48, 0x8b, 0x08]),
        (INSTR, 3, 0x40_100a),
        (READ, 8, 0x7fff_0000_0100),
        // jne, taken.
        enc(&[0x75, 0x10]),
        (INSTR_TAKEN_JUMP, 2, 0x40_100d),
        // call *%rdx: the encoding, then the target marker, then the call and its push.
        enc(&[0xff, 0xd2]),
        (MARKER, M_BRANCH_TARGET, 0x40_3000),
        (15, 2, 0x40_101f), // indirect call
        (WRITE, 8, 0x7fff_0000_00f8),
        // jmp *%rax (indirect jump) and a direct call, seen before: no encodings again.
        (12, 2, 0x40_3000),
        (14, 5, 0x40_4000), // direct call
        (WRITE, 8, 0x7fff_0000_00f0),
        // je, not taken; then ret after its target marker.
        enc(&[0x74, 0x02]),
        (INSTR_UNTAKEN_JUMP, 2, 0x40_5000),
        (MARKER, M_BRANCH_TARGET, 0x40_1024),
        (INSTR_RETURN, 1, 0x40_5002),
        (READ, 8, 0x7fff_0000_00f0),
        // syscall, bracketed by timestamps (version 6 onward).
        enc(&[0x0f, 0x05]),
        (INSTR, 2, 0x40_1024),
        (MARKER, M_TIMESTAMP, 13_360_000_000_000_100),
        (MARKER, M_CPU_ID, 5),
        (MARKER, M_SYSCALL, 1),
        (MARKER, M_MAYBE_BLOCKING_SYSCALL, 0),
        (MARKER, M_SYSCALL_FAILED, 0),
        (MARKER, M_TIMESTAMP, 13_360_000_000_000_200),
        (MARKER, M_CPU_ID, 6),
        // A kernel context switch, spliced in between its markers.
        (MARKER, M_CONTEXT_SWITCH_START, 1),
        enc(&[0x0f, 0x01, 0xf8]),
        (INSTR, 3, 0xffff_ffff_8100_0000),
        (WRITE, 8, 0xffff_8880_0000_2000),
        (MARKER, M_CONTEXT_SWITCH_END, 1),
        // An instruction that did not retire, left out at version 7; other new markers.
        (MARKER, M_NEWER, 0x05_0f),
        (MARKER, M_VECTOR_LENGTH, 16),
        (MARKER, M_CHUNK_FOOTER, 0),
        (MARKER, M_RECORD_ORDINAL, 30),
        // A prefetch and an instruction without a fetch: neither is a reference.
        (2, 64, 0x7fff_0000_4000),
        (INSTR_NO_FETCH, 2, 0x40_1026),
        (THREAD_EXIT, 4, 77),
        (FOOTER, 0, 0),
    ])
}

#[test]
fn versions_6_and_7_with_encodings_new_branches_and_markers() {
    let (u, k) = (Mode::User, Mode::Kernel);
    let want = [
        (Kind::Instr, u, 0x40_1000, 10),
        (Kind::Instr, u, 0x40_100a, 3),
        (Kind::Read, u, 0x7fff_0000_0100, 8),
        (Kind::Instr, u, 0x40_100d, 2),
        (Kind::Instr, u, 0x40_101f, 2),
        (Kind::Write, u, 0x7fff_0000_00f8, 8),
        (Kind::Instr, u, 0x40_3000, 2),
        (Kind::Instr, u, 0x40_4000, 5),
        (Kind::Write, u, 0x7fff_0000_00f0, 8),
        (Kind::Instr, u, 0x40_5000, 2),
        (Kind::Instr, u, 0x40_5002, 1),
        (Kind::Read, u, 0x7fff_0000_00f0, 8),
        (Kind::Instr, u, 0x40_1024, 2),
        (Kind::Instr, k, 0xffff_ffff_8100_0000, 3),
        (Kind::Write, k, 0xffff_8880_0000_2000, 8),
    ];
    for version in [6, 7] {
        let bytes = modern_thread(version);
        let mut r = DrmemReader::new(&bytes[..]).unwrap();
        assert_eq!(r.thread(), Some(77));
        let refs = read_all(&mut r).unwrap();
        assert!(!r.meta().physical());
        let got: Vec<_> = refs
            .iter()
            .map(|x| (x.kind, x.mode, x.vaddr, x.size))
            .collect();
        assert_eq!(got, want, "version {version}");
        assert!(refs.iter().all(|x| x.asid == 70 && x.paddr.is_none()));
        // Eight encoding entries, none of them an instruction: ten instruction entries.
        let instrs = refs.iter().filter(|x| x.kind == Kind::Instr).count();
        assert_eq!(instrs, 10);
        // The timestamps, every one of them, stop a segment (what a run directory merges by).
        let mut r = DrmemReader::new(&bytes[..]).unwrap();
        let mut out = Vec::new();
        let mut stops = Vec::new();
        loop {
            let s = r.next_segment(&mut out, 1000).unwrap();
            stops.push(s);
            if s == Stop::End {
                break;
            }
        }
        assert_eq!(
            stops,
            [
                Stop::Timestamp(13_360_000_000_000_000),
                Stop::Timestamp(13_360_000_000_000_100),
                Stop::Timestamp(13_360_000_000_000_200),
                Stop::End
            ]
        );
        assert_eq!(out, refs);
    }
}

#[test]
fn every_version_from_2_to_7_is_read_and_no_other() {
    for version in 2..=7 {
        let bytes = stream(&[(HEADER, 0, version), (INSTR, 4, 0x10), (FOOTER, 0, 0)]);
        let (refs, _) = import(&bytes).unwrap();
        assert_eq!(refs.len(), 1, "version {version}");
    }
    for version in [0, 1, 8, 9, u64::MAX] {
        let e = import(&entry(HEADER, 0, version)).unwrap_err().to_string();
        assert!(
            e.contains(&format!("version {version} is not supported"))
                && e.contains("reads 2 to 7"),
            "{e}"
        );
    }
}

#[test]
fn encodings_and_unknown_types_are_checked() {
    // An encoding entry holds at most 8 bytes.
    let e = import(&stream(&[
        (HEADER, 0, 7),
        (ENCODING, 9, 0),
        (INSTR, 9, 0x10),
        (FOOTER, 0, 0),
    ]))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("encoding entry at byte 12 declares 9 bytes"),
        "{e}"
    );
    // Encodings alone are not references.
    let (refs, _) = import(&stream(&[
        (HEADER, 0, 7),
        (ENCODING, 8, u64::MAX),
        (ENCODING, 8, u64::MAX),
        (FOOTER, 0, 0),
    ]))
    .unwrap();
    assert!(refs.is_empty());
    // The first type past drmemtrace's last, and a far one, are refused where they stand.
    for t in [50, 700, u16::MAX] {
        let e = import(&stream(&[
            (HEADER, 0, 7),
            (INSTR, 4, 0x10),
            (ENCODING, 4, 0x90),
            (t, 4, 0x20),
        ]))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(&format!("unknown entry type {t} at byte 36")),
            "{e}"
        );
    }
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
