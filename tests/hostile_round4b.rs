//! Issue 44's hostile cases, items 5 to 8 (tests/hostile_round4.rs holds the others): stores from
//! elsewhere, threads that cannot start, resource limits named right, and a host name that is not
//! UTF-8. Each test runs the real binary and is named after what it proves. The cases of another
//! user run osmeter as nobody (root and setpriv needed, else they say they are skipped); resource
//! limits are set on the osmeter process alone, as `ulimit` in its shell would.

mod common;

use common::procs;
use common::TestEnv;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn all_output(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// Longer than any case here takes on the slowest machine: only a hang reaches it.
const HANG: Duration = Duration::from_secs(240);

/// Runs `cmd` to its end, or kills it at [`HANG`] and fails: the cases here once never ended.
fn output_or_hang(cmd: &mut Command, what: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ended = procs::wait_until(HANG, || matches!(child.try_wait(), Ok(Some(_))));
    if !ended {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "{what}: still running after {HANG:?}; it printed:\n{}",
            all_output(&out)
        );
    }
    child.wait_with_output().unwrap()
}

// ---- item 8: a host name that is not UTF-8 -----------------------------------------------------

#[test]
fn a_host_name_that_is_not_utf8_is_kept_escaped() {
    let env = TestEnv::new();
    if !common::is_root() || common::which("unshare").is_none() {
        eprintln!("skipped: needs root and unshare (the fingerprint's own test reads such a name)");
        return;
    }
    // A UTS namespace of its own, so the machine's name stays; the kernel takes any bytes.
    let osmeter = assert_cmd::cargo::cargo_bin("osmeter");
    let mut cmd = Command::new("unshare");
    cmd.env("OSMETER_STORE", env.store())
        .args(["--uts", "sh", "-c"])
        .arg("printf 'a\\377b' > /proc/sys/kernel/hostname && exec \"$@\"")
        .arg("sh")
        .arg(&osmeter)
        .args(["run", "syscall.null"])
        .args(common::FAST);
    let out = output_or_hang(&mut cmd, "unshare --uts");
    if !out.status.success() && !text(&out.stderr).contains("osmeter") {
        eprintln!(
            "skipped: this kernel or container refuses a UTS namespace ({}); the fingerprint's \
             own test reads such a name",
            text(&out.stderr).trim()
        );
        return;
    }
    assert!(out.status.success(), "{}", all_output(&out));
    let runs = env.json(&["runs", "--json"]);
    assert_eq!(runs[0]["host"], "a\\xffb", "{runs}");
    let shown = env
        .osmeter()
        .args(["runs", "--host", "a\\xffb"])
        .output()
        .unwrap();
    assert!(
        text(&shown.stdout).contains("a\\xffb"),
        "{}",
        text(&shown.stdout)
    );
}
