//! Cases every store must pass alike, run against SQLite by tests/store.rs and against
//! PostgreSQL by tests/postgres.rs: reading the values and the documents of a set of runs in one
//! statement, and the upgrade of a store of schema 4, which gains each run's class.
#![allow(dead_code)]

use osmeter::results::fingerprint::Fingerprint;
use osmeter::results::model::{Measurement, Params, Run, Status, Summary, Unit};
use osmeter::results::store::schema::{self, Backend};
use osmeter::results::store::{RunFilter, Store};
use std::collections::BTreeMap;

/// A run of `host` on a machine of CPU `cpu` (4 CPUs, kernel 6.1.0-test), stating syscall.null
/// at `median` ns and, with `fork`, process.fork_exit at a thousand times that.
pub fn classed_run(id: &str, host: &str, cpu: &str, median: f64, fork: bool) -> Run {
    let mut run = Run::new(id.into(), "2026-11-01T10:00:00Z".into());
    run.fingerprint = Some(Fingerprint {
        hostname: Some(host.into()),
        cpu_model: Some(cpu.into()),
        cpus_online: Some(4),
        kernel_release: Some("6.1.0-test".into()),
        ..Default::default()
    });
    let probes = [
        ("syscall.null", median),
        ("process.fork_exit", median * 1000.0),
    ];
    let ns = Unit::Nanoseconds;
    for (probe, value) in probes.into_iter().take(if fork { 2 } else { 1 }) {
        let (low, high) = (value * 0.9, value * 1.1);
        let mut m = Measurement::not_measured(probe, Params::new(), ns, Status::Ok, String::new());
        (m.reason, m.samples) = (None, vec![low, value, high]);
        let ci95 = [low, high];
        m.summary = Some(Summary {
            median: value,
            ci95,
            ..Default::default()
        });
        run.measurements.push(m);
    }
    run
}

/// Values of the figure `key` as (place of the run among the ids asked for, value, interval),
/// by place.
fn values_of(
    store: &mut dyn Store,
    ids: &[&str],
    key: &str,
) -> Vec<(usize, f64, Option<[f64; 2]>)> {
    let got = store.figure_values_of(ids).unwrap();
    let mut values: Vec<_> = got[key]
        .iter()
        .map(|v| (v.run, v.value, v.interval))
        .collect();
    values.sort_by_key(|v| v.0);
    values
}

/// `figure_values_of` returns the values of exactly the runs asked for, each naming its run by
/// its place among the ids asked for.
pub fn values_of_a_set_of_runs(store: &mut dyn Store) {
    let runs = [
        classed_run("a", "alpha", "Xeon", 10.0, true),
        classed_run("b", "beta", "Xeon", 20.0, false),
        classed_run("c", "gamma", "Xeon", 30.0, true),
    ];
    for r in &runs {
        store.save(r).unwrap();
    }
    let stated = |r: &Run, i: usize| (r.figures()[i].value, r.figures()[i].interval);
    assert_eq!(stated(&runs[2], 0).0, 30.0);
    assert!(stated(&runs[2], 0).1.is_some());
    // c and a (in that order) and an id the store does not hold: b's values are not among them.
    let ids = ["c", "nothing", "a"];
    let got = store.figure_values_of(&ids).unwrap();
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        ["process.fork_exit", "syscall.null"]
    );
    assert!(got.values().flatten().all(|v| v.unit == Unit::Nanoseconds));
    for (i, key) in ["syscall.null", "process.fork_exit"]
        .into_iter()
        .enumerate()
    {
        let (c, a) = (stated(&runs[2], i), stated(&runs[0], i));
        assert_eq!(
            values_of(store, &ids, key),
            [(0, c.0, c.1), (2, a.0, a.1)],
            "{key}"
        );
    }
    let b = stated(&runs[1], 0);
    assert_eq!(values_of(store, &["b"], "syscall.null"), [(0, b.0, b.1)]);
    assert_eq!(store.figure_values_of(&["b"]).unwrap().len(), 1);
    assert!(store.figure_values_of(&[]).unwrap().is_empty());
}

/// `load_many` reads documents together, in the order asked, `None` for an id not stored; after
/// `spoil` runs the statement it is given, an unreadable document is an error naming its run.
pub fn documents_together(store: &mut dyn Store, spoil: impl FnOnce(&str)) {
    let a = classed_run("a1", "alpha", "Xeon", 10.0, true);
    let b = classed_run("b2", "beta", "Epyc", 20.0, false);
    store.save(&a).unwrap();
    store.save(&b).unwrap();
    let got = store.load_many(&["b2", "zz", "a1", "b2"]).unwrap();
    assert_eq!(got, [Some(b.clone()), None, Some(a), Some(b)]);
    assert!(store.load_many(&[]).unwrap().is_empty());
    spoil("UPDATE documents SET document = '{\"broken\": ' WHERE run_id = 'a1'");
    let err = format!("{:#}", store.load_many(&["b2", "a1"]).unwrap_err());
    assert!(err.contains("run a1 in the store is unreadable"), "{err}");
}

/// The runs of [`schema_4_store`]: one of a fully described machine, one without a
/// fingerprint, and one whose document no longer reads as a run (its fingerprint still does).
fn schema_4_runs() -> [Run; 3] {
    let mut xeon = classed_run("x", "alpha", "Xeon", 10.0, true);
    xeon.fingerprint.as_mut().unwrap().preempt_model = Some("voluntary".into());
    let mut bare = classed_run("n", "beta", "Xeon", 10.0, false);
    bare.fingerprint = None;
    [xeon, bare, classed_run("u", "gamma", "Epyc", 5.0, false)]
}

/// A store as osmeter wrote it at schema version 4, as one script for `backend`: the runs of
/// [`schema_4_runs`], and a fourth whose document is not JSON at all.
pub fn schema_4_store(backend: Backend) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let mut sql = String::from(
        "CREATE TABLE osmeter_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO osmeter_meta VALUES ('application', 'osmeter'), ('schema_version', '4');\n",
    );
    for (i, migration) in schema::MIGRATIONS[..4].iter().enumerate() {
        sql += migration;
        sql += ";\n";
        sql += schema::backend_indexes(i as i64 + 1, backend);
        sql += "\n";
    }
    let mut documents: Vec<(String, Option<String>, String)> = schema_4_runs()
        .iter()
        .map(|r| {
            let mut doc = serde_json::to_value(r).unwrap();
            if r.id == "u" {
                doc["measurements"] = serde_json::json!("not a list");
            }
            (r.id.clone(), r.host(), doc.to_string())
        })
        .collect();
    documents.push(("j".into(), Some("delta".into()), "garbage".into()));
    for (id, host, doc) in documents {
        sql += &format!(
            "INSERT INTO runs (id, kind, started_at, host, suite, tool_version, interrupted, \
             placed_at) VALUES ({id}, 'run', '2026-11-01T10:00:00Z', {host}, 'quick', '0', 0, \
             '2026-11-01T10:00:00Z');
             INSERT INTO documents VALUES ({id}, {doc});\n",
            id = quote(&id),
            host = host.as_deref().map_or("NULL".into(), quote),
            doc = quote(&doc),
        );
    }
    sql
}

/// The store made by [`schema_4_store`], opened by this osmeter: each run's class is filled
/// from its document (unknown only where the document is not JSON), the documents still load,
/// and a run saved now keeps its class.
pub fn schema_4_gains_classes(store: &mut dyn Store) {
    let runs = schema_4_runs();
    let classes: BTreeMap<String, Option<String>> = store
        .list(&RunFilter::default())
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r.host_class))
        .collect();
    assert_eq!(
        classes,
        BTreeMap::from([
            ("x".into(), Some(runs[0].class())),
            ("n".into(), Some(runs[1].class())),
            ("u".into(), Some(runs[2].class())),
            ("j".into(), None),
        ])
    );
    assert_eq!(runs[0].class(), "Xeon x4 | 6.1.0-test | voluntary");
    assert_eq!(runs[1].class(), "unknown machine");
    assert_eq!(runs[2].class(), "Epyc x4 | 6.1.0-test | ?");
    assert_eq!(store.load("x").unwrap().unwrap(), runs[0]);
    assert_eq!(store.load("n").unwrap().unwrap(), runs[1]);
    let new = classed_run("new", "alpha", "Xeon", 11.0, false);
    store.save(&new).unwrap();
    let listed = store.list(&RunFilter::default()).unwrap();
    let info = listed.iter().find(|r| r.id == "new").unwrap();
    assert_eq!(info.host_class.as_deref(), Some(new.class().as_str()));
}
