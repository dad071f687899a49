//! `osmeter stat` end to end: runs, JSON, pass-through output, and every exit code it documents.

mod common;

use assert_cmd::Command;
use predicates::prelude::*;

/// Results are kept in a store of this test binary's own, under cargo's target directory.
fn osmeter() -> Command {
    let mut c = Command::cargo_bin("osmeter").unwrap();
    c.env(
        "OSMETER_STORE",
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("stat-tests.db"),
    );
    c
}

#[test]
fn repeats_the_command_and_reports_every_run() {
    osmeter()
        .args(["stat", "-r", "3", "--", "true"])
        .assert()
        .success()
        .stdout(predicate::str::contains("`true`, 3 runs"))
        .stdout(predicate::str::contains("wall time"))
        .stdout(predicate::str::contains("task-clock"));
}

#[test]
fn json_has_the_schema_runs_and_figures() {
    let out = osmeter()
        .args(["stat", "-r", "2", "--json", "--", "true"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&out).expect("stdout is one JSON document");
    assert_eq!(doc["schema"], "osmeter.stat/1");
    assert_eq!(doc["command"], serde_json::json!(["true"]));
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["wall_ns"].as_u64().unwrap() > 0));
    let summary = doc["summary"].as_object().unwrap();
    assert!(summary.contains_key("time:wall"));
    let wall = &summary["time:wall"];
    assert_eq!(wall["n"], 2);
    let ci = wall["ci95"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() <= wall["mean"].as_f64().unwrap());
    if let Some(tc) = summary.get("software:task-clock") {
        assert!(tc["mean"].as_f64().unwrap() > 0.0);
        assert_eq!(tc["unit"], "ns");
    }
    assert!(doc["counters_unavailable"].is_object());
}

#[test]
fn the_commands_output_is_discarded_unless_asked_for() {
    // The command prints "said-out" and "said-err", which its command line does not hold.
    let out = osmeter()
        .args(["stat", "-r", "2", "--", "sh", "-c"])
        .arg("printf '%s-%s\\n' said out; printf '%s-%s\\n' said err >&2")
        .assert()
        .success()
        .get_output()
        .clone();
    let all = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
    assert!(
        !all.contains("said-out") && !all.contains("said-err"),
        "{all}"
    );
}

#[test]
fn the_commands_output_never_mixes_with_the_results() {
    // Results on stdout: the command's own stdout, let through, goes to stderr.
    let out = osmeter()
        .args([
            "stat",
            "-r",
            "2",
            "--json",
            "--show-output",
            "--",
            "echo",
            "{not json from the command",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is only osmeter's JSON");
    assert_eq!(doc["runs"].as_array().unwrap().len(), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("{not json from the command"));
    // printf writes "alpha-beta", which its command line (shown in the report) does not hold.
    let text = osmeter()
        .args([
            "stat",
            "-r",
            "1",
            "--show-output",
            "--",
            "printf",
            "%s-%s",
            "alpha",
            "beta",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(!String::from_utf8_lossy(&text.stdout).contains("alpha-beta"));
    assert!(String::from_utf8_lossy(&text.stdout).contains("osmeter stat:"));
    assert!(String::from_utf8_lossy(&text.stderr).contains("alpha-beta"));
}

#[test]
fn with_an_output_file_the_command_keeps_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stat.json");
    let out = osmeter()
        .args(["stat", "-r", "1", "--json", "--show-output", "-o"])
        .arg(&file)
        .args(["--", "echo", "hello from the command"])
        .assert()
        .success()
        .get_output()
        .clone();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "hello from the command"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["command"][0], "echo");
    // A directory where the file should go: nothing is measured, the error names the path.
    osmeter()
        .args(["stat", "-r", "1", "-o"])
        .arg(dir.path())
        .args(["--", "true"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(dir.path().to_str().unwrap()));
}

#[test]
fn stderr_of_the_command_passes_through_too() {
    osmeter()
        .args([
            "stat",
            "-r",
            "1",
            "--show-output",
            "--",
            "sh",
            "-c",
            "echo oops >&2",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains("oops"));
}

#[test]
fn a_missing_command_is_a_usage_error_naming_it() {
    osmeter()
        .args(["stat", "--", "osmeter-no-such-command-xyz"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("osmeter-no-such-command-xyz"))
        .stderr(predicate::str::contains("cannot start"));
}

#[test]
fn a_failing_command_gives_exit_3_after_the_report() {
    osmeter()
        .args(["stat", "-r", "3", "--", "sh", "-c", "exit 4"])
        .assert()
        .code(3)
        .stdout(predicate::str::contains("1 run of 3"))
        .stderr(predicate::str::contains("exited with status 4"));
}

#[test]
fn a_command_killed_by_a_signal_gives_exit_3() {
    osmeter()
        .args(["stat", "-r", "2", "--json", "--", "sh", "-c", "kill -9 $$"])
        .assert()
        .code(3)
        .stdout(predicate::str::contains("\"signal\": 9"))
        .stderr(predicate::str::contains("signal 9"));
}

#[test]
fn zero_runs_is_a_usage_error() {
    osmeter()
        .args(["stat", "-r", "0", "--", "true"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("at least 1"));
}

#[test]
fn counts_cover_the_children_of_the_command() {
    // The shell forks three `true`s: their page faults add to the shell's own.
    let run = |script: &str| -> f64 {
        let out = osmeter()
            .args(["stat", "-r", "1", "--json", "--", "sh", "-c", script])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
        doc["summary"]["software:page-faults"]["mean"]
            .as_f64()
            .unwrap_or(0.0)
    };
    let alone = run(":");
    let with_children = run("/bin/true; /bin/true; /bin/true");
    if alone > 0.0 {
        assert!(with_children > alone + 60.0, "{alone} vs {with_children}");
    }
}

#[test]
fn stat_results_are_stored_with_their_tags() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    Command::cargo_bin("osmeter")
        .unwrap()
        .args(["stat", "-r", "2", "--tag", "case=stored", "--store"])
        .arg(&store)
        .args(["--", "true"])
        .assert()
        .success();
    let out = Command::cargo_bin("osmeter")
        .unwrap()
        .args(["runs", "--json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["kind"], "stat");
    assert_eq!(list[0]["tags"]["case"], "stored");
    let id = list[0]["id"].as_str().unwrap();
    let shown = Command::cargo_bin("osmeter")
        .unwrap()
        .args(["show", id, "--json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let run: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(run["sections"]["stat"]["runs"].as_array().unwrap().len(), 2);
}

#[test]
fn several_commands_are_run_in_turns_and_set_against_the_fastest() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("order");
    let log = log.to_str().unwrap();
    let env = common::TestEnv::new();
    let out = env
        .osmeter()
        .args(["stat", "-r", "3", "--warmup", "1", "--prepare"])
        .arg(format!("echo prepared >> {log}"))
        .args(["--", "sh", "-c"])
        .arg(format!("echo fast >> {log}"))
        .arg(":::")
        .args(["sh", "-c"])
        .arg(format!("sleep 0.05; echo slow >> {log}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // One warm-up each, then the measured runs in turns; --prepare before every one of them.
    let order = std::fs::read_to_string(log).unwrap();
    let runs: Vec<&str> = order.lines().filter(|l| *l != "prepared").collect();
    assert_eq!(
        runs,
        ["fast", "slow", "fast", "slow", "fast", "slow", "fast", "slow"]
    );
    assert_eq!(order.lines().filter(|l| *l == "prepared").count(), 8);
    // Each command's table, then the comparison with an interval that excludes 1.
    assert_eq!(text.matches("osmeter stat: `sh -c").count(), 2, "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("times faster than"))
        .unwrap_or_else(|| panic!("no comparison in:\n{text}"));
    assert!(
        line.contains("sleep 0.05") && line.contains("95 % interval"),
        "{line}"
    );
    assert!(!line.contains("no difference shown"), "{line}");
    // Each command is kept as a stat run of its own, listed by its command.
    let runs = env.osmeter().arg("runs").output().unwrap();
    let runs = String::from_utf8_lossy(&runs.stdout);
    assert_eq!(runs.matches("command=").count(), 2, "{runs}");
}

#[test]
fn a_command_that_fails_is_not_set_against_the_others() {
    let out = osmeter()
        .args([
            "stat",
            "-r",
            "2",
            "--no-store",
            "--",
            "true",
            ":::",
            "false",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("not compared with `false`: it failed"),
        "{text}"
    );
    assert!(!text.contains("times faster than `false`"), "{text}");
}

#[test]
fn an_empty_command_between_separators_or_a_failing_prepare_is_refused() {
    osmeter()
        .args(["stat", "--", "true", ":::"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "command 2 of 2 after `--` is empty",
        ));
    osmeter()
        .args(["stat", "--no-store", "--prepare", "exit 3", "--", "true"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--prepare `exit 3` failed"));
    osmeter()
        .args(["stat", "--warmup", "20000", "--", "true"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--warmup 20000"));
}
