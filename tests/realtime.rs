//! Why real-time scheduling is refused, end to end, in set-ups made for the test: a cgroup v1 cpu
//! group without (then with) a real-time budget that only the tested process joins, root without
//! CAP_SYS_NICE, and an unprivileged user with a low RLIMIT_RTPRIO. Nothing global changes: the
//! group is a new leaf that is removed afterwards, and limits and capabilities are the child's.

mod common;
use common::TestEnv;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The cgroup v1 cpu hierarchy, when it is mounted with the real-time files.
fn v1_cpu_mount() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let mut r = right.split_whitespace();
        let (fstype, _, opts) = (r.next()?, r.next()?, r.next()?);
        let point = PathBuf::from(left.split_whitespace().nth(4)?);
        (fstype == "cgroup"
            && opts.split(',').any(|o| o == "cpu")
            && point.join("cpu.rt_runtime_us").exists())
        .then_some(point)
    })
}

/// A leaf cpu group of this test, removed on drop (its processes have exited by then).
struct Group {
    dir: PathBuf,
    name: String,
}

impl Group {
    fn new(mount: &Path, tag: &str) -> Group {
        let name = format!("osmeter-rt-test-{}-{tag}", std::process::id());
        let dir = mount.join(&name);
        std::fs::create_dir(&dir).unwrap();
        Group {
            dir,
            name: format!("/{name}"),
        }
    }

    /// Makes `cmd` join this group between fork and exec, so only the tested process is in it.
    fn join(&self, cmd: &mut std::process::Command) {
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(self.dir.join("cgroup.procs"))
            .unwrap();
        // SAFETY: the closure only calls write(2) on a descriptor opened above and moved into it.
        unsafe {
            cmd.pre_exec(move || {
                if libc::write(procs.as_raw_fd(), b"0\n".as_ptr().cast(), 2) != 2 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("could not remove the test cgroup {}", self.dir.display());
    }
}

fn info_realtime(cmd: &mut std::process::Command) -> (bool, String) {
    let out = cmd.args(["info", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = doc["features"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "realtime_scheduling")
        .unwrap()
        .clone();
    (
        f["available"].as_bool().unwrap(),
        f["detail"].as_str().unwrap().to_string(),
    )
}

/// Runs a short latency measurement of the high and normal classes; returns why high was skipped.
fn latency_high_skip_reason(cmd: &mut std::process::Command) -> String {
    let out = cmd
        .args([
            "latency",
            "--classes",
            "high,normal",
            "--paths",
            "timer",
            "--duration",
            "200ms",
            "--no-store",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let skipped = doc["sections"]["latency"]["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0]["class"], "high");
    skipped[0]["reason"].as_str().unwrap().to_string()
}

fn osmeter(env: &TestEnv) -> std::process::Command {
    env.osmeter_std()
}

#[test]
fn root_in_a_cgroup_without_real_time_budget_is_told_so_not_to_become_root() {
    if !is_root() {
        eprintln!("skipped: needs root to make a cgroup");
        return;
    }
    let Some(mount) = v1_cpu_mount() else {
        eprintln!("skipped: no cgroup v1 cpu hierarchy with real-time group scheduling here");
        return;
    };
    let env = TestEnv::new();
    let group = Group::new(&mount, "none");
    let budget = std::fs::read_to_string(group.dir.join("cpu.rt_runtime_us")).unwrap();
    assert_eq!(
        budget.trim(),
        "0",
        "a new group should start without budget"
    );

    let mut cmd = osmeter(&env);
    group.join(&mut cmd);
    let (ok, detail) = info_realtime(&mut cmd);
    assert!(!ok, "{detail}");
    let file = group.dir.join("cpu.rt_runtime_us");
    assert!(
        detail.contains(&format!(
            "cpu cgroup {} has no real-time budget",
            group.name
        )) && detail.contains(&format!("{} is 0", file.display()))
            && detail.contains("even with CAP_SYS_NICE"),
        "{detail}"
    );
    assert!(!detail.contains("needs root"), "{detail}");

    let mut cmd = osmeter(&env);
    group.join(&mut cmd);
    let why = latency_high_skip_reason(&mut cmd);
    assert!(why.contains("has no real-time budget"), "{why}");
    assert!(why.contains("echo 100000 >"), "{why}");

    // With a budget the same group is allowed, and the budget is stated.
    std::fs::write(&file, "10000").unwrap();
    let mut cmd = osmeter(&env);
    group.join(&mut cmd);
    let (ok, detail) = info_realtime(&mut cmd);
    assert!(ok, "{detail}");
    assert!(
        detail.contains(&format!(
            "the cpu cgroup {} may use 10000 us of every",
            group.name
        )),
        "{detail}"
    );
}

#[test]
fn root_without_cap_sys_nice_is_told_which_capability_is_missing() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let Some(setpriv) = common::which("setpriv") else {
        eprintln!("skipped: setpriv (util-linux) is not installed");
        return;
    };
    let env = TestEnv::new();
    let dropped = |env: &TestEnv| {
        let mut cmd = std::process::Command::new(&setpriv);
        cmd.args(["--inh-caps=-sys_nice", "--bounding-set=-sys_nice"])
            .arg(assert_cmd::cargo::cargo_bin("osmeter"))
            .env("OSMETER_STORE", env.store());
        cmd
    };
    let (ok, detail) = info_realtime(&mut dropped(&env));
    assert!(!ok, "{detail}");
    assert!(
        detail.contains("running as root, but without CAP_SYS_NICE")
            && detail.contains("--cap-add SYS_NICE"),
        "{detail}"
    );
    let why = latency_high_skip_reason(&mut dropped(&env));
    assert!(why.contains("without CAP_SYS_NICE"), "{why}");
}

#[test]
fn a_user_with_a_low_rtprio_limit_is_told_both_numbers() {
    if !is_root() {
        eprintln!("skipped: needs root to switch to another user");
        return;
    }
    let Some(setpriv) = common::which("setpriv") else {
        eprintln!("skipped: setpriv (util-linux) is not installed");
        return;
    };
    // Raising the hard limit needs CAP_SYS_RESOURCE, which some containers' root lacks.
    // SAFETY: rlimit is plain data that getrlimit fills.
    let hard = unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_RTPRIO, &mut r);
        r.rlim_max
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let caps = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .unwrap_or(0);
    const CAP_SYS_RESOURCE: u32 = 24;
    if hard < 10 && caps & (1 << CAP_SYS_RESOURCE) == 0 {
        eprintln!("skipped: RLIMIT_RTPRIO cannot be raised to 10 here (no CAP_SYS_RESOURCE)");
        return;
    }
    // nobody must be able to run the binary: a copy in a world-readable directory.
    let dir = tempfile::Builder::new()
        .prefix("osmeter-rt-test-")
        .tempdir()
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("osmeter");
    std::fs::copy(assert_cmd::cargo::cargo_bin("osmeter"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = std::process::Command::new(setpriv);
    cmd.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
    ])
    .arg(&bin)
    .env("TMPDIR", "/tmp");
    // SAFETY: setrlimit on the child between fork and exec; the limit is inherited across exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 10,
                rlim_max: 10,
            };
            if libc::setrlimit(libc::RLIMIT_RTPRIO, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd
        .args([
            "latency",
            "--classes",
            "high,medium,normal",
            "--prio-high",
            "50",
            "--prio-medium",
            "5",
            "--paths",
            "timer",
            "--duration",
            "200ms",
            "--no-store",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let skipped = doc["sections"]["latency"]["skipped"].as_array().unwrap();
    // Priority 5 is within the limit and runs; 50 is not.
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    let why = skipped[0]["reason"].as_str().unwrap();
    assert!(
        why.contains("RLIMIT_RTPRIO is 10, below 50") && why.contains("at most 10"),
        "{why}"
    );
}
