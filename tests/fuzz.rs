//! Fuzzing of what osmeter reads from files it did not write: the trace readers (osmeter binary,
//! valgrind lackey, Dinero din, drmemtrace run directories, and the format detection and
//! decompression in front of them) and the machine
//! configuration (`--config` JSON and the `SIZE:ASSOC:LINE` geometry strings), with proptest
//! feeding arbitrary bytes, mutations of valid inputs and out-of-range numbers.
//!
//! Every target asserts the same: no panic, an error rather than a crash, an error message that
//! is short printable text, and a result no larger than the input can describe. CI runs a few
//! hundred cases per target (`cargo test --test fuzz`, seconds); a longer hunt:
//! `FUZZ_CASES=200000 cargo test --release --test fuzz`.

use osmeter::memsim::budget;
use osmeter::memsim::cache::CacheConfig;
use osmeter::memsim::config::{parse_cache, parse_size, parse_tlb, preset};
use osmeter::memsim::machine::{Machine, MachineConfig};
use osmeter::memsim::trace::binary::{TraceReader, TraceWriter};
use osmeter::memsim::trace::text::{sniff, DinReader, LackeyReader};
use osmeter::memsim::trace::{self, read_all, Kind, Mode, Ref, RefSource};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        // Shrunk failures are printed; the committed regressions live in the unit tests.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Reads everything a source gives, in batches as memsim does, stopping at the first error.
/// At most `limit` references are accepted from an input of that many bytes or fewer.
fn drain(src: &mut dyn RefSource, limit: usize) -> Result<usize, String> {
    let mut batch = Vec::new();
    let mut total = 0;
    loop {
        batch.clear();
        match src.next_batch(&mut batch, 4096) {
            Ok(0) => return Ok(total),
            Ok(n) => {
                total += n;
                if total > limit {
                    return Err(format!("{total} references from a small input"));
                }
            }
            Err(e) => return Err(format!("{e:#}")),
        }
    }
}

/// An error message fit for a terminal: printable ASCII (and line feeds), bounded.
fn check_message(text: &str) {
    assert!(
        text.bytes()
            .all(|b| b == b'\n' || (0x20..0x7f).contains(&b)),
        "unprintable error: {text:?}"
    );
    assert!(text.len() < 2000, "error of {} bytes", text.len());
}

/// A valid osmeter trace of the given references.
fn encode(refs: &[Ref], physical: bool) -> Vec<u8> {
    let flags = if physical {
        osmeter::memsim::trace::FLAG_PHYSICAL
    } else {
        0
    };
    let mut w = TraceWriter::new(Vec::new(), flags).unwrap();
    for r in refs {
        w.write(r).unwrap();
    }
    w.finish(0).unwrap()
}

fn a_ref() -> impl Strategy<Value = Ref> {
    (
        prop_oneof![Just(Kind::Instr), Just(Kind::Read), Just(Kind::Write)],
        prop_oneof![Just(Mode::User), Just(Mode::Kernel)],
        0u32..4,
        // Every size a valid trace may hold (the writer refuses more than an instruction touches).
        prop_oneof![1u32..=16, 1u32..=trace::MAX_ACCESS_BYTES],
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(|(kind, mode, asid, size, vaddr, uncached)| {
            let mut r = Ref::new(kind, mode, asid, size, vaddr);
            r.uncached = uncached;
            r
        })
}

/// Flip, overwrite, insert or delete bytes at the given positions.
fn mutate(mut bytes: Vec<u8>, edits: &[(usize, u8, u8)]) -> Vec<u8> {
    for &(pos, value, op) in edits {
        let at = if bytes.is_empty() {
            0
        } else {
            pos % bytes.len()
        };
        match op % 4 {
            0 if !bytes.is_empty() => bytes[at] ^= 1 << (value % 8),
            1 if !bytes.is_empty() => bytes[at] = value,
            2 => bytes.insert(at, value),
            _ if !bytes.is_empty() => {
                bytes.remove(at);
            }
            _ => bytes.push(value),
        }
    }
    bytes
}

/// Text lines that are almost lackey or din: right shapes with wrong fields, and noise.
fn a_text_line() -> impl Strategy<Value = String> {
    prop_oneof![
        ("[ILSM ]{1,3}", "[0-9a-fA-Fx]{0,20}", "[0-9]{0,12}")
            .prop_map(|(op, a, s)| format!("{op} {a},{s}")),
        ("[0-9]{1,2}", "(0x)?[0-9a-fA-F]{0,20}", "[0-9]{0,12}")
            .prop_map(|(l, a, s)| format!("{l} {a} {s}")),
        "==[0-9]+== .{0,30}",
        "#.{0,30}",
        ".{0,40}",
        Just(String::new()),
    ]
}

/// A drmemtrace header entry (type 25, size 0, version 6), as its traces start.
const DRMEM_HEADER: &[u8] = b"\x19\x00\x00\x00\x06\x00\x00\x00\x00\x00\x00\x00";
/// The same, version 3, which osmeter writes.
const DRMEM_V3_HEADER: &[u8] = b"\x19\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00";
/// The same, version 7, the newest the reader takes.
const DRMEM_V7_HEADER: &[u8] = b"\x19\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00";

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    g.write_all(bytes).unwrap();
    g.finish().unwrap()
}

/// A zip of `bytes` cut into two deflated members, as drmemtrace writes a thread's chunks.
fn zip_of(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let (a, b) = bytes.split_at(bytes.len() / 2);
    for (name, part) in [("chunk.0000", a), ("chunk.0001", b)] {
        z.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        z.write_all(part).unwrap();
    }
    z.finish().unwrap().into_inner()
}

/// The start of a ChampSim instruction record: ip 0x400000, not a branch, no registers.
const CHAMPSIM_RECORD: &[u8] = b"\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00";

proptest! {
    #![proptest_config(config())]

    #[test]
    fn binary_reader_on_arbitrary_bytes(mut bytes in prop::collection::vec(any::<u8>(), 0..2048),
                                        with_magic in any::<bool>()) {
        if with_magic {
            // Past the magic and version, so the record decoder sees the noise.
            let mut head = encode(&[], false);
            head.truncate(8);
            head.extend_from_slice(&bytes);
            bytes = head;
        }
        match TraceReader::new(&bytes[..]) {
            Ok(mut r) => {
                if let Err(e) = drain(&mut r, bytes.len()) {
                    check_message(&e);
                }
            }
            Err(e) => check_message(&format!("{e:#}")),
        }
    }

    #[test]
    fn binary_reader_on_mutated_traces(refs in prop::collection::vec(a_ref(), 0..64),
                                       physical in any::<bool>(),
                                       edits in prop::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..12)) {
        let good = encode(&refs, physical);
        // The untouched trace reads back exactly.
        let back = read_all(&mut TraceReader::new(&good[..]).unwrap()).unwrap();
        prop_assert_eq!(back.len(), refs.len());
        let bad = mutate(good, &edits);
        if let Ok(mut r) = TraceReader::new(&bad[..]) {
            if let Err(e) = drain(&mut r, bad.len()) {
                check_message(&e);
            }
        }
    }

    #[test]
    fn text_readers_on_near_miss_lines(lines in prop::collection::vec(a_text_line(), 0..40),
                                       crlf in any::<bool>()) {
        let text = lines.join(if crlf { "\r\n" } else { "\n" });
        let bytes = text.as_bytes();
        let _ = sniff(bytes);
        for result in [
            drain(&mut LackeyReader::new(bytes), 2 * bytes.len()),
            drain(&mut DinReader::new(bytes), bytes.len()),
        ] {
            if let Err(e) = result {
                check_message(&e);
            }
        }
    }

    #[test]
    fn format_detection_on_any_file(bytes in prop::collection::vec(any::<u8>(), 0..1024),
                                    prefix in prop_oneof![Just(&b""[..]), Just(&b"OSMT"[..]),
                                                          Just(&b"\x28\xb5\x2f\xfd"[..]), Just(&b"\x1f\x8b"[..]),
                                                          Just(&b"# c\n"[..]), Just(&b"I  "[..]),
                                                          Just(DRMEM_HEADER), Just(CHAMPSIM_RECORD)]) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::fs::write(&path, [prefix, &bytes].concat()).unwrap();
        match trace::open(&path, None) {
            Ok(mut src) => {
                if let Err(e) = drain(src.as_mut(), 2 * (bytes.len() + prefix.len())) {
                    check_message(&e);
                }
            }
            Err(e) => check_message(&format!("{e:#}")),
        }
    }

    #[test]
    fn drmemtrace_run_directory_of_any_files(
        files in prop::collection::vec((0u8..4, prop::collection::vec(any::<u8>(), 0..512)), 1..4)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut plain_bytes = 0;
        for (i, (form, noise)) in files.iter().enumerate() {
            // A header the reader takes (version 3 or 7, by turns), so the noise reaches the
            // entry decoder and the merge.
            let head = if i % 2 == 0 { DRMEM_V3_HEADER } else { DRMEM_V7_HEADER };
            let plain = [head, noise].concat();
            plain_bytes += plain.len();
            let (name, bytes) = match form {
                0 => ("trace", plain),
                1 => ("trace.gz", gzip(&plain)),
                2 => ("trace.zip", zip_of(&plain)),
                _ => ("trace.zip", noise.clone()),
            };
            std::fs::write(dir.path().join(format!("t{i}.{name}")), bytes).unwrap();
        }
        match trace::open(dir.path(), None) {
            Ok(mut src) => {
                if let Err(e) = drain(src.as_mut(), 2 * plain_bytes) {
                    check_message(&e);
                }
            }
            Err(e) => check_message(&format!("{e:#}")),
        }
    }

    #[test]
    fn geometry_strings(s in prop_oneof![
        ".{0,30}",
        "[0-9]{0,25}[KMGTkmgtB]{0,2}:[0-9]{0,12}:[0-9a-zA-Z]{0,14}",
        "[0-9]{0,25}:(full|[0-9]{0,11}):[0-9]{0,20}[KMG]?",
    ]) {
        let _ = parse_size(&s);
        let base = preset("ds5000-200").unwrap();
        if let Ok(c) = parse_cache(&s, Some(&base.l1d)) {
            let _ = c.validate();
        }
        if let Ok(t) = parse_tlb(&s, base.tlb.as_ref()) {
            let _ = t.validate();
        }
    }

    #[test]
    fn machine_config_json_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(m) = serde_json::from_slice::<MachineConfig>(&bytes) {
            let _ = m.validate();
        }
    }

    #[test]
    fn machine_configs_with_any_numbers(
        size in prop_oneof![Just(0u64), 1u64..=1 << 22, any::<u64>()],
        assoc in prop_oneof![0u32..=16, any::<u32>()],
        line in prop_oneof![Just(0u32), (0u32..=10).prop_map(|b| 1 << b), any::<u32>()],
        fetch in prop_oneof![Just(0u32), any::<u32>()],
        tlb_entries in prop_oneof![0u32..=128, any::<u32>()],
        tlb_assoc in prop_oneof![0u32..=8, any::<u32>()],
        page in prop_oneof![(0u32..=30).prop_map(|b| 1u64 << b), any::<u64>()],
        depth in prop_oneof![0u32..=16, any::<u32>()],
        merge in prop_oneof![Just(0u64), (0u32..=12).prop_map(|b| 1u64 << b), any::<u64>()],
        refs in prop::collection::vec((any::<u64>(), 1u32..=16, 0u8..3), 0..200),
    ) {
        let mut m = preset("ds5000-200").unwrap();
        m.l1d = CacheConfig { fetch, ..CacheConfig::new(size, assoc, line) };
        if let Some(t) = m.tlb.as_mut() {
            t.entries = tlb_entries;
            t.assoc = tlb_assoc;
            t.page_size = page;
        }
        if let Some(w) = m.write_buffer.as_mut() {
            w.depth = depth;
            w.merge_bytes = merge;
        }
        // Through JSON, as --config reads it.
        let text = serde_json::to_string(&m).unwrap();
        let m: MachineConfig = serde_json::from_str(&text).unwrap();
        match m.validate() {
            Err(e) => check_message(&e),
            // What memsim's memory budget lets through is built and driven: here a budget of
            // 64 MiB, so that a test machine can afford it; the rest is refused in words.
            Ok(()) => match budget::check(std::slice::from_ref(&m), 64 << 20) {
                Ok(()) => {
                    let mut machine = Machine::new(&m);
                    for (addr, size, kind) in refs {
                        let kind = [Kind::Instr, Kind::Read, Kind::Write][kind as usize];
                        machine.access(&Ref::new(kind, Mode::User, 0, size, addr));
                    }
                    let _ = machine.stats();
                }
                Err((_, too_big)) => check_message(&too_big.to_string()),
            },
        }
    }
}
