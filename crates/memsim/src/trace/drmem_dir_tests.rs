use super::super::{open, read_all, Kind, Mode};
use super::*;
use std::io::Write;

// Entry types and marker sub-types, as drmemtrace numbers them (see drmem.rs).
const READ: u16 = 0;
const WRITE: u16 = 1;
const INSTR: u16 = 10;
const THREAD: u16 = 22;
const THREAD_EXIT: u16 = 23;
const PID: u16 = 24;
const HEADER: u16 = 25;
const FOOTER: u16 = 26;
const MARKER: u16 = 28;
const M_TIMESTAMP: u16 = 2;
const M_CPU_ID: u16 = 3;
const M_PHYSICAL_ADDRESS: u16 = 15;
const M_VIRTUAL_ADDRESS: u16 = 17;
const ENCODING: u16 = 47;
const M_VERSION: u16 = 12;
const M_SYSCALL: u16 = 25;

/// What a thread does between timestamps.
enum Step {
    Stamp(u64),
    /// An instruction fetch at this address, 4 bytes.
    Fetch(u64),
    /// A load at this address, 8 bytes.
    Load(u64),
    /// The page at the first address is the frame at the second.
    Map(u64, u64),
    /// A system call marker with this number.
    Syscall(u64),
}

/// The entries of one thread's file: header, thread and process, the steps, exit and footer.
fn thread_bytes(tid: u64, pid: u64, steps: &[Step]) -> Vec<u8> {
    thread_bytes_at(3, tid, pid, steps)
}

/// As `thread_bytes`, at trace `version`: from version 4 on, each fetch comes after an encoding
/// entry with its 4 bytes, as drmemtrace writes them.
fn thread_bytes_at(version: u64, tid: u64, pid: u64, steps: &[Step]) -> Vec<u8> {
    let mut b = Vec::new();
    let mut put = |t: u16, s: u16, v: u64| {
        b.extend_from_slice(&t.to_le_bytes());
        b.extend_from_slice(&s.to_le_bytes());
        b.extend_from_slice(&v.to_le_bytes());
    };
    put(HEADER, 0, version);
    put(THREAD, 4, tid);
    put(PID, 4, pid);
    put(MARKER, M_VERSION, version);
    for s in steps {
        match *s {
            Step::Stamp(t) => {
                put(MARKER, M_TIMESTAMP, t);
                put(MARKER, M_CPU_ID, 1);
            }
            Step::Fetch(a) => {
                if version >= 4 {
                    put(ENCODING, 4, 0x9090_9090);
                }
                put(INSTR, 4, a)
            }
            Step::Load(a) => put(READ, 8, a),
            Step::Map(v, p) => {
                put(MARKER, M_PHYSICAL_ADDRESS, p);
                put(MARKER, M_VIRTUAL_ADDRESS, v);
            }
            Step::Syscall(n) => put(MARKER, M_SYSCALL, n),
        }
    }
    put(WRITE, 2, 0xdead); // after the last stamp: part of the last run
    put(THREAD_EXIT, 4, tid);
    put(FOOTER, 0, 0);
    b
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    g.write_all(bytes).unwrap();
    g.finish().unwrap()
}

/// A zip whose members, in name order, make `bytes`; written out of order, one stored and the
/// others deflated, so the reader's ordering and both methods are exercised.
fn zip_chunks(bytes: &[u8], cut: &[usize]) -> Vec<u8> {
    let mut pieces = Vec::new();
    let mut from = 0;
    for &c in cut.iter().chain([&bytes.len()]) {
        pieces.push(&bytes[from..c]);
        from = c;
    }
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (i, p) in pieces.iter().enumerate().rev() {
        let method = if i == 0 {
            zip::CompressionMethod::Stored
        } else {
            zip::CompressionMethod::Deflated
        };
        let opts = zip::write::SimpleFileOptions::default().compression_method(method);
        z.start_file(format!("chunk.{i:04}"), opts).unwrap();
        z.write_all(p).unwrap();
    }
    z.finish().unwrap().into_inner()
}

/// A run directory of four threads, one file of each kind, with interleaved timestamps.
fn run_dir() -> tempfile::TempDir {
    use Step::*;
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("trace");
    std::fs::create_dir(&t).unwrap();
    std::fs::create_dir(d.path().join("raw")).unwrap();
    std::fs::write(t.join("notes.txt"), "not a trace").unwrap();
    // Thread 10 (plain): runs at 100, 300 and 500.
    let a = thread_bytes(
        10,
        7,
        &[
            Stamp(100),
            Fetch(0xa1),
            Load(0xa2),
            Stamp(300),
            Fetch(0xa3),
            Stamp(500),
            Fetch(0xa4),
        ],
    );
    std::fs::write(t.join("drmemtrace.app.10.0000.trace"), a).unwrap();
    // Thread 20 (gzip): runs at 200, 300 (a tie with thread 10, which goes first) and 400.
    let b = thread_bytes(
        20,
        7,
        &[
            Stamp(200),
            Fetch(0xb1),
            Fetch(0xb2),
            Stamp(300),
            Load(0xb3),
            Stamp(400),
            Fetch(0xb4),
        ],
    );
    std::fs::write(t.join("drmemtrace.app.20.0000.trace.gz"), gzip(&b)).unwrap();
    // Thread 5 (zstd), another process: the earliest and the latest run.
    let c = thread_bytes(5, 8, &[Stamp(50), Fetch(0xc1), Stamp(600), Fetch(0xc2)]);
    let c = zstd::encode_all(&c[..], 3).unwrap();
    std::fs::write(t.join("drmemtrace.app.5.0000.trace.zst"), c).unwrap();
    // Thread 30 (zip of three members, cut mid-run and at an entry that is not a boundary of
    // anything in particular): runs at 250 and 450.
    let z = thread_bytes(
        30,
        7,
        &[Stamp(250), Fetch(0xd1), Load(0xd2), Stamp(450), Fetch(0xd3)],
    );
    let zipped = zip_chunks(&z, &[12 * 7, 12 * 9 + 5]);
    std::fs::write(t.join("drmemtrace.app.30.0000.trace.zip"), zipped).unwrap();
    d
}

/// The merged order: each run after the one with the next smaller stamp; each thread's trailing
/// write ends its last run.
const MERGED: [u64; 17] = [
    0xc1, // 50, thread 5
    0xa1, 0xa2, // 100, thread 10
    0xb1, 0xb2, // 200, thread 20
    0xd1, 0xd2, // 250, thread 30
    0xa3, // 300, thread 10 before thread 20
    0xb3, // 300, thread 20
    0xb4, 0xdead, // 400, thread 20 to its end
    0xd3, 0xdead, // 450, thread 30 to its end
    0xa4, 0xdead, // 500, thread 10 to its end
    0xc2, 0xdead, // 600, thread 5 to its end
];

#[test]
fn threads_merge_in_timestamp_order() {
    let d = run_dir();
    // The run directory and its trace/ subdirectory read the same.
    for at in [d.path().to_path_buf(), d.path().join("trace")] {
        let refs = read_all(open(&at, None).unwrap().as_mut()).unwrap();
        let addrs: Vec<u64> = refs.iter().map(|r| r.vaddr).collect();
        assert_eq!(addrs, MERGED, "{}", at.display());
        assert_eq!(refs.len(), 17);
        assert_eq!(refs.iter().filter(|r| r.kind == Kind::Instr).count(), 10);
        assert_eq!(refs.iter().filter(|r| r.kind == Kind::Read).count(), 3);
        assert_eq!(refs.iter().filter(|r| r.kind == Kind::Write).count(), 4);
        assert!(refs.iter().all(|r| r.mode == Mode::User));
        // Each thread's process id is its references' address space.
        let asid = |a: u64| refs.iter().find(|r| r.vaddr == a).unwrap().asid;
        assert_eq!(
            (asid(0xa1), asid(0xb3), asid(0xc1), asid(0xd2)),
            (7, 7, 8, 7)
        );
        assert_eq!(refs[2], Ref::new(Kind::Read, Mode::User, 7, 8, 0xa2));
    }
}

#[test]
fn small_batches_keep_the_order() {
    let d = run_dir();
    for max in [1, 2, 3, 5] {
        let mut src = open(d.path(), Some(Format::Drmemtrace)).unwrap();
        let mut all = Vec::new();
        loop {
            let n = src.next_batch(&mut all, max).unwrap();
            assert!(n <= max);
            if n == 0 {
                break;
            }
        }
        let addrs: Vec<u64> = all.iter().map(|r| r.vaddr).collect();
        assert_eq!(addrs, MERGED, "batches of {max}");
    }
}

#[test]
fn directories_without_traces_are_refused_by_name() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("raw")).unwrap();
    std::fs::write(d.path().join("raw").join("x.raw"), [0u8; 24]).unwrap();
    let e = open(d.path(), None).err().unwrap().to_string();
    assert!(e.contains(&d.path().display().to_string()), "{e}");
    assert!(e.contains("no drmemtrace thread files"), "{e}");
    assert!(e.contains(".trace.gz") && e.contains("raw2trace"), "{e}");

    let d = run_dir();
    let e = open(d.path(), Some(Format::Lackey))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("--from lackey does not apply"), "{e}");
}

#[test]
fn a_bad_thread_file_is_named() {
    let d = run_dir();
    let cut = d.path().join("trace").join("drmemtrace.app.99.0000.trace");
    let mut b = thread_bytes(99, 7, &[Step::Stamp(1), Step::Fetch(1)]);
    b.truncate(b.len() - 24);
    std::fs::write(&cut, b).unwrap();
    let mut src = open(d.path(), None).unwrap();
    let e = format!("{:#}", read_all(src.as_mut()).unwrap_err());
    assert!(
        e.contains("app.99.0000.trace") && e.contains("without its footer"),
        "{e}"
    );
}

#[test]
fn physical_addresses_from_one_thread_make_every_reference_physical() {
    use Step::*;
    let d = tempfile::tempdir().unwrap();
    let mapped = thread_bytes(1, 7, &[Map(0x4000, 0x9000), Stamp(10), Load(0x4010)]);
    let unmapped = thread_bytes(2, 7, &[Stamp(20), Load(0x5010)]);
    std::fs::write(d.path().join("a.trace"), mapped).unwrap();
    std::fs::write(d.path().join("b.trace"), unmapped).unwrap();
    let mut src = open(d.path(), None).unwrap();
    assert!(src.meta().physical());
    let got: Vec<_> = read_all(src.as_mut())
        .unwrap()
        .iter()
        .map(|r| (r.vaddr, r.paddr))
        .collect();
    assert_eq!(
        got,
        [
            (0x4010, Some(0x9010)),
            (0xdead, Some(0xdead)),
            (0x5010, Some(0x5010)),
            (0xdead, Some(0xdead)),
        ]
    );
}

#[test]
fn threads_of_current_versions_merge_by_their_frequent_timestamps() {
    use Step::*;
    // Version 6 and 7 threads, as current drmemtrace writes them: encodings before fetches,
    // and timestamps around each system call, which is where the other thread gets in.
    let d = tempfile::tempdir().unwrap();
    let a = thread_bytes_at(
        7,
        1,
        9,
        &[Stamp(100), Fetch(0xa1), Stamp(150), Fetch(0xa2), Stamp(400)],
    );
    let b = thread_bytes_at(
        6,
        2,
        9,
        &[
            Stamp(120),
            Fetch(0xb1),
            Load(0xb2),
            Syscall(1),
            Stamp(300),
            Fetch(0xb3),
        ],
    );
    std::fs::write(d.path().join("drmemtrace.app.1.0000.trace"), a).unwrap();
    std::fs::write(d.path().join("drmemtrace.app.2.0000.trace.gz"), gzip(&b)).unwrap();
    let refs = read_all(open(d.path(), None).unwrap().as_mut()).unwrap();
    let addrs: Vec<u64> = refs.iter().map(|r| r.vaddr).collect();
    assert_eq!(
        addrs,
        [0xa1, 0xb1, 0xb2, 0xa2, 0xb3, 0xdead, 0xdead],
        "100 a, 120 b, 150 a, 300 b to its end, 400 a to its end"
    );
    // Encodings are not instructions: one fetch each.
    assert_eq!(refs.iter().filter(|r| r.kind == Kind::Instr).count(), 4);
}
