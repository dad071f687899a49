//! Why a thread may or may not switch to SCHED_FIFO here, and what to do about it.
//!
//! The kernel refuses a real-time policy (EPERM) for one of these reasons, checked in this order
//! by sched_setscheduler:
//! 1. privilege: without CAP_SYS_NICE (root has it unless a container or the bounding set dropped
//!    it) the priority must be within the soft RLIMIT_RTPRIO, and a limit of 0 forbids any;
//! 2. real-time budget, only under RT group scheduling (CONFIG_RT_GROUP_SCHED, not turned off with
//!    rt_group_sched=0 on Linux 6.16+) and only while throttling is on (sched_rt_runtime_us is not
//!    -1): a thread whose cpu cgroup has no real-time runtime is refused, even as root. The root
//!    group's runtime is kernel.sched_rt_runtime_us itself; a cgroup v1 group has cpu.rt_runtime_us
//!    (0 for a new group); cgroup v2 has no such file, so every non-root group with the cpu
//!    controller enabled has none.
//!
//! The facts are read from /proc and the cgroup file systems; the reasoning over them is a pure
//! function, tested on fixed facts.

use serde::Serialize;
use std::path::{Path, PathBuf};

/// The cpu cgroup whose real-time budget applies to the calling thread.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CpuGroup {
    /// The root group of cgroup v2 (or no cpu controller at all): sched_rt_runtime_us is the budget.
    Root,
    /// A group of the cgroup v1 cpu hierarchy ("/" is its root, whose budget is the global one).
    V1 {
        group: String,
        /// Its cpu.rt_runtime_us and cpu.rt_period_us (absent without RT group scheduling).
        runtime_us: Option<i64>,
        period_us: Option<u64>,
        file: PathBuf,
    },
    /// A non-root cgroup v2 group with the cpu controller: no real-time runtime can be given.
    V2 {
        group: String,
    },
    Unknown {
        why: String,
    },
}

/// What decides the outcome, as read from the system.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RtFacts {
    pub euid: u32,
    pub cap_sys_nice: bool,
    /// Soft RLIMIT_RTPRIO; u64::MAX is unlimited.
    pub rlimit_rtprio: Option<u64>,
    /// kernel.sched_rt_runtime_us and kernel.sched_rt_period_us.
    pub rt_runtime_us: Option<i64>,
    pub rt_period_us: Option<u64>,
    /// Whether RT group scheduling is active (None: cannot tell).
    pub rt_group_sched: Option<bool>,
    pub cpu_group: CpuGroup,
}

/// Which rule decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RtCause {
    Allowed,
    /// No CAP_SYS_NICE and RLIMIT_RTPRIO 0.
    NoPrivilege,
    /// No CAP_SYS_NICE and RLIMIT_RTPRIO below the priority asked for.
    RlimitRtprio,
    /// sched_rt_runtime_us is 0: the root group has no real-time budget.
    GlobalRuntimeZero,
    /// The cpu cgroup has no real-time budget (v1 cpu.rt_runtime_us = 0, or a v2 group).
    CgroupNoBudget,
    /// Refused although none of the above applies.
    Unexplained,
    /// Failed with an error other than EPERM.
    OtherError,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RtDiagnosis {
    pub priority: i32,
    pub allowed: bool,
    pub cause: RtCause,
    /// What happened and why, in one sentence.
    pub reason: String,
    /// What to do about it (empty when allowed).
    pub remedy: String,
    /// The real-time budget that applies when allowed (throttling), in words.
    pub budget: String,
    pub facts: RtFacts,
}

impl RtDiagnosis {
    /// The reason and the remedy in one message.
    pub fn message(&self) -> String {
        if self.remedy.is_empty() {
            self.reason.clone()
        } else {
            format!("{}; {}", self.reason, self.remedy)
        }
    }
}

fn limit_text(limit: Option<u64>) -> String {
    match limit {
        Some(u64::MAX) => "unlimited".into(),
        Some(n) => n.to_string(),
        None => "unknown".into(),
    }
}

/// The budget in words, for the group that applies.
fn budget_text(f: &RtFacts) -> String {
    let global = match (f.rt_runtime_us, f.rt_period_us) {
        (Some(r), _) if r < 0 => {
            "real-time throttling is off (sched_rt_runtime_us = -1): nothing stops a runaway \
             real-time thread from holding a CPU"
                .to_string()
        }
        (Some(0), _) => "sched_rt_runtime_us is 0: real-time threads get no CPU time".to_string(),
        (Some(r), Some(p)) => format!(
            "real-time threads may use {r} us of every {p} us per CPU (sched_rt_runtime_us), \
             then wait for the next period"
        ),
        _ => "the real-time budget is unknown".to_string(),
    };
    match &f.cpu_group {
        CpuGroup::V1 {
            group,
            runtime_us: Some(r),
            period_us: Some(p),
            ..
        } if group != "/" && f.rt_runtime_us.is_some_and(|g| g >= 0) => {
            format!("{global}; the cpu cgroup {group} may use {r} us of every {p} us")
        }
        _ => global,
    }
}

/// The verdict for `priority` given the outcome of a real attempt (Ok, or the errno).
pub fn diagnose(priority: i32, outcome: Result<(), i32>, facts: RtFacts) -> RtDiagnosis {
    let budget = budget_text(&facts);
    let (cause, reason, remedy) = match outcome {
        Ok(()) => (
            RtCause::Allowed,
            format!("SCHED_FIFO priority {priority} is allowed"),
            String::new(),
        ),
        Err(libc::EPERM) => refusal(priority, &facts),
        Err(errno) => (
            RtCause::OtherError,
            format!(
                "SCHED_FIFO priority {priority} failed: {}",
                std::io::Error::from_raw_os_error(errno)
            ),
            "use --classes normal to measure without real-time priority".into(),
        ),
    };
    RtDiagnosis {
        priority,
        allowed: cause == RtCause::Allowed,
        cause,
        reason,
        remedy,
        budget,
        facts,
    }
}

fn refusal(priority: i32, f: &RtFacts) -> (RtCause, String, String) {
    let who = if f.euid == 0 {
        "running as root, but without CAP_SYS_NICE (dropped by a container or the capability \
         bounding set)"
            .to_string()
    } else {
        format!("running as uid {} without CAP_SYS_NICE", f.euid)
    };
    let grant = if f.euid == 0 {
        "give the process CAP_SYS_NICE (e.g. docker run --cap-add SYS_NICE)"
    } else {
        "run as root, grant CAP_SYS_NICE (setcap cap_sys_nice+ep on the binary)"
    };
    if !f.cap_sys_nice {
        match f.rlimit_rtprio {
            Some(0) | None => {
                return (
                    RtCause::NoPrivilege,
                    format!(
                        "SCHED_FIFO priority {priority} is refused: {who}, and RLIMIT_RTPRIO is {}",
                        limit_text(f.rlimit_rtprio)
                    ),
                    format!(
                        "{grant}, or raise the limit (ulimit -r {priority}, or an rtprio line in \
                         /etc/security/limits.conf); or measure with --classes normal"
                    ),
                );
            }
            Some(limit) if limit < priority as u64 => {
                return (
                    RtCause::RlimitRtprio,
                    format!(
                        "SCHED_FIFO priority {priority} is refused: {who}, and RLIMIT_RTPRIO is \
                         {limit}, below {priority}"
                    ),
                    format!(
                        "ask for a priority of at most {limit} (--prio-high, --prio-medium), raise \
                         the limit (ulimit -r {priority}), or {grant}"
                    ),
                );
            }
            Some(_) => {}
        }
    }
    let even = if f.cap_sys_nice {
        "even with CAP_SYS_NICE"
    } else {
        "even within RLIMIT_RTPRIO"
    };
    let throttling_on = f.rt_runtime_us.is_none_or(|r| r >= 0);
    let group_sched = f.rt_group_sched != Some(false);
    let in_root = match &f.cpu_group {
        CpuGroup::Root => true,
        CpuGroup::V1 { group, .. } => group == "/",
        _ => false,
    };
    if throttling_on && group_sched && in_root && f.rt_runtime_us == Some(0) {
        return (
            RtCause::GlobalRuntimeZero,
            format!(
                "SCHED_FIFO priority {priority} is refused {even}: kernel.sched_rt_runtime_us is \
                 0, so the root group has no real-time budget and the kernel refuses real-time \
                 threads"
            ),
            "restore a budget (sysctl kernel.sched_rt_runtime_us=950000, the default)".into(),
        );
    }
    if throttling_on && group_sched {
        match &f.cpu_group {
            CpuGroup::V1 {
                group,
                runtime_us: Some(0),
                file,
                ..
            } => {
                return (
                    RtCause::CgroupNoBudget,
                    format!(
                        "SCHED_FIFO priority {priority} is refused {even}: the cpu cgroup {group} \
                         has no real-time budget ({} is 0), and under RT group scheduling the \
                         kernel refuses real-time threads in such a group",
                        file.display()
                    ),
                    format!(
                        "give the group a budget (echo 100000 > {}; at most what its parent has) \
                         or run osmeter in a group that has one (the root group: echo $$ > \
                         {}/cgroup.procs)",
                        file.display(),
                        v1_root_of(file, group).display()
                    ),
                );
            }
            CpuGroup::V2 { group } => {
                return (
                    RtCause::CgroupNoBudget,
                    format!(
                        "SCHED_FIFO priority {priority} is refused {even}: this process is in the \
                         cgroup v2 group {group} with the cpu controller enabled, and the kernel \
                         schedules real-time threads by group (CONFIG_RT_GROUP_SCHED); cgroup v2 \
                         gives no group but the root a real-time budget"
                    ),
                    "run osmeter in the root cgroup or in a group without the cpu controller, or \
                     boot with rt_group_sched=0 (Linux 6.16 and later) or a kernel built without \
                     CONFIG_RT_GROUP_SCHED"
                        .into(),
                );
            }
            _ => {}
        }
    }
    (
        RtCause::Unexplained,
        format!(
            "SCHED_FIFO priority {priority} is refused {even}, and neither RLIMIT_RTPRIO nor a \
             real-time budget explains it (cpu cgroup: {}; sched_rt_runtime_us {})",
            group_text(&f.cpu_group),
            f.rt_runtime_us
                .map_or_else(|| "unknown".to_string(), |r| r.to_string())
        ),
        "a security module, a seccomp filter or a container policy may forbid real-time \
         scheduling; measure with --classes normal"
            .into(),
    )
}

fn group_text(g: &CpuGroup) -> String {
    match g {
        CpuGroup::Root => "the root group".into(),
        CpuGroup::V1 {
            group, runtime_us, ..
        } => format!(
            "v1 {group}, cpu.rt_runtime_us {}",
            runtime_us.map_or_else(|| "absent".to_string(), |r| r.to_string())
        ),
        CpuGroup::V2 { group } => format!("v2 {group}"),
        CpuGroup::Unknown { why } => format!("unknown ({why})"),
    }
}

/// The hierarchy's mount point, from a group's file and the group's path.
fn v1_root_of(file: &Path, group: &str) -> PathBuf {
    let depth = group.split('/').filter(|s| !s.is_empty()).count() + 1;
    file.ancestors()
        .nth(depth)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// One line of /proc/PID/mountinfo that matters here.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupMount {
    /// The path inside the hierarchy that is mounted (not "/" inside some containers).
    pub root: String,
    pub point: PathBuf,
    pub v2: bool,
    /// Controllers of a v1 hierarchy (its super options).
    pub controllers: Vec<String>,
}

pub fn parse_cgroup_mounts(mountinfo: &str) -> Vec<CgroupMount> {
    osmeter_base::mounts::parse(mountinfo)
        .into_iter()
        .filter_map(|m| {
            let v2 = match m.fs_type.as_str() {
                "cgroup2" => true,
                "cgroup" => false,
                _ => return None,
            };
            Some(CgroupMount {
                point: PathBuf::from(&m.mount_point),
                root: m.root,
                v2,
                controllers: m.super_options.split(',').map(str::to_string).collect(),
            })
        })
        .collect()
}

/// Where a group path of a hierarchy lives under its mount.
fn group_dir(m: &CgroupMount, group: &str) -> Option<PathBuf> {
    let rel = if m.root == "/" {
        group
    } else {
        group.strip_prefix(m.root.as_str())?
    };
    Some(m.point.join(rel.trim_start_matches('/')))
}

/// Finds the cpu cgroup of the thread described by `cgroup` (the text of /proc/thread-self/cgroup),
/// reading group files through `read`.
pub fn find_cpu_group(
    cgroup: &str,
    mounts: &[CgroupMount],
    read: &dyn Fn(&Path) -> Option<String>,
) -> CpuGroup {
    let lines: Vec<(&str, &str)> = cgroup
        .lines()
        .filter_map(|l| {
            let mut p = l.splitn(3, ':');
            let _id = p.next()?;
            Some((p.next()?, p.next()?))
        })
        .collect();
    if let Some((_, group)) = lines.iter().find(|(c, _)| c.split(',').any(|c| c == "cpu")) {
        let Some(mount) = mounts
            .iter()
            .find(|m| !m.v2 && m.controllers.iter().any(|c| c == "cpu"))
        else {
            return CpuGroup::Unknown {
                why: "the cpu hierarchy (cgroup v1) is not mounted here".into(),
            };
        };
        let Some(dir) = group_dir(mount, group) else {
            return CpuGroup::Unknown {
                why: format!("the cpu group {group} is outside the mounted part of the hierarchy"),
            };
        };
        let file = dir.join("cpu.rt_runtime_us");
        return CpuGroup::V1 {
            group: group.to_string(),
            runtime_us: read(&file).and_then(|t| t.trim().parse().ok()),
            period_us: read(&dir.join("cpu.rt_period_us")).and_then(|t| t.trim().parse().ok()),
            file,
        };
    }
    let Some((_, group)) = lines.iter().find(|(c, _)| c.is_empty()) else {
        return CpuGroup::Root;
    };
    let Some(mount) = mounts.iter().find(|m| m.v2) else {
        return CpuGroup::Unknown {
            why: "cgroup v2 is not mounted here".into(),
        };
    };
    // The group whose cpu controller applies is the nearest one (itself or an ancestor) that was
    // given the controller, which shows as its cpu.weight file; the root group never has one, so
    // a namespace root that shows it is a group of the host.
    let mut path = group.trim_end_matches('/').to_string();
    while let Some(dir) = group_dir(mount, if path.is_empty() { "/" } else { &path }) {
        if read(&dir.join("cpu.weight")).is_some() {
            return CpuGroup::V2 {
                group: if path.is_empty() { "/".into() } else { path },
            };
        }
        if path.is_empty() {
            break;
        }
        path.truncate(path.rfind('/').unwrap_or(0));
    }
    CpuGroup::Root
}

/// Whether the kernel schedules real-time threads by group, from what it shows.
pub fn rt_group_sched_active(
    mounts: &[CgroupMount],
    cmdline: &str,
    config: Option<&str>,
) -> Option<bool> {
    // The v1 cpu hierarchy shows the real-time files exactly when it is active.
    if let Some(m) = mounts
        .iter()
        .find(|m| !m.v2 && m.controllers.iter().any(|c| c == "cpu"))
    {
        return Some(m.point.join("cpu.rt_runtime_us").exists());
    }
    let boot = cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix("rt_group_sched="));
    let config = config?;
    let set = |name: &str| config.lines().any(|l| l.trim() == format!("{name}=y"));
    if !set("CONFIG_RT_GROUP_SCHED") {
        return Some(false);
    }
    Some(match boot {
        Some("0") => false,
        Some(_) => true,
        None => !set("CONFIG_RT_GROUP_SCHED_DEFAULT_DISABLED"),
    })
}

fn read_text(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The kernel's build configuration, where the system shows it.
fn kernel_config() -> Option<String> {
    // SAFETY: utsname is plain data that uname fills.
    let release = unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        (libc::uname(&mut u) == 0).then(|| {
            std::ffi::CStr::from_ptr(u.release.as_ptr())
                .to_string_lossy()
                .into_owned()
        })
    };
    if let Some(text) = release.and_then(|r| read_text(Path::new(&format!("/boot/config-{r}")))) {
        return Some(text);
    }
    let out = osmeter_base::programs::command("gzip")
        .args(["-dc", "/proc/config.gz"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn has_cap_sys_nice(status: &str) -> bool {
    const CAP_SYS_NICE: u32 = 23;
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_NICE) != 0)
}

/// The facts for the calling thread.
pub fn read_facts() -> RtFacts {
    let mounts =
        parse_cgroup_mounts(&read_text(Path::new("/proc/self/mountinfo")).unwrap_or_default());
    let cgroup = read_text(Path::new("/proc/thread-self/cgroup")).unwrap_or_default();
    let cmdline = read_text(Path::new("/proc/cmdline")).unwrap_or_default();
    let cpu_group = find_cpu_group(&cgroup, &mounts, &read_text);
    // The configuration is only needed when no v1 cpu hierarchy shows the answer.
    let v1_cpu = mounts
        .iter()
        .any(|m| !m.v2 && m.controllers.iter().any(|c| c == "cpu"));
    let config = if v1_cpu { None } else { kernel_config() };
    // SAFETY: rlimit is plain data that getrlimit fills; geteuid cannot fail.
    let (rlimit_rtprio, euid) = unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        let limit = (libc::getrlimit(libc::RLIMIT_RTPRIO, &mut r) == 0).then_some(r.rlim_cur);
        (limit, libc::geteuid())
    };
    let number = |p: &str| read_text(Path::new(p)).and_then(|t| t.trim().parse::<i64>().ok());
    RtFacts {
        euid,
        cap_sys_nice: has_cap_sys_nice(
            &read_text(Path::new("/proc/thread-self/status")).unwrap_or_default(),
        ),
        rlimit_rtprio,
        rt_runtime_us: number("/proc/sys/kernel/sched_rt_runtime_us"),
        rt_period_us: number("/proc/sys/kernel/sched_rt_period_us").map(|p| p as u64),
        rt_group_sched: rt_group_sched_active(&mounts, &cmdline, config.as_deref()),
        cpu_group,
    }
}

/// Tries SCHED_FIFO at `priority` on a short-lived thread (so no thread of the caller changes
/// class) and explains the outcome.
pub fn check(priority: i32) -> RtDiagnosis {
    let attempt = std::thread::Builder::new()
        .name("osmeter-rt-check".into())
        .spawn(move || {
            let param = libc::sched_param {
                sched_priority: priority,
            };
            // SAFETY: changes the class of this short-lived thread only; param outlives the call.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
                return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
            }
            Ok(())
        })
        .map_err(|_| libc::EAGAIN)
        .and_then(|h| h.join().unwrap_or(Err(libc::EAGAIN)));
    diagnose(priority, attempt, read_facts())
}

#[cfg(test)]
mod tests;
