//! The kernel's tunables that can move a figure, read with the fingerprint so that `compare` can
//! name a changed one first, and say where osmeter's own set-up keeps a figure from seeing it.
//!
//! The list is documented in docs/comparisons-and-history.md ("Settings"); it is short on
//! purpose: settings a measurement of system calls, processes, files, memory, pipes, sockets or
//! the scheduler can feel, not every file under /proc/sys. THP, the cpufreq governor and boost,
//! the CPU vulnerabilities (mitigations) and the kernel's command line are fingerprint fields of
//! their own.

use std::collections::BTreeMap;

/// sysctl names (as `sysctl` prints them) read from /proc/sys.
pub const SYSCTLS: &[&str] = &[
    // Scheduler and processes.
    "kernel.sched_autogroup_enabled",
    "kernel.sched_rt_runtime_us",
    "kernel.sched_rt_period_us",
    "kernel.sched_child_runs_first",
    "kernel.numa_balancing",
    "kernel.timer_migration",
    "kernel.randomize_va_space",
    "kernel.pid_max",
    "kernel.nmi_watchdog",
    "kernel.watchdog",
    "kernel.perf_event_paranoid",
    "kernel.perf_event_max_sample_rate",
    "kernel.unprivileged_bpf_disabled",
    "kernel.yama.ptrace_scope",
    // Memory and writeback.
    "vm.swappiness",
    "vm.overcommit_memory",
    "vm.zone_reclaim_mode",
    "vm.min_free_kbytes",
    "vm.vfs_cache_pressure",
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
    "vm.dirty_expire_centisecs",
    "vm.dirty_writeback_centisecs",
    "vm.stat_interval",
    "vm.compaction_proactiveness",
    "vm.max_map_count",
    // Networking basics (loopback sockets and pipes' buffers).
    "net.core.rmem_default",
    "net.core.wmem_default",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.somaxconn",
    "net.core.netdev_max_backlog",
    "net.core.busy_poll",
    "net.core.busy_read",
    "net.core.bpf_jit_enable",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_autocorking",
    "fs.pipe-max-size",
    // Transparent huge pages' background work (enabled and defrag are fields of their own).
    "kernel/mm/transparent_hugepage/khugepaged/defrag",
];

/// The cgroup (v2) files of the measuring process's own group that limit what it may use.
pub const CGROUP_LIMITS: &[&str] = &[
    "cpu.max",
    "cpu.weight",
    "cpuset.cpus.effective",
    "memory.max",
    "memory.high",
    "memory.swap.max",
    "pids.max",
    "io.max",
];

/// Every setting `read` (an absolute path to a file's trimmed text) can read, by name: the
/// sysctls by their dotted names, the cgroup limits as `cgroup.FILE`. A value's runs of white
/// space become one space (tcp_rmem's tabs). None when nothing could be read at all.
pub fn read(read: impl Fn(&str) -> Option<String>) -> Option<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for name in SYSCTLS {
        let path = match name.strip_prefix("kernel/mm/") {
            Some(sys) => format!("/sys/kernel/mm/{sys}"),
            None => format!("/proc/sys/{}", name.replace('.', "/")),
        };
        if let Some(v) = read(&path) {
            out.insert(name.replace('/', "."), one_line(&v));
        }
    }
    if let Some(group) = read("/proc/self/cgroup").and_then(|t| own_group(&t)) {
        let dir = format!("/sys/fs/cgroup{}", group.trim_end_matches('/'));
        for file in CGROUP_LIMITS {
            if let Some(v) = read(&format!("{dir}/{file}")) {
                out.insert(format!("cgroup.{file}"), one_line(&v));
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The process's cgroup v2 path from /proc/self/cgroup (the `0::PATH` line).
fn own_group(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_string)
}

fn one_line(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What the runs compared were measured with, as far as a setting's visibility goes.
#[derive(Debug, Clone, Copy, Default)]
pub struct MeasuredWith {
    /// Some run of either side kept the system's address-space randomisation (`--system-aslr`).
    pub system_aslr: bool,
    /// Some run of either side measured at SCHED_FIFO (`--fifo`).
    pub fifo: bool,
}

/// Why a changed setting cannot reach (all of) the figures of this comparison, and how to
/// measure it, when osmeter's own set-up stands in its way.
pub fn blind_spot(setting: &str, with: MeasuredWith) -> Option<&'static str> {
    match setting {
        "kernel.randomize_va_space" if !with.system_aslr => Some(
            "process.fork_exit and process.exec start without address-space randomisation \
             whatever this says (so that their page tables are the same size in every round); \
             the other figures run under it. `run --system-aslr` measures those two as the \
             system has it",
        ),
        "kernel.sched_rt_runtime_us" | "kernel.sched_rt_period_us" if !with.fifo => Some(
            "it limits SCHED_FIFO threads only, and these runs measured at normal priority: \
             `run --fifo 50` (or `latency`) is what feels it",
        ),
        "kernel.perf_event_paranoid" => Some(
            "it decides which counters osmeter may open (each run names those it could not), \
             not what a figure costs",
        ),
        "cgroup.cpuset.cpus.effective" => Some(
            "osmeter pins its measuring thread to one CPU of this set (--cpu), so the set \
             changes which CPU measured, not how",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctls_cgroup_limits_and_white_space_are_read_as_a_user_would_name_them() {
        let files: BTreeMap<&str, &str> = [
            ("/proc/sys/kernel/randomize_va_space", "2"),
            ("/proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456"),
            ("/proc/sys/fs/pipe-max-size", "1048576"),
            ("/sys/kernel/mm/transparent_hugepage/khugepaged/defrag", "1"),
            ("/proc/self/cgroup", "0::/user.slice/osmeter\n"),
            ("/sys/fs/cgroup/user.slice/osmeter/memory.max", "max"),
            ("/sys/fs/cgroup/user.slice/osmeter/cpu.max", "50000 100000"),
        ]
        .into_iter()
        .collect();
        let got = read(|p| files.get(p).map(|v| v.to_string())).unwrap();
        let want: BTreeMap<String, String> = [
            ("kernel.randomize_va_space", "2"),
            ("net.ipv4.tcp_rmem", "4096 131072 6291456"),
            ("fs.pipe-max-size", "1048576"),
            ("kernel.mm.transparent_hugepage.khugepaged.defrag", "1"),
            ("cgroup.memory.max", "max"),
            ("cgroup.cpu.max", "50000 100000"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
        assert_eq!(read(|_| None), None);
    }

    #[test]
    fn a_setting_osmeter_overrides_is_named_unless_the_runs_kept_it() {
        let plain = MeasuredWith::default();
        assert!(blind_spot("kernel.randomize_va_space", plain)
            .unwrap()
            .contains("--system-aslr"));
        let kept = MeasuredWith {
            system_aslr: true,
            ..plain
        };
        assert_eq!(blind_spot("kernel.randomize_va_space", kept), None);
        assert!(blind_spot("kernel.sched_rt_runtime_us", plain).is_some());
        let fifo = MeasuredWith {
            fifo: true,
            ..plain
        };
        assert_eq!(blind_spot("kernel.sched_rt_runtime_us", fifo), None);
        assert_eq!(blind_spot("vm.swappiness", plain), None);
    }
}
