//! Streaming writer and reader of the osmeter binary trace format (described in the parent module).

use super::{Kind, Mode, Ref, RefSource, TraceMeta, FLAG_PHYSICAL};
use anyhow::{bail, Result};
use std::io::{Read, Write};

pub const MAGIC: &[u8; 4] = b"OSMT";
pub const VERSION: u8 = 1;
const TRAILER: u8 = 0x03;
/// Longest record: tag, asid (5), size (5), two addresses (10 each).
const MAX_RECORD: usize = 31;
const SIZE_CODES: [u32; 8] = [0, 1, 2, 3, 4, 5, 6, 8];

fn size_code(size: u32) -> u8 {
    match size {
        1..=6 => size as u8,
        8 => 7,
        _ => 0,
    }
}

#[inline]
fn stream(kind: Kind, mode: Mode) -> usize {
    (usize::from(kind != Kind::Instr) << 1) | mode as usize
}

#[inline]
fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

#[inline]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[inline]
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Writes records into any `Write`, buffering so that a system call happens per 256 KiB, not per
/// record. Call [`TraceWriter::finish`]; a writer dropped without it leaves a truncated trace that
/// readers reject.
pub struct TraceWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    physical: bool,
    asid: u32,
    last_v: [u64; 4],
    last_p: [u64; 4],
    count: u64,
}

impl<W: Write> TraceWriter<W> {
    pub fn new(mut out: W, flags: u8) -> Result<TraceWriter<W>> {
        let header = [MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], VERSION, flags, 0, 0];
        out.write_all(&header)?;
        Ok(TraceWriter {
            out,
            buf: Vec::with_capacity(1 << 18),
            physical: flags & FLAG_PHYSICAL != 0,
            asid: 0,
            last_v: [0; 4],
            last_p: [0; 4],
            count: 0,
        })
    }

    #[inline]
    pub fn write(&mut self, r: &Ref) -> Result<()> {
        let code = size_code(r.size);
        let mut tag = r.kind as u8 | (r.mode as u8) << 2 | u8::from(r.uncached) << 3 | code << 5;
        let new_asid = r.asid != self.asid;
        if new_asid {
            tag |= 1 << 4;
        }
        self.buf.push(tag);
        if new_asid {
            put_varint(&mut self.buf, u64::from(r.asid));
            self.asid = r.asid;
        }
        if code == 0 {
            put_varint(&mut self.buf, u64::from(r.size));
        }
        let s = stream(r.kind, r.mode);
        put_varint(
            &mut self.buf,
            zigzag(r.vaddr.wrapping_sub(self.last_v[s]) as i64),
        );
        self.last_v[s] = r.vaddr;
        if self.physical {
            let p = r.paddr.unwrap_or(r.vaddr);
            put_varint(&mut self.buf, zigzag(p.wrapping_sub(self.last_p[s]) as i64));
            self.last_p[s] = p;
        }
        self.count += 1;
        if self.buf.len() >= (1 << 18) - MAX_RECORD {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Writes the trailer and flushes; `late_flags` (e.g. incomplete) are ORed into the header's.
    pub fn finish(mut self, late_flags: u8) -> Result<W> {
        self.buf.push(TRAILER);
        put_varint(&mut self.buf, self.count);
        put_varint(&mut self.buf, u64::from(late_flags));
        self.out.write_all(&self.buf)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Decodes records from any `Read` through its own buffer (no per-record reads).
pub struct TraceReader<R: Read> {
    inp: R,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    /// Stream offset of `buf[0]`, for error messages.
    base: u64,
    eof: bool,
    done: bool,
    meta: TraceMeta,
    asid: u32,
    last_v: [u64; 4],
    last_p: [u64; 4],
    count: u64,
}

impl<R: Read> TraceReader<R> {
    pub fn new(mut inp: R) -> Result<TraceReader<R>> {
        let mut header = [0u8; 8];
        let mut got = 0;
        while got < 8 {
            let n = inp.read(&mut header[got..])?;
            if n == 0 {
                bail!("not an osmeter trace: only {got} bytes, shorter than the 8-byte header");
            }
            got += n;
        }
        if &header[..4] != MAGIC {
            bail!(
                "not an osmeter trace: wrong magic {:02x?} at byte 0 (expected \"OSMT\")",
                &header[..4]
            );
        }
        if header[4] != VERSION {
            bail!(
                "osmeter trace version {} is not supported (this osmeter reads version {VERSION})",
                header[4]
            );
        }
        if header[5] & !7 != 0 || header[6] != 0 || header[7] != 0 {
            bail!("corrupt osmeter trace header: unknown flag bits at byte 5..8");
        }
        Ok(TraceReader {
            inp,
            buf: vec![0u8; 1 << 18].into_boxed_slice(),
            pos: 0,
            end: 0,
            base: 8,
            eof: false,
            done: false,
            meta: TraceMeta { flags: header[5] },
            asid: 0,
            last_v: [0; 4],
            last_p: [0; 4],
            count: 0,
        })
    }

    /// Makes at least MAX_RECORD bytes available unless the input ends first.
    fn refill(&mut self) -> Result<()> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        while !self.eof && self.end < self.buf.len() {
            match self.inp.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
            if self.end - self.pos >= MAX_RECORD * 64 {
                break;
            }
        }
        Ok(())
    }

    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    #[inline]
    fn varint(&mut self, start: u64) -> Result<u64> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            if self.pos >= self.end {
                bail!("truncated osmeter trace: record at byte {start} ends inside a number");
            }
            let b = self.buf[self.pos];
            self.pos += 1;
            if shift == 63 && b > 1 {
                bail!("corrupt osmeter trace: number too long in the record at byte {start}");
            }
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                bail!("corrupt osmeter trace: number too long in the record at byte {start}");
            }
        }
    }

    fn trailer(&mut self, start: u64) -> Result<()> {
        let count = self.varint(start)?;
        let flags = self.varint(start)?;
        if count != self.count {
            bail!(
                "corrupt osmeter trace: trailer at byte {start} counts {count} records but {} were read",
                self.count
            );
        }
        if flags & !7 != 0 {
            bail!("corrupt osmeter trace: unknown flags in the trailer at byte {start}");
        }
        self.meta.flags |= flags as u8;
        if self.pos < self.end || !self.eof {
            self.refill()?;
            if self.end > self.pos {
                bail!(
                    "corrupt osmeter trace: {} bytes after the trailer at byte {start}",
                    self.end - self.pos
                );
            }
        }
        self.done = true;
        Ok(())
    }
}

impl<R: Read> RefSource for TraceReader<R> {
    fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<usize> {
        let mut n = 0;
        let physical = self.meta.physical();
        while n < max && !self.done {
            if self.end - self.pos < MAX_RECORD && !self.eof {
                self.refill()?;
            }
            if self.pos >= self.end {
                bail!(
                    "truncated osmeter trace: it ends at byte {} without its trailer ({} records read)",
                    self.offset(),
                    self.count
                );
            }
            let start = self.offset();
            let tag = self.buf[self.pos];
            self.pos += 1;
            let kind = match tag & 3 {
                0 => Kind::Instr,
                1 => Kind::Read,
                2 => Kind::Write,
                _ => {
                    if tag != TRAILER {
                        bail!("corrupt osmeter trace: unknown control record {tag:#04x} at byte {start}");
                    }
                    self.trailer(start)?;
                    break;
                }
            };
            let mode = if tag & 4 != 0 {
                Mode::Kernel
            } else {
                Mode::User
            };
            if tag & 0x10 != 0 {
                let a = self.varint(start)?;
                self.asid = u32::try_from(a).map_err(|_| {
                    anyhow::anyhow!(
                        "corrupt osmeter trace: address-space id {a} out of range at byte {start}"
                    )
                })?;
            }
            let code = (tag >> 5) as usize;
            let size = if code == 0 {
                let s = self.varint(start)?;
                u32::try_from(s).map_err(|_| {
                    anyhow::anyhow!("corrupt osmeter trace: size {s} out of range at byte {start}")
                })?
            } else {
                SIZE_CODES[code]
            };
            let s = stream(kind, mode);
            let d = self.varint(start)?;
            let vaddr = self.last_v[s].wrapping_add(unzigzag(d) as u64);
            self.last_v[s] = vaddr;
            let paddr = if physical {
                let d = self.varint(start)?;
                let p = self.last_p[s].wrapping_add(unzigzag(d) as u64);
                self.last_p[s] = p;
                Some(p)
            } else {
                None
            };
            out.push(Ref {
                kind,
                mode,
                uncached: tag & 8 != 0,
                asid: self.asid,
                size,
                vaddr,
                paddr,
                tag: 0,
            });
            self.count += 1;
            n += 1;
        }
        Ok(n)
    }

    fn meta(&self) -> TraceMeta {
        self.meta
    }
}

#[cfg(test)]
mod tests {
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
            prop_oneof![1u32..=16, any::<u32>()],
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

    proptest! {
        #[test]
        fn round_trip(refs in prop::collection::vec(arb_ref(false), 0..400)) {
            prop_assert_eq!(decode(&encode(&refs, 0)).unwrap(), refs);
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
}
