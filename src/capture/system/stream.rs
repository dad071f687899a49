//! Decoding the record stream of osmeter's QEMU plugin (qemu-plugin/osmeter-trace.c) into
//! references.
//!
//! Each record is 16 bytes, two little-endian words: the virtual address (or a control payload),
//! then physical address (bits 0-51), size-1 (52-56), kind (57-58: fetch, read, write, control),
//! kernel mode (59), device access (60) and "physical address unknown" (61). Control records carry
//! a code in the low byte of the second word: start marker, end marker, CR3 load, end of stream.
//!
//! Address spaces: QEMU's plugin interface of this generation cannot read CR3, so the plugin counts
//! CR3 loads instead, and each load opens a new address-space id for user addresses. On x86 without
//! PCID a CR3 load drops every non-global translation, so a TLB model keyed by these ids sees what
//! the hardware saw. Kernel addresses (upper half) are global and always get id 0.

use crate::memsim::trace::{Kind, Mode, Ref, RefSource, TraceMeta, FLAG_INCOMPLETE, FLAG_PHYSICAL};
use anyhow::{bail, Result};
use std::io::Read;

pub const RECORD_BYTES: usize = 16;
const PADDR_MASK: u64 = (1 << 52) - 1;
const KERNEL_BIT: u64 = 1 << 59;
const DEVICE_BIT: u64 = 1 << 60;
const NOPHYS_BIT: u64 = 1 << 61;

pub const CTL_START: u8 = 1;
pub const CTL_END: u8 = 2;
pub const CTL_CR3: u8 = 3;
pub const CTL_EOS: u8 = 4;

/// What the stream said about itself, besides its references.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamSummary {
    pub started: bool,
    pub ended: bool,
    /// The plugin's count of records written, from its end-of-stream record.
    pub plugin_records: Option<u64>,
    /// Records received, control records included.
    pub records: u64,
    pub cr3_loads: u64,
    /// References whose physical address the plugin could not learn; they carry their virtual
    /// address as physical.
    pub without_physical: u64,
    /// Wall-clock seconds from the start marker to the end marker, as seen by the reader.
    pub window_seconds: f64,
}

impl StreamSummary {
    /// The stream arrived whole: both markers and every record the plugin says it wrote.
    pub fn complete(&self) -> bool {
        self.started && self.ended && self.plugin_records == Some(self.records)
    }
}

/// Encodes one record the way the plugin does (tests, and documentation by example).
pub fn encode(kind: u8, kernel: bool, size: u32, vaddr: u64, paddr: Option<u64>) -> [u8; 16] {
    let mut w = (u64::from(size.clamp(1, 32) - 1) << 52) | (u64::from(kind & 3) << 57);
    if kernel {
        w |= KERNEL_BIT;
    }
    match paddr {
        Some(p) => w |= p & PADDR_MASK,
        None => w |= NOPHYS_BIT,
    }
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&vaddr.to_le_bytes());
    out[8..].copy_from_slice(&w.to_le_bytes());
    out
}

/// Encodes a control record.
pub fn encode_control(code: u8, payload: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&payload.to_le_bytes());
    out[8..].copy_from_slice(&((3u64 << 57) | u64::from(code)).to_le_bytes());
    out
}

/// A `RefSource` over the plugin's stream.
pub struct PluginStream<R: Read> {
    input: R,
    buf: Vec<u8>,
    filled: usize,
    eof: bool,
    asid: u32,
    window_start: Option<std::time::Instant>,
    pub summary: StreamSummary,
}

impl<R: Read> PluginStream<R> {
    pub fn new(input: R) -> PluginStream<R> {
        PluginStream {
            input,
            buf: vec![0; RECORD_BYTES << 15],
            filled: 0,
            eof: false,
            asid: 1,
            window_start: None,
            summary: StreamSummary::default(),
        }
    }

    fn refill(&mut self) -> Result<()> {
        while !self.eof && self.filled < self.buf.len() {
            match self.input.read(&mut self.buf[self.filled..]) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.filled += n;
                    // Enough for a batch; do not wait for a full buffer on a slow guest.
                    if self.filled >= RECORD_BYTES * 4096 {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                    // Ctrl-C reaches QEMU too; keep reading what it flushes on its way out.
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    fn control(&mut self, code: u8, payload: u64) {
        match code {
            CTL_START => {
                self.summary.started = true;
                self.window_start = Some(std::time::Instant::now());
            }
            CTL_END => {
                self.summary.ended = true;
                if let Some(t) = self.window_start {
                    self.summary.window_seconds = t.elapsed().as_secs_f64();
                }
            }
            CTL_CR3 => {
                self.summary.cr3_loads += 1;
                // Ids wrap rather than overflow; 2^32 address-space switches do not happen in one
                // window.
                self.asid = self.asid.wrapping_add(1).max(1);
            }
            CTL_EOS => self.summary.plugin_records = Some(payload),
            _ => {}
        }
    }

    fn decode(&mut self, rec: &[u8]) -> Option<Ref> {
        let vaddr = u64::from_le_bytes(rec[..8].try_into().expect("8 bytes"));
        let w = u64::from_le_bytes(rec[8..16].try_into().expect("8 bytes"));
        // The end-of-stream record counts the records before it, not itself.
        self.summary.records += u64::from((w >> 57) & 3 != 3 || (w & 0xff) as u8 != CTL_EOS);
        let kind = match (w >> 57) & 3 {
            0 => Kind::Instr,
            1 => Kind::Read,
            2 => Kind::Write,
            _ => {
                self.control((w & 0xff) as u8, vaddr);
                return None;
            }
        };
        if !self.summary.started {
            // References before the start marker cannot happen with this plugin; a stream that
            // has them is not ours to interpret.
            return None;
        }
        if w & NOPHYS_BIT != 0 {
            self.summary.without_physical += 1;
        }
        Some(reference(kind, vaddr, w, self.asid))
    }
}

/// A record that is not a control record (`kind` from its bits 57-58) as a reference, user
/// addresses in address space `asid`. Without a known physical address it carries its virtual
/// one.
pub fn reference(kind: Kind, vaddr: u64, w: u64, asid: u32) -> Ref {
    let paddr = if w & NOPHYS_BIT != 0 {
        vaddr & PADDR_MASK
    } else {
        w & PADDR_MASK
    };
    let kernel_half = vaddr >> 63 == 1;
    let mode = if w & KERNEL_BIT != 0 {
        Mode::Kernel
    } else {
        Mode::User
    };
    let asid = if kernel_half { 0 } else { asid };
    let mut r = Ref::new(kind, mode, asid, ((w >> 52) & 31) as u32 + 1, vaddr);
    r.uncached = w & DEVICE_BIT != 0;
    r.paddr = Some(paddr);
    r
}

impl<R: Read> RefSource for PluginStream<R> {
    fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<usize> {
        let mut n = 0;
        while n < max {
            if self.filled < RECORD_BYTES {
                if self.eof {
                    if self.filled != 0 {
                        bail!(
                            "the trace plugin's stream ended inside a record ({} stray bytes)",
                            self.filled
                        );
                    }
                    break;
                }
                self.refill()?;
                continue;
            }
            let whole = self.filled / RECORD_BYTES * RECORD_BYTES;
            let mut at = 0;
            while at < whole && n < max {
                let rec: [u8; RECORD_BYTES] = self.buf[at..at + RECORD_BYTES]
                    .try_into()
                    .expect("16 bytes");
                at += RECORD_BYTES;
                if let Some(r) = self.decode(&rec) {
                    out.push(r);
                    n += 1;
                }
            }
            self.buf.copy_within(at..self.filled, 0);
            self.filled -= at;
        }
        Ok(n)
    }

    fn meta(&self) -> TraceMeta {
        let mut flags = FLAG_PHYSICAL;
        if self.eof && !self.summary.complete() {
            flags |= FLAG_INCOMPLETE;
        }
        TraceMeta { flags }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsim::trace::read_all;

    fn stream(records: &[[u8; 16]]) -> PluginStream<std::io::Cursor<Vec<u8>>> {
        PluginStream::new(std::io::Cursor::new(records.concat()))
    }

    #[test]
    fn decodes_kinds_modes_sizes_and_addresses() {
        let recs = [
            encode_control(CTL_START, 7),
            encode(0, false, 3, 0x401000, Some(0x3999000)),
            encode(1, false, 8, 0x7fff_0000, Some(0x2000_0000)),
            encode(0, true, 5, 0xffff_ffff_8100_0010, Some(0x100_0010)),
            encode(2, true, 4, 0xffff_8880_0000_1000, Some(0x1000)),
            encode_control(CTL_END, 7),
            encode_control(CTL_EOS, 6),
        ];
        let mut s = stream(&recs);
        let refs = read_all(&mut s).unwrap();
        assert_eq!(refs.len(), 4);
        assert_eq!(refs[0].kind, Kind::Instr);
        assert_eq!(refs[0].mode, Mode::User);
        assert_eq!(refs[0].size, 3);
        assert_eq!(refs[0].paddr, Some(0x3999000));
        assert_eq!(refs[1].kind, Kind::Read);
        assert_eq!(refs[1].size, 8);
        assert_eq!(refs[2].mode, Mode::Kernel);
        assert_eq!(refs[2].vaddr, 0xffff_ffff_8100_0010);
        assert_eq!(refs[3].kind, Kind::Write);
        assert!(s.summary.complete(), "{:?}", s.summary);
        assert_eq!(s.meta().flags, FLAG_PHYSICAL);
    }

    #[test]
    fn each_cr3_load_opens_a_new_user_address_space_and_kernel_stays_global() {
        let recs = [
            encode_control(CTL_START, 0),
            encode(1, false, 4, 0x1000, Some(0x1000)),
            encode(1, true, 4, 0x2000, Some(0x1000)), // kernel mode touching a user page
            encode(1, true, 4, 0xffff_8880_0000_0000, Some(0)),
            encode_control(CTL_CR3, 1),
            encode(1, false, 4, 0x1000, Some(0x5000)),
            encode_control(CTL_CR3, 2),
            encode(1, false, 4, 0x1000, Some(0x9000)),
            encode_control(CTL_END, 2),
            encode_control(CTL_EOS, 9),
        ];
        let mut s = stream(&recs);
        let asids: Vec<u32> = read_all(&mut s).unwrap().iter().map(|r| r.asid).collect();
        assert_eq!(asids, vec![1, 1, 0, 2, 3]);
        assert_eq!(s.summary.cr3_loads, 2);
        assert!(s.summary.complete());
    }

    #[test]
    fn a_stream_without_its_end_marker_is_incomplete() {
        let recs = [
            encode_control(CTL_START, 0),
            encode(0, false, 1, 0x10, Some(0x10)),
            encode_control(CTL_EOS, 2),
        ];
        let mut s = stream(&recs);
        assert_eq!(read_all(&mut s).unwrap().len(), 1);
        assert!(!s.summary.complete());
        assert_eq!(s.meta().flags, FLAG_PHYSICAL | FLAG_INCOMPLETE);
    }

    #[test]
    fn lost_records_make_the_stream_incomplete() {
        let recs = [
            encode_control(CTL_START, 0),
            encode(0, false, 1, 0x10, Some(0x10)),
            encode_control(CTL_END, 0),
            encode_control(CTL_EOS, 5), // the plugin wrote more than arrived
        ];
        let mut s = stream(&recs);
        read_all(&mut s).unwrap();
        assert!(s.summary.started && s.summary.ended);
        assert!(!s.summary.complete());
        assert_ne!(s.meta().flags & FLAG_INCOMPLETE, 0);
    }

    #[test]
    fn a_record_cut_in_half_is_an_error() {
        let mut bytes = [encode_control(CTL_START, 0)].concat();
        bytes.extend_from_slice(&encode(0, false, 1, 0x10, Some(0x10))[..9]);
        let mut s = PluginStream::new(std::io::Cursor::new(bytes));
        let err = read_all(&mut s).unwrap_err().to_string();
        assert!(err.contains("inside a record"), "{err}");
    }

    #[test]
    fn unknown_physical_addresses_are_counted_and_fall_back_to_virtual() {
        let recs = [
            encode_control(CTL_START, 0),
            encode(0, false, 2, 0xabc, None),
            encode_control(CTL_END, 0),
            encode_control(CTL_EOS, 3),
        ];
        let mut s = stream(&recs);
        let refs = read_all(&mut s).unwrap();
        assert_eq!(refs[0].paddr, Some(0xabc));
        assert_eq!(s.summary.without_physical, 1);
    }

    #[test]
    fn batches_never_exceed_the_requested_size() {
        let mut recs = vec![encode_control(CTL_START, 0)];
        for i in 0..1000 {
            recs.push(encode(1, false, 4, i * 8, Some(i * 8)));
        }
        let mut s = stream(&recs);
        let mut out = Vec::new();
        let mut total = 0;
        loop {
            out.clear();
            let n = s.next_batch(&mut out, 64).unwrap();
            assert!(n <= 64);
            if n == 0 {
                break;
            }
            total += n;
        }
        assert_eq!(total, 1000);
        assert_eq!(out.len(), 0);
    }
}
