//! End-to-end tests of the store: runs are kept, listed, shown and removed; bad stores are refused
//! without losing anything.

mod common;
#[path = "common/store_cases.rs"]
mod store_cases;

use common::{TestEnv, FAST};
use osmeter::results::store::schema;
use osmeter::results::store::sqlite::SqliteStore;
use predicates::prelude::*;

fn run_id(env: &TestEnv, extra: &[&str]) -> String {
    let mut args = vec!["syscall.null"];
    args.extend_from_slice(extra);
    env.run_id(&args)
}

#[test]
fn runs_are_kept_listed_shown_and_removed() {
    let env = TestEnv::new();
    let a = run_id(&env, &["--tag", "kernel=old"]);
    let b = run_id(&env, &["--tag", "kernel=new", "--tag", "box=vm"]);

    let out = env.osmeter().args(["runs", "--json"]).output().unwrap();
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&a.as_str()) && ids.contains(&b.as_str()));

    env.osmeter()
        .args(["runs", "--tag", "kernel=new"])
        .assert()
        .success()
        .stdout(predicate::str::contains(&b))
        .stdout(predicate::str::contains(&a).not());

    // A unique prefix is enough, as with git.
    let prefix = &b[..b.len() - 3];
    let shown = env
        .osmeter()
        .args(["show", prefix, "--json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(doc["id"], b.as_str());
    assert_eq!(doc["tags"]["box"], "vm");
    env.osmeter()
        .args(["show", &a])
        .assert()
        .success()
        .stdout(predicate::str::contains("syscall.null"));

    env.osmeter().args(["rm", &a]).assert().success();
    env.osmeter()
        .args(["show", &a])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no run"));
}

/// A store nothing was kept in yet says so, instead of pointing at `osmeter runs`, and reading it
/// does not create it.
#[test]
fn a_run_asked_of_an_empty_store_says_the_store_is_empty_and_creates_nothing() {
    let env = TestEnv::new();
    let out = env.dir.path().join("r.html");
    let report = format!("report --output {}", out.display());
    for command in ["show", "export --format csv", report.as_str()] {
        let mut args: Vec<&str> = command.split(' ').collect();
        args.push("6b09");
        env.osmeter()
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("holds no run yet"));
        assert!(!env.store().exists(), "{command} created the store");
        assert!(!out.exists(), "{command} wrote a report of nothing");
    }
}

#[test]
fn unknown_run_suggests_the_closest() {
    let env = TestEnv::new();
    let a = run_id(&env, &[]);
    let mut typo = a.clone();
    typo.push('x');
    env.osmeter()
        .args(["show", &typo])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!("did you mean {a}")));
}

#[test]
fn rm_with_one_bad_id_removes_nothing() {
    let env = TestEnv::new();
    let a = run_id(&env, &[]);
    env.osmeter()
        .args(["rm", &a, "no-such-run"])
        .assert()
        .code(2);
    env.osmeter().args(["show", &a]).assert().success();
}

#[test]
fn a_store_that_is_not_a_database_is_refused_before_measuring_and_left_untouched() {
    let env = TestEnv::new();
    std::fs::write(env.store(), "important text\n").unwrap();
    env.osmeter()
        .args(["run", "syscall.null"])
        .args(FAST)
        .assert()
        .code(1)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("not a SQLite database"))
        .stderr(predicate::str::contains(env.store().to_str().unwrap()))
        .stderr(predicate::str::contains("--no-store"));
    assert_eq!(
        std::fs::read_to_string(env.store()).unwrap(),
        "important text\n"
    );
}

#[test]
fn no_store_keeps_nothing() {
    let env = TestEnv::new();
    env.osmeter()
        .args(["run", "syscall.null", "--no-store"])
        .args(FAST)
        .assert()
        .success();
    assert!(!env.store().exists());
}

#[test]
fn bad_tag_is_a_usage_error() {
    let env = TestEnv::new();
    env.osmeter()
        .args(["run", "syscall.null", "--tag", "novalue"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("KEY=VALUE"));
    assert!(!env.store().exists());
}

#[test]
fn the_values_of_a_set_of_runs_are_theirs_and_no_others() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("runs.db")).unwrap();
    store_cases::values_of_a_set_of_runs(&mut store);
}

#[test]
fn documents_are_loaded_together_in_the_order_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let mut store = SqliteStore::open(&path).unwrap();
    store_cases::documents_together(&mut store, |sql| {
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(sql)
            .unwrap();
    });
}

#[test]
fn a_store_of_schema_4_gains_each_runs_class_from_its_document() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(&store_cases::schema_4_store(schema::Backend::Sqlite))
        .unwrap();
    store_cases::schema_4_gains_classes(&mut SqliteStore::open(&path).unwrap());
    let version: String = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT value FROM osmeter_meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(version, schema::current_version().to_string());
}
