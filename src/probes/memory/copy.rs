//! Block copy (Ousterhout 1989, section 7): the same memcpy with both buffers in the caches and with
//! buffers far larger than the last-level cache, so every copy streams through DRAM.

use super::{llc_bytes, Region, KIB, MIB};
use crate::harness::Workload;
use crate::params;
use crate::probes::util::{param_str, param_u64};
use crate::probes::{Built, ProbeEnv, Scale};
use crate::results::model::Params;
use anyhow::{bail, Result};

/// Source plus destination (32 KiB) fit the L1 data cache of most current cores, and any L2.
const HOT_SIZE: u64 = 16 * KIB;
/// Floor of the cold size, for machines that report a small (or no) last-level cache.
const COLD_MIN: u64 = 16 * MIB;

/// Each buffer twice the last-level cache: source and destination together are four times it, so a
/// copy streamed through them finds nothing left in the cache from the last one. More would only
/// cost memory (the buffers are the probe's whole footprint).
pub fn cold_size() -> u64 {
    (2 * llc_bytes()).max(COLD_MIN)
}

/// Largest cold buffer the quick suite copies: a bigger one (on a VM reporting a 480 MiB cache,
/// two of 960 MiB) cost a third of the suite's minute in every round, so the quick suite leaves the
/// cold copy out there rather than run a "cold" copy that fits the cache.
const QUICK_COLD_MAX: u64 = 128 * MIB;

pub fn variants(scale: Scale) -> Vec<Params> {
    let mut v = vec![params![("cache", "hot"), ("size", HOT_SIZE)]];
    if scale == Scale::Full || cold_size() <= QUICK_COLD_MAX {
        v.push(params![("cache", "cold"), ("size", cold_size())]);
    }
    v
}

pub fn build(_: &ProbeEnv, p: &Params) -> Result<Built> {
    let size = param_u64(p, "size")?;
    // The label only documents which regime the size was chosen for; the size decides.
    let cache = param_str(p, "cache")?;
    if !matches!(cache, "hot" | "cold") {
        bail!("cache={cache}: expected hot or cold");
    }
    if size == 0 {
        bail!("size=0: a copy needs at least one byte");
    }
    let size = usize::try_from(size)?;
    // In 2 MiB pages where the kernel gives them, so the figure does not move with where 4 KiB
    // pages lie (cache sets, DRAM banks) from run to run.
    let mut src = Region::huge(size)?;
    let mut dst = Region::huge(size)?;
    // Distinct contents, so a test can tell a copy happened; writing also faults every page in.
    src.fill(0x5a);
    dst.fill(0);
    let pages = src.pages().zip(dst.pages()).map(|(a, b)| a.with(b));
    Ok(Built::Ready(Box::new(Copy { src, dst, pages })))
}

struct Copy {
    src: Region,
    dst: Region,
    pages: Option<crate::meter::pages::Pages>,
}

impl Workload for Copy {
    fn run(&mut self, iters: u64) -> Result<()> {
        let (s, d, n) = (self.src.ptr.cast_const(), self.dst.ptr, self.src.len);
        for _ in 0..iters {
            // SAFETY: two distinct mappings of n bytes each.
            unsafe { std::ptr::copy_nonoverlapping(s, d, n) };
            // Repeating an identical copy is otherwise something the compiler may fold into one.
            std::hint::black_box(d);
        }
        Ok(())
    }

    fn bytes_per_op(&self) -> Option<u64> {
        Some(self.src.len as u64)
    }
    fn pages(&self) -> Option<crate::meter::pages::Pages> {
        self.pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_the_whole_block_and_reports_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let env = ProbeEnv {
            scratch: dir.path(),
            cpu: 0,
            scale: Scale::Quick,
            file_systems: Default::default(),
        };
        let Built::Ready(mut w) = build(&env, &params![("cache", "hot"), ("size", 4096)]).unwrap()
        else {
            panic!("skipped")
        };
        assert_eq!(w.bytes_per_op(), Some(4096));
        w.run(2).unwrap();

        let mut c = Copy {
            src: Region::anon(8192).unwrap(),
            dst: Region::anon(8192).unwrap(),
            pages: None,
        };
        c.src.fill(7);
        c.run(1).unwrap();
        // SAFETY: dst is 8192 readable bytes.
        let out = unsafe { std::slice::from_raw_parts(c.dst.ptr, 8192) };
        assert!(out.iter().all(|&b| b == 7));
    }

    #[test]
    fn the_quick_suite_copies_cold_only_where_it_is_cheap() {
        let quick = variants(Scale::Quick);
        assert_eq!(quick.len(), 1 + usize::from(cold_size() <= QUICK_COLD_MAX));
        assert_eq!(variants(Scale::Full).len(), 2);
    }

    #[test]
    fn cold_size_dwarfs_the_cache() {
        assert!(cold_size() >= 2 * llc_bytes() && cold_size() >= 16 * MIB);
        assert!(build(
            &ProbeEnv {
                scratch: std::path::Path::new("/tmp"),
                cpu: 0,
                scale: Scale::Quick,
                file_systems: Default::default(),
            },
            &params![("cache", "warm"), ("size", 4096)]
        )
        .is_err());
    }
}
