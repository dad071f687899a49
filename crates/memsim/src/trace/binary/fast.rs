//! The reader's fast path: a record's tag byte looked up in a table of templates, varints taken
//! from a machine word at a time (PEXT where the CPU has it fast), and references written straight
//! into the caller's slots.

use super::*;

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
pub(super) const GROUPS: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// Folds the 7-bit groups of a LEB128 number of at most 8 bytes (continuation bits included) into
/// one value without a loop: pairs of bytes, then pairs of pairs, then the two halves.
#[inline(always)]
pub(super) fn fold_groups(x: u64) -> u64 {
    let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
    let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4)
}

/// Whether this CPU extracts bits (BMI2 `pext`) in one fast instruction. AMD processors before
/// Zen 3 (family 0x19) implement it in microcode at up to hundreds of cycles, slower than
/// `fold_groups`; Intel's have been fast since BMI2 came in.
#[cfg(target_arch = "x86_64")]
pub(super) fn fast_pext() -> bool {
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
pub(super) fn fast_pext() -> bool {
    false
}

/// The next varint in `window` (the buffer's next 8 bytes, little-endian): its value and length
/// in bytes, or None when it is longer than 8 bytes.
#[inline(always)]
pub(super) fn window_varint(window: u64, fold: impl Fn(u64) -> u64) -> Option<(u64, usize)> {
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
