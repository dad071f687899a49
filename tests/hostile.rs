//! End-to-end: the hostile cases of issue 16, kept here so they stay fixed. Each test plays the
//! hostile user (another account, a signal, a damaged file, an absurd size) against the real binary
//! and checks that nothing outside osmeter's own files was touched, nothing was left behind, and
//! the error says what is wrong and what to do.

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The `osmeter-*` entries of `dir`.
fn scratch_dirs(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("osmeter-"))
        .map(|e| e.path())
        .collect()
}

/// Waits until `dir` holds a scratch directory and returns it.
fn wait_for_scratch(dir: &Path, child: &mut std::process::Child) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(d) = scratch_dirs(dir).pop() {
            return d;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "osmeter ended before making its scratch directory"
        );
        assert!(Instant::now() < deadline, "no scratch directory appeared");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn kill9(child: &mut std::process::Child) {
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
    child.wait().unwrap();
}

/// A parent directory like /tmp: everyone may write, sticky.
fn shared_tmp() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

#[test]
fn scratch_directory_is_private_under_umask_000() {
    let env = TestEnv::new();
    let parent = shared_tmp();
    let mut cmd = env.osmeter_std();
    cmd.args([
        "run",
        "memory.page_fault",
        "--set",
        "kind=file",
        "--no-store",
    ])
    .args(["--repeat", "200", "--min-time", "50ms", "--warmup", "0"])
    .arg("--dir")
    .arg(parent.path())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    // SAFETY: umask in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let scratch = wait_for_scratch(parent.path(), &mut child);
    let mode = std::fs::symlink_metadata(&scratch)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    kill9(&mut child);
    assert_eq!(mode, 0o700, "{} has mode {mode:o}", scratch.display());
}

/// The attack: `nobody` watches a shared directory and plants a link where root's run
/// will write its 32 MiB page-fault file. The victim must keep its bytes.
#[test]
fn a_link_planted_by_another_user_redirects_nothing() {
    if !is_root() || which("setpriv").is_none() {
        eprintln!("skipped: needs root and setpriv to play the other user");
        return;
    }
    let env = TestEnv::new();
    let parent = shared_tmp();
    let victim_dir = tempfile::tempdir().unwrap();
    let victim = victim_dir.path().join("precious");
    std::fs::write(&victim, b"precious").unwrap();
    let mut cmd = env.osmeter_std();
    cmd.args([
        "run",
        "memory.page_fault",
        "--set",
        "kind=file",
        "--no-store",
    ])
    // Long samples: the harness measures itself first, which gives the attacker its chance.
    .args(["--repeat", "3", "--min-time", "300ms", "--warmup", "0"])
    .arg("--dir")
    .arg(parent.path())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    // SAFETY: umask in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    let mut run = cmd.spawn().unwrap();
    let script = format!(
        "end=$(( $(date +%s) + 60 )); while [ $(date +%s) -lt $end ]; do \
         for d in {p}/osmeter-*/; do [ -d \"$d\" ] && ln -s {v} \"${{d}}page-fault-{pid}.dat\" 2>/dev/null; done; \
         done",
        p = parent.path().display(),
        v = victim.display(),
        pid = run.id()
    );
    let mut attacker = std::process::Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "sh",
            "-c",
        ])
        .arg(&script)
        .spawn()
        .unwrap();
    let status = run.wait().unwrap();
    kill9(&mut attacker);
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(status.success(), "{status}");
    assert!(scratch_dirs(parent.path()).is_empty());
}

#[test]
fn a_world_writable_dir_without_sticky_bit_is_refused() {
    let env = TestEnv::new();
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = env
        .osmeter()
        .args(["run", "syscall.null", "--no-store", "--dir"])
        .arg(d.path())
        .args(FAST)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&d.path().display().to_string()) && err.contains("sticky"),
        "{err}"
    );
    assert!(entries(d.path()).is_empty());
}

#[test]
fn scratch_left_by_a_killed_run_is_removed_by_the_next_one() {
    let env = TestEnv::new();
    let parent = shared_tmp();
    let mut child = env
        .osmeter_std()
        .args(["run", "syscall.null", "--no-store", "--repeat", "1000"])
        .args(["--min-time", "100ms", "--dir"])
        .arg(parent.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let left = wait_for_scratch(parent.path(), &mut child);
    kill9(&mut child);
    assert!(left.exists(), "SIGKILL cannot clean up");
    let out = env
        .osmeter()
        .args(["run", "syscall.null", "--no-store", "--dir"])
        .arg(parent.path())
        .args(FAST)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("removed {}", left.display())) && err.contains("ended without"),
        "{err}"
    );
    assert!(scratch_dirs(parent.path()).is_empty());
}
