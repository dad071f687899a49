use super::*;

const WAKING: &str = "name: sched_waking
ID: 375
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;

print fmt: \"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu
";

const IRQ: &str = "name: irq_handler_entry
ID: 225
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;
";

#[test]
fn format_files_parse_with_offsets_and_kinds() {
    let f = parse_format(WAKING).unwrap();
    assert_eq!(f.name, "sched_waking");
    assert_eq!(f.id, 375);
    assert_eq!(f.fields.len(), 8);
    let comm = f.field("comm").unwrap();
    assert_eq!((comm.offset, comm.size, comm.signed), (8, 16, false));
    let pid = f.field("pid").unwrap();
    assert_eq!((pid.offset, pid.size, pid.signed), (24, 4, true));
    let irq = parse_format(IRQ).unwrap();
    assert!(irq.field("name").unwrap().data_loc);
    assert!(!irq.field("irq").unwrap().data_loc);
    assert!(parse_format("ID: 3\n").is_none());
}

#[test]
fn fields_read_numbers_and_text() {
    let f = parse_format(WAKING).unwrap();
    let mut rec = vec![0u8; 36];
    rec[0..2].copy_from_slice(&375u16.to_le_bytes());
    rec[2] = FLAG_HARDIRQ;
    rec[4..8].copy_from_slice(&(-1i32).to_le_bytes());
    rec[8..12].copy_from_slice(b"lat\0");
    rec[24..28].copy_from_slice(&4242i32.to_le_bytes());
    rec[28..32].copy_from_slice(&(-3i32).to_le_bytes());
    let e = RawEvent { ts: 0, data: &rec };
    assert_eq!(e.id(), 375);
    assert_eq!(e.flags() & FLAG_HARDIRQ, FLAG_HARDIRQ);
    assert_eq!(e.pid(), -1);
    assert_eq!(f.field("comm").unwrap().text(&rec), Some("lat"));
    assert_eq!(f.field("pid").unwrap().int(&rec), Some(4242));
    assert_eq!(f.field("prio").unwrap().int(&rec), Some(-3));
    assert_eq!(f.field("prio").unwrap().uint(&rec), Some(0xffff_fffd));
    // A field past the record's end reads as nothing, not garbage.
    assert_eq!(f.field("target_cpu").unwrap().uint(&rec[..34]), None);

    let irq = parse_format(IRQ).unwrap();
    let mut rec = vec![0u8; 24];
    rec[8..12].copy_from_slice(&11i32.to_le_bytes());
    rec[12..16].copy_from_slice(&((8u32 << 16) | 16).to_le_bytes());
    rec[16..24].copy_from_slice(b"virtio0\0");
    assert_eq!(irq.field("name").unwrap().text(&rec), Some("virtio0"));
}

/// A sub-buffer built by hand: header, then the given event bytes.
fn subbuf(ts: u64, commit_flags: u64, body: &[u8], tail: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&ts.to_le_bytes());
    p.extend_from_slice(&(body.len() as u64 | commit_flags).to_le_bytes());
    p.extend_from_slice(body);
    p.extend_from_slice(tail);
    p.resize(4096, 0);
    p
}

fn header(type_len: u32, delta: u32) -> [u8; 4] {
    (type_len | (delta << 5)).to_le_bytes()
}

#[test]
fn a_hand_built_subbuffer_gives_its_events_and_times() {
    let mut body = Vec::new();
    // A small data event (2 words) 10 ns after the sub-buffer's stamp.
    body.extend_from_slice(&header(2, 10));
    body.extend_from_slice(&[1, 0, 0, 0, 0xaa, 0, 0, 0]);
    // A time extension of 3 << 27 + 5 ns.
    body.extend_from_slice(&header(TYPE_TIME_EXTEND, 5));
    body.extend_from_slice(&3u32.to_le_bytes());
    // A discarded event: padding that still carries its delta, covering 8 more bytes.
    body.extend_from_slice(&header(TYPE_PADDING, 7));
    body.extend_from_slice(&8u32.to_le_bytes());
    body.extend_from_slice(&[0xee; 4]);
    // A long event: type_len 0, length word (payload + 4), then 120 payload bytes.
    body.extend_from_slice(&header(0, 1));
    body.extend_from_slice(&124u32.to_le_bytes());
    let mut long = vec![2u8, 0];
    long.resize(120, 0x55);
    body.extend_from_slice(&long);
    let page = subbuf(1_000, 0, &body, &[]);
    let mut seen = Vec::new();
    let info = parse_subbuf(&page, |e| seen.push((e.ts, e.id(), e.data.len())));
    assert_eq!(info.events, 2);
    assert_eq!(info.lost, 0);
    assert!(!info.truncated);
    assert_eq!(seen[0], (1_010, 1, 8));
    let after_extend = 1_010 + (3u64 << 27) + 5;
    assert_eq!(seen[1], (after_extend + 7 + 1, 2, 120));
}

#[test]
fn lost_events_and_end_padding_are_read() {
    let mut body = Vec::new();
    body.extend_from_slice(&header(1, 0));
    body.extend_from_slice(&[3, 0, 0, 0]);
    // The rest-of-page padding (delta 0) ends the walk even before the commit length.
    body.extend_from_slice(&header(TYPE_PADDING, 0));
    body.extend_from_slice(&100u32.to_le_bytes());
    let page = subbuf(
        5,
        MISSED_EVENTS | MISSED_STORED,
        &body,
        &42u64.to_le_bytes(),
    );
    let info = parse_subbuf(&page, |_| {});
    assert_eq!(info.events, 1);
    assert_eq!(info.lost, 42);
    let page = subbuf(5, MISSED_EVENTS, &body, &[]);
    assert_eq!(parse_subbuf(&page, |_| {}).lost, 1);
}

#[test]
fn a_lying_subbuffer_stops_without_panicking() {
    // Commit length past the end of the data.
    let mut page = subbuf(0, 0, &[], &[]);
    page[8..16].copy_from_slice(&100_000u64.to_le_bytes());
    assert!(parse_subbuf(&page, |_| {}).truncated);
    // An event claiming more bytes than the sub-buffer holds.
    let mut body = Vec::new();
    body.extend_from_slice(&header(0, 0));
    body.extend_from_slice(&4000u32.to_le_bytes());
    let page = subbuf(0, 0, &body, &[]);
    assert!(parse_subbuf(&page, |_| {}).truncated);
    assert!(parse_subbuf(&[0u8; 8], |_| {}).truncated);
}

proptest::proptest! {
    #[test]
    fn any_bytes_are_walked_safely(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
        let mut n = 0;
        let info = parse_subbuf(&bytes, |e| { n += 1; assert!(e.data.len() <= bytes.len()); });
        proptest::prop_assert_eq!(info.events, n);
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn real_marker_events_come_back_with_their_text_and_monotonic_times() {
    use crate::tracefs::{Instance, Tracefs};
    if !is_root() {
        eprintln!("skipped: tracefs needs root");
        return;
    }
    let fs = Tracefs::open().unwrap();
    let inst = Instance::create(&fs, "ringbuf-test").unwrap();
    inst.write("trace_clock", "mono").unwrap();
    let format = parse_format(&inst.read("events/ftrace/print/format").unwrap()).unwrap();
    let buf = format.field("buf").unwrap().clone();
    let cpu = crate::meter::placement::current_cpu();
    let mut pipe = CpuPipe::open(&inst.path(""), cpu, subbuf_bytes(&inst.path(""))).unwrap();
    inst.write("tracing_on", "1").unwrap();
    let marker = inst.path("trace_marker");
    let (before, after) = std::thread::spawn(move || {
        crate::meter::placement::pin_current_thread(cpu).unwrap();
        let before = crate::latency::threads::monotonic_ns();
        for i in 0..200 {
            std::fs::write(&marker, format!("osmeter-ringbuf {i}")).unwrap();
        }
        (before, crate::latency::threads::monotonic_ns())
    })
    .join()
    .unwrap();
    inst.write("tracing_on", "0").unwrap();
    let mut texts = Vec::new();
    let mut last = 0;
    while let Some(page) = pipe.next_subbuf().unwrap() {
        let info = parse_subbuf(page, |e| {
            if e.id() == format.id {
                assert!(
                    e.ts >= before && e.ts <= after,
                    "{} not in {before}..{after}",
                    e.ts
                );
                assert!(e.ts >= last);
                last = e.ts;
                texts.push(buf.text(e.data).unwrap().trim_end().to_string());
            }
        });
        assert!(!info.truncated);
        assert_eq!(info.lost, 0);
    }
    let expected: Vec<String> = (0..200).map(|i| format!("osmeter-ringbuf {i}")).collect();
    assert_eq!(texts, expected);
}
