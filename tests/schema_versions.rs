//! The schemas as released stay true: tests/data/schemas/KIND.vN.json holds each kind's schema of
//! version N as osmeter generated it, and a schema that now differs fails here.
//!
//! The rule (docs/comparisons-and-history.md, "Schemas"): a change old readers would misread
//! (a field removed or renamed, a type changed or widened, a required field made optional, a new
//! value of a closed set) needs the kind's version raised in src/commands/schema.rs, with the old
//! version's file kept. A change they read as before (a field added, a description reworded) keeps
//! the version, and the file is refreshed. `UPDATE_SCHEMAS=1 cargo test --test schema_versions`
//! writes the files for both cases and refuses to overwrite a version with a breaking change.

mod common;

use common::TestEnv;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/schemas")
}

/// Each kind with its version, from `osmeter schema`'s list (the URI ends in KIND/vN.json).
fn kinds(env: &TestEnv) -> Vec<(String, u32)> {
    let out = env.osmeter().args(["--wide", "schema"]).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("https://")))
        .map(|uri| {
            let mut parts = uri.trim_end_matches(".json").rsplit('/');
            let version = parts
                .next()
                .unwrap()
                .trim_start_matches('v')
                .parse()
                .unwrap();
            (parts.next().unwrap().to_string(), version)
        })
        .collect()
}

/// A node with its `$ref` (`#/$defs/NAME`) followed, within its own schema.
fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    let mut node = node;
    for _ in 0..32 {
        let Some(r) = node.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let name = r.trim_start_matches("#/$defs/");
        node = &root["$defs"][name];
    }
    node
}

/// The JSON types a node allows; None when it does not say (any value).
fn types(node: &Value) -> Option<Vec<String>> {
    match node.get("type")? {
        Value::String(t) => Some(vec![t.clone()]),
        Value::Array(ts) => Some(
            ts.iter()
                .filter_map(|t| t.as_str().map(String::from))
                .collect(),
        ),
        _ => None,
    }
}

/// The closed set of values a node allows (`const`, `enum`), if it has one.
fn values(node: &Value) -> Option<Vec<Value>> {
    if let Some(v) = node.get("const") {
        return Some(vec![v.clone()]);
    }
    node.get("enum")?.as_array().cloned()
}

/// What a reader of `old` would misread in documents that follow `new`, one line each.
fn breaks(
    old_root: &Value,
    new_root: &Value,
    old: &Value,
    new: &Value,
    at: &str,
    depth: usize,
) -> Vec<String> {
    let (old, new) = (resolve(old_root, old), resolve(new_root, new));
    if depth > 24 {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let (Some(o), Some(n)) = (types(old), types(new)) {
        let known =
            |t: &String| o.contains(t) || (t == "integer" && o.iter().any(|x| x == "number"));
        let added: Vec<&String> = n.iter().filter(|t| !known(t)).collect();
        if !added.is_empty() {
            out.push(format!("{at}: may now be {added:?}, where it was {o:?}"));
        }
    } else if types(old).is_some() && types(new).is_none() && values(new).is_none() {
        out.push(format!(
            "{at}: any value now, where it was {:?}",
            types(old).unwrap()
        ));
    }
    if let (Some(o), Some(n)) = (values(old), values(new)) {
        let added: Vec<&Value> = n.iter().filter(|v| !o.contains(v)).collect();
        if !added.is_empty() {
            out.push(format!("{at}: new values {added:?}"));
        }
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if old.get(key).is_some() || new.get(key).is_some() {
            let (o, n) = (old.get(key), new.get(key));
            // Alternatives are compared whole: what cannot be shown compatible counts as a break.
            if o.map(|v| v.to_string()) != n.map(|v| v.to_string()) {
                let same_len = o.and_then(Value::as_array).map(Vec::len)
                    == n.and_then(Value::as_array).map(Vec::len);
                if let (true, Some(o), Some(n)) = (
                    same_len,
                    o.and_then(Value::as_array),
                    n.and_then(Value::as_array),
                ) {
                    for (i, (a, b)) in o.iter().zip(n).enumerate() {
                        out.extend(breaks(
                            old_root,
                            new_root,
                            a,
                            b,
                            &format!("{at}/{key}[{i}]"),
                            depth + 1,
                        ));
                    }
                } else {
                    out.push(format!("{at}: its {key} alternatives changed"));
                }
            }
        }
    }
    let required = |n: &Value| -> Vec<String> {
        n.get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (old_required, new_required) = (required(old), required(new));
    if let Some(props) = old.get("properties").and_then(Value::as_object) {
        for (name, o) in props {
            let path = format!("{at}/{name}");
            match new.get("properties").and_then(|p| p.get(name)) {
                None => out.push(format!("{path}: removed")),
                Some(n) => {
                    if old_required.contains(name) && !new_required.contains(name) {
                        out.push(format!("{path}: no longer always written"));
                    }
                    out.extend(breaks(old_root, new_root, o, n, &path, depth + 1));
                }
            }
        }
    }
    for key in ["items", "additionalProperties"] {
        if let (Some(o), Some(n)) = (old.get(key), new.get(key)) {
            if o.is_object() && n.is_object() {
                out.extend(breaks(
                    old_root,
                    new_root,
                    o,
                    n,
                    &format!("{at}/{key}"),
                    depth + 1,
                ));
            }
        }
    }
    out
}

#[test]
fn the_released_schemas_hold_unless_their_version_was_raised() {
    let env = TestEnv::new();
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
    let mut problems = Vec::new();
    for (kind, version) in kinds(&env) {
        let out = env.osmeter().args(["schema", &kind]).output().unwrap();
        assert!(out.status.success(), "osmeter schema {kind}");
        let text = String::from_utf8(out.stdout).unwrap();
        let now: Value = serde_json::from_str(&text).unwrap();
        let file = dir().join(format!("{kind}.v{version}.json"));
        let Ok(kept) = std::fs::read_to_string(&file) else {
            if update {
                std::fs::write(&file, &text).unwrap();
            } else {
                problems.push(format!(
                    "{kind} v{version} has no released schema {}: record it with \
                     UPDATE_SCHEMAS=1 cargo test --test schema_versions",
                    file.display()
                ));
            }
            continue;
        };
        let kept: Value = serde_json::from_str(&kept).unwrap();
        if kept == now {
            continue;
        }
        let broken = breaks(&kept, &now, &kept, &now, "", 0);
        if !broken.is_empty() {
            problems.push(format!(
                "{kind}'s schema changed in a way readers of v{version} would misread:\n  {}\n\
                 raise {kind}'s version to {} in src/commands/schema.rs and record the new \
                 schema with UPDATE_SCHEMAS=1 (keep {kind}.v{version}.json: documents of v{version} \
                 were written); only added fields keep a version",
                broken.join("\n  "),
                version + 1
            ));
        } else if update {
            std::fs::write(&file, &text).unwrap();
        } else {
            problems.push(format!(
                "{kind}'s schema changed in a way v{version}'s readers read as before (fields \
                 added, descriptions reworded): refresh {} with UPDATE_SCHEMAS=1 cargo test \
                 --test schema_versions; the version stays",
                file.display()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// The rules themselves, on small schemas.
#[test]
fn removing_retyping_or_loosening_breaks_and_adding_does_not() {
    let old = serde_json::json!({
        "type": "object",
        "required": ["a", "b"],
        "properties": {
            "a": {"type": "number"},
            "b": {"$ref": "#/$defs/B"},
            "c": {"enum": ["x", "y"]}
        },
        "$defs": {"B": {"type": "string"}}
    });
    let check = |new: Value| breaks(&old, &new, &old, &new, "", 0);
    let mut added = old.clone();
    added["properties"]["d"] = serde_json::json!({"type": "string"});
    assert!(check(added).is_empty());
    let mut removed = old.clone();
    removed["properties"].as_object_mut().unwrap().remove("a");
    assert_eq!(check(removed), ["/a: removed"]);
    let mut retyped = old.clone();
    retyped["$defs"]["B"] = serde_json::json!({"type": ["string", "null"]});
    assert_eq!(check(retyped).len(), 1);
    let mut optional = old.clone();
    optional["required"] = serde_json::json!(["a"]);
    assert_eq!(check(optional), ["/b: no longer always written"]);
    let mut widened = old.clone();
    widened["properties"]["c"] = serde_json::json!({"enum": ["x", "y", "z"]});
    assert_eq!(check(widened).len(), 1);
}
