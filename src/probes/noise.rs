//! How much a probe's rounds usually disagree (coefficient of variation of the round values), for a
//! host with no stored history of its own: a run flags a figure whose rounds disagree several times
//! more than this (see [`crate::harness::usual`]). The figures are what quick runs of a quiet
//! two-core VM showed, rounded up; a host's own stored runs replace them once there are a few.

/// Probes whose spread differs from their group's, most specific first.
const BY_PROBE: &[(&str, f64)] = &[
    // Inode reuse on ext4 without a journal: swings with the deletions of the minutes before.
    ("fs.create_delete", 0.15),
    ("fs.small_files", 0.15),
    ("fs.write_fsync", 0.10),
    // The receiver's CPU and the socket buffers' autotuning move it between runs.
    ("net.tcp_bandwidth", 0.15),
    ("memory.page_fault", 0.05),
    ("memory.mmap_munmap", 0.05),
    ("process.fork_exit", 0.04),
    ("process.exec", 0.04),
    ("thread.create_join", 0.05),
    ("syscall.sched_yield", 0.02),
];

/// Per group, for the probes not named above.
const BY_GROUP: &[(&str, f64)] = &[
    ("cpu", 0.005),
    ("syscall", 0.01),
    ("signal", 0.015),
    ("select", 0.015),
    ("memory", 0.02),
    ("ipc", 0.04),
    ("net", 0.04),
    ("process", 0.04),
    ("thread", 0.04),
    ("fs", 0.04),
    ("app", 0.03),
];

/// For a probe unknown to both tables.
const OTHERWISE: f64 = 0.03;

/// The usual spread between rounds of `probe` (`group.name`).
pub fn expected_cv(probe: &str) -> f64 {
    if let Some(&(_, cv)) = BY_PROBE.iter().find(|(p, _)| *p == probe) {
        return cv;
    }
    let group = probe.split('.').next().unwrap_or(probe);
    BY_GROUP
        .iter()
        .find(|(g, _)| *g == group)
        .map_or(OTHERWISE, |&(_, cv)| cv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probes::registry;

    #[test]
    fn every_probe_has_a_group_of_its_own_and_named_probes_exist() {
        for def in registry() {
            assert!(
                BY_GROUP.iter().any(|(g, _)| *g == def.group()),
                "{} has no usual spread for its group",
                def.id
            );
        }
        for (p, _) in BY_PROBE {
            assert!(registry().iter().any(|d| d.id == *p), "no probe {p}");
        }
    }

    #[test]
    fn known_answers() {
        assert_eq!(expected_cv("fs.small_files"), 0.15);
        assert_eq!(expected_cv("fs.read_cached"), 0.04);
        assert_eq!(expected_cv("syscall.null"), 0.01);
        assert_eq!(expected_cv("nothing"), OTHERWISE);
    }
}
