//! Stored documents of schema version 1, written by the release before the results model was
//! typed (tests/data/v1: one JSON export per kind and the SQLite store they came from), still load
//! as the typed model and lose nothing on the way.

mod common;

use common::TestEnv;
use osmeter::results::model::Run;
use std::path::{Path, PathBuf};

fn v1_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/v1")
}

fn v1_documents() -> Vec<(String, serde_json::Value)> {
    let mut out: Vec<(String, serde_json::Value)> = std::fs::read_dir(v1_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, serde_json::from_str(&text).unwrap())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Where two documents differ, if they do. Numbers are compared by value, so a count stored as an
/// integer and read back into a floating-point figure is the same number. A fingerprint field that
/// came after the document (written as null, "not known", by the model `a`) loses nothing.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: String) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => (x.as_f64() != y.as_f64()).then_some(at),
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, format!("{at}.{k}")),
                (Some(Value::Null), None) if at.ends_with(".fingerprint") => None,
                _ => Some(format!("{at}.{k} (present on one side only)")),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, format!("{at}[{i}]"))),
        _ => (a != b).then_some(at),
    }
}

#[test]
fn every_kind_reads_back_as_the_typed_model_without_loss() {
    osmeter::hand_down_document_kinds();
    let docs = v1_documents();
    let kinds: std::collections::BTreeSet<&str> = docs
        .iter()
        .map(|(n, _)| n.split('-').next().unwrap())
        .collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["latency", "memsim", "run", "stat"],
        "one document of every kind"
    );
    for (name, original) in docs {
        let run: Run = serde_json::from_value(original.clone())
            .unwrap_or_else(|e| panic!("{name} does not load: {e}"));
        assert_eq!(
            run.kind().as_str(),
            name.split('-').next().unwrap(),
            "{name}"
        );
        let again = serde_json::to_value(&run).unwrap();
        if let Some(path) = first_difference(&again, &original, String::new()) {
            panic!("{name} changed on the way through the model, at {path}");
        }
    }
}

#[test]
fn a_store_written_by_the_previous_release_is_read() {
    let env = TestEnv::new();
    std::fs::copy(v1_dir().join("store.db"), env.store()).unwrap();
    let list = env.json(&["runs", "--json"]);
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 7);
    // The figures table did not exist in schema 1: it is filled from the documents on opening.
    for r in list.as_array().unwrap() {
        assert!(
            r["figures"].as_u64().unwrap() > 0,
            "a {} run lists its figures: {r}",
            r["kind"]
        );
    }
    let table = env.osmeter().arg("runs").output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    for kind in ["run", "stat", "latency", "memsim"] {
        assert!(table.contains(&format!(" {kind} ")), "{kind} in\n{table}");
    }
    for id in ids {
        let shown = env.json(&["show", id, "--json"]);
        assert_eq!(shown["id"], id);
        let text = env.osmeter().args(["show", id]).output().unwrap();
        assert!(text.status.success(), "show {id}");
    }
}
