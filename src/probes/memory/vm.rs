//! The kernel's virtual-memory operations: page faults on first touch, mapping and unmapping
//! regions, and moving the program break.

use super::{page_size, MIB};
use crate::harness::Workload;
use crate::params;
use crate::probes::util::{param_bool, param_str, param_u64};
use crate::probes::{Built, ProbeEnv, Scale};
use crate::results::model::Params;
use anyhow::{bail, Context, Result};
use std::os::fd::AsRawFd;
use std::path::PathBuf;

/// An anonymous page-fault sample maps at most this much, so calibration cannot take more memory
/// than the figure needs (a few thousand faults make a sample of milliseconds).
const FAULT_SPAN_MAX: u64 = 256 * MIB;
/// File-backed samples share the file's page cache and only cost page tables; each fault maps a
/// window of pages, so a sample spans more address space per fault.
const FILE_SPAN_MAX: u64 = 512 * MIB;
/// The scratch file of the file-backed fault; samples map it repeatedly to reach their length.
const FAULT_FILE: usize = 32 * MIB as usize;
/// File mappings are placed on this boundary, as the kernel itself does for large mappings, so a
/// file held in huge folios can be mapped the way a normal large mmap would be.
const PMD: usize = 2 * MIB as usize;

pub fn page_fault_variants(_: Scale) -> Vec<Params> {
    vec![params![("kind", "anon")], params![("kind", "file")]]
}

pub fn build_page_fault(env: &ProbeEnv, p: &Params) -> Result<Built> {
    let page = page_size();
    let (kind, stride) = match param_str(p, "kind")? {
        "anon" => (FaultKind::Anon, 1),
        "file" => {
            let file = FaultFile::create(env)?;
            let window = file.pages_per_fault(page)?;
            (FaultKind::File(file), window)
        }
        other => bail!("kind={other}: expected anon or file"),
    };
    Ok(Built::Ready(Box::new(PageFault {
        kind,
        page,
        stride,
        map: None,
    })))
}

/// A scratch file whose pages are all in the page cache, removed on drop.
struct FaultFile {
    file: std::fs::File,
    path: PathBuf,
}

impl FaultFile {
    fn create(env: &ProbeEnv) -> Result<FaultFile> {
        use std::io::Write;
        let path = env
            .scratch
            .join(format!("page-fault-{}.dat", std::process::id()));
        let file = crate::scratch::create_new(&path)?;
        let ff = FaultFile { file, path };
        // Written a page at a time, so the page cache holds it in single pages: a file written in
        // large chunks sits in large folios, and one fault then maps hundreds of pages. Nonzero
        // data so no file system can keep it as a hole.
        let chunk = vec![0xa5u8; page_size()];
        let mut file = &ff.file;
        for _ in 0..FAULT_FILE / chunk.len() {
            file.write_all(&chunk)
                .with_context(|| format!("cannot write {}", ff.path.display()))?;
        }
        // Clean pages: no writeback of this file may run while faults are being timed.
        file.sync_all()
            .with_context(|| format!("cannot sync {}", ff.path.display()))?;
        Ok(ff)
    }
}

impl FaultFile {
    /// How many pages one read fault on this file maps (the kernel's fault-around window, or a
    /// large folio): a mapping is read page by page and its faults counted. Rounded up to a power
    /// of two, since the window is one and is aligned to its size.
    fn pages_per_fault(&self, page: usize) -> Result<usize> {
        let len = FAULT_FILE;
        // SAFETY: a fresh shared read-only mapping of our own file, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                self.file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            bail!(
                "cannot map {}: {}",
                self.path.display(),
                std::io::Error::last_os_error()
            );
        }
        let before = minor_faults_of_this_thread();
        let mut sum = 0u8;
        for off in (0..len).step_by(page) {
            // SAFETY: off < len, inside the mapping just made.
            sum ^= unsafe { std::ptr::read_volatile(p.cast::<u8>().add(off)) };
        }
        std::hint::black_box(sum);
        let faults = (minor_faults_of_this_thread() - before).max(1) as usize;
        // SAFETY: the mapping is ours and nothing refers into it.
        unsafe { libc::munmap(p, len) };
        Ok((len / page).div_ceil(faults).next_power_of_two())
    }
}

/// Minor faults the calling thread has taken so far.
fn minor_faults_of_this_thread() -> i64 {
    // SAFETY: ru is a valid out-pointer.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru.ru_minflt
    }
}

impl Drop for FaultFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

enum FaultKind {
    Anon,
    File(FaultFile),
}

/// One sample's fresh mapping: the whole reserved range, unmapped in one call.
struct Mapping {
    reserved: *mut libc::c_void,
    reserved_len: usize,
    /// First page to touch (inside the reservation).
    start: *mut u8,
}

struct PageFault {
    kind: FaultKind,
    page: usize,
    /// Pages from one touched page to the next: 1 for anonymous memory, the pages one fault maps
    /// for the file, so every touch is a fault of its own.
    stride: usize,
    map: Option<Mapping>,
}

impl PageFault {
    fn unmap(&mut self) {
        if let Some(m) = self.map.take() {
            // SAFETY: the reservation is ours and nothing refers into it any more.
            unsafe { libc::munmap(m.reserved, m.reserved_len) };
        }
    }

    fn map_anon(&self, len: usize) -> Result<Mapping> {
        let p = mmap_anon(len, libc::PROT_READ | libc::PROT_WRITE)?;
        // Base pages only: a huge page (THP, or a multi-size one) would serve hundreds of first
        // touches with one fault. The advice is a hint; the probe's claim checks the result.
        // SAFETY: advice on the mapping just made.
        unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        Ok(Mapping {
            reserved: p,
            reserved_len: len,
            start: p.cast(),
        })
    }

    /// Reserves address space, then maps the file over it back to back as often as needed.
    fn map_file(&self, file: &FaultFile, len: usize) -> Result<Mapping> {
        let reserved_len = len + PMD;
        let reserved = mmap_anon(reserved_len, libc::PROT_NONE)?;
        let start = (reserved as usize).next_multiple_of(PMD);
        let mut off = 0;
        while off < len {
            let piece = (len - off).min(FAULT_FILE);
            // SAFETY: MAP_FIXED replaces only pages of our own reservation.
            let p = unsafe {
                libc::mmap(
                    (start + off) as *mut libc::c_void,
                    piece,
                    libc::PROT_READ,
                    libc::MAP_SHARED | libc::MAP_FIXED,
                    file.file.as_raw_fd(),
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                let err = std::io::Error::last_os_error();
                // SAFETY: as in unmap().
                unsafe { libc::munmap(reserved, reserved_len) };
                bail!("cannot map {}: {err}", file.path.display());
            }
            off += piece;
        }
        Ok(Mapping {
            reserved,
            reserved_len,
            start: start as *mut u8,
        })
    }
}

fn mmap_anon(len: usize, prot: libc::c_int) -> Result<*mut libc::c_void> {
    // SAFETY: a fresh anonymous mapping at an address the kernel picks.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        bail!(
            "cannot map {len} bytes: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(p)
}

impl Workload for PageFault {
    fn prepare(&mut self, iters: u64) -> Result<()> {
        self.unmap();
        let len = usize::try_from(iters.max(1))? * self.page * self.stride;
        let m = match &self.kind {
            FaultKind::Anon => self.map_anon(len)?,
            FaultKind::File(f) => self.map_file(f, len)?,
        };
        self.map = Some(m);
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<()> {
        let Some(m) = &self.map else {
            bail!("page_fault ran without prepare");
        };
        let (start, page) = (m.start, self.page * self.stride);
        match self.kind {
            FaultKind::Anon => {
                for i in 0..iters as usize {
                    // SAFETY: prepare mapped at least iters writable pages from start.
                    unsafe { std::ptr::write_volatile(start.add(i * page), 1) };
                }
            }
            FaultKind::File(_) => {
                let mut sum = 0u8;
                for i in 0..iters as usize {
                    // SAFETY: prepare mapped at least iters readable pages from start.
                    sum ^= unsafe { std::ptr::read_volatile(start.add(i * page)) };
                }
                std::hint::black_box(sum);
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.unmap();
        Ok(())
    }

    fn max_iters(&self) -> u64 {
        let step = (self.page * self.stride) as u64;
        match self.kind {
            FaultKind::Anon => FAULT_SPAN_MAX / step,
            FaultKind::File(_) => FILE_SPAN_MAX / step,
        }
    }
}

impl Drop for PageFault {
    fn drop(&mut self) {
        self.unmap();
    }
}

pub fn mmap_variants(scale: Scale) -> Vec<Params> {
    let (sizes, touches): (&[u64], &[bool]) = match scale {
        Scale::Quick => (&[4096, 64 * MIB], &[false]),
        Scale::Full => (&[4096, 2 * MIB, 64 * MIB], &[false, true]),
    };
    touches
        .iter()
        .flat_map(|&t| {
            sizes
                .iter()
                .map(move |&s| params![("size", s), ("touch", t)])
        })
        .collect()
}

pub fn build_mmap(_: &ProbeEnv, p: &Params) -> Result<Built> {
    let len = usize::try_from(param_u64(p, "size")?)?;
    let touch = param_bool(p, "touch")?;
    if len == 0 {
        bail!("size=0: mmap needs at least one byte");
    }
    Ok(Built::Ready(Box::new(MmapMunmap {
        len,
        touch,
        page: page_size(),
    })))
}

struct MmapMunmap {
    len: usize,
    touch: bool,
    page: usize,
}

impl Workload for MmapMunmap {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            let p: *mut u8 = mmap_anon(self.len, libc::PROT_READ | libc::PROT_WRITE)?.cast();
            if self.touch {
                for off in (0..self.len).step_by(self.page) {
                    // SAFETY: off < len, inside the mapping just made.
                    unsafe { std::ptr::write_volatile(p.add(off), 1) };
                }
            }
            // SAFETY: the mapping was made above and nothing refers into it.
            if unsafe { libc::munmap(p.cast(), self.len) } != 0 {
                bail!("munmap failed: {}", std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Grows the break by this much per operation.
const BRK_STEP: usize = 4096;

pub fn build_brk(_: &ProbeEnv, _: &Params) -> Result<Built> {
    // The C library remembers the break (sbrk reads its cached copy, without a system call) and
    // its malloc extends the heap from there. The probe reads that copy and always puts the break
    // back exactly, so the cache stays true; if it is already out of step, touching brk is unsafe.
    // SAFETY: sbrk(0) only reads; SYS_brk with 0 asks for the current break without changing it.
    let (cached, kernel) = unsafe { (libc::sbrk(0) as usize, libc::syscall(libc::SYS_brk, 0)) };
    if cached != kernel as usize {
        return Ok(Built::Skip(format!(
            "the C library's program break ({cached:#x}) differs from the kernel's ({kernel:#x}); \
             moving it could corrupt the heap"
        )));
    }
    Ok(Built::Ready(Box::new(Brk)))
}

/// Only sound while no other thread allocates: malloc moving the break between the grow and the
/// shrink would lose its memory. osmeter measures on one thread; the tests use a child process.
struct Brk;

impl Workload for Brk {
    fn run(&mut self, iters: u64) -> Result<()> {
        // SAFETY: see build_brk; the break is restored after every grow.
        let cur = unsafe { libc::sbrk(0) } as usize;
        for _ in 0..iters {
            let want = cur + BRK_STEP;
            // SAFETY: raw brk, so the C library's cached break is not changed behind our back.
            let grown = unsafe { libc::syscall(libc::SYS_brk, want) } as usize;
            let back = unsafe { libc::syscall(libc::SYS_brk, cur) } as usize;
            if grown != want {
                bail!("brk could not grow the heap by {BRK_STEP} bytes (out of memory or RLIMIT_DATA)");
            }
            if back != cur {
                bail!("brk did not shrink the heap back to {cur:#x} (it stands at {back:#x})");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_touch_is_one_fault_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let env = ProbeEnv {
            scratch: dir.path(),
            cpu: 0,
            scale: Scale::Quick,
            file_systems: Default::default(),
        };
        let n = 256u64;
        for kind in ["anon", "file"] {
            let Built::Ready(mut w) = build_page_fault(&env, &params![("kind", kind)]).unwrap()
            else {
                panic!("skipped")
            };
            // Twice, so a second sample is also made of fresh faults.
            for _ in 0..2 {
                w.prepare(n).unwrap();
                let before = minor_faults_of_this_thread();
                w.run(n).unwrap();
                let faults = minor_faults_of_this_thread() - before;
                w.finish().unwrap();
                // One fault per operation, give or take a page-table page.
                assert!(
                    (n as i64 - 4..=n as i64 + 4).contains(&faults),
                    "{kind}: {faults} faults for {n} touches"
                );
            }
            if kind == "file" {
                assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
            }
            let span = if kind == "anon" { 256 } else { 512 };
            assert!(w.max_iters() <= span * MIB / page_size() as u64);
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn file_mapping_spans_several_copies_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let env = ProbeEnv {
            scratch: dir.path(),
            cpu: 0,
            scale: Scale::Quick,
            file_systems: Default::default(),
        };
        let mut w = PageFault {
            kind: FaultKind::File(FaultFile::create(&env).unwrap()),
            page: page_size(),
            stride: 1,
            map: None,
        };
        let n = (2 * FAULT_FILE / page_size() + 3) as u64;
        w.prepare(n).unwrap();
        let start = w.map.as_ref().unwrap().start as usize;
        assert_eq!(start % PMD, 0);
        w.run(n).unwrap();
        w.finish().unwrap();
        assert!(w.map.is_none());
    }

    #[test]
    fn mmap_variants_match_the_scales() {
        assert_eq!(mmap_variants(Scale::Quick).len(), 2);
        assert_eq!(mmap_variants(Scale::Full).len(), 6);
    }

    #[test]
    fn brk_restores_the_break_exactly() {
        let env_dir = tempfile::tempdir().unwrap();
        let env = ProbeEnv {
            scratch: env_dir.path(),
            cpu: 0,
            scale: Scale::Quick,
            file_systems: Default::default(),
        };
        let Built::Ready(mut w) = build_brk(&env, &params!()).unwrap() else {
            panic!("skipped")
        };
        // Other test threads allocate concurrently, so the probe runs in a single-threaded child.
        // SAFETY: the child runs code that neither allocates nor takes locks, then _exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let before = unsafe { libc::syscall(libc::SYS_brk, 0) };
            let ok = w.run(1000).is_ok();
            let after = unsafe { libc::syscall(libc::SYS_brk, 0) };
            let cached = unsafe { libc::sbrk(0) } as libc::c_long;
            let code = if !ok {
                1
            } else if before != after || after != cached {
                2
            } else {
                0
            };
            unsafe { libc::_exit(code) };
        }
        assert!(pid > 0);
        let mut status = 0;
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status), "child died: {status:#x}");
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "1: run failed, 2: break moved"
        );
    }
}
