//! End-to-end tests of `osmeter run` and `osmeter list`, good input and bad.

mod common;

use common::{entries, interrupt_after, is_root, TestEnv, FAST};
use predicates::prelude::*;

/// For tests that must fail before anything is stored: a store path no one can create, so a test that
/// reached the store by mistake fails loudly instead of writing somewhere.
fn osmeter() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("osmeter").unwrap();
    c.env(
        "OSMETER_STORE",
        "/proc/osmeter-tests-must-not-store/runs.db",
    );
    c
}

#[test]
fn run_prints_a_grouped_table_and_leaves_no_scratch() {
    let dir = tempfile::tempdir().unwrap();
    let env = TestEnv::new();
    env.osmeter()
        .args(["run", "syscall.null", "cpu.reference", "--dir"])
        .arg(dir.path())
        .args(FAST)
        .assert()
        .success()
        .stdout(predicate::str::contains("syscall.null"))
        .stdout(predicate::str::contains("cpu.reference"))
        .stdout(predicate::str::contains("Harness overhead subtracted"));
    assert!(
        entries(dir.path()).is_empty(),
        "scratch left: {:?}",
        entries(dir.path())
    );
}

#[test]
fn run_json_is_one_run_document() {
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .args(["run", "syscall", "--json"])
        .args(FAST)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(doc["schema"], "osmeter.run/1");
    assert!(doc["id"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(doc["started_at"].as_str().unwrap().ends_with('Z'));
    assert!(doc["fingerprint"].is_object());
    let ms = doc["measurements"].as_array().unwrap();
    let null = ms
        .iter()
        .find(|m| m["probe"] == "syscall.null")
        .expect("syscall.null measured");
    assert_eq!(null["status"], "ok");
    assert_eq!(null["unit"], "ns");
    // FAST: 3 samples in each of 2 rounds, each round's value stored beside them.
    assert_eq!(null["samples"].as_array().unwrap().len(), 6);
    let grouped = null["rounds"].as_array().unwrap();
    assert_eq!(grouped.len(), 2);
    assert!(grouped.iter().all(|r| r.as_array().unwrap().len() == 3));
    let rounds = null["round_values"].as_array().unwrap();
    assert_eq!(rounds.len(), 2);
    assert!(rounds.iter().all(|r| r["value"].as_f64().unwrap() > 0.0));
    assert_eq!(doc["options"]["rounds"], 2);
    assert!(doc["options"]["seed"].as_u64().is_some());
    let median = null["median"].as_f64().unwrap();
    let ci = null["ci95"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() <= median && median <= ci[1].as_f64().unwrap());
    assert!(median > 0.0);
    for key in ["cv", "counters", "interference", "params"] {
        assert!(null.get(key).is_some(), "measurement lacks {key}");
    }
    assert!(doc["overhead"]["per_sample_ns"].as_f64().unwrap() >= 0.0);
}

#[test]
fn list_shows_suites_and_probes_with_origins() {
    osmeter()
        .arg("list")
        .assert()
        .success()
        .stdout(predicate::str::contains("quick"))
        .stdout(predicate::str::contains("ousterhout89"))
        .stdout(predicate::str::contains("syscall.null"))
        .stdout(predicate::str::contains("Ousterhout 1989"));
    let out = osmeter().args(["list", "--json"]).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["probes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["id"] == "syscall.null"));
    assert_eq!(doc["suites"].as_array().unwrap().len(), 5);
}

#[test]
fn unknown_probe_names_the_closest_ids() {
    osmeter()
        .args(["run", "syscall.nul"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown probe"))
        .stderr(predicate::str::contains("syscall.null"));
}

#[test]
fn missing_dir_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    osmeter()
        .args(["run", "syscall.null", "--dir"])
        .arg(&missing)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--dir"))
        .stderr(predicate::str::contains("No such file"));
    assert!(!missing.exists());
}

/// A directory that cannot be written, even by root: a read-only tmpfs when we are root, a mode-555
/// directory otherwise.
struct ReadOnlyDir {
    dir: tempfile::TempDir,
    mounted: bool,
}

impl ReadOnlyDir {
    fn new() -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        if is_root() {
            let ok = std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", "ro,size=1m", "osmeter-test"])
                .arg(dir.path())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return None; // no mount privilege in this container: nothing to test with
            }
            Some(ReadOnlyDir { dir, mounted: true })
        } else {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
            Some(ReadOnlyDir {
                dir,
                mounted: false,
            })
        }
    }
}

impl Drop for ReadOnlyDir {
    fn drop(&mut self) {
        if self.mounted {
            let _ = std::process::Command::new("umount")
                .arg(self.dir.path())
                .status();
        } else {
            use std::os::unix::fs::PermissionsExt;
            let _ =
                std::fs::set_permissions(self.dir.path(), std::fs::Permissions::from_mode(0o755));
        }
    }
}

#[test]
fn read_only_dir_is_a_usage_error() {
    let Some(ro) = ReadOnlyDir::new() else {
        eprintln!("cannot make a read-only directory here; skipped");
        return;
    };
    osmeter()
        .args(["run", "syscall.null", "--dir"])
        .arg(ro.dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot create files there"));
    assert!(entries(ro.dir.path()).is_empty());
}

#[test]
fn nonexistent_cpu_is_a_usage_error() {
    osmeter()
        .args(["run", "syscall.null", "--cpu", "4096"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("CPU 4096 does not exist"))
        .stderr(predicate::str::contains("usable CPUs"));
}

#[test]
fn zero_repeat_is_a_usage_error() {
    osmeter()
        .args(["run", "syscall.null", "--repeat", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("at least one sample"));
}

#[test]
fn bad_min_time_is_a_usage_error() {
    osmeter()
        .args(["run", "syscall.null", "--min-time", "5 parsecs"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("time unit"));
}

#[test]
fn fifo_priority_out_of_range_is_refused() {
    osmeter()
        .args(["run", "syscall.null", "--fifo", "99"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("between 1 and 98"));
}

#[test]
fn fifo_run_as_root_or_clear_refusal_otherwise() {
    let env = TestEnv::new();
    let assert = env
        .osmeter()
        .args(["run", "syscall.null", "--fifo", "10", "--json"])
        .args(FAST)
        .assert();
    if is_root() {
        let out = assert.success().get_output().stdout.clone();
        let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(doc["options"]["fifo_priority"], 10);
    } else {
        assert
            .code(2)
            .stderr(predicate::str::contains("CAP_SYS_NICE"));
    }
}

#[test]
fn non_root_fifo_request_is_refused_with_the_reason() {
    // Drop to nobody when we are root and setpriv exists; otherwise the test above covers it.
    let Some(mut nobody) = common::osmeter_as_nobody() else {
        return;
    };
    let out = nobody
        .args([
            "run",
            "syscall.null",
            "--fifo",
            "10",
            "--dir",
            "/tmp",
            "--no-store",
        ])
        .output()
        .unwrap();
    // nobody has no CAP_SYS_NICE and inherits an RLIMIT_RTPRIO of 0: refused before anything runs.
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("uid 65534 without CAP_SYS_NICE") && stderr.contains("RLIMIT_RTPRIO is 0"),
        "{stderr}"
    );
}

#[test]
fn ctrl_c_stops_cleanly_with_what_was_measured() {
    let dir = tempfile::tempdir().unwrap();
    let env = TestEnv::new();
    // Long samples so the signal lands mid-run.
    let (out, _) = interrupt_after(
        env.osmeter_std()
            .args([
                "run",
                "syscall.null",
                "syscall.dup",
                "syscall.sched_yield",
                "cpu.reference",
            ])
            .args(["--repeat", "50", "--min-time", "50ms", "--dir"])
            .arg(dir.path()),
        std::time::Duration::from_millis(3000),
        || {},
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(130),
        "stdout {stdout} stderr {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Interrupted"), "{stdout}");
    assert!(
        entries(dir.path()).is_empty(),
        "scratch left: {:?}",
        entries(dir.path())
    );
}

#[test]
fn ctrl_c_during_two_party_probes_leaves_no_partner_behind() {
    let dir = tempfile::tempdir().unwrap();
    let env = TestEnv::new();
    // Forked partners carry the parent's command line, and with it this test's unique directory.
    let marker = dir.path().to_str().unwrap().to_string();
    let running = || {
        std::process::Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
            .unwrap_or(0)
    };
    let (out, _) = interrupt_after(
        env.osmeter_std()
            .args([
                "run",
                "ipc",
                "--repeat",
                "50",
                "--min-time",
                "50ms",
                "--no-store",
                "--dir",
            ])
            .arg(dir.path()),
        std::time::Duration::from_millis(2500),
        || assert!(running() >= 1, "osmeter should be running"),
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(running(), 0, "partner processes outlived osmeter");
    assert!(
        entries(dir.path()).is_empty(),
        "scratch left: {:?}",
        entries(dir.path())
    );
}

#[test]
fn set_overrides_a_parameter_and_rejects_unknown_keys() {
    let env = TestEnv::new();
    let mut args = vec![
        "run",
        "select.poll",
        "--set",
        "fds=100",
        "--set",
        "ready=true",
        "--json",
    ];
    args.extend_from_slice(FAST);
    let doc = env.json(&args);
    let ms = doc["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0]["params"]["fds"], 100);
    assert_eq!(ms[0]["params"]["ready"], true);
    osmeter()
        .args(["run", "syscall.null", "--set", "size=1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no selected probe has a parameter \"size\"",
        ));
}

/// Durations, tags, times, parameter overrides and closed choices are read by the argument parser:
/// a bad one is a usage error naming the option and the value, before anything runs or is stored.
#[test]
fn bad_values_are_refused_by_the_parser_naming_option_and_value() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["run", "--min-time", "5parsecs"],
            &["'--min-time <DURATION>'", "parsecs", "ns, us, ms"],
        ),
        (
            &["run", "--tag", "novalue"],
            &["'--tag <KEY=VALUE>'", "KEY=VALUE"],
        ),
        (
            &["run", "--tag", "a b=c"],
            &["'--tag <KEY=VALUE>'", "letters, digits"],
        ),
        (
            &["run", "--set", "=3"],
            &["'--set <KEY=VALUE>'", "rcvbuf=65536"],
        ),
        (
            &["runs", "--since", "soon"],
            &["'--since <DATE>'", "a time ago"],
        ),
        (
            &["compare", "--tag-a", "x", "--tag-b", "y=1"],
            &["'--tag-a <KEY=VALUE>'"],
        ),
        (
            &["trace", "--system", "--workload", "sor", "-o", "t.osmt"],
            &[
                "'--workload <NAME>'",
                "similar value exists: 'sort'",
                "compile",
            ],
        ),
        (
            &[
                "trace",
                "--system",
                "--timeout",
                "0s",
                "-o",
                "t.osmt",
                "--",
                "ls",
            ],
            &["'--timeout <DURATION>'", "positive"],
        ),
        (
            &["memsim", "--preset", "vax-780", "t.osmt"],
            &["'--preset <NAME>'", "ds5000-200", "sweep16"],
        ),
        (
            &["memsim", "--l1d", "32K:8", "t.osmt"],
            &["'--l1d <GEOMETRY>'", "three fields"],
        ),
        (
            &["memsim", "--tlb", "64:many:4K", "t.osmt"],
            &["'--tlb <GEOMETRY>'", "associativity"],
        ),
        (
            &["runs", "--store", ""],
            &["'--store <PATH|URL>'", "SQLite file or a postgres:// URL"],
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in cases {
        let out = osmeter()
            .current_dir(dir.path())
            .args(*args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for s in *says {
            assert!(err.contains(s), "{args:?} does not say {s:?}: {err}");
        }
        assert!(entries(dir.path()).is_empty(), "{args:?} left files");
    }
}

#[test]
fn out_of_range_numbers_are_refused_by_the_parser_naming_the_option() {
    for (args, option, says) in [
        (
            &["compare", "a", "b", "--threshold", "150"][..],
            "--threshold",
            "between 0 and 100",
        ),
        (
            &["history", "syscall.null", "--fail-if-slower", "250"][..],
            "--fail-if-slower",
            "between 0 and 100",
        ),
        (
            &["memsim", "none.trace", "--threads", "0"][..],
            "--threads",
            "at least 1 thread",
        ),
    ] {
        osmeter()
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(option).and(predicate::str::contains(says)));
    }
}
