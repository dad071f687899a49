//! Streaming writer and reader of the osmeter binary trace format (described in the parent module).

use super::{Kind, Mode, Ref, RefSource, TraceMeta, FLAG_PHYSICAL, MAX_ACCESS_BYTES};
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

const KINDS: [Kind; 4] = [Kind::Instr, Kind::Read, Kind::Write, Kind::Write];
const MODES: [Mode; 2] = [Mode::User, Mode::Kernel];

/// What a tag byte says about a common record (see `decode_common`): the reference with all but
/// its address and address space filled in, its address stream, and whether the fast decoder
/// takes it (kind not a control record, no new address space, size in the tag).
#[derive(Clone, Copy)]
struct Template {
    r: Ref,
    stream: u8,
    common: bool,
}

const fn templates() -> [Template; 256] {
    let empty = Template {
        r: Ref {
            kind: Kind::Instr,
            mode: Mode::User,
            uncached: false,
            asid: 0,
            size: 0,
            vaddr: 0,
            paddr: None,
            tag: 0,
        },
        stream: 0,
        common: false,
    };
    let mut t = [empty; 256];
    let mut tag = 0;
    while tag < 256 {
        let (k, m) = (tag & 3, (tag >> 2) & 1);
        t[tag].r.kind = KINDS[k];
        t[tag].r.mode = MODES[m];
        t[tag].r.uncached = tag & 8 != 0;
        t[tag].r.size = SIZE_CODES[tag >> 5];
        t[tag].stream = (((k != 0) as u8) << 1) | m as u8;
        t[tag].common = k != 3 && tag & 0x10 == 0 && tag >= 0x20;
        tag += 1;
    }
    t
}

static TEMPLATES: [Template; 256] = templates();

/// Folds the 7-bit groups of a LEB128 number of at most 8 bytes (continuation bits included) into
/// one value without a loop: pairs of bytes, then pairs of pairs, then the two halves.
#[inline(always)]
fn fold_groups(x: u64) -> u64 {
    let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
    let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4)
}

impl<R: Read> TraceReader<R> {
    /// Decodes the common record straight from the buffer: a tag that carries the size and no new
    /// address-space id, and an address delta of at most 7 bytes, so that one 8-byte load holds the
    /// whole record. Stops at the first other record (left to the general decoder), when `out` is
    /// full, or when fewer than MAX_RECORD bytes remain (so a refill can come first). Traces with
    /// physical addresses always take the general decoder.
    #[inline]
    fn decode_common(&mut self, out: &mut [std::mem::MaybeUninit<Ref>]) -> usize {
        let buf = &self.buf[..self.end];
        let stop_at = buf.len().saturating_sub(MAX_RECORD);
        let mut pos = self.pos;
        let mut last_v = self.last_v;
        let asid = self.asid;
        let mut n = 0;
        while n < out.len() && pos < stop_at {
            let w = u64::from_le_bytes(buf[pos..pos + 8].try_into().expect("8 bytes"));
            let tag = w as u8;
            let rest = w >> 8;
            // The terminating byte of the varint is the first of the 7 with its high bit clear.
            let ends = !rest & 0x0080_8080_8080_8080;
            let t = &TEMPLATES[usize::from(tag)];
            if !t.common || ends == 0 {
                break;
            }
            let bytes = (ends.trailing_zeros() as usize + 1) / 8;
            let delta = unzigzag(fold_groups(rest & (ends ^ (ends - 1))));
            let s = usize::from(t.stream);
            let vaddr = last_v[s].wrapping_add(delta as u64);
            last_v[s] = vaddr;
            let mut r = t.r;
            r.vaddr = vaddr;
            r.asid = asid;
            out[n].write(r);
            n += 1;
            pos += 1 + bytes;
        }
        self.pos = pos;
        self.last_v = last_v;
        self.count += n as u64;
        n
    }

    /// Decodes one record of any kind; false after the trailer.
    fn decode_one(&mut self, out: &mut Vec<Ref>) -> Result<bool> {
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
                    bail!(
                        "corrupt osmeter trace: unknown control record {tag:#04x} at byte {start}"
                    );
                }
                self.trailer(start)?;
                return Ok(false);
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
            if s > u64::from(MAX_ACCESS_BYTES) {
                bail!(
                    "corrupt osmeter trace: the record at byte {start} declares an access of {s} bytes; no instruction touches more than {MAX_ACCESS_BYTES}"
                );
            }
            s as u32
        } else {
            SIZE_CODES[code]
        };
        let s = stream(kind, mode);
        let d = self.varint(start)?;
        let vaddr = self.last_v[s].wrapping_add(unzigzag(d) as u64);
        self.last_v[s] = vaddr;
        let mut r = Ref::new(kind, mode, self.asid, size, vaddr);
        r.uncached = tag & 8 != 0;
        if self.meta.physical() {
            let d = self.varint(start)?;
            let p = self.last_p[s].wrapping_add(unzigzag(d) as u64);
            self.last_p[s] = p;
            r.paddr = Some(p);
        }
        out.push(r);
        self.count += 1;
        Ok(true)
    }
}

impl<R: Read> RefSource for TraceReader<R> {
    fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<usize> {
        let before = out.len();
        out.reserve(max);
        let physical = self.meta.physical();
        while out.len() - before < max && !self.done {
            if self.end - self.pos < MAX_RECORD && !self.eof {
                self.refill()?;
            }
            if !physical {
                let room = max - (out.len() - before);
                let got = self.decode_common(&mut out.spare_capacity_mut()[..room]);
                // SAFETY: decode_common initialised the first `got` elements of the spare
                // capacity.
                unsafe { out.set_len(out.len() + got) };
                if got > 0 {
                    continue;
                }
            }
            if !self.decode_one(out)? {
                break;
            }
        }
        Ok(out.len() - before)
    }

    fn meta(&self) -> TraceMeta {
        self.meta
    }
}

#[cfg(test)]
#[path = "binary_tests.rs"]
mod tests;
