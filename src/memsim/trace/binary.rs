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

const KINDS: [Kind; 4] = [Kind::Instr, Kind::Read, Kind::Write, Kind::Write];
const MODES: [Mode; 2] = [Mode::User, Mode::Kernel];

/// What a tag byte says about a common record (see `decode_common`): every field of the reference
/// but its addresses and address space, its address stream, and whether the fast decoder takes it
/// (kind not a control record, no new address space).
#[derive(Clone, Copy)]
struct Template {
    kind: Kind,
    mode: Mode,
    uncached: bool,
    /// The size, when the tag carries it (size code 0: a varint size follows the tag).
    size: u32,
    stream: u8,
    common: bool,
    /// Kind, mode and uncached as a packed word has them.
    class_bits: u64,
}

const fn templates() -> [Template; 256] {
    let empty = Template {
        kind: Kind::Instr,
        mode: Mode::User,
        uncached: false,
        size: 0,
        stream: 0,
        common: false,
        class_bits: 0,
    };
    let mut t = [empty; 256];
    let mut tag = 0;
    while tag < 256 {
        let (k, m) = (tag & 3, (tag >> 2) & 1);
        t[tag].kind = KINDS[k];
        t[tag].mode = MODES[m];
        t[tag].uncached = tag & 8 != 0;
        t[tag].size = SIZE_CODES[tag >> 5];
        t[tag].stream = (((k != 0) as u8) << 1) | m as u8;
        t[tag].common = k != 3 && tag & 0x10 == 0;
        t[tag].class_bits = packed::class_bits(t[tag].kind, t[tag].mode, t[tag].uncached);
        tag += 1;
    }
    t
}

static TEMPLATES: [Template; 256] = templates();

/// The 7-bit groups of every byte of a LEB128 number.
const GROUPS: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// Folds the 7-bit groups of a LEB128 number of at most 8 bytes (continuation bits included) into
/// one value without a loop: pairs of bytes, then pairs of pairs, then the two halves.
#[inline(always)]
fn fold_groups(x: u64) -> u64 {
    let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
    let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4)
}

/// Whether this CPU extracts bits (BMI2 `pext`) in one fast instruction. AMD processors before
/// Zen 3 (family 0x19) implement it in microcode at up to hundreds of cycles, slower than
/// `fold_groups`; Intel's have been fast since BMI2 came in.
#[cfg(target_arch = "x86_64")]
fn fast_pext() -> bool {
    if !std::arch::is_x86_feature_detected!("bmi2") {
        return false;
    }
    let vendor = std::arch::x86_64::__cpuid(0);
    let amd = [vendor.ebx, vendor.edx, vendor.ecx] == [0x6874_7541, 0x6974_6e65, 0x444d_4163];
    if !amd {
        return true;
    }
    let sig = std::arch::x86_64::__cpuid(1).eax;
    let family = ((sig >> 8) & 0xf) + ((sig >> 20) & 0xff);
    family >= 0x19
}

#[cfg(not(target_arch = "x86_64"))]
fn fast_pext() -> bool {
    false
}

/// The next varint in `window` (the buffer's next 8 bytes, little-endian): its value and length
/// in bytes, or None when it is longer than 8 bytes.
#[inline(always)]
fn window_varint(window: u64, fold: impl Fn(u64) -> u64) -> Option<(u64, usize)> {
    // The terminating byte is the first with its high bit clear.
    let ends = !window & 0x8080_8080_8080_8080;
    if ends == 0 {
        return None;
    }
    let len = (ends.trailing_zeros() as usize + 1) / 8;
    Some((fold(window & (ends ^ (ends - 1))), len))
}

/// The 8 bytes of `buf` at `at`, little-endian.
///
/// # Safety
/// `at + 8 <= buf.len()`.
#[inline(always)]
unsafe fn load8(buf: &[u8], at: usize) -> u64 {
    debug_assert!(at + 8 <= buf.len());
    // SAFETY: the caller keeps the 8 bytes inside `buf`; the read is unaligned.
    u64::from_le(unsafe { buf.as_ptr().add(at).cast::<u64>().read_unaligned() })
}

impl<R: Read> TraceReader<R> {
    /// Decodes common records straight from the buffer: a tag with no new address-space id, a
    /// size in the tag or in one byte after it, and address deltas of at most 8 bytes each, read
    /// with one 8-byte load per number. Stops at the first other record (left to the general
    /// decoder), when `out` is full or refuses a reference, or when fewer than MAX_RECORD bytes
    /// remain (so a refill can come first).
    #[inline]
    fn decode_common<E: Emit>(&mut self, out: &mut E) -> usize {
        let physical = self.meta.physical();
        if self.pext {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `pext` is set only where `fast_pext` found BMI2.
            return unsafe {
                if physical {
                    self.decode_common_pext::<true, E>(out)
                } else {
                    self.decode_common_pext::<false, E>(out)
                }
            };
        }
        if physical {
            self.decode_common_with::<true, E>(out, fold_groups)
        } else {
            self.decode_common_with::<false, E>(out, fold_groups)
        }
    }

    /// `decode_common` folding varints with BMI2's `pext`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "bmi2")]
    fn decode_common_pext<const PHYSICAL: bool, E: Emit>(&mut self, out: &mut E) -> usize {
        self.decode_common_with::<PHYSICAL, E>(out, |x| std::arch::x86_64::_pext_u64(x, GROUPS))
    }

    #[inline(always)]
    fn decode_common_with<const PHYSICAL: bool, E: Emit>(
        &mut self,
        out: &mut E,
        fold: impl Fn(u64) -> u64 + Copy,
    ) -> usize {
        let buf = &self.buf[..self.end];
        let stop_at = buf.len().saturating_sub(MAX_RECORD);
        let mut pos = self.pos;
        let mut last_v = self.last_v;
        let mut last_p = self.last_p;
        let asid = self.asid;
        let mut n = 0;
        // SAFETY (every `load8` below): a record starts before `stop_at`, MAX_RECORD bytes
        // before the end, and its loads end at most 1 + 1 + 8 + 8 bytes after its start.
        let room = out.room();
        while n < room && pos < stop_at {
            let head = unsafe { load8(buf, pos) };
            let tag = head as u8;
            let t = &TEMPLATES[usize::from(tag)];
            // Where the address starts is decided on the tag byte itself, not on the table, and
            // by a branch (sizes in the tag are the rule), so that finding the next record waits
            // only for this record's own bytes. Size code 0 (tags below 0x20): one byte of
            // size, less than 0x80, follows the tag.
            let (size, at) = if tag >= 0x20 {
                (t.size, pos + 1)
            } else {
                let size_byte = (head >> 8) as u8;
                if size_byte >= 0x80 {
                    break;
                }
                (u32::from(size_byte), pos + 2)
            };
            if !t.common {
                break;
            }
            let window = unsafe { load8(buf, at) };
            // Most address deltas fit one byte. Tested by a branch, which the processor
            // predicts, so that the next record's start is known without waiting for this
            // record's bytes (the length of a longer number is a chain of dependent steps).
            let (dv, len_v) = if window & 0x80 == 0 {
                (window & 0x7f, 1)
            } else {
                let Some(v) = window_varint(window, fold) else {
                    break;
                };
                v
            };
            let s = usize::from(t.stream);
            let vaddr = last_v[s].wrapping_add(unzigzag(dv) as u64);
            let mut next = at + len_v;
            let paddr = if PHYSICAL {
                let Some((dp, len_p)) = window_varint(unsafe { load8(buf, next) }, fold) else {
                    break;
                };
                next += len_p;
                Some(last_p[s].wrapping_add(unzigzag(dp) as u64))
            } else {
                None
            };
            let decoded = Decoded {
                t,
                asid,
                size,
                vaddr,
                paddr,
            };
            if !out.emit(n, &decoded) {
                break;
            }
            last_v[s] = vaddr;
            if let Some(p) = paddr {
                last_p[s] = p;
            }
            n += 1;
            pos = next;
        }
        self.pos = pos;
        self.last_v = last_v;
        self.last_p = last_p;
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
        while out.len() - before < max && !self.done {
            if self.end - self.pos < MAX_RECORD && !self.eof {
                self.refill()?;
            }
            let room = max - (out.len() - before);
            let got = self.decode_common(&mut RefSlots(&mut out.spare_capacity_mut()[..room]));
            // SAFETY: decode_common initialised the first `got` elements of the spare capacity.
            unsafe { out.set_len(out.len() + got) };
            if got > 0 {
                continue;
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

    fn next_packed(&mut self, out: &mut Batch, max: usize) -> Result<usize> {
        let before = out.len();
        out.words.reserve(max);
        if self.meta.physical() {
            out.paddrs.reserve(max);
        }
        while out.len() - before < max && !self.done {
            if self.end - self.pos < MAX_RECORD && !self.eof {
                self.refill()?;
            }
            out.space(self.asid);
            let room = max - (out.len() - before);
            let words = out.words.len();
            let got = self.decode_common(&mut WordSlots {
                words: &mut out.words.spare_capacity_mut()[..room],
                paddrs: &mut out.paddrs,
            });
            // SAFETY: decode_common initialised the first `got` words of the spare capacity.
            unsafe { out.words.set_len(words + got) };
            if got > 0 {
                continue;
            }
            // Anything else (a new address space, a long number, an address that does not
            // pack, the trailer) goes through the general decoder.
            let mut one = std::mem::take(&mut out.scratch);
            one.clear();
            let more = self.decode_one(&mut one)?;
            for r in &one {
                out.push(r);
            }
            out.scratch = one;
            if !more {
                break;
            }
        }
        Ok(out.len() - before)
    }
}

/// One common record, decoded.
struct Decoded<'t> {
    t: &'t Template,
    asid: u32,
    size: u32,
    vaddr: u64,
    paddr: Option<u64>,
}

/// Where `decode_common` puts the references it decodes.
trait Emit {
    /// How many references fit.
    fn room(&self) -> usize;
    /// Puts reference `n`; false if it does not fit this form (nothing is kept then).
    fn emit(&mut self, n: usize, d: &Decoded<'_>) -> bool;
}

/// Whole references.
struct RefSlots<'a>(&'a mut [std::mem::MaybeUninit<Ref>]);

impl Emit for RefSlots<'_> {
    #[inline(always)]
    fn room(&self) -> usize {
        self.0.len()
    }

    #[inline(always)]
    fn emit(&mut self, n: usize, d: &Decoded<'_>) -> bool {
        self.0[n].write(Ref {
            kind: d.t.kind,
            mode: d.t.mode,
            uncached: d.t.uncached,
            asid: d.asid,
            size: d.size,
            vaddr: d.vaddr,
            paddr: d.paddr,
            tag: 0,
        });
        true
    }
}

/// Packed words (sizes here are below 256 by construction; an address must be canonical), and
/// the physical addresses beside them.
struct WordSlots<'a> {
    words: &'a mut [std::mem::MaybeUninit<u64>],
    paddrs: &'a mut Vec<u64>,
}

impl Emit for WordSlots<'_> {
    #[inline(always)]
    fn room(&self) -> usize {
        self.words.len()
    }

    #[inline(always)]
    fn emit(&mut self, n: usize, d: &Decoded<'_>) -> bool {
        if packed::vaddr(d.vaddr) != d.vaddr {
            return false;
        }
        self.words[n].write(packed::word_with(d.t.class_bits, d.size, d.vaddr));
        if let Some(p) = d.paddr {
            self.paddrs.push(p);
        }
        true
    }
}

#[cfg(test)]
#[path = "binary_tests.rs"]
mod tests;
