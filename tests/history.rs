//! `osmeter history FIGURE` end to end, on SQLite and on a real PostgreSQL server (the throwaway
//! cluster of common/pg.rs): a stored series with a known step is found where it is, in the right
//! direction, with each stretch's level; the filters pick their runs; `--fail-if-slower` exits 4
//! only for a slowdown beyond its threshold; bad input is refused with exit 2 and the store is left
//! as it was.

mod common;
#[path = "common/pg.rs"]
mod pg;

use common::TestEnv;
use osmeter::results::history::{FigureHistory, Move};
use osmeter::results::model::{Measurement, Params, Run, Status, Summary, Unit};
use osmeter::results::store::postgres::PostgresStore;
use osmeter::results::store::sqlite::SqliteStore;
use osmeter::results::store::Store;
use predicates::prelude::*;

/// A small deterministic spread of about 1 % around 1 (no two runs alike).
fn jitter(i: usize) -> f64 {
    let x = ((i as u64 * 2_654_435_761) % 1000) as f64 / 1000.0; // in [0, 1)
    1.0 + 0.02 * (x - 0.5)
}

fn measurement(probe: &str, unit: Unit, value: f64) -> Measurement {
    let mut m = Measurement::not_measured(probe, Params::new(), unit, Status::Ok, String::new());
    m.reason = None;
    m.samples = vec![value * 0.99, value, value * 1.01];
    m.summary = Some(Summary {
        median: value,
        ci95: [value * 0.99, value * 1.01],
        ..Default::default()
    });
    m
}

/// A stored run of one host with the given values of syscall.null (ns) and net.bandwidth (B/s).
fn run(n: usize, host: &str, tags: &[(&str, &str)], ns: f64, bandwidth: f64) -> Run {
    Run {
        schema: osmeter::results::model::RUN_SCHEMA.into(),
        tool_version: "0.0.0-test".into(),
        suite: Some("quick".into()),
        tags: tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        fingerprint: osmeter::results::fingerprint::Fingerprint::from_json(
            serde_json::json!({ "hostname": host }),
        ),
        measurements: vec![
            measurement("syscall.null", Unit::Nanoseconds, ns),
            measurement("net.bandwidth", Unit::BytesPerSecond, bandwidth),
        ],
        ..Run::new(
            format!("{host}-{n:02}"),
            format!("2026-11-{:02}T{:02}:00:00Z", 1 + n / 24, n % 24),
        )
    }
}

/// Host alpha: 16 runs, syscall.null 20 % slower and bandwidth 20 % higher from its 10th run on
/// (the runs from there on tagged kernel=new). Host beta: 12 runs, flat. Alpha's 10th run starts
/// on 2026-11-01 at 18:00.
fn fleet() -> Vec<Run> {
    let mut runs = Vec::new();
    for i in 0..16 {
        let (ns, bw, kernel) = if i < 9 {
            (1000.0, 5e9, "old")
        } else {
            (1200.0, 6e9, "new")
        };
        runs.push(run(
            2 * i,
            "alpha",
            &[("kernel", kernel)],
            ns * jitter(i),
            bw * jitter(i + 50),
        ));
    }
    for i in 0..12 {
        runs.push(run(2 * i + 1, "beta", &[], 900.0 * jitter(i + 100), 4e9));
    }
    runs
}

fn history(env: &TestEnv, store: &str, args: &[&str]) -> FigureHistory {
    let out = env
        .osmeter()
        .args(["history", "--store", store, "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "history {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("history --json is a FigureHistory")
}

/// Everything `history` must do on a store holding [`fleet`].
fn the_fleet_reads_back(env: &TestEnv, store: &str) {
    let h = history(env, store, &["syscall.null", "--host", "alpha"]);
    assert_eq!(h.points.len(), 16);
    let ids: Vec<&str> = h.points.iter().map(|p| p.run.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "oldest run first");
    assert_eq!(h.changes.len(), 1, "{:?}", h.changes);
    let c = &h.changes[0];
    assert_eq!((c.index, c.run.as_str()), (9, "alpha-18"));
    assert_eq!(c.moved, Move::Slower);
    assert!((c.speedup - 1.0 / 1.2).abs() < 0.02, "{c:?}");
    assert!(c.p_value < 0.01, "{c:?}");
    assert_eq!(h.segments.len(), 2);
    for (s, level) in h.segments.iter().zip([1000.0, 1200.0]) {
        assert!((s.level / level - 1.0).abs() < 0.01, "{s:?}");
        assert!(
            s.interval[0] <= s.level && s.level <= s.interval[1],
            "{s:?}"
        );
        assert!(s.interval[1] / s.interval[0] < 1.03, "{s:?}");
    }
    assert_eq!((h.segments[0].start, h.segments[0].end), (0, 9));
    assert!(h.segments[0].coverage >= 0.95, "{:?}", h.segments[0]);
    assert_eq!(h.runs_without_figure, 0);

    // Higher is better for a bandwidth: its rise is a change, and it is faster.
    let h = history(env, store, &["net.bandwidth", "--host", "alpha"]);
    assert_eq!(h.changes.len(), 1, "{:?}", h.changes);
    assert_eq!((h.changes[0].index, h.changes[0].moved), (9, Move::Faster));

    // Filters: a flat host has no change; a tag or a start time keeps one side of the step.
    let h = history(env, store, &["syscall.null", "--host", "beta"]);
    assert_eq!((h.points.len(), h.changes.len()), (12, 0));
    let h = history(env, store, &["syscall.null", "--tag", "kernel=new"]);
    assert_eq!((h.points.len(), h.changes.len()), (7, 0));
    assert!(h.points.iter().all(|p| p.host.as_deref() == Some("alpha")));
    let h = history(
        env,
        store,
        &[
            "syscall.null",
            "--host",
            "alpha",
            "--since",
            "2026-11-01T18:00",
        ],
    );
    assert_eq!(h.points.first().map(|p| p.run.as_str()), Some("alpha-18"));

    // The gate: slower by 20 % trips 10 %, not 25 %; a faster change never trips it.
    env.osmeter()
        .args([
            "history",
            "--store",
            store,
            "syscall.null",
            "--host",
            "alpha",
        ])
        .args(["--fail-if-slower", "10"])
        .assert()
        .code(4)
        .stdout(predicate::str::contains("---- changed: ").and(predicate::str::contains("slower")))
        .stderr(predicate::str::contains(
            "syscall.null became slower by more than 10 % from run alpha-18",
        ));
    env.osmeter()
        .args([
            "history",
            "--store",
            store,
            "syscall.null",
            "--host",
            "alpha",
        ])
        .args(["--fail-if-slower", "25"])
        .assert()
        .code(0);
    env.osmeter()
        .args([
            "history",
            "--store",
            store,
            "net.bandwidth",
            "--host",
            "alpha",
        ])
        .args(["--fail-if-slower", "1"])
        .assert()
        .code(0);
}

#[test]
fn sqlite_history_finds_the_step_and_leaves_the_store_as_it_was() {
    let env = TestEnv::new();
    let path = env.store();
    let mut store = SqliteStore::open(&path).unwrap();
    for r in fleet() {
        assert!(store.save(&r).unwrap());
    }
    drop(store);
    let before = std::fs::read(&path).unwrap();
    the_fleet_reads_back(&env, path.to_str().unwrap());
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "history only reads the store"
    );
}

#[test]
fn postgres_history_finds_the_step() {
    let env = TestEnv::new();
    let url = pg::fresh_database();
    let mut store = PostgresStore::open(&url).unwrap();
    for r in fleet() {
        assert!(store.save(&r).unwrap());
    }
    drop(store);
    the_fleet_reads_back(&env, &url);
    let mut store = PostgresStore::open(&url).unwrap();
    assert_eq!(store.ids().unwrap().len(), 28, "nothing removed");
}

#[test]
fn runs_measured_for_real_are_read_back_in_order() {
    let env = TestEnv::new();
    let first = env.run_id(&["syscall.null"]);
    let second = env.run_id(&["syscall.null"]);
    let store = env.store();
    // --include-busy: on a shared machine either run may be called busy; the order is the subject.
    let h = history(
        &env,
        store.to_str().unwrap(),
        &["syscall.null", "--include-busy"],
    );
    let ids: Vec<&str> = h.points.iter().map(|p| p.run.as_str()).collect();
    let mut want = [first.as_str(), second.as_str()];
    // Two runs started in the same second list by id.
    if h.points[0].started_at == h.points[1].started_at {
        want.sort();
    }
    assert_eq!(ids, want);
    assert!(h
        .points
        .iter()
        .all(|p| p.value > 0.0 && p.interval.is_some()));
    assert_eq!(h.segments.len(), 1);
    assert!(h.changes.is_empty());
    // Too few runs for a change: the gate passes and says why.
    env.osmeter()
        .args([
            "history",
            "syscall.null",
            "--fail-if-slower",
            "5",
            "--include-busy",
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Too few runs to find a change"))
        .stderr(predicate::str::contains("too few to find a change"));
}

#[test]
fn one_run_is_a_history_without_changes() {
    let env = TestEnv::new();
    let mut store = SqliteStore::open(&env.store()).unwrap();
    store.save(&run(0, "alpha", &[], 250.0, 1e9)).unwrap();
    drop(store);
    let h = history(&env, env.store().to_str().unwrap(), &["syscall.null"]);
    assert_eq!(
        (h.points.len(), h.changes.len(), h.segments.len()),
        (1, 0, 1)
    );
    assert_eq!(h.segments[0].level, 250.0);
    assert_eq!(h.segments[0].coverage, 0.0);
}

#[test]
fn a_key_in_another_unit_is_left_out_and_named() {
    let env = TestEnv::new();
    let mut store = SqliteStore::open(&env.store()).unwrap();
    for i in 0..4 {
        store.save(&run(i, "alpha", &[], 250.0, 1e9)).unwrap();
    }
    let mut odd = run(9, "alpha", &[], 250.0, 1e9);
    odd.measurements[0].unit = Unit::Count;
    odd.id = "odd-unit".into();
    odd.started_at = "2026-10-01T00:00:00Z".into(); // the oldest: the newest run sets the unit
    store.save(&odd).unwrap();
    drop(store);
    let h = history(&env, env.store().to_str().unwrap(), &["syscall.null"]);
    assert_eq!(h.points.len(), 4);
    assert_eq!(h.left_out.len(), 1);
    assert_eq!(h.left_out[0].run, "odd-unit");
    assert!(h.left_out[0].reason.contains("count"), "{:?}", h.left_out);
}

#[test]
fn bad_and_hostile_input_is_refused_with_exit_2() {
    let env = TestEnv::new();
    // An empty store: said so, and the file is not created by reading it.
    env.osmeter()
        .args(["history", "syscall.null"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("holds no runs yet"));
    assert!(!env.store().exists(), "reading made no store");

    let mut store = SqliteStore::open(&env.store()).unwrap();
    for i in 0..3 {
        store.save(&run(i, "alpha", &[], 250.0, 1e9)).unwrap();
    }
    drop(store);
    let before = std::fs::read(env.store()).unwrap();
    let refused = |args: &[&str], says: &str| {
        env.osmeter()
            .arg("history")
            .args(args)
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains(says));
    };
    refused(&["syscal.nul"], "did you mean syscall.null?");
    refused(&["no-such-figure"], "`osmeter show RUN` prints it");
    refused(&[""], "an empty figure names nothing");
    refused(&["syscall.null", "--host", "gamma"], "matches --host gamma");
    refused(&["syscall.null", "--since", "last tuesday"], "--since");
    refused(&["syscall.null", "--tag", "novalue"], "novalue");
    refused(
        &["syscall.null", "--fail-if-slower", "150"],
        "between 0 and 100",
    );
    refused(
        &["syscall.null", "--fail-if-slower=-5"],
        "between 0 and 100",
    );
    refused(
        &["syscall.null", "--fail-if-slower", "NaN"],
        "between 0 and 100",
    );
    refused(&[], "FIGURE");
    assert_eq!(
        std::fs::read(env.store()).unwrap(),
        before,
        "store unchanged"
    );
    // A figure only another host's runs state is named as stored elsewhere.
    let mut store = SqliteStore::open(&env.store()).unwrap();
    let mut other = run(5, "beta", &[], 1.0, 1.0);
    other.measurements.truncate(0);
    other
        .measurements
        .push(measurement("fs.open_close", Unit::Nanoseconds, 900.0));
    store.save(&other).unwrap();
    drop(store);
    refused(
        &["fs.open_close", "--host", "alpha"],
        "none of the 3 runs matching --host alpha states it",
    );
}
