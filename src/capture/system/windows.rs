//! A counting boot that also sees every reference: the plugin in windows mode streams each
//! window's fetches, loads and stores, and this reader hands them to a sink while it keeps the
//! same running totals the count mode writes at each marker. A caller that simulates the
//! references (memsim's machines, kernel attribution) gets its counts from the same stream, so
//! the two cannot disagree.

use super::count::{Mark, Totals};
use super::stream::{reference, CTL_CR3, CTL_END, CTL_START, RECORD_BYTES};
use crate::memsim::trace::{Kind, Mode, Ref};
use anyhow::{bail, Result};
use std::io::Read;

/// What the reader hands on, in stream order.
pub trait WindowSink {
    /// One reference inside a window.
    fn reference(&mut self, r: &Ref);
    /// A marker: code 1 opens a window, 2 closes it; `totals` are the running totals so far.
    fn mark(&mut self, mark: &Mark);
}

/// Reads the plugin's windows-mode stream to its end; returns the markers with running totals
/// of the references inside windows (between windows nothing is streamed, so a window's totals
/// are the difference of its two markers, as in count mode).
pub fn read(input: &mut dyn Read, sink: &mut dyn WindowSink) -> Result<Vec<Mark>> {
    let mut buf = vec![0u8; RECORD_BYTES << 14];
    let mut filled = 0;
    let mut totals = Totals::default();
    let mut marks = Vec::new();
    let mut asid = 1u32;
    loop {
        let n = match input.read(&mut buf[filled..]) {
            Ok(n) => n,
            // Ctrl-C reaches QEMU too; keep reading what it flushes on its way out.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            if filled != 0 {
                bail!("the QEMU plugin's stream ended inside a record ({filled} stray bytes)");
            }
            return Ok(marks);
        }
        filled += n;
        let whole = filled / RECORD_BYTES * RECORD_BYTES;
        for rec in buf[..whole].chunks_exact(RECORD_BYTES) {
            let vaddr = u64::from_le_bytes(rec[..8].try_into().expect("8 bytes"));
            let w = u64::from_le_bytes(rec[8..].try_into().expect("8 bytes"));
            let kind = match (w >> 57) & 3 {
                0 => Kind::Instr,
                1 => Kind::Read,
                2 => Kind::Write,
                _ => {
                    match (w & 0xff) as u8 {
                        code @ (CTL_START | CTL_END) => {
                            let m = Mark { code, totals };
                            sink.mark(&m);
                            marks.push(m);
                        }
                        CTL_CR3 => asid = asid.wrapping_add(1).max(1),
                        _ => {}
                    }
                    continue;
                }
            };
            let r = reference(kind, vaddr, w, asid);
            let m = usize::from(r.mode == Mode::Kernel);
            match kind {
                Kind::Instr => totals.instructions[m] += 1,
                Kind::Read => totals.loads[m] += 1,
                Kind::Write => totals.stores[m] += 1,
            }
            sink.reference(&r);
        }
        buf.copy_within(whole..filled, 0);
        filled -= whole;
    }
}

#[cfg(test)]
mod tests {
    use super::super::stream::{encode, encode_control, CTL_EOS};
    use super::*;

    #[derive(Default)]
    struct Seen {
        refs: Vec<Ref>,
        marks: Vec<u8>,
    }

    impl WindowSink for Seen {
        fn reference(&mut self, r: &Ref) {
            self.refs.push(*r);
        }
        fn mark(&mut self, m: &Mark) {
            self.marks.push(m.code);
        }
    }

    #[test]
    fn every_window_counts_and_hands_on_its_references() {
        let recs = [
            encode_control(CTL_START, 0),
            encode(0, false, 3, 0x401000, Some(0x1000)),
            encode(1, false, 8, 0x7fff_0000, Some(0x2000)),
            encode(0, true, 5, 0xffff_ffff_8100_0010, Some(0x10)),
            encode_control(CTL_END, 0),
            encode_control(CTL_CR3, 1),
            encode_control(CTL_START, 1),
            encode(2, true, 4, 0xffff_8880_0000_1000, Some(0x1000)),
            encode(0, false, 2, 0x401000, Some(0x1000)),
            encode_control(CTL_END, 1),
            encode_control(CTL_EOS, 10),
        ];
        let mut seen = Seen::default();
        let marks = read(&mut std::io::Cursor::new(recs.concat()), &mut seen).unwrap();
        assert_eq!(seen.marks, vec![1, 2, 1, 2]);
        assert_eq!(seen.refs.len(), 5);
        let first = marks[1].totals.since(&marks[0].totals);
        assert_eq!(first.instructions, [1, 1]);
        assert_eq!(first.loads, [1, 0]);
        let second = marks[3].totals.since(&marks[2].totals);
        assert_eq!(second.instructions, [1, 0]);
        assert_eq!(second.stores, [0, 1]);
        // The CR3 load between the windows put the user fetch in a new address space.
        assert_eq!((seen.refs[0].asid, seen.refs[4].asid), (1, 2));
        assert_eq!(seen.refs[3].asid, 0);
    }

    #[test]
    fn a_stream_cut_inside_a_record_is_an_error() {
        let mut bytes = encode_control(CTL_START, 0).to_vec();
        bytes.extend_from_slice(&encode(0, false, 1, 0x10, Some(0x10))[..5]);
        let err = read(&mut std::io::Cursor::new(bytes), &mut Seen::default()).unwrap_err();
        assert!(err.to_string().contains("inside a record"), "{err}");
    }
}
