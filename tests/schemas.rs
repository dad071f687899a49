//! Every kind of JSON document osmeter writes, taken from the real binary's output, checked by a
//! real JSON Schema validator (Python's jsonschema, draft 2020-12) against what `osmeter schema
//! KIND` prints; a missing validator is a skip with its install command, or a failure in CI.

mod common;

use common::{consumer_missing, two_of_each, TestEnv, FAST};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Kinds no test here can write without guest runs (tests/guest.rs boots them, with downloads;
/// tests/kernel_history.rs stores made-up ones): their schemas are still generated and kept by
/// tests/schema_versions.rs.
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

/// The kind a document says it follows, from its `$schema` (`.../schema/KIND/vN.json`).
fn kind_of(doc: &Value, label: &str) -> String {
    let uri = doc["$schema"]
        .as_str()
        .unwrap_or_else(|| panic!("{label} carries no \"$schema\": {doc:.200}"));
    let rest = uri
        .strip_prefix("https://osmeter.dev/schema/")
        .unwrap_or_else(|| panic!("{label}: unexpected $schema {uri}"));
    rest.split('/').next().unwrap().to_string()
}

/// The documents of one output: itself, or each element of an array of documents.
fn documents(label: &str, out: &[u8]) -> Vec<(String, Value)> {
    let v: Value = serde_json::from_slice(out).unwrap_or_else(|e| panic!("{label}: {e}"));
    match v {
        Value::Array(items) => {
            assert!(!items.is_empty(), "{label} printed an empty array");
            items
                .into_iter()
                .enumerate()
                .map(|(i, d)| (format!("{label}[{i}]"), d))
                .collect()
        }
        doc => vec![(label.to_string(), doc)],
    }
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

const VALIDATE: &str = "\
import json, sys, jsonschema
cases = json.load(open(sys.argv[1]))
bad = 0
for label, schema, doc in cases:
    jsonschema.Draft202012Validator.check_schema(schema)
    for e in jsonschema.Draft202012Validator(schema).iter_errors(doc):
        bad += 1
        print('%s: at %s: %s' % (label, '/'.join(map(str, e.absolute_path)), e.message[:300]))
sys.exit(1 if bad else 0)
";

/// Python with jsonschema: the one on the PATH, or Debian's, which python3-jsonschema serves.
fn python() -> Option<&'static str> {
    let found = ["python3", "/usr/bin/python3"].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import jsonschema"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        consumer_missing(
            "python3's jsonschema",
            "apt-get install python3-jsonschema, or pip install jsonschema",
        );
    }
    found
}

#[test]
fn every_kind_of_document_passes_its_own_schema() {
    let Some(python) = python() else { return };
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

    let mut schemas: BTreeMap<String, Value> = BTreeMap::new();
    let mut cases: Vec<(String, Value, Value)> = Vec::new();
    for (label, doc) in docs {
        let kind = kind_of(&doc, &label);
        let schema = schemas.entry(kind.clone()).or_insert_with(|| {
            let out = env.osmeter().args(["schema", &kind]).output().unwrap();
            assert!(out.status.success(), "osmeter schema {kind}");
            serde_json::from_slice(&out.stdout).unwrap()
        });
        cases.push((label, schema.clone(), doc));
    }
    let seen: BTreeSet<String> = schemas.keys().cloned().collect();
    let missing: Vec<String> = kinds(&env)
        .into_iter()
        .filter(|k| !seen.contains(k) && !GUEST_ONLY.contains(&k.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "no output of kind {missing:?} was checked"
    );
    let file = env.dir.path().join("cases.json");
    std::fs::write(&file, serde_json::to_vec(&cases).unwrap()).unwrap();
    let out = Command::new(python)
        .args(["-c", VALIDATE])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "documents that do not follow their schema:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
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
