//! Which events osmeter counts, how they are grouped, and how a refusal is explained to the user.

use super::sys;
use crate::Scope;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventDef {
    pub name: &'static str,
    pub type_: u32,
    pub config: u64,
}

const fn hw(name: &'static str, config: u64) -> EventDef {
    EventDef {
        name,
        type_: sys::TYPE_HARDWARE,
        config,
    }
}

const fn cache(name: &'static str, cache: u64) -> EventDef {
    EventDef {
        name,
        type_: sys::TYPE_HW_CACHE,
        config: sys::cache_read_miss(cache),
    }
}

const fn sw(name: &'static str, config: u64) -> EventDef {
    EventDef {
        name,
        type_: sys::TYPE_SOFTWARE,
        config,
    }
}

/// Hardware events in the groups they are scheduled in. A group must fit the PMU's counters at
/// once, so none holds more than three events that need a general-purpose counter (cycles and
/// instructions usually sit on fixed counters); groups that compete are multiplexed and scaled.
pub const HARDWARE_GROUPS: &[&[EventDef]] = &[
    &[
        hw("cycles", sys::HW_CPU_CYCLES),
        hw("instructions", sys::HW_INSTRUCTIONS),
        hw("branch-misses", sys::HW_BRANCH_MISSES),
    ],
    &[
        hw("stalled-cycles-frontend", sys::HW_STALLED_CYCLES_FRONTEND),
        hw("stalled-cycles-backend", sys::HW_STALLED_CYCLES_BACKEND),
    ],
    &[
        cache("L1-dcache-load-misses", sys::CACHE_L1D),
        cache("L1-icache-load-misses", sys::CACHE_L1I),
        cache("LLC-load-misses", sys::CACHE_LL),
    ],
    &[
        cache("dTLB-load-misses", sys::CACHE_DTLB),
        cache("iTLB-load-misses", sys::CACHE_ITLB),
    ],
];

/// Software events: counted by the kernel itself, in both privilege levels, in one group.
pub const SOFTWARE_GROUP: &[EventDef] = &[
    sw("task-clock", sys::SW_TASK_CLOCK),
    sw("page-faults", sys::SW_PAGE_FAULTS),
    sw("minor-faults", sys::SW_PAGE_FAULTS_MIN),
    sw("major-faults", sys::SW_PAGE_FAULTS_MAJ),
    sw("context-switches", sys::SW_CONTEXT_SWITCHES),
    sw("cpu-migrations", sys::SW_CPU_MIGRATIONS),
];

/// Software events the kernel records with kernel-mode registers: with exclude_kernel set they
/// would silently read zero, so they are reported as not counted instead.
pub fn counted_in_kernel_mode(ev: &EventDef) -> bool {
    ev.type_ == sys::TYPE_SOFTWARE
        && matches!(ev.config, sys::SW_CONTEXT_SWITCHES | sys::SW_CPU_MIGRATIONS)
}

pub fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::User => "user",
        Scope::Kernel => "kernel",
        Scope::Software => "software",
    }
}

/// `user:cycles`, `software:page-faults`: how an event is named in `unavailable()`.
pub fn key(scope: Scope, name: &str) -> String {
    format!("{}:{name}", scope_name(scope))
}

/// Privilege-level exclusion bits for a scope.
pub fn scope_flags(scope: Scope) -> u64 {
    match scope {
        Scope::User => sys::FLAG_EXCLUDE_KERNEL | sys::FLAG_EXCLUDE_HV,
        Scope::Kernel => sys::FLAG_EXCLUDE_USER | sys::FLAG_EXCLUDE_HV,
        Scope::Software => 0,
    }
}

/// What the machine allows, read once per counter set so refusals can be explained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Privilege {
    /// /proc/sys/kernel/perf_event_paranoid, when the file exists.
    pub paranoid: Option<i32>,
    /// Root, CAP_PERFMON or CAP_SYS_ADMIN: paranoid does not apply.
    pub privileged: bool,
}

impl Privilege {
    pub fn current() -> Self {
        Privilege {
            paranoid: paranoid(),
            privileged: privileged(),
        }
    }

    /// True when the kernel will refuse events that count kernel mode (paranoid >= 2 without
    /// privilege), so software events must be opened with exclude_kernel.
    pub fn kernel_refused(&self) -> bool {
        !self.privileged && self.paranoid.is_some_and(|p| p >= 2)
    }
}

pub fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

fn privileged() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    const CAP_SYS_ADMIN: u32 = 21;
    const CAP_PERFMON: u32 = 38;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        })
        .is_some_and(|caps| caps & (1 << CAP_PERFMON | 1 << CAP_SYS_ADMIN) != 0)
}

const PRIVILEGE_HINT: &str =
    "run as root, grant CAP_PERFMON, or lower it with `sysctl kernel.perf_event_paranoid=1`";

/// Why an event could not be opened, and what to do about it.
pub fn reason(errno: i32, scope: Scope, privilege: Privilege, pmu_present: bool) -> String {
    let paranoid = privilege
        .paranoid
        .map_or_else(|| "unreadable".to_string(), |p| p.to_string());
    match errno {
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV if pmu_present => {
            "not supported by this CPU's performance monitoring unit".to_string()
        }
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => {
            "not supported by this CPU or hypervisor (no hardware PMU exposed)".to_string()
        }
        libc::EACCES | libc::EPERM if scope != Scope::User && privilege.kernel_refused() => {
            format!(
                "counting kernel mode is refused to unprivileged users: \
             /proc/sys/kernel/perf_event_paranoid is {paranoid}; {PRIVILEGE_HINT}"
            )
        }
        libc::EACCES | libc::EPERM => format!(
            "permission denied: /proc/sys/kernel/perf_event_paranoid is {paranoid} \
             (3 or more refuses all unprivileged use); {PRIVILEGE_HINT}"
        ),
        libc::EMFILE | libc::ENFILE => {
            "out of file descriptors (one per event); raise the limit with `ulimit -n`".to_string()
        }
        libc::ENOSYS => "this kernel has no perf_event support (CONFIG_PERF_EVENTS)".to_string(),
        libc::ESRCH => "the process to count is gone".to_string(),
        e => format!(
            "perf_event_open failed: {} ({})",
            std::io::Error::from_raw_os_error(e)
                .to_string()
                .split(" (os error")
                .next()
                .unwrap_or(""),
            sys::errno_name(e)
        ),
    }
}

/// The reason given to software events that exclude_kernel would zero out.
pub fn kernel_mode_software_reason(privilege: Privilege) -> String {
    let paranoid = privilege.paranoid.unwrap_or(2);
    format!(
        "the kernel records it in kernel mode, which is refused to unprivileged users while \
         /proc/sys/kernel/perf_event_paranoid is {paranoid}; {PRIVILEGE_HINT}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: Privilege = Privilege {
        paranoid: Some(2),
        privileged: true,
    };
    const USER: Privilege = Privilege {
        paranoid: Some(2),
        privileged: false,
    };

    #[test]
    fn names_are_the_documented_ones() {
        let names: Vec<&str> = HARDWARE_GROUPS
            .iter()
            .flat_map(|g| g.iter().map(|e| e.name))
            .chain(SOFTWARE_GROUP.iter().map(|e| e.name))
            .collect();
        assert_eq!(names.len(), 16);
        for n in [
            "cycles",
            "LLC-load-misses",
            "iTLB-load-misses",
            "cpu-migrations",
        ] {
            assert!(names.contains(&n), "{n}");
        }
        assert_eq!(key(Scope::Kernel, "cycles"), "kernel:cycles");
        assert_eq!(key(Scope::Software, "task-clock"), "software:task-clock");
    }

    #[test]
    fn reasons_tell_what_to_do() {
        let r = reason(libc::ENOENT, Scope::User, ROOT, false);
        assert!(
            r.contains("not supported") && r.contains("no hardware PMU"),
            "{r}"
        );
        let r = reason(libc::EOPNOTSUPP, Scope::User, ROOT, true);
        assert!(
            r.contains("not supported") && !r.contains("hypervisor"),
            "{r}"
        );
        let r = reason(libc::EACCES, Scope::Kernel, USER, true);
        assert!(r.contains("kernel mode") && r.contains("is 2"), "{r}");
        assert!(
            r.contains("perf_event_paranoid=1") && r.contains("CAP_PERFMON"),
            "{r}"
        );
        let r = reason(
            libc::EACCES,
            Scope::User,
            Privilege {
                paranoid: Some(3),
                privileged: false,
            },
            true,
        );
        assert!(r.contains("permission denied") && r.contains("is 3"), "{r}");
        let r = reason(libc::EINVAL, Scope::User, ROOT, true);
        assert!(
            r.contains("Invalid argument") && r.contains("EINVAL"),
            "{r}"
        );
    }

    #[test]
    fn paranoid_two_refuses_kernel_only_without_privilege() {
        assert!(USER.kernel_refused());
        assert!(!ROOT.kernel_refused());
        assert!(!Privilege {
            paranoid: Some(1),
            privileged: false
        }
        .kernel_refused());
    }
}
