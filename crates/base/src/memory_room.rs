//! How much memory osmeter may still take: the machine's MemAvailable, and inside a memory cgroup
//! (a container, a systemd unit, a CI job) what the cgroup's limit leaves, whichever is less.
//! Reading MemAvailable alone let `run memory.copy --set size=200000000` start in a 256 MiB
//! cgroup on a machine with gigabytes free, and the OOM killer ended it.
//!
//! An address-space limit (`ulimit -v`) counts too: what it leaves beside what is already mapped.
//!
//! The cgroup is found through /proc/self/cgroup in the usual mount places: cgroup v2 at
//! /sys/fs/cgroup (or /sys/fs/cgroup/unified) and v1's memory controller at
//! /sys/fs/cgroup/memory. Page cache the cgroup holds (its inactive file pages) counts as room,
//! as MemAvailable counts it: the kernel reclaims it before it kills.

use std::path::{Path, PathBuf};

/// The memory available and what limits it, in words for messages ("this machine has 20.9 GiB
/// available", "the memory cgroup /ci/job-7 has 120 MiB left of its 256 MiB limit").
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryRoom {
    pub bytes: u64,
    pub what: String,
}

/// The room now, or None when neither the machine nor a cgroup says.
pub fn now() -> Option<MemoryRoom> {
    let machine = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| mem_available(&t))
        .map(|bytes| MemoryRoom {
            bytes,
            what: format!("this machine has {} available", crate::units::bytes(bytes)),
        });
    let cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|t| cgroup_room(&t, Path::new("/sys/fs/cgroup")));
    [machine, cgroup, address_space_left()]
        .into_iter()
        .flatten()
        .min_by_key(|room| room.bytes)
}

/// What the address-space limit (RLIMIT_AS, `ulimit -v`) leaves this process, when there is one:
/// past it an allocation fails, however much memory the machine has.
pub fn address_space_left() -> Option<MemoryRoom> {
    let limit = crate::system::limits::of(libc::RLIMIT_AS)?.soft?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let mapped_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let bytes = limit.saturating_sub(mapped_kib * 1024);
    Some(MemoryRoom {
        bytes,
        what: format!(
            "the address-space limit (RLIMIT_AS, `ulimit -v` {} KiB) leaves {} of it",
            limit / 1024,
            crate::units::bytes(bytes)
        ),
    })
}

/// `MemAvailable` of /proc/meminfo, in bytes.
pub fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut f = line.split_whitespace().skip(1);
    let kib: u64 = f.next()?.parse().ok()?;
    (f.next() == Some("kB")).then_some(kib.saturating_mul(1024))
}

/// A limit at or above this is "no limit" (cgroup v1 writes 2^63 rounded down to a page).
const NO_LIMIT: u64 = 1 << 62;

/// The tightest room left by a memory limit of this process's cgroup or its ancestors, read under
/// `root` (the cgroup mount directory), from `self_cgroup` (/proc/self/cgroup's text).
pub fn cgroup_room(self_cgroup: &str, root: &Path) -> Option<MemoryRoom> {
    let mut tightest: Option<MemoryRoom> = None;
    for line in self_cgroup.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let path = path.trim_start_matches('/');
        let found = if controllers.is_empty() {
            [root.to_path_buf(), root.join("unified")]
                .iter()
                .find(|r| r.join("cgroup.controllers").exists())
                .and_then(|r| v2_room(r, path))
        } else if controllers.split(',').any(|c| c == "memory") {
            v1_room(&root.join("memory"), path)
        } else {
            None
        };
        if let Some(r) = found {
            if tightest.as_ref().is_none_or(|t| r.bytes < t.bytes) {
                tightest = Some(r);
            }
        }
    }
    tightest
}

/// cgroup v2: every level from the leaf up may have its own memory.max.
fn v2_room(root: &Path, path: &str) -> Option<MemoryRoom> {
    let mut best: Option<MemoryRoom> = None;
    let mut dir = PathBuf::from(path);
    loop {
        let at = root.join(&dir);
        let limit = read_u64(&at.join("memory.max"));
        let used = read_u64(&at.join("memory.current"));
        if let (Some(limit), Some(used)) = (limit.filter(|l| *l < NO_LIMIT), used) {
            let cache = stat_field(&at.join("memory.stat"), "inactive_file").unwrap_or(0);
            let room = describe(&dir, limit, used, cache);
            if best.as_ref().is_none_or(|b| room.bytes < b.bytes) {
                best = Some(room);
            }
        }
        if !dir.pop() {
            return best;
        }
    }
}

/// cgroup v1: the leaf's memory.stat states the limit of the whole hierarchy above it.
fn v1_room(root: &Path, path: &str) -> Option<MemoryRoom> {
    let at = root.join(path);
    let stat = at.join("memory.stat");
    let limit = stat_field(&stat, "hierarchical_memory_limit")
        .or_else(|| read_u64(&at.join("memory.limit_in_bytes")))?;
    if limit >= NO_LIMIT {
        return None;
    }
    let used = read_u64(&at.join("memory.usage_in_bytes"))?;
    let cache = stat_field(&stat, "total_inactive_file").unwrap_or(0);
    Some(describe(Path::new(path), limit, used, cache))
}

fn describe(path: &Path, limit: u64, used: u64, cache: u64) -> MemoryRoom {
    let bytes = limit.saturating_sub(used.saturating_sub(cache));
    MemoryRoom {
        bytes,
        what: format!(
            "osmeter's memory cgroup /{} has {} left of its {} limit",
            path.display(),
            crate::units::bytes(bytes),
            crate::units::bytes(limit)
        ),
    }
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn stat_field(path: &Path, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn the_tightest_limit_of_a_v2_cgroup_and_its_ancestors_counts() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        write(r, "cgroup.controllers", "memory\n");
        write(&r.join("ci"), "memory.max", &(512u64 << 20).to_string());
        write(&r.join("ci"), "memory.current", &(500u64 << 20).to_string());
        write(&r.join("ci/job"), "memory.max", "max\n");
        write(&r.join("ci/job"), "memory.current", "1000\n");
        write(
            &r.join("ci/job"),
            "memory.stat",
            "anon 1\ninactive_file 0\n",
        );
        let room = cgroup_room("0::/ci/job\n", r).unwrap();
        assert_eq!(room.bytes, 12 << 20);
        assert!(room.what.contains("/ci has 12 MiB left"), "{}", room.what);
    }

    #[test]
    fn a_v1_memory_cgroup_counts_its_reclaimable_cache_as_room() {
        let root = tempfile::tempdir().unwrap();
        let at = root.path().join("memory/box");
        write(
            &at,
            "memory.stat",
            "hierarchical_memory_limit 268435456\ntotal_inactive_file 104857600\n",
        );
        write(&at, "memory.usage_in_bytes", "209715200\n");
        let room = cgroup_room("4:memory:/box\n0::/\n", root.path()).unwrap();
        assert_eq!(room.bytes, 256 * 1024 * 1024 - 100 * 1024 * 1024);
        write(
            &at,
            "memory.stat",
            "hierarchical_memory_limit 9223372036854771712\n",
        );
        assert_eq!(cgroup_room("4:memory:/box\n", root.path()), None);
    }

    #[test]
    fn meminfo_is_read_and_the_machine_here_has_room() {
        assert_eq!(
            mem_available("MemTotal: 9 kB\nMemAvailable:   24058120 kB\n"),
            Some(24058120 * 1024)
        );
        assert_eq!(mem_available("MemAvailable: lots kB\n"), None);
        assert!(now().is_some_and(|r| r.bytes > 0));
    }
}
