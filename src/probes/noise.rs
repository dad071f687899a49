//! How much a probe's rounds usually disagree (coefficient of variation of the round values), for a
//! host with no stored history of its own: a run flags a figure whose rounds disagree several times
//! more than this (see [`crate::harness::usual`]). Measured: six quick runs of an idle two-core VM
//! (KVM, Intel Xeon, load average 1.2), each figure's spread between its rounds, the median over
//! the runs, then the median over a probe's figures (the upper quartile for `memory.latency`,
//! whose sizes near a cache's edge move most), rounded up to half a percent. A host that shares
//! its CPUs with no neighbour shows less; its own stored runs replace these once there are a few.

/// Probes whose spread differs from their group's by more than a point, most specific first.
const BY_PROBE: &[(&str, f64)] = &[
    // Inode reuse on ext4 without a journal: swings with the deletions of the minutes before.
    ("fs.create_delete", 0.55),
    ("fs.small_files", 0.20),
    // A flush to the virtual disk: the host's own writes show through.
    ("fs.write_fsync", 0.20),
    // The receiver's CPU and the socket buffers' autotuning move it between runs.
    ("net.tcp_bandwidth", 0.22),
    // The harness's own empty loop, a fraction of a nanosecond: any steal is a large share.
    ("cpu.null", 0.085),
    ("memory.latency", 0.065),
    ("ipc.futex_roundtrip", 0.05),
    // Whole programs (one full `run apps` of the idle VM, 3 to 8 rounds a figure): file-system
    // phases of a few milliseconds, a web server under many clients and an X server move far
    // more between processes than a system call does.
    ("app.andrew", 0.20),
    ("app.web", 0.20),
    ("app.ghostscript", 0.16),
    ("app.bitblt", 0.11),
    ("app.wish", 0.095),
];

/// Per group, for the probes not named above (the median of the group's probes).
const BY_GROUP: &[(&str, f64)] = &[
    ("cpu", 0.03),
    ("syscall", 0.035),
    ("signal", 0.025),
    ("select", 0.035),
    ("memory", 0.04),
    ("ipc", 0.07),
    ("net", 0.035),
    ("process", 0.04),
    ("thread", 0.045),
    ("fs", 0.045),
    ("app", 0.045),
];

/// For a probe unknown to both tables.
const OTHERWISE: f64 = crate::harness::usual::DEFAULT_CV;

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
        assert_eq!(expected_cv("fs.small_files"), 0.20);
        assert_eq!(expected_cv("fs.read_cached"), 0.045);
        assert_eq!(expected_cv("syscall.null"), 0.035);
        assert_eq!(expected_cv("nothing"), OTHERWISE);
    }
}
