//! End-to-end tests of `osmeter export`.

mod common;

use common::{entries, TestEnv};
use predicates::prelude::*;

fn stored_run(env: &TestEnv) -> String {
    env.run_id(&["syscall.null", "cpu.reference"])
}

#[test]
fn every_format_exports_a_real_run() {
    let env = TestEnv::new();
    let id = stored_run(&env);
    let json = env
        .osmeter()
        .args(["export", &id, "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["id"], id.as_str());
    // FAST: 3 samples in each of 2 rounds.
    assert_eq!(
        doc["measurements"][0]["samples"].as_array().unwrap().len(),
        6
    );
    env.osmeter()
        .args(["export", &id, "-f", "csv"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "run_id,kind,figure,group,unit,direction,value,ci95_low,ci95_high",
        ))
        .stdout(predicate::str::contains("syscall.null"));
    let samples = env
        .osmeter()
        .args(["export", &id, "-f", "csv", "--samples"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&samples.stdout).lines().count(),
        1 + 2 * 6
    );
    env.osmeter()
        .args(["export", &id, "-f", "markdown"])
        .assert()
        .success()
        .stdout(predicate::str::contains("| syscall |"));
    env.osmeter()
        .args(["export", &id, "-f", "openmetrics"])
        .assert()
        .success()
        .stdout(predicate::str::contains("# TYPE osmeter_seconds gauge"))
        .stdout(predicate::str::ends_with("# EOF\n"));
}

#[test]
fn export_to_a_file_and_bad_paths() {
    let env = TestEnv::new();
    let id = stored_run(&env);
    let out_dir = tempfile::tempdir().unwrap();
    let path = out_dir.path().join("run.csv");
    env.osmeter()
        .args(["export", &id, "-f", "csv", "-o"])
        .arg(&path)
        .assert()
        .success();
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains("syscall.null"));
    let missing = out_dir.path().join("no/such/dir/run.csv");
    env.osmeter()
        .args(["export", &id, "-f", "csv", "-o"])
        .arg(&missing)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot write"));
    assert_eq!(
        entries(out_dir.path()),
        ["run.csv"],
        "no partial or temporary file left"
    );
}

#[test]
fn unknown_format_and_run_are_usage_errors() {
    let env = TestEnv::new();
    let id = stored_run(&env);
    env.osmeter()
        .args(["export", &id, "-f", "xml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("json, csv, markdown, openmetrics"));
    env.osmeter()
        .args(["export", "nope", "-f", "json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no run"));
}
