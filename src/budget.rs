//! Whether a request fits this machine, checked before anything is measured: a probe's memory and
//! scratch disk space, and the samples a run keeps. A request that cannot fit is a usage error
//! naming what it needs, what the machine has, and what to ask for instead, rather than an
//! allocation that aborts osmeter, an out-of-memory kill, or a full disk.

use crate::scratch::free_space;
use crate::usage;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// Share of the available memory one request may take: the rest is left to the system and to
/// whatever else runs beside the measurement.
const MEMORY_SHARE: f64 = 0.8;
/// Share of the scratch file system's free space a probe may fill.
pub const DISK_SHARE: f64 = 0.9;

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

/// Memory one kept sample of `osmeter run` takes, generously: the raw sample with its counter
/// readings, the summarised copy and its share of the run document (about 200 bytes of JSON).
pub const RUN_SAMPLE_BYTES: u64 = 1024;

/// Bytes of memory and of scratch disk space one probe variant uses at once (what each probe
/// takes is said by `probes::footprint`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    pub memory: u64,
    pub disk: u64,
}

/// Checks what one measurement (`label` names it) takes against the machine.
pub fn check_footprint(label: &str, need: Footprint, have: &Have) -> Result<()> {
    let Footprint { memory, disk } = need;
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

    fn machine(memory: u64, disk: u64) -> Have {
        Have {
            memory,
            memory_said: format!("this machine has {} available", bytes(memory)),
            disk,
            scratch: PathBuf::from("/scratch"),
        }
    }

    #[test]
    fn a_footprint_beyond_the_disk_or_the_memory_is_refused_and_says_what_to_do() {
        let have = machine(10 << 30, 20 << 30);
        let disk = Footprint {
            memory: 0,
            disk: 21 << 30,
        };
        let text = format!("{:#}", check_footprint("fs.x", disk, &have).unwrap_err());
        assert!(
            text.contains("fs.x would write 21 GiB") && text.contains("--dir"),
            "{text}"
        );
        let memory = Footprint {
            memory: 9 << 30,
            disk: 0,
        };
        let err = check_footprint("memory.x", memory, &have).unwrap_err();
        assert_eq!(crate::error::exit_code(&err), crate::error::EXIT_USAGE);
        assert!(format!("{err:#}").contains("9 GiB of memory"));
        assert!(check_footprint("x", Footprint::default(), &machine(0, 0)).is_ok());
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
