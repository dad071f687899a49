//! File system structure end to end: app.andrew and the file probes on one ext4 image mounted by the
//! kernel and served by fuse2fs (real mkfs, loop mounts, FUSE), side by side in compare and the
//! report, and nothing mounted, running or attached afterwards, however osmeter ended.

mod common;

use common::apps::{assert_nothing_left, figure, fuse2fs_on, mounts_below, run_of, software};
use common::{is_root, which, TestEnv};
use osmeter::results::model::Status;
use predicates::prelude::*;
use std::path::Path;
use std::time::{Duration, Instant};

const ONE_SHORT_ROUND: &[&str] = &common::one_round("1ms");

fn root_or_skip() -> bool {
    if !is_root() {
        eprintln!("skipped: mounting images needs root");
    }
    is_root()
}

#[test]
fn andrew_runs_every_phase_on_ext4_and_on_fuse_and_unmounts() {
    if !root_or_skip() {
        return;
    }
    let env = TestEnv::new();
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().to_string_lossy().into_owned();
    let mut args = vec![
        "run",
        "app.andrew",
        "--set",
        "sources=2",
        "--json",
        "--no-store",
        "--dir",
        &dir,
    ];
    args.extend_from_slice(ONE_SHORT_ROUND);
    let run = run_of(env.json(&args));
    // Six figures (five phases and the total) on each of three file systems.
    assert_eq!(run.measurements.len(), 18);
    for m in &run.measurements {
        assert_eq!(m.status, Status::Ok, "{m:?}");
    }
    let at = |fs: &str, phase: &str| figure(&run, "app.andrew", &[("fs", fs), ("phase", phase)]);
    for fs in ["dir", "ext4", "fuse"] {
        let c = at(fs, "compile");
        // Three gcc runs (two sources, the link) are the workload's: far more CPU time than the
        // measuring process alone spends, and page faults by the thousand.
        assert!(software(c, "task-clock") > 10e6, "{fs}: {:?}", c.counters);
        assert!(
            software(c, "page-faults") > 1000.0,
            "{fs}: {:?}",
            c.counters
        );
        assert!(
            c.warnings
                .iter()
                .any(|w| w.contains("gcc") && w.contains("-O2")),
            "{:?}",
            c.warnings
        );
    }
    let says = |fs: &str, what: &str| at(fs, "compile").warnings.iter().any(|w| w.contains(what));
    assert!(says("fuse", "fuse2fs") && says("ext4", "in-kernel ext4"));
    // Under FUSE every lookup is a round trip to the fuse2fs server in the workload's cgroup:
    // stat-ing the copy switches context far more often than with the kernel's ext4.
    let switches = |fs: &str| software(at(fs, "stat"), "context-switches");
    assert!(
        switches("fuse") > switches("ext4") + 10.0,
        "fuse {} ext4 {}",
        switches("fuse"),
        switches("ext4")
    );
    assert_nothing_left(scratch.path());
}

#[test]
fn ctrl_c_during_a_fuse_compile_unmounts_and_removes_everything() {
    if !root_or_skip() {
        return;
    }
    let env = TestEnv::new();
    let scratch = tempfile::tempdir().unwrap();
    let child = env
        .osmeter_std()
        .args([
            "run",
            "app.andrew",
            "--set",
            "fs=fuse",
            "--set",
            "phase=compile",
        ])
        .args([
            "--set",
            "sources=40",
            "--rounds",
            "3",
            "--no-store",
            "--dir",
        ])
        .arg(scratch.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the image is mounted and gcc is at work, then interrupt.
    let t = Instant::now();
    while mounts_below(scratch.path()).is_empty() && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !mounts_below(scratch.path()).is_empty(),
        "the image was never mounted"
    );
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_nothing_left(scratch.path());
}

/// `osmeter run TARGETS --fs KIND` in `dir`, stored in the test's store; returns the run.
fn run_on(env: &TestEnv, dir: &Path, kind: &str, targets: &[&str]) -> osmeter::results::model::Run {
    let dir = dir.to_string_lossy().into_owned();
    let mut args = vec!["run"];
    args.extend_from_slice(targets);
    args.extend_from_slice(&["--fs", kind, "--dir", &dir, "--json"]);
    args.extend_from_slice(ONE_SHORT_ROUND);
    run_of(env.json(&args))
}

#[test]
fn file_probes_and_andrew_run_on_ext4_and_on_fuse_and_are_set_side_by_side() {
    if !root_or_skip() {
        return;
    }
    let env = TestEnv::new();
    let scratch = tempfile::tempdir().unwrap();
    let targets = [
        "fs.metadata",
        "fs.open_close",
        "app.andrew",
        "--set",
        "sources=2",
        "--set",
        "depth=4",
    ];
    let ext4 = run_on(&env, scratch.path(), "ext4", &targets);
    assert_nothing_left(scratch.path());
    let fuse = run_on(&env, scratch.path(), "fuse", &targets);
    assert_nothing_left(scratch.path());

    for (run, kind, fs_type) in [(&ext4, "ext4", "ext4"), (&fuse, "fuse", "fuse")] {
        assert_eq!(run.tags.get("fs").map(String::as_str), Some(kind));
        let shown = run.options.scratch_fs.clone().unwrap_or_default();
        assert!(shown.starts_with(fs_type), "{kind}: scratch_fs {shown}");
        // Andrew runs once per phase, in the run's directory on that file system.
        let andrew: Vec<_> = run
            .measurements
            .iter()
            .filter(|m| m.probe == "app.andrew")
            .collect();
        assert_eq!(andrew.len(), 6, "{kind}");
        for m in &run.measurements {
            assert_eq!(m.status, Status::Ok, "{kind}: {m:?}");
        }
    }
    // The FUSE server is counted with the workload: its lookups are context switches of the
    // workload's own, far more than the kernel's ext4 needs.
    let stat = |run| {
        software(
            figure(run, "app.andrew", &[("phase", "stat")]),
            "context-switches",
        )
    };
    assert!(
        stat(&fuse) > stat(&ext4) + 10.0,
        "fuse {} ext4 {}",
        stat(&fuse),
        stat(&ext4)
    );
    let fuse_stat = figure(&fuse, "app.andrew", &[("phase", "stat")]);
    assert!(
        fuse_stat.warnings.iter().any(|w| w.contains("fuse2fs")),
        "{:?}",
        fuse_stat.warnings
    );

    // compare matches the same figures of the two runs, and names the file system that differs.
    let out = env
        .osmeter()
        .args(["compare", &ext4.id, &fuse.id, "--all", "--force"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for row in [
        "fs.metadata",
        "fs.open_close depth=4",
        "app.andrew fs=dir phase=stat",
    ] {
        assert!(text.contains(row), "compare lacks {row}: {text}");
    }
    assert!(text.contains("fuse.ext4"), "{text}");

    // The report shows both runs by their fs tag, with their figures side by side.
    let page = env.dir.path().join("fs.html");
    env.osmeter()
        .args(["report", &ext4.id, &fuse.id, "-o"])
        .arg(&page)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    for needle in [
        "R1 fs=ext4",
        "R2 fs=fuse",
        "app.andrew",
        "fs.metadata",
        "fuse.ext4",
    ] {
        assert!(html.contains(needle), "the report lacks {needle}");
    }
}

/// Starts `osmeter run ... --fs KIND --dir DIR`, waits until its image is mounted and measuring is
/// under way, and returns the child.
fn start_and_wait_for_mount(env: &TestEnv, dir: &Path, kind: &str) -> std::process::Child {
    let child = env
        .osmeter_std()
        .args([
            "run",
            "fs",
            "--fs",
            kind,
            "--rounds",
            "20",
            "--no-store",
            "--dir",
        ])
        .arg(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while mounts_below(dir).is_empty() && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!mounts_below(dir).is_empty(), "the image was never mounted");
    std::thread::sleep(Duration::from_millis(1500));
    child
}

fn signal(child: &std::process::Child, sig: libc::c_int) {
    // SAFETY: signalling the osmeter this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
}

#[test]
fn sigterm_and_ctrl_c_unmount_stop_fuse2fs_and_free_the_loop_device() {
    if !root_or_skip() {
        return;
    }
    let env = TestEnv::new();
    for (kind, sig) in [
        ("fuse", libc::SIGTERM),
        ("ext4", libc::SIGTERM),
        ("fuse", libc::SIGINT),
    ] {
        let scratch = tempfile::tempdir().unwrap();
        let child = start_and_wait_for_mount(&env, scratch.path(), kind);
        if kind == "fuse" {
            assert!(!fuse2fs_on(scratch.path()).is_empty());
        } else {
            assert!(!common::apps::loops_on(scratch.path()).is_empty());
        }
        signal(&child, sig);
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(130),
            "{kind} {sig}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_nothing_left(scratch.path());
    }
}

#[test]
fn a_run_killed_outright_leaves_its_mount_to_the_next_run_which_detaches_it() {
    if !root_or_skip() {
        return;
    }
    let env = TestEnv::new();
    let scratch = tempfile::tempdir().unwrap();
    let mut child = start_and_wait_for_mount(&env, scratch.path(), "fuse");
    signal(&child, libc::SIGKILL);
    child.wait().unwrap();
    // The workers end with their parent; the mount and its server stay until someone detaches it.
    assert!(!mounts_below(scratch.path()).is_empty());
    let out = env
        .osmeter()
        .args(["run", "fs.metadata", "--no-store", "--dir"])
        .arg(scratch.path())
        .args(ONE_SHORT_ROUND)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("unmounted") && said.contains("removed"),
        "{said}"
    );
    assert_nothing_left(scratch.path());
}

#[test]
fn fs_needs_root_and_a_known_kind() {
    let env = TestEnv::new();
    env.osmeter()
        .args(["run", "fs.metadata", "--fs", "nfs", "--no-store"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("ext4").and(predicates::str::contains("fuse")));
    if !is_root() || which("setpriv").is_none() {
        eprintln!("skipped: needs root and setpriv to run as another user");
        return;
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(assert_cmd::cargo::cargo_bin("osmeter"))
        .args(["run", "fs.metadata", "--fs", "fuse", "--no-store"])
        .env("OSMETER_STORE", env.store())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("--fs fuse") && said.contains("needs root"),
        "{said}"
    );
}
