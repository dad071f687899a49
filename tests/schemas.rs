//! Every kind of JSON document osmeter writes, taken from the real binary's output, checked by a
//! real JSON Schema validator (Python's jsonschema, draft 2020-12) against what `osmeter schema
//! KIND` prints; a missing validator is a skip with its install command, or a failure in CI.

mod common;

use common::schema_check::{assert_follow_their_schemas, documents, validator};
use common::{two_of_each, TestEnv, FAST};
use serde_json::Value;

/// Kinds no test here can write without guest runs: tests/guest.rs and tests/guest_bisect.rs,
/// which boot them, and tests/kernel_history.rs, which stores made-up ones, check them against
/// their schemas with the same validator.
const GUEST_ONLY: &[&str] = &[
    "compare-exact",
    "paper-mcpi-row",
    "paper-count-row",
    "kernel-timeline",
    "bisect",
    "guest-check",
];

/// The kinds `osmeter schema` lists, by the first word of each line that names a schema.
fn kinds(env: &TestEnv) -> Vec<String> {
    let out = env.osmeter().args(["--wide", "schema"]).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("https://"))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

fn json_of(env: &TestEnv, args: &[&str]) -> Vec<(String, Value)> {
    let out = env.osmeter().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "osmeter {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    documents(&format!("osmeter {}", args.join(" ")), &out.stdout)
}

#[test]
fn every_kind_of_document_passes_its_own_schema() {
    let Some(python) = validator() else { return };
    let env = TestEnv::new();
    let ids = two_of_each(&env);
    let mut docs: Vec<(String, Value)> = Vec::new();
    for id in ids.values().flatten() {
        docs.extend(json_of(&env, &["export", id, "--format", "json"]));
        docs.extend(json_of(&env, &["show", id, "--json"]));
    }
    let (a, b) = (&ids["run"][0], &ids["run"][1]);
    docs.extend(json_of(
        &env,
        &["compare", a, b, "--json", "--all", "--force"],
    ));
    docs.extend(json_of(&env, &["history", "syscall.null", "--json"]));
    docs.extend(json_of(&env, &["runs", "--json"]));
    docs.extend(json_of(&env, &["fleet", "--json"]));
    let other = env.dir.path().join("other.db");
    docs.extend(json_of(
        &env,
        &["push", a, "--to", other.to_str().unwrap(), "--json"],
    ));
    docs.extend(json_of(&env, &["info", "--json"]));
    docs.extend(json_of(&env, &["list", "--json"]));
    docs.extend(json_of(&env, &["paper", "--json"]));
    docs.extend(json_of(
        &env,
        &["paper", "ousterhout89", "--run", a, "--json"],
    ));
    let trace = env.dir.path().join("t.osmt");
    env.osmeter()
        .args(["trace", "synth", "--refs", "20000", "-o"])
        .arg(&trace)
        .assert()
        .success();
    let trace = trace.to_str().unwrap();
    docs.extend(json_of(&env, &["trace", "info", trace, "--json"]));
    docs.extend(json_of(
        &env,
        &[
            "memsim",
            "--preset",
            "ds5000-200",
            trace,
            "--json",
            "--no-store",
        ],
    ));
    docs.extend(json_of(&env, &["stat", "-r", "2", "--json", "--", "true"]));
    // Two commands compared: an array of stat documents.
    docs.extend(json_of(
        &env,
        &[
            "stat", "-r", "2", "--json", "--", "true", ":::", "sh", "-c", ":",
        ],
    ));
    let mut run_json = vec!["run", "syscall.null", "--json", "--no-store"];
    run_json.extend_from_slice(FAST);
    docs.extend(json_of(&env, &run_json));

    let seen = assert_follow_their_schemas(&env, python, docs);
    let missing: Vec<String> = kinds(&env)
        .into_iter()
        .filter(|k| !seen.contains(k) && !GUEST_ONLY.contains(&k.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "no output of kind {missing:?} was checked"
    );
}

#[test]
fn an_unknown_kind_is_a_usage_error_naming_the_kinds() {
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .args(["schema", "nosuchkind"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no document kind \"nosuchkind\"") && err.contains("run, runs, stat"),
        "{err}"
    );
    let out = env.osmeter().args(["schema", "stat"]).output().unwrap();
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["$id"], "https://osmeter.dev/schema/stat/v1.json");
    assert_eq!(schema["properties"]["$schema"]["const"], schema["$id"]);
}
