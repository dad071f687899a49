//! `osmeter ab` end to end: both sides measured in pairs under their set-ups or wrappers, kept as
//! an ab run; contradictory options refused before anything runs; a set-up that fails stops
//! before measuring with its output shown; every set-up torn down and every named kernel setting
//! put back, whether ab ends on its own or by a signal.

mod common;

use common::procs::{signal, wait_until};
use common::{is_root, TestEnv, AB_FAST};
use predicates::prelude::*;
use std::time::Duration;

#[test]
fn contradictory_or_missing_options_are_usage_errors() {
    let env = TestEnv::new();
    let cases: &[(&[&str], &str)] = &[
        (&["ab"], "ab needs the probes"),
        (
            &["ab", "syscall.null", "--a-setup", "true"],
            "--a-setup without --b-setup",
        ),
        (
            &["ab", "syscall.null", "--b-teardown", "true"],
            "--b-teardown without --b-setup",
        ),
        (
            &[
                "ab",
                "syscall.null",
                "--duet",
                "--a-setup",
                "true",
                "--b-setup",
                "true",
            ],
            "--duet with --a-setup",
        ),
        (
            &[
                "ab",
                "syscall.null",
                "--lockstep",
                "--b-setup",
                "true",
                "--a-setup",
                "true",
            ],
            "--lockstep with --a-setup",
        ),
        (
            &["ab", "syscall.null", "--lockstep", "--duet"],
            "cannot be used with",
        ),
        (
            &["ab", "syscall.null", "--interleaved", "--lockstep"],
            "cannot be used with",
        ),
        (
            &["ab", "syscall.null", "--rounds", "3"],
            "--rounds does not apply to ab",
        ),
        (
            &["ab", "syscall.null", "--max-pairs", "1"],
            "at least 2 pairs",
        ),
        (&["ab", "no.such_probe"], "no.such_probe"),
    ];
    for (args, says) in cases {
        env.osmeter()
            .args(*args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(*says));
    }
    assert!(!env.store().exists(), "nothing was kept");
}

#[test]
fn a_failing_set_up_stops_before_measuring_and_shows_its_output() {
    let env = TestEnv::new();
    env.osmeter()
        .args(AB_FAST)
        .args([
            "syscall.null",
            "--max-pairs",
            "2",
            "--a-setup",
            "true",
            "--b-setup",
        ])
        .arg("echo the knob is missing >&2; exit 7")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("B's set-up"))
        .stderr(predicate::str::contains("exit 7"))
        .stderr(predicate::str::contains("the knob is missing"));
    let runs = env.json(&["runs", "--json"]);
    assert_eq!(runs.as_array().map_or(0, |r| r.len()), 0);
}

/// Set-ups and tear-downs that only log A+, A-, B+ and B- to a file: (the file, the commands).
fn logged_set_ups(env: &TestEnv) -> (std::path::PathBuf, [String; 4]) {
    let log = env.dir.path().join("sides.log");
    let step = |what: &str| format!("echo {what} >> {}", log.display());
    let commands = ["A+", "A-", "B+", "B-"].map(step);
    (log, commands)
}

#[test]
fn sides_alternate_in_balanced_pairs_each_under_its_set_up_and_the_run_is_kept() {
    let env = TestEnv::new();
    let (log, [a_up, a_down, b_up, b_down]) = logged_set_ups(&env);
    let run = env.json(
        &[
            AB_FAST,
            &["syscall.null", "--json", "--max-pairs", "3"],
            &["--a-setup", &a_up, "--a-teardown", &a_down],
            &["--b-setup", &b_up, "--b-teardown", &b_down],
        ]
        .concat(),
    );
    let doc = &run["sections"]["ab"];
    assert_eq!(doc["pairs"], 3);
    assert_eq!(doc["mode"], "interleaved");
    let figure = &doc["figures"][0];
    assert_eq!(figure["key"], "syscall.null");
    assert_eq!(figure["ratios"].as_array().unwrap().len(), 3);
    assert_eq!(figure["a_rounds"].as_array().unwrap().len(), 3);
    assert!(figure["paired"]["ci95"][0].as_f64().unwrap() > 0.0);
    // The yardstick in the first pair and every fourth after: once in three pairs.
    assert_eq!(doc["yardstick_a"]["readings"].as_array().unwrap().len(), 1);
    // A B, then B A, then A B: every set-up followed by its own tear-down.
    let steps = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        steps.split_whitespace().collect::<Vec<_>>(),
        ["A+", "A-", "B+", "B-", "B+", "B-", "A+", "A-", "A+", "A-", "B+", "B-"]
    );
    // Kept, and read back as the same kind.
    let id = run["id"].as_str().unwrap();
    env.osmeter()
        .args(["show", id])
        .assert()
        .success()
        .stdout(predicate::str::contains("B/A"))
        .stdout(predicate::str::contains("interleaved"));
}

/// Interleaved, a probe's round on A and its round on B come back to back, in a snake order over
/// the probes (A B, B A, ...): two probes cost three changes of side per pair, not two.
#[test]
fn interleaved_rounds_of_each_probe_are_back_to_back() {
    let env = TestEnv::new();
    let (log, [a_up, a_down, b_up, b_down]) = logged_set_ups(&env);
    let run = env.json(
        &[
            AB_FAST,
            &["syscall.null", "syscall.dup", "--json", "--max-pairs", "2"],
            &["--a-setup", &a_up, "--a-teardown", &a_down],
            &["--b-setup", &b_up, "--b-teardown", &b_down],
        ]
        .concat(),
    );
    let doc = &run["sections"]["ab"];
    assert_eq!(doc["mode"], "interleaved");
    for f in doc["figures"].as_array().unwrap() {
        assert_eq!(f["ratios"].as_array().unwrap().len(), 2, "{f:#}");
    }
    let steps = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        steps.split_whitespace().collect::<Vec<_>>(),
        [
            "A+", "A-", "B+", "B-", "A+", "A-", // pair 1: A, B B, A
            "B+", "B-", "A+", "A-", "B+", "B-", // pair 2: B, A A, B
        ]
    );
}

#[test]
fn a_duet_runs_both_sides_on_two_cpus_and_names_them() {
    let env = TestEnv::new();
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: a duet needs two CPUs");
        return;
    }
    let run = env.json(
        &[
            AB_FAST,
            &["syscall.null", "--duet", "--json", "--max-pairs", "2"],
            &["--b-wrap", "env OSMETER_AB=1"],
        ]
        .concat(),
    );
    let doc = &run["sections"]["ab"];
    assert_eq!(doc["mode"], "duet");
    let cpus = doc["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 2);
    assert_ne!(cpus[0], cpus[1]);
    assert_eq!(doc["figures"][0]["ratios"].as_array().unwrap().len(), 2);
}

/// Sides that differ only by their wrappers run in lockstep unless asked otherwise.
#[test]
fn wrappers_alone_run_in_lockstep_on_one_cpu_in_turns_and_name_it() {
    let env = TestEnv::new();
    let run = env.json(
        &[
            AB_FAST,
            &["syscall.null", "syscall.dup", "--json", "--max-pairs", "3"],
            &[
                "--a-wrap",
                "env OSMETER_AB=a",
                "--b-wrap",
                "env OSMETER_AB=b",
            ],
        ]
        .concat(),
    );
    let doc = &run["sections"]["ab"];
    assert_eq!(doc["mode"], "lockstep");
    assert_eq!(doc["cpus"].as_array().unwrap().len(), 1);
    for f in doc["figures"].as_array().unwrap() {
        assert_eq!(f["ratios"].as_array().unwrap().len(), 3, "{f:#}");
        for side in ["a_rounds", "b_rounds"] {
            assert_eq!(f[side].as_array().unwrap().len(), 3, "{f:#}");
        }
    }
    // --interleaved takes whole rounds in turn instead.
    let run = env.json(
        &[
            AB_FAST,
            &[
                "syscall.null",
                "--json",
                "--max-pairs",
                "2",
                "--interleaved",
            ],
            &["--b-wrap", "env OSMETER_AB=b"],
        ]
        .concat(),
    );
    assert_eq!(run["sections"]["ab"]["mode"], "interleaved");
}

#[test]
fn a_signal_mid_way_tears_down_and_puts_the_setting_back() {
    if !is_root() {
        eprintln!("skipped: writing a kernel setting needs root");
        return;
    }
    let env = TestEnv::new();
    // A setting nothing here depends on: how often the kernel folds per-CPU VM statistics.
    let knob = std::path::Path::new("/proc/sys/vm/stat_interval");
    let before = std::fs::read_to_string(knob).unwrap();
    let log = env.dir.path().join("sides.log");
    let mut child = env
        .osmeter_std()
        .args(AB_FAST)
        .args(["syscall.null", "--max-pairs", "1000", "--budget", "60s"])
        .args(["--a-setup", "sysctl -q -w vm.stat_interval=2"])
        .args([
            "--b-setup",
            &format!(
                "sysctl -q -w vm.stat_interval=3; echo B >> {}",
                log.display()
            ),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Stopped while B's set-up is in force (or soon after).
    assert!(wait_until(Duration::from_secs(30), || log.exists()));
    signal(child.id(), libc::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "an interrupted ab exits 130");
    assert_eq!(
        std::fs::read_to_string(knob).unwrap(),
        before,
        "the setting is back"
    );
}

#[test]
fn a_set_up_failing_after_the_first_pair_keeps_the_pairs_taken() {
    let env = TestEnv::new();
    let count = env.dir.path().join("count");
    // B's set-up works once, then fails: the first pair is measured, the second stops.
    let b_setup = format!(
        "n=$(cat {0} 2>/dev/null || echo 0); echo $((n + 1)) > {0}; [ $n -lt 1 ] || {{ echo \
         worn out >&2; exit 9; }}",
        count.display()
    );
    env.osmeter()
        .args(AB_FAST)
        .args([
            "syscall.null",
            "--max-pairs",
            "4",
            "--a-setup",
            "true",
            "--b-setup",
            &b_setup,
        ])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAILED: B's set-up"))
        .stderr(predicate::str::contains(
            "the pairs before the error are kept",
        ))
        .stderr(predicate::str::contains("worn out"));
    let runs = env.json(&["runs", "--json"]);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1, "the pair taken is kept");
    assert_eq!(runs[0]["kind"], "ab");
}

#[test]
fn a_stdout_that_cannot_be_written_keeps_the_pairs_and_names_the_run() {
    let env = TestEnv::new();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = env
        .osmeter_std()
        .args(AB_FAST)
        .args([
            "syscall.null",
            "--max-pairs",
            "2",
            "--b-wrap",
            "env OSMETER_AB=1",
        ])
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let runs = env.json(&["runs", "--json"]);
    let id = runs[0]["id"].as_str().unwrap();
    assert!(err.contains(&format!("kept all the same as {id}")), "{err}");
}
