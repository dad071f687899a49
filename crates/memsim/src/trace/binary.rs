//! Streaming writer and reader of the osmeter binary trace format (described in the parent module).

use super::packed::{self, Batch};
use super::{Kind, Mode, Ref, RefSource, TraceMeta, FLAG_PHYSICAL, MAX_ACCESS_BYTES};
use anyhow::{bail, Result};
use std::io::{Read, Write};

pub const MAGIC: &[u8; 4] = b"OSMT";
pub const VERSION: u8 = 1;
const TRAILER: u8 = 0x03;
/// Longest record: tag, asid (5), size (5), two addresses (10 each).
const MAX_RECORD: usize = 31;
// The fast decoder reads up to 18 bytes past a record's start (tag, size, two 8-byte windows).
const _: () = assert!(1 + 1 + 8 + 8 <= MAX_RECORD);
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
        if r.size > MAX_ACCESS_BYTES {
            bail!(
                "cannot write an access of {} bytes at {:#x}: no instruction touches more than {MAX_ACCESS_BYTES}",
                r.size,
                r.vaddr
            );
        }
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
    /// Fold varints with `pext` (see `fast_pext`).
    pext: bool,
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
            pext: fast_pext(),
        })
    }

    /// The same reader folding varints without `pext` whatever the CPU (tests compare the two).
    #[cfg(test)]
    pub(crate) fn without_pext(mut self) -> Self {
        self.pext = false;
        self
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

mod fast;

use fast::fast_pext;
#[cfg(test)]
use fast::{fold_groups, window_varint, GROUPS};

#[cfg(test)]
#[path = "binary_tests.rs"]
mod tests;
