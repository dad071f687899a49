//! Memory: block copy in and out of the caches, load latency across the memory hierarchy, and the
//! kernel's virtual-memory operations (page faults, mmap/munmap, brk).

mod copy;
mod latency;
mod vm;

use super::{Origin, ProbeDef};
use crate::results::model::Unit;
use anyhow::{bail, Result};

pub const PROBES: &[ProbeDef] = &[
    ProbeDef {
        id: "memory.copy",
        summary: "copy one block of `size` bytes to another buffer with the C library's memcpy",
        params: "size=bytes per copy; cache=hot (16 KiB: source and destination stay in the \
                 L1/L2 caches) | cold (each buffer 2x the last-level cache, at least 16 MiB: \
                 every copy streams from and to DRAM)",
        unit: Unit::BytesPerSecond,
        origins: &[Origin::Ousterhout89],
        variants: copy::variants,
        build: copy::build,
    },
    ProbeDef {
        id: "memory.latency",
        summary: "one dependent load (pointer chase) in a buffer of `size` bytes",
        params: "pattern=stride128 (lmbench lat_mem_rd's walk: nodes 128 bytes apart in address \
                 order, the last leading back to the first; stride prefetchers run ahead of it, so \
                 past a cache it reads below that level's latency, and with pages=base it is lmbench's figure) | random (64-byte \
                 slots in one random cycle over the whole buffer: the load latency of the level \
                 that holds it); pages=huge (2 MiB pages where the kernel gives them, so \
                 placement is the same from run to run; the default) | base (the pages an \
                 ordinary allocation gets, as lmbench's buffer: set it beside lat_mem_rd); \
                 size=buffer \
                 bytes, powers of two from 512 B to at least 4x the last-level cache (Quick: every \
                 other power)",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Chen96, Origin::Lmbench],
        variants: latency::variants,
        build: latency::build,
    },
    ProbeDef {
        id: "memory.page_fault",
        summary: "one page fault: the first touch of a page of a fresh mapping that no earlier \
                  fault has mapped",
        params: "kind=anon (write to private anonymous memory, base pages: a zeroed page is \
                 allocated) | file (read through a MAP_SHARED mapping of a scratch file in the \
                 page cache: a minor fault, which maps the kernel's fault-around window of \
                 neighbours too; the probe touches one page per window)",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Lmbench, Origin::LEBench],
        variants: vm::page_fault_variants,
        build: vm::build_page_fault,
    },
    ProbeDef {
        id: "memory.mmap_munmap",
        summary: "mmap of an anonymous private region of `size` bytes, then munmap of it",
        params: "size=4 KiB | 2 MiB | 64 MiB (Quick: 4 KiB and 64 MiB); touch=false (the pages \
                 are never used) | true (one byte written per page before the munmap; Full only)",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Lmbench, Origin::LEBench],
        variants: vm::mmap_variants,
        build: vm::build_mmap,
    },
    ProbeDef {
        id: "memory.brk",
        summary: "grow the heap by 4 KiB with the brk system call, then shrink it back",
        params: "",
        unit: Unit::Nanoseconds,
        origins: &[Origin::LEBench],
        variants: |_| vec![crate::params!()],
        build: vm::build_brk,
    },
];

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// Assumed when sysfs does not describe the caches (some containers and VMs).
const FALLBACK_LLC: u64 = 32 * MIB;

/// Size of the last-level cache seen by CPU 0: the highest-level data or unified cache in sysfs.
pub fn llc_bytes() -> u64 {
    llc_from_sysfs(std::path::Path::new("/sys/devices/system/cpu/cpu0/cache"))
        .unwrap_or(FALLBACK_LLC)
}

fn llc_from_sysfs(dir: &std::path::Path) -> Option<u64> {
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok();
    let mut best: Option<(u32, u64)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if !entry.file_name().to_string_lossy().starts_with("index") {
            continue;
        }
        let (Some(level), Some(kind), Some(size)) = (
            read(path.join("level")),
            read(path.join("type")),
            read(path.join("size")),
        ) else {
            continue;
        };
        if kind.trim() == "Instruction" {
            continue;
        }
        let (Ok(level), Some(size)) = (level.trim().parse::<u32>(), parse_cache_size(&size)) else {
            continue;
        };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, size));
        }
    }
    best.map(|(_, s)| s)
}

/// sysfs writes cache sizes as "32K", "1024K" or "32M".
fn parse_cache_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, mult) = match t.as_bytes().last()? {
        b'K' => (&t[..t.len() - 1], KIB),
        b'M' => (&t[..t.len() - 1], MIB),
        b'G' => (&t[..t.len() - 1], 1024 * MIB),
        _ => (t, 1),
    };
    digits.parse::<u64>().ok().map(|n| n * mult)
}

pub use crate::system::page_size;

/// A private anonymous mapping, unmapped on drop. Probes use it instead of a Vec so buffers are
/// page-aligned and their pages are touched (or not) exactly when the probe says.
struct Region {
    ptr: *mut u8,
    len: usize,
    /// What was mapped from `ptr`: `len`, or more for a region aligned to huge pages.
    mapped: usize,
}

impl Region {
    /// A region of `len` bytes in 2 MiB pages where the kernel gives them (THP in `madvise` or
    /// `always` mode): aligned to 2 MiB and rounded up to whole huge pages, so every byte can be
    /// in one. [`Region::pages`] says what it got once touched.
    fn huge(len: usize) -> Result<Region> {
        use crate::meter::pages::HUGE_PAGE;
        let whole = len.div_ceil(HUGE_PAGE).max(1) * HUGE_PAGE;
        let mut r = Region::anon(whole + HUGE_PAGE)?;
        let start = (r.ptr as usize).next_multiple_of(HUGE_PAGE);
        let head = start - r.ptr as usize;
        // SAFETY: both ends trimmed lie inside the mapping just made, and nothing refers to them.
        unsafe {
            if head > 0 {
                libc::munmap(r.ptr.cast(), head);
            }
            let tail = r.mapped - head - whole;
            if tail > 0 {
                libc::munmap((start + whole) as *mut libc::c_void, tail);
            }
            // Advice only: without THP the region keeps its base pages, and says so.
            libc::madvise(start as *mut libc::c_void, whole, libc::MADV_HUGEPAGE);
        }
        r.ptr = start as *mut u8;
        r.mapped = whole;
        r.len = len;
        Ok(r)
    }

    /// Which pages hold the region, once touched; None when /proc/self/smaps cannot say.
    fn pages(&self) -> Option<crate::meter::pages::Pages> {
        let huge = crate::meter::pages::huge_bytes(self.ptr as usize)?;
        Some(crate::meter::pages::Pages::of(huge, self.len))
    }

    fn anon(len: usize) -> Result<Region> {
        // SAFETY: a fresh anonymous mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            bail!(
                "cannot map {} MiB of memory: {}",
                len as u64 / MIB,
                std::io::Error::last_os_error()
            );
        }
        Ok(Region {
            ptr: p.cast(),
            len,
            mapped: len,
        })
    }

    /// Writes every byte so every page is present (and no longer the shared zero page) before
    /// timing starts.
    fn fill(&mut self, byte: u8) {
        // SAFETY: ptr..ptr+len is our own writable mapping.
        unsafe { std::ptr::write_bytes(self.ptr, byte, self.len) };
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours and no reference into it outlives self.
        unsafe { libc::munmap(self.ptr.cast(), self.mapped) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_probe_builds_and_runs() {
        // brk races with malloc in the other test threads; vm::tests runs it in a child process.
        crate::probes::testing::exercise(PROBES, 3, |p, _| p.id != "memory.brk");
    }

    #[test]
    fn a_huge_region_is_aligned_and_says_which_pages_it_got() {
        use crate::meter::pages::{Pages, HUGE_PAGE};
        let mut r = Region::huge(3 * MIB as usize).unwrap();
        assert_eq!(r.ptr as usize % HUGE_PAGE, 0);
        assert_eq!((r.len, r.mapped), (3 * MIB as usize, 2 * HUGE_PAGE));
        r.fill(1);
        let got = r.pages().expect("/proc/self/smaps names the region");
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if mode.contains("[never]") || mode.is_empty() {
            assert_eq!(got, Pages::Base);
        } else {
            // Asked for with madvise, faulted in at once: the kernel gives huge pages when it
            // has any free (direct compaction under defrag=madvise finds them on a machine that
            // is not starved of memory).
            assert_ne!(got, Pages::Base, "THP mode {mode}");
        }
    }

    #[test]
    fn cache_sizes_parse() {
        assert_eq!(parse_cache_size("32K\n"), Some(32 * KIB));
        assert_eq!(parse_cache_size("32768K"), Some(32 * MIB));
        assert_eq!(parse_cache_size("2M"), Some(2 * MIB));
        assert_eq!(parse_cache_size("x"), None);
    }

    #[test]
    fn llc_is_the_highest_data_level() {
        let dir = tempfile::tempdir().unwrap();
        for (i, level, kind, size) in [
            (0, "1", "Data", "32K"),
            (1, "1", "Instruction", "32K"),
            (2, "2", "Unified", "1024K"),
            (3, "3", "Unified", "16384K"),
        ] {
            let d = dir.path().join(format!("index{i}"));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("level"), level).unwrap();
            std::fs::write(d.join("type"), kind).unwrap();
            std::fs::write(d.join("size"), size).unwrap();
        }
        assert_eq!(llc_from_sysfs(dir.path()), Some(16 * MIB));
        assert!(llc_bytes() >= 256 * KIB);
    }
}
