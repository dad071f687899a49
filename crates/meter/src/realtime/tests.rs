use super::*;

fn facts() -> RtFacts {
    RtFacts {
        euid: 0,
        cap_sys_nice: true,
        rlimit_rtprio: Some(0),
        rt_runtime_us: Some(950_000),
        rt_period_us: Some(1_000_000),
        rt_group_sched: Some(true),
        cpu_group: CpuGroup::Root,
    }
}

fn v1(runtime: i64) -> CpuGroup {
    CpuGroup::V1 {
        group: "/osm".into(),
        runtime_us: Some(runtime),
        period_us: Some(1_000_000),
        file: PathBuf::from("/sys/fs/cgroup/cpu/osm/cpu.rt_runtime_us"),
    }
}

#[test]
fn allowed_states_the_budget() {
    let d = diagnose(90, Ok(()), facts());
    assert!(d.allowed);
    assert_eq!(d.cause, RtCause::Allowed);
    assert!(d.remedy.is_empty());
    assert!(
        d.budget.contains("950000 us of every 1000000 us"),
        "{}",
        d.budget
    );
    let off = diagnose(
        90,
        Ok(()),
        RtFacts {
            rt_runtime_us: Some(-1),
            ..facts()
        },
    );
    assert!(off.budget.contains("throttling is off"), "{}", off.budget);
    let group = diagnose(
        90,
        Ok(()),
        RtFacts {
            cpu_group: v1(10_000),
            ..facts()
        },
    );
    assert!(
        group
            .budget
            .contains("cgroup /osm may use 10000 us of every 1000000 us"),
        "{}",
        group.budget
    );
}

#[test]
fn no_privilege_names_the_user_and_the_limit() {
    let d = diagnose(
        90,
        Err(libc::EPERM),
        RtFacts {
            euid: 65534,
            cap_sys_nice: false,
            ..facts()
        },
    );
    assert_eq!(d.cause, RtCause::NoPrivilege);
    assert!(
        d.reason.contains("uid 65534 without CAP_SYS_NICE"),
        "{}",
        d.reason
    );
    assert!(d.reason.contains("RLIMIT_RTPRIO is 0"));
    assert!(d.remedy.contains("ulimit -r 90"));
    // Root whose capability was dropped is told so, not told to become root.
    let root = diagnose(
        90,
        Err(libc::EPERM),
        RtFacts {
            cap_sys_nice: false,
            ..facts()
        },
    );
    assert_eq!(root.cause, RtCause::NoPrivilege);
    assert!(root
        .reason
        .contains("running as root, but without CAP_SYS_NICE"));
    assert!(root.remedy.contains("--cap-add SYS_NICE"));
}

#[test]
fn a_low_rlimit_is_named_with_both_numbers() {
    let d = diagnose(
        90,
        Err(libc::EPERM),
        RtFacts {
            euid: 1000,
            cap_sys_nice: false,
            rlimit_rtprio: Some(10),
            ..facts()
        },
    );
    assert_eq!(d.cause, RtCause::RlimitRtprio);
    assert!(
        d.reason.contains("RLIMIT_RTPRIO is 10, below 90"),
        "{}",
        d.reason
    );
    assert!(d.remedy.contains("at most 10"));
}

#[test]
fn a_v1_group_without_budget_is_named_with_its_file() {
    let d = diagnose(
        90,
        Err(libc::EPERM),
        RtFacts {
            cpu_group: v1(0),
            ..facts()
        },
    );
    assert_eq!(d.cause, RtCause::CgroupNoBudget);
    assert!(d.reason.contains("even with CAP_SYS_NICE"));
    assert!(
        d.reason
            .contains("/sys/fs/cgroup/cpu/osm/cpu.rt_runtime_us is 0"),
        "{}",
        d.reason
    );
    assert!(
        d.remedy
            .contains("echo $$ > /sys/fs/cgroup/cpu/cgroup.procs"),
        "{}",
        d.remedy
    );
    // The same group with the limit in reach for a user within RLIMIT_RTPRIO.
    let user = diagnose(
        5,
        Err(libc::EPERM),
        RtFacts {
            euid: 1000,
            cap_sys_nice: false,
            rlimit_rtprio: Some(10),
            cpu_group: v1(0),
            ..facts()
        },
    );
    assert_eq!(user.cause, RtCause::CgroupNoBudget);
    assert!(user.reason.contains("even within RLIMIT_RTPRIO"));
}

#[test]
fn a_v2_group_with_the_cpu_controller_is_named() {
    let d = diagnose(
        50,
        Err(libc::EPERM),
        RtFacts {
            cpu_group: CpuGroup::V2 {
                group: "/user.slice/osm".into(),
            },
            ..facts()
        },
    );
    assert_eq!(d.cause, RtCause::CgroupNoBudget);
    assert!(d.reason.contains("cgroup v2 group /user.slice/osm"));
    assert!(d.remedy.contains("rt_group_sched=0"));
}

#[test]
fn a_zero_global_runtime_is_named_in_either_root() {
    let v1_root = diagnose(
        90,
        Err(libc::EPERM),
        RtFacts {
            rt_runtime_us: Some(0),
            cpu_group: CpuGroup::V1 {
                group: "/".into(),
                runtime_us: Some(0),
                period_us: Some(1_000_000),
                file: PathBuf::from("/sys/fs/cgroup/cpu/cpu.rt_runtime_us"),
            },
            ..facts()
        },
    );
    assert_eq!(v1_root.cause, RtCause::GlobalRuntimeZero);
    let d = diagnose(
        90,
        Err(libc::EPERM),
        RtFacts {
            rt_runtime_us: Some(0),
            ..facts()
        },
    );
    assert_eq!(d.cause, RtCause::GlobalRuntimeZero);
    assert!(d.reason.contains("sched_rt_runtime_us is 0"));
    assert!(d
        .remedy
        .contains("sysctl kernel.sched_rt_runtime_us=950000"));
}

#[test]
fn budgets_do_not_refuse_without_group_scheduling_or_with_throttling_off() {
    for f in [
        RtFacts {
            rt_group_sched: Some(false),
            cpu_group: v1(0),
            ..facts()
        },
        RtFacts {
            rt_runtime_us: Some(-1),
            cpu_group: v1(0),
            ..facts()
        },
        RtFacts {
            rt_group_sched: Some(false),
            rt_runtime_us: Some(0),
            ..facts()
        },
    ] {
        let d = diagnose(90, Err(libc::EPERM), f);
        assert_eq!(d.cause, RtCause::Unexplained, "{}", d.reason);
        assert!(d.remedy.contains("security module"));
    }
}

#[test]
fn other_errors_are_reported_as_such() {
    let d = diagnose(90, Err(libc::EINVAL), facts());
    assert_eq!(d.cause, RtCause::OtherError);
    assert!(!d.allowed);
    assert!(d.message().contains("Invalid argument"));
}

const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

#[test]
fn cgroup_mounts_parse() {
    let m = parse_cgroup_mounts(MOUNTINFO);
    assert_eq!(m.len(), 3);
    assert_eq!(m[0].point, PathBuf::from("/sys/fs/cgroup/cpu"));
    assert!(!m[0].v2 && m[0].controllers.contains(&"cpu".to_string()));
    assert!(m[2].v2);
}

fn reader(files: &'static [(&'static str, &'static str)]) -> impl Fn(&Path) -> Option<String> {
    move |p: &Path| {
        files
            .iter()
            .find(|(f, _)| Path::new(f) == p)
            .map(|(_, t)| t.to_string())
    }
}

#[test]
fn v1_groups_are_found_through_the_cpu_line() {
    let mounts = parse_cgroup_mounts(MOUNTINFO);
    let none = reader(&[]);
    assert_eq!(
        find_cpu_group("2:cpuacct:/\n1:cpu:/\n0::/\n", &mounts, &none),
        CpuGroup::V1 {
            group: "/".into(),
            runtime_us: None,
            period_us: None,
            file: PathBuf::from("/sys/fs/cgroup/cpu/cpu.rt_runtime_us"),
        }
    );
    let files = reader(&[
        ("/sys/fs/cgroup/cpu/a/b/cpu.rt_runtime_us", "0\n"),
        ("/sys/fs/cgroup/cpu/a/b/cpu.rt_period_us", "1000000\n"),
    ]);
    let g = find_cpu_group("1:cpu,cpuacct:/a/b\n0::/\n", &mounts, &files);
    assert_eq!(
        g,
        CpuGroup::V1 {
            group: "/a/b".into(),
            runtime_us: Some(0),
            period_us: Some(1_000_000),
            file: PathBuf::from("/sys/fs/cgroup/cpu/a/b/cpu.rt_runtime_us"),
        }
    );
    assert_eq!(
        v1_root_of(
            Path::new("/sys/fs/cgroup/cpu/a/b/cpu.rt_runtime_us"),
            "/a/b"
        ),
        PathBuf::from("/sys/fs/cgroup/cpu")
    );
}

#[test]
fn v2_groups_are_the_nearest_with_the_cpu_controller() {
    let mounts = parse_cgroup_mounts("40 1 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    let files = reader(&[
        ("/sys/fs/cgroup/a/b/c/cgroup.controllers", "memory pids\n"),
        ("/sys/fs/cgroup/a/b/cpu.weight", "100\n"),
        ("/sys/fs/cgroup/a/cpu.weight", "100\n"),
        ("/sys/fs/cgroup/x/memory.max", "max\n"),
    ]);
    assert_eq!(
        find_cpu_group("0::/a/b/c\n", &mounts, &files),
        CpuGroup::V2 {
            group: "/a/b".into()
        }
    );
    assert_eq!(find_cpu_group("0::/x\n", &mounts, &files), CpuGroup::Root);
    assert_eq!(find_cpu_group("0::/\n", &mounts, &files), CpuGroup::Root);
    // A container whose mount shows only its own part of the hierarchy.
    let inner = parse_cgroup_mounts("40 1 0:38 /a /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    let files = reader(&[("/sys/fs/cgroup/b/cpu.weight", "100\n")]);
    assert_eq!(
        find_cpu_group("0::/a/b\n", &inner, &files),
        CpuGroup::V2 {
            group: "/a/b".into()
        }
    );
    // A cgroup namespace: "/" here is a group of the host with the cpu controller.
    let files = reader(&[("/sys/fs/cgroup/cpu.weight", "100\n")]);
    assert_eq!(
        find_cpu_group("0::/\n", &mounts, &files),
        CpuGroup::V2 { group: "/".into() }
    );
}

#[test]
fn group_scheduling_is_read_from_the_kernel() {
    let v2 = parse_cgroup_mounts("40 1 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    let on = "CONFIG_CGROUP_SCHED=y\nCONFIG_RT_GROUP_SCHED=y\n";
    let default_off = "CONFIG_RT_GROUP_SCHED=y\nCONFIG_RT_GROUP_SCHED_DEFAULT_DISABLED=y\n";
    let off = "# CONFIG_RT_GROUP_SCHED is not set\n";
    assert_eq!(rt_group_sched_active(&v2, "quiet", Some(on)), Some(true));
    assert_eq!(
        rt_group_sched_active(&v2, "rt_group_sched=0", Some(on)),
        Some(false)
    );
    assert_eq!(
        rt_group_sched_active(&v2, "quiet", Some(default_off)),
        Some(false)
    );
    assert_eq!(
        rt_group_sched_active(&v2, "rt_group_sched=1", Some(default_off)),
        Some(true)
    );
    assert_eq!(
        rt_group_sched_active(&v2, "rt_group_sched=1", Some(off)),
        Some(false)
    );
    assert_eq!(rt_group_sched_active(&v2, "quiet", None), None);
}

#[test]
fn capabilities_are_read_from_status() {
    assert!(has_cap_sys_nice("Name:\tx\nCapEff:\t000001ffffffffff\n"));
    assert!(!has_cap_sys_nice("CapEff:\t0000000000000000\n"));
    assert!(!has_cap_sys_nice("CapEff:\t000001ffff7fffff\n"));
}

#[test]
fn the_live_check_gives_a_reason_either_way() {
    let d = check(1);
    assert!(!d.reason.is_empty());
    assert!(!d.budget.is_empty());
    if d.allowed {
        assert!(d.remedy.is_empty());
    } else {
        assert!(!d.remedy.is_empty(), "{}", d.reason);
    }
}
