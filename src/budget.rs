//! Whether a request fits this machine, checked before anything is measured: a probe's memory and
//! scratch disk space, and the samples a run keeps. A request that cannot fit is a usage error
//! naming what it needs, what the machine has, and what to ask for instead, rather than an
//! allocation that aborts osmeter, an out-of-memory kill, or a full disk.

use crate::probes::footprint::{self, Footprint};
use crate::results::model::Params;
use crate::usage;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// Share of the available memory one request may take: the rest is left to the system and to
/// whatever else runs beside the measurement.
const MEMORY_SHARE: f64 = 0.8;
/// Share of the scratch file system's free space a probe may fill.
const DISK_SHARE: f64 = 0.9;

/// What the machine has for a run: available memory (MemAvailable, or less when a memory cgroup
/// limits osmeter: see [`crate::memory_room`]) and the free space of the scratch directory's file
/// system (for this user).
#[derive(Debug, Clone)]
pub struct Have {
    pub memory: u64,
    /// What limits `memory`, in words: "this machine has 20.9 GiB available".
    pub memory_said: String,
    pub disk: u64,
    pub scratch: PathBuf,
}

impl Have {
    /// Reads /proc/meminfo and statvfs of `scratch`. What cannot be read counts as unlimited:
    /// the check then lets the request through, as before.
    pub fn here(scratch: &Path) -> Have {
        let room = crate::memory_room::now();
        Have {
            memory: room.as_ref().map_or(u64::MAX, |r| r.bytes),
            memory_said: room.map_or_else(|| "no limit is known".into(), |r| r.what),
            disk: free_space(scratch).unwrap_or(u64::MAX),
            scratch: scratch.to_path_buf(),
        }
    }
}

/// Bytes this user may still write on the file system of `dir`.
pub fn free_space(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct; c is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    (st.f_bavail as u64).checked_mul(st.f_frsize as u64)
}

/// Memory one kept sample of `osmeter run` takes, generously: the raw sample with its counter
/// readings, the summarised copy and its share of the run document (about 200 bytes of JSON).
pub const RUN_SAMPLE_BYTES: u64 = 1024;

/// Checks a whole `run` request before anything starts: the samples it keeps (`--repeat`) and
/// every probe variant's memory and scratch space.
pub fn check_run<'a>(
    variants: impl IntoIterator<Item = (&'a str, &'a Params)>,
    samples: u64,
    scratch: &Path,
) -> Result<()> {
    let have = Have::here(scratch);
    check_samples("--repeat", samples, RUN_SAMPLE_BYTES, &have)?;
    for (probe, params) in variants {
        check_variant(probe, params, &have)?;
    }
    Ok(())
}

/// Checks one probe variant against the machine.
pub fn check_variant(probe: &str, params: &Params, have: &Have) -> Result<()> {
    let Footprint { memory, disk } = footprint::of(probe, params);
    let label = crate::results::model::label(probe, params);
    if disk as f64 > have.disk as f64 * DISK_SHARE {
        return Err(usage!(
            "{label} would write {} in {}, whose file system has {} free: choose a smaller \
             value with --set, or a --dir on a larger file system",
            bytes(disk),
            have.scratch.display(),
            bytes(have.disk)
        ));
    }
    if memory as f64 > have.memory as f64 * MEMORY_SHARE {
        return Err(usage!(
            "{label} needs {} of memory and {}: choose a smaller value with --set",
            bytes(memory),
            have.memory_said
        ));
    }
    Ok(())
}

/// Checks that `count` kept samples of `bytes_each` fit in memory (`flag` names the option).
pub fn check_samples(flag: &str, count: u64, bytes_each: u64, have: &Have) -> Result<()> {
    let need = count.saturating_mul(bytes_each);
    let room = (have.memory as f64 * MEMORY_SHARE) as u64;
    if need > room {
        return Err(usage!(
            "{flag} {count}: keeping that many samples takes about {} of memory and {}; at \
             most {} fit",
            bytes(need),
            have.memory_said,
            room / bytes_each.max(1)
        ));
    }
    Ok(())
}

/// `1.5 GiB`, `512 MiB`, `900 B`.
pub use crate::units::bytes;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params;

    fn machine(memory: u64, disk: u64) -> Have {
        Have {
            memory,
            memory_said: format!("this machine has {} available", bytes(memory)),
            disk,
            scratch: PathBuf::from("/scratch"),
        }
    }

    fn exit_code(r: Result<()>) -> i32 {
        crate::error::exit_code(&r.unwrap_err())
    }

    #[test]
    fn a_file_larger_than_the_free_space_is_refused_before_it_is_written() {
        let have = machine(24 << 30, 20 << 30);
        let big = params![("file_size", 999_999_995_904u64)];
        let err = check_variant("fs.read_cached", &big, &have).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("931.3 GiB") && text.contains("/scratch") && text.contains("20 GiB"),
            "{text}"
        );
        assert_eq!(crate::error::exit_code(&err), crate::error::EXIT_USAGE);
        let fits = params![("file_size", 64u64 << 20)];
        assert!(check_variant("fs.read_cached", &fits, &have).is_ok());
        // Just over the share left free, and just under.
        let edge = (20u64 << 30) as f64 * DISK_SHARE;
        let over = params![("file_size", edge as u64 + (16 << 10))];
        assert_eq!(exit_code(check_variant("fs.read_cached", &over, &have)), 2);
    }

    #[test]
    fn memory_beyond_what_is_available_is_refused() {
        let have = machine(10 << 30, u64::MAX);
        // Two buffers of 5 GiB.
        let copy = params![("size", 5u64 << 30), ("cache", "cold")];
        let text = format!(
            "{:#}",
            check_variant("memory.copy", &copy, &have).unwrap_err()
        );
        assert!(text.contains("10 GiB of memory"), "{text}");
        let copy = params![("size", 1u64 << 30), ("cache", "cold")];
        assert!(check_variant("memory.copy", &copy, &have).is_ok());
        assert!(check_variant("syscall.null", &Params::new(), &machine(0, 0)).is_ok());
    }

    #[test]
    fn samples_beyond_memory_are_refused_with_the_most_that_fit() {
        let have = machine(8 << 30, 0);
        let text = format!(
            "{:#}",
            check_samples("--repeat", 1_000_000_000_000, 1024, &have).unwrap_err()
        );
        assert!(
            text.contains("--repeat 1000000000000") && text.contains("at most 6710886"),
            "{text}"
        );
        assert!(check_samples("--repeat", 1_000_000, 1024, &have).is_ok());
        assert!(check_samples("--repeat", u64::MAX, u64::MAX, &have).is_err());
    }

    #[test]
    fn the_machine_is_read() {
        let have = Have::here(Path::new("/tmp"));
        assert!(have.memory > 0 && have.memory < u64::MAX);
        assert!(have.disk < u64::MAX);
        assert_eq!(bytes(900), "900 B");
        assert_eq!(bytes(1536 << 20), "1.5 GiB");
    }
}
