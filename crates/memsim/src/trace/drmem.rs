//! DynamoRIO drmemtrace's final trace format, written and read: a stream of 12-byte entries,
//! little-endian and packed: a 2-byte type, a 2-byte size (access size, instruction length, or
//! a marker's sub-type) and an 8-byte address or value. (drmemtrace keeps one such file per
//! thread, compressed; `drmem_dir` reads a run's directory of them as one trace.)
//!
//! Written: a header entry (trace version 3), thread and process entries, markers for the
//! version, the file type (x86-64), the line and page sizes, a timestamp and the CPU; then one
//! instruction entry per fetch followed by its loads and stores; a thread-exit and a footer.
//! What osmeter adds, drmemtrace's own way:
//! - kernel references sit between "syscall trace start" and "syscall trace end" markers (the
//!   markers drmemtrace brackets kernel code with);
//! - physical addresses come as a "physical address" and "virtual address" marker pair before
//!   the first reference to each page, and again when a page's frame changes;
//! - a change of address space (kernel references carry their own, 0 on system traces) is a
//!   process entry with the address-space id.
//!
//! Read: the same, from trace versions 2 to 7, and drmemtrace's other entries that matter here
//! (branch instruction types, instruction bundles, kernel context-switch sequences); prefetches,
//! flushes, encodings and other markers are skipped. The versions, as DynamoRIO's
//! `clients/drcachesim/common/trace_entry.h` (`trace_version_t`) names them, differ in what the
//! entries carry, not in how an entry is laid out, so one reader takes them all:
//! - 2: kernel-event markers hold a module offset; 3: they hold the absolute interrupted PC;
//! - 4: instruction encodings may be embedded (encoding entries, type 47, when the file type says
//!   so);
//! - 5: branch information up front: conditional branches are "taken jump" (48) or "untaken jump"
//!   (49) rather than "conditional jump" (13), and an indirect branch is preceded by a
//!   branch-target marker;
//! - 6: a timestamp and CPU marker pair before and after every system call and at each buffer's
//!   end (DynamoRIO issue 6289);
//! - 7: instructions that did not retire (cut short by a signal or a fault) are left out, with an
//!   "uncompleted instruction" marker in their place (DynamoRIO issue 7050), the newest.
//!
//! An encoding entry carries up to 8 of an instruction's bytes (its size field says how many);
//! a longer instruction takes several in a row, and they all come before that instruction's own
//! entry (a marker, such as the branch target, may sit between). They describe the instruction,
//! so they are neither references nor instructions of their own. Marker sub-types this reader
//! does not know (drmemtrace adds new ones now and then, always after the old) are skipped;
//! an entry type beyond the last one drmemtrace defines (49) is refused as corrupt.

use super::{Kind, Mode, Ref, RefSource, TraceMeta, FLAG_PHYSICAL, MAX_ACCESS_BYTES};
use anyhow::{bail, Result};
use std::collections::HashMap;
use std::io::{Read, Write};

pub const ENTRY: usize = 12;

// Entry types (drmemtrace's trace_type_t). Types 2 to 9 and 32 to 46 are prefetches, 18 to 21
// cache flushes: not references a cache simulation replays, so skipped.
const READ: u16 = 0;
const WRITE: u16 = 1;
const PREFETCH_FIRST: u16 = 2;
const PREFETCH_LAST: u16 = 9;
/// An instruction that is none of the kinds below; 11 to 15 are direct jump, indirect jump,
/// conditional jump (versions before 5), direct call and indirect call.
const INSTR: u16 = 10;
const INSTR_RETURN: u16 = 16;
const INSTR_BUNDLE: u16 = 17;
const FLUSH_FIRST: u16 = 18;
const FLUSH_LAST: u16 = 21;
const THREAD: u16 = 22;
const THREAD_EXIT: u16 = 23;
const PID: u16 = 24;
const HEADER: u16 = 25;
const FOOTER: u16 = 26;
const HARDWARE_PREFETCH: u16 = 27;
const MARKER: u16 = 28;
/// An instruction executed without a fetch (a repeated string instruction's later iterations).
const INSTR_NO_FETCH: u16 = 29;
/// Online traces only: the reader there decides between a fetch and no fetch. Not in files.
const INSTR_MAYBE_FETCH: u16 = 30;
const INSTR_SYSENTER: u16 = 31;
const PREFETCH2_FIRST: u16 = 32;
const PREFETCH2_LAST: u16 = 46;
/// Up to 8 bytes of the encoding of the instruction entry that follows.
const ENCODING: u16 = 47;
const INSTR_TAKEN_JUMP: u16 = 48;
const INSTR_UNTAKEN_JUMP: u16 = 49;
/// The most bytes one encoding entry carries (its value field).
const ENCODING_BYTES: u16 = 8;

// Marker sub-types (trace_marker_type_t).
const M_TIMESTAMP: u16 = 2;
const M_CPU_ID: u16 = 3;
const M_FILETYPE: u16 = 9;
const M_CACHE_LINE_SIZE: u16 = 10;
const M_VERSION: u16 = 12;
const M_PHYSICAL_ADDRESS: u16 = 15;
const M_VIRTUAL_ADDRESS: u16 = 17;
const M_PAGE_SIZE: u16 = 18;
const M_SYSCALL_TRACE_START: u16 = 27;
const M_SYSCALL_TRACE_END: u16 = 28;
/// A kernel context-switch sequence (as drmemtrace's scheduler splices in) starts and ends.
const M_CONTEXT_SWITCH_START: u16 = 34;
const M_CONTEXT_SWITCH_END: u16 = 35;

/// The trace versions read: 2 (kernel-event markers with module offsets) to 7 (retired
/// instructions only), the newest DynamoRIO defines.
const VERSIONS_READ: std::ops::RangeInclusive<u64> = 2..=7;

/// Trace version written: 3, kernel-event markers hold absolute addresses. Nothing newer is
/// needed: version 4 only allows encodings (which a reference trace does not have); 5 promises
/// taken/untaken conditional branches and indirect-branch targets, 6 timestamps around every
/// system call, and 7 that only retired instructions appear, none of which osmeter can vouch
/// for. Readers of newer versions (DynamoRIO's own included) still take version 3.
const VERSION: u64 = 3;
const FILETYPE_X86_64: u64 = 0x40;
const PAGE: u64 = 4096;
const TID: u64 = 1;

fn entry(ty: u16, size: u16, addr: u64) -> [u8; ENTRY] {
    let mut e = [0u8; ENTRY];
    e[..2].copy_from_slice(&ty.to_le_bytes());
    e[2..4].copy_from_slice(&size.to_le_bytes());
    e[4..].copy_from_slice(&addr.to_le_bytes());
    e
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrmemCounts {
    pub entries: u64,
    pub references: u64,
    pub kernel_sections: u64,
    pub physical_pairs: u64,
}

/// Writes `src` as a drmemtrace trace into `out`.
pub fn export(src: &mut dyn RefSource, out: &mut dyn Write) -> Result<DrmemCounts> {
    let mut c = DrmemCounts::default();
    let mut buf: Vec<u8> = Vec::with_capacity(ENTRY << 14);
    let put = |buf: &mut Vec<u8>, c: &mut DrmemCounts, e: [u8; ENTRY]| {
        buf.extend_from_slice(&e);
        c.entries += 1;
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
        // Microseconds since 1601, as drmemtrace counts them.
        + 11_644_473_600_000_000;
    for e in [
        entry(HEADER, 0, VERSION),
        entry(THREAD, 4, TID),
        entry(PID, 4, 0),
        entry(MARKER, M_VERSION, VERSION),
        entry(MARKER, M_FILETYPE, FILETYPE_X86_64),
        entry(MARKER, M_CACHE_LINE_SIZE, 64),
        entry(MARKER, M_PAGE_SIZE, PAGE),
        entry(MARKER, M_TIMESTAMP, stamp),
        entry(MARKER, M_CPU_ID, 0),
    ] {
        put(&mut buf, &mut c, e);
    }
    let mut kernel = false;
    let mut asid = 0u32;
    // The frame last reported for each (address space, virtual page).
    let mut frames: HashMap<(u32, u64), u64> = HashMap::new();
    let mut batch = Vec::with_capacity(1 << 16);
    loop {
        batch.clear();
        if src.next_batch(&mut batch, 1 << 16)? == 0 {
            break;
        }
        for r in &batch {
            let k = r.mode == Mode::Kernel;
            if k != kernel {
                let m = if k {
                    c.kernel_sections += 1;
                    M_SYSCALL_TRACE_START
                } else {
                    M_SYSCALL_TRACE_END
                };
                put(&mut buf, &mut c, entry(MARKER, m, 0));
                kernel = k;
            }
            if r.asid != asid {
                put(&mut buf, &mut c, entry(PID, 4, u64::from(r.asid)));
                asid = r.asid;
            }
            if let Some(p) = r.paddr {
                // Kernel mappings are global: one space for them.
                let space = if k { u32::MAX } else { r.asid };
                let (vpage, frame) = (r.vaddr & !(PAGE - 1), p & !(PAGE - 1));
                if frames.insert((space, vpage), frame) != Some(frame) {
                    put(&mut buf, &mut c, entry(MARKER, M_PHYSICAL_ADDRESS, frame));
                    put(&mut buf, &mut c, entry(MARKER, M_VIRTUAL_ADDRESS, vpage));
                    c.physical_pairs += 1;
                }
            }
            let ty = match r.kind {
                Kind::Instr => INSTR,
                Kind::Read => READ,
                Kind::Write => WRITE,
            };
            // Sizes are at most MAX_ACCESS_BYTES, which fits the 2-byte field.
            put(&mut buf, &mut c, entry(ty, r.size as u16, r.vaddr));
            c.references += 1;
        }
        out.write_all(&buf)?;
        buf.clear();
    }
    if kernel {
        put(&mut buf, &mut c, entry(MARKER, M_SYSCALL_TRACE_END, 0));
    }
    put(&mut buf, &mut c, entry(THREAD_EXIT, 4, TID));
    put(&mut buf, &mut c, entry(FOOTER, 0, 0));
    out.write_all(&buf)?;
    Ok(c)
}

/// Whether `head` starts like a drmemtrace trace (a header entry).
pub fn sniff(head: &[u8]) -> bool {
    head.len() >= ENTRY && head[..4] == [HEADER as u8, 0, 0, 0]
}

/// Reads a drmemtrace trace as references.
pub struct DrmemReader<R: Read> {
    inp: R,
    /// Entries read ahead (the header part, to learn whether physical addresses come).
    ahead: std::collections::VecDeque<(u64, [u8; ENTRY])>,
    offset: u64,
    done: bool,
    meta: TraceMeta,
    kernel: bool,
    asid: u32,
    /// Frames by (space, virtual page), from marker pairs.
    frames: HashMap<(u32, u64), u64>,
    pending_frame: Option<u64>,
    page: u64,
    /// The last instruction's address and length, for bundles.
    last_pc: u64,
    last_len: u64,
    /// The thread the trace belongs to, from its thread entry.
    tid: Option<u64>,
}

/// Why `DrmemReader::next_segment` returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// `max` references were read.
    Full,
    /// A timestamp marker with this value was read: the references after it ran later.
    Timestamp(u64),
    /// The footer was read.
    End,
}

impl<R: Read> DrmemReader<R> {
    pub fn new(inp: R) -> Result<Self> {
        let mut r = DrmemReader {
            inp,
            ahead: Default::default(),
            offset: 0,
            done: false,
            meta: TraceMeta::default(),
            kernel: false,
            asid: 0,
            frames: HashMap::new(),
            pending_frame: None,
            page: PAGE,
            last_pc: 0,
            last_len: 0,
            tid: None,
        };
        let first = r
            .raw()?
            .ok_or_else(|| anyhow::anyhow!("empty drmemtrace trace"))?;
        let (ty, _, v) = split(&first);
        if ty != HEADER {
            bail!("not a drmemtrace trace: the first entry has type {ty}, not the header (25)");
        }
        if !VERSIONS_READ.contains(&v) {
            bail!(
                "drmemtrace trace version {v} is not supported (this osmeter reads {} to {})",
                VERSIONS_READ.start(),
                VERSIONS_READ.end()
            );
        }
        // Look ahead to the first reference: a physical-address marker before it says the trace
        // carries physical addresses.
        loop {
            let at = r.offset;
            let Some(e) = r.raw()? else { break };
            let (ty, size, v) = split(&e);
            r.ahead.push_back((at, e));
            if ty == MARKER && size == M_PHYSICAL_ADDRESS {
                r.meta.flags |= FLAG_PHYSICAL;
            }
            if ty == THREAD && r.tid.is_none() {
                r.tid = Some(v);
            }
            if ty != MARKER && ty != THREAD && ty != PID {
                break;
            }
        }
        Ok(r)
    }

    /// The thread id of the trace's thread entry, if it has one.
    pub fn thread(&self) -> Option<u64> {
        self.tid
    }

    /// As `next_batch`, but also returns after each timestamp marker, with its value: drmemtrace
    /// stamps each thread's stream every so often, and that is all there is to interleave the
    /// threads of a run by (`drmem_dir`).
    pub fn next_segment(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<Stop> {
        self.fill(out, max, true)
    }

    fn raw(&mut self) -> Result<Option<[u8; ENTRY]>> {
        let mut e = [0u8; ENTRY];
        let mut got = 0;
        while got < ENTRY {
            match self.inp.read(&mut e[got..]) {
                Ok(0) if got == 0 => return Ok(None),
                Ok(0) => bail!(
                    "truncated drmemtrace trace: the entry at byte {} is cut short",
                    self.offset
                ),
                Ok(n) => got += n,
                Err(x) if x.kind() == std::io::ErrorKind::Interrupted => {}
                Err(x) => return Err(x.into()),
            }
        }
        self.offset += ENTRY as u64;
        Ok(Some(e))
    }

    /// The next entry and its byte offset.
    fn next_entry(&mut self) -> Result<Option<(u64, [u8; ENTRY])>> {
        if let Some(e) = self.ahead.pop_front() {
            return Ok(Some(e));
        }
        let at = self.offset;
        Ok(self.raw()?.map(|e| (at, e)))
    }

    fn reference(&self, kind: Kind, size: u64, addr: u64) -> Ref {
        let mode = if self.kernel {
            Mode::Kernel
        } else {
            Mode::User
        };
        let mut r = Ref::new(kind, mode, self.asid, size as u32, addr);
        if self.meta.physical() {
            let space = if self.kernel { u32::MAX } else { self.asid };
            let off = addr & (self.page - 1);
            r.paddr = Some(
                self.frames
                    .get(&(space, addr - off))
                    .map_or(addr, |f| f + off),
            );
        }
        r
    }
}

fn split(e: &[u8; ENTRY]) -> (u16, u16, u64) {
    (
        u16::from_le_bytes([e[0], e[1]]),
        u16::from_le_bytes([e[2], e[3]]),
        u64::from_le_bytes(e[4..].try_into().expect("8 bytes")),
    )
}

impl<R: Read> DrmemReader<R> {
    /// Appends up to `max` references; with `at_stamps`, also stops after a timestamp marker.
    fn fill(&mut self, out: &mut Vec<Ref>, max: usize, at_stamps: bool) -> Result<Stop> {
        let before = out.len();
        while out.len() - before < max {
            if self.done {
                return Ok(Stop::End);
            }
            let Some((at, e)) = self.next_entry()? else {
                bail!(
                    "truncated drmemtrace trace: it ends at byte {} without its footer",
                    self.offset
                );
            };
            let (ty, size, v) = split(&e);
            let size64 = u64::from(size);
            match ty {
                READ | WRITE => {
                    if size64 > u64::from(MAX_ACCESS_BYTES) {
                        bail!("corrupt drmemtrace trace: the entry at byte {at} declares an access of {size} bytes; no instruction touches more than {MAX_ACCESS_BYTES}");
                    }
                    let kind = if ty == READ { Kind::Read } else { Kind::Write };
                    out.push(self.reference(kind, size64, v));
                }
                INSTR..=INSTR_RETURN | INSTR_SYSENTER | INSTR_TAKEN_JUMP | INSTR_UNTAKEN_JUMP => {
                    out.push(self.reference(Kind::Instr, size64, v));
                    (self.last_pc, self.last_len) = (v, size64);
                }
                INSTR_BUNDLE => {
                    // `size` instructions follow the last one; their lengths are the value's bytes.
                    for &len in e[4..].iter().take(usize::from(size).min(8)) {
                        let pc = self.last_pc + self.last_len;
                        out.push(self.reference(Kind::Instr, u64::from(len), pc));
                        (self.last_pc, self.last_len) = (pc, u64::from(len));
                    }
                }
                PID => self.asid = v as u32,
                FOOTER => self.done = true,
                HEADER => bail!("corrupt drmemtrace trace: a second header at byte {at}"),
                ENCODING => {
                    // The bytes are the next instruction's; its entry has its length.
                    if size > ENCODING_BYTES {
                        bail!("corrupt drmemtrace trace: the encoding entry at byte {at} declares {size} bytes; one carries at most {ENCODING_BYTES}");
                    }
                }
                MARKER => match size {
                    M_SYSCALL_TRACE_START | M_CONTEXT_SWITCH_START => self.kernel = true,
                    M_SYSCALL_TRACE_END | M_CONTEXT_SWITCH_END => self.kernel = false,
                    M_TIMESTAMP if at_stamps => return Ok(Stop::Timestamp(v)),
                    M_PAGE_SIZE if v.is_power_of_two() => self.page = v,
                    M_PHYSICAL_ADDRESS => self.pending_frame = Some(v),
                    M_VIRTUAL_ADDRESS => {
                        if let Some(f) = self.pending_frame.take() {
                            let space = if self.kernel { u32::MAX } else { self.asid };
                            self.frames
                                .insert((space, v & !(self.page - 1)), f & !(self.page - 1));
                        }
                    }
                    _ => {}
                },
                THREAD => self.tid = Some(v),
                PREFETCH_FIRST..=PREFETCH_LAST
                | PREFETCH2_FIRST..=PREFETCH2_LAST
                | HARDWARE_PREFETCH
                | FLUSH_FIRST..=FLUSH_LAST
                | THREAD_EXIT
                | INSTR_NO_FETCH
                | INSTR_MAYBE_FETCH => {}
                t => bail!("corrupt drmemtrace trace: unknown entry type {t} at byte {at} (drmemtrace defines 0 to {INSTR_UNTAKEN_JUMP})"),
            }
        }
        Ok(if self.done { Stop::End } else { Stop::Full })
    }
}

impl<R: Read> RefSource for DrmemReader<R> {
    fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<usize> {
        let before = out.len();
        self.fill(out, max, false)?;
        Ok(out.len() - before)
    }

    fn meta(&self) -> TraceMeta {
        self.meta
    }
}

#[cfg(test)]
#[path = "drmem_tests.rs"]
mod tests;
