//! Real output checked against the schema osmeter itself prints (`osmeter schema KIND`) by a real
//! JSON Schema validator, Python's jsonschema (draft 2020-12), not by osmeter's own reader. Used
//! by tests/schemas.rs for every kind a test can write quickly and by tests/guest.rs for the kinds
//! only a booted guest writes.

use super::{consumer_missing, TestEnv};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

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
/// None (a skip, or a failure in CI) when neither has it.
pub fn validator() -> Option<&'static str> {
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

/// The kind a document says it follows, from its `$schema` (`.../schema/KIND/vN.json`).
pub fn kind_of(doc: &Value, label: &str) -> String {
    let uri = doc["$schema"]
        .as_str()
        .unwrap_or_else(|| panic!("{label} carries no \"$schema\": {doc:.200}"));
    let rest = uri
        .strip_prefix("https://osmeter.dev/schema/")
        .unwrap_or_else(|| panic!("{label}: unexpected $schema {uri}"));
    rest.split('/').next().unwrap().to_string()
}

/// The documents of one output: itself, or each element of an array of documents.
pub fn documents(label: &str, out: &[u8]) -> Vec<(String, Value)> {
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

/// Checks every document against the schema of the kind it names and returns the kinds seen;
/// fails with each place a document breaks its schema.
pub fn assert_follow_their_schemas(
    env: &TestEnv,
    python: &str,
    docs: Vec<(String, Value)>,
) -> BTreeSet<String> {
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
    let file = env.dir.path().join("schema-cases.json");
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
    schemas.into_keys().collect()
}
