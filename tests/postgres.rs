//! The PostgreSQL store against a real server (a throwaway cluster, see common/pg.rs): the same
//! behaviour as the SQLite store, concurrent writers from separate processes, `push` without
//! duplicates, and clear errors when the server cannot be reached or refuses the password.

mod common;
#[path = "common/pg.rs"]
mod pg;
#[path = "common/store_cases.rs"]
mod store_cases;

use common::TestEnv;
use osmeter::results::model::{Measurement, Params, Run, Status, Summary, Unit};
use osmeter::results::store::postgres::PostgresStore;
use osmeter::results::store::{self, Location, RunFilter, Store};
use predicates::prelude::*;
use std::collections::BTreeMap;

/// Short samples of one cheap probe: these tests check storage, not figures.
const QUICK_RUN: &[&str] = &[
    "run",
    "syscall.null",
    "--repeat",
    "2",
    "--min-time",
    "1ms",
    "--warmup",
    "0",
];

fn run(id: &str, started: &str, host: &str, tags: &[(&str, &str)]) -> Run {
    let mut m = Measurement::not_measured(
        "syscall.null",
        Params::new(),
        Unit::Nanoseconds,
        Status::Ok,
        String::new(),
    );
    m.reason = None;
    m.samples = vec![1.0, 2.0, 3.0];
    m.summary = Some(Summary {
        median: 2.0,
        ci95: [1.0, 3.0],
        ..Default::default()
    });
    let mut skipped = Measurement::not_measured(
        "net.tcp",
        Params::new(),
        Unit::BytesPerSecond,
        Status::Skipped,
        "no network here".into(),
    );
    skipped
        .params
        .insert("size".into(), serde_json::json!(65536));
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
        measurements: vec![m, skipped],
        ..Run::new(id.into(), started.into())
    }
}

fn count(url_db: &str, sql: &str) -> i64 {
    let db = url_db.rsplit('/').next().unwrap();
    pg::cluster()
        .admin(db)
        .unwrap()
        .query_one(sql, &[])
        .unwrap()
        .get(0)
}

fn db_name(url: &str) -> &str {
    url.rsplit('/').next().unwrap()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn saves_loads_lists_and_removes() {
    let url = pg::fresh_database();
    let mut s = PostgresStore::open(&url).unwrap();
    let a = run("a1", "2026-11-01T10:00:00Z", "alpha", &[("kernel", "6.1")]);
    let b = run(
        "b2",
        "2026-11-02T10:00:00Z",
        "beta",
        &[("kernel", "6.6"), ("box", "vm")],
    );
    assert!(s.save(&a).unwrap());
    assert!(s.save(&b).unwrap());
    assert!(
        !s.save(&a).unwrap(),
        "a second save of the same id is a no-op"
    );
    assert_eq!(s.load("a1").unwrap().unwrap(), a);
    assert!(s.load("zz").unwrap().is_none());

    let all = s.list(&RunFilter::default()).unwrap();
    let ids: Vec<&str> = all.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["b2", "a1"], "newest first");
    assert_eq!(
        all[0].figures, 1,
        "the skipped measurement states no figure"
    );
    assert_eq!(all[0].host.as_deref(), Some("beta"));
    assert_eq!(all[0].tags.len(), 2);
    assert_eq!(all[1].tags["kernel"], "6.1");
    let only = |f: RunFilter| -> Vec<String> {
        PostgresStore::open(&url)
            .unwrap()
            .list(&f)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect()
    };
    assert_eq!(
        only(RunFilter {
            host: Some("alpha".into()),
            ..Default::default()
        }),
        ["a1"]
    );
    assert_eq!(
        only(RunFilter {
            tags: vec![("kernel".into(), "6.6".into()), ("box".into(), "vm".into())],
            ..Default::default()
        }),
        ["b2"]
    );
    assert_eq!(
        only(RunFilter {
            since: Some("2026-11-02".into()),
            suite: Some("quick".into()),
            ..Default::default()
        }),
        ["b2"]
    );
    assert!(only(RunFilter {
        suite: Some("full".into()),
        ..Default::default()
    })
    .is_empty());

    assert!(s.remove("a1").unwrap());
    assert!(!s.remove("a1").unwrap());
    assert_eq!(
        count(&url, "SELECT count(*) FROM measurements"),
        2,
        "the removed run's measurements went with it"
    );
    assert_eq!(count(&url, "SELECT count(*) FROM run_tags"), 2);
    drop(s);
    let mut s = PostgresStore::open(&url).unwrap();
    assert_eq!(s.ids().unwrap(), ["b2"]);
    assert_eq!(
        s.describe(),
        format!(
            "postgres://{}@127.0.0.1:{}/{}",
            pg::USER,
            pg::cluster().port,
            db_name(&url)
        )
    );
}

#[test]
fn the_schema_matches_sqlite_and_is_stamped() {
    let url = pg::fresh_database();
    drop(PostgresStore::open(&url).unwrap());
    let mut admin = pg::cluster().admin(db_name(&url)).unwrap();
    let meta: BTreeMap<String, String> = admin
        .query("SELECT key, value FROM osmeter_meta", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(meta["application"], "osmeter");
    assert_eq!(
        meta["schema_version"],
        osmeter::results::store::schema::current_version().to_string()
    );
}

#[test]
fn a_database_with_other_tables_is_refused_and_untouched() {
    let url = pg::fresh_database();
    let mut owner = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    owner
        .batch_execute("CREATE TABLE invoices (n INTEGER); INSERT INTO invoices VALUES (7)")
        .unwrap();
    let err = format!("{:#}", PostgresStore::open(&url).err().unwrap());
    assert!(
        err.contains("not osmeter's") && err.contains("left untouched"),
        "{err}"
    );
    assert!(!err.contains(pg::PASSWORD), "{err}");
    let tables = count(
        &url,
        "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'",
    );
    assert_eq!(tables, 1, "osmeter created tables in a foreign database");
    assert_eq!(count(&url, "SELECT sum(n) FROM invoices"), 7);

    // The way out the message names: a schema of osmeter's own in the same database.
    owner.batch_execute("CREATE SCHEMA osm").unwrap();
    let in_schema = format!("{url}?options=-csearch_path%3Dosm");
    let mut s = PostgresStore::open(&in_schema).unwrap();
    assert!(s
        .save(&run("x1", "2026-11-01T00:00:00Z", "h", &[]))
        .unwrap());
    assert_eq!(count(&url, "SELECT count(*) FROM osm.runs"), 1);
}

#[test]
fn a_newer_schema_is_refused() {
    let url = pg::fresh_database();
    let mut s = PostgresStore::open(&url).unwrap();
    s.save(&run("r1", "2026-11-01T00:00:00Z", "h", &[]))
        .unwrap();
    drop(s);
    let mut admin = pg::cluster().admin(db_name(&url)).unwrap();
    admin
        .execute(
            "UPDATE osmeter_meta SET value = '99' WHERE key = 'schema_version'",
            &[],
        )
        .unwrap();
    let err = format!("{:#}", PostgresStore::open(&url).err().unwrap());
    assert!(
        err.contains("schema version 99") && err.contains("upgrade osmeter"),
        "{err}"
    );
    let v: String = admin
        .query_one(
            "SELECT value FROM osmeter_meta WHERE key = 'schema_version'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(v, "99");
    assert_eq!(count(&url, "SELECT count(*) FROM runs"), 1);
}

#[test]
fn a_user_who_may_not_create_tables_is_told_what_to_grant() {
    let url = pg::fresh_database();
    let mut admin = pg::cluster().admin(db_name(&url)).unwrap();
    // A database the test role does not own: since PostgreSQL 15 only the owner creates in public.
    admin.batch_execute("CREATE DATABASE not_mine").unwrap();
    let err = format!(
        "{:#}",
        PostgresStore::open(&pg::cluster().url(pg::USER, pg::PASSWORD, "not_mine"))
            .err()
            .unwrap()
    );
    assert!(
        err.contains("may not create tables") && err.contains("GRANT CREATE"),
        "{err}"
    );
}

#[test]
fn first_writers_racing_on_an_empty_database_all_land() {
    let url = pg::fresh_database();
    let writers: Vec<_> = (0..6)
        .map(|w| {
            let url = url.clone();
            std::thread::spawn(move || {
                let mut s = PostgresStore::open(&url).unwrap();
                for i in 0..5 {
                    let r = run(&format!("w{w}-{i}"), "2026-11-01T00:00:00Z", "h", &[]);
                    assert!(s.save(&r).unwrap());
                }
                // Everyone also tries the same id: exactly one wins.
                s.save(&run("shared", "2026-11-01T00:00:00Z", "h", &[]))
                    .unwrap()
            })
        })
        .collect();
    let won: usize = writers
        .into_iter()
        .map(|w| usize::from(w.join().unwrap()))
        .sum();
    assert_eq!(won, 1);
    assert_eq!(PostgresStore::open(&url).unwrap().ids().unwrap().len(), 31);
    assert_eq!(count(&url, "SELECT count(*) FROM measurements"), 62);
}

#[test]
fn two_osmeter_processes_writing_at_once_both_land() {
    let url = pg::fresh_database();
    let env = TestEnv::new();
    let children: Vec<_> = (0..2)
        .map(|_| {
            env.osmeter_std()
                .args(QUICK_RUN)
                .args(["--store", &url])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(
            err.contains("saved to postgres://osmeter@127.0.0.1"),
            "{err}"
        );
        assert!(!err.contains(pg::PASSWORD), "{err}");
    }
    let out = env
        .osmeter()
        .args(["runs", "--json", "--store", &url])
        .output()
        .unwrap();
    assert!(out.status.success());
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert!(list.iter().all(|r| r["figures"] == 1));
    assert!(!env.store().exists(), "nothing was written locally");
}

#[test]
fn pushing_the_same_runs_twice_makes_no_duplicates() {
    let url = pg::fresh_database();
    let env = TestEnv::new();
    let mut ids = Vec::new();
    for tag in ["kernel=a", "kernel=b"] {
        let out = env
            .osmeter()
            .args(QUICK_RUN)
            .args(["--json", "--tag", tag])
            .output()
            .unwrap();
        assert!(out.status.success());
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        ids.push(doc["id"].as_str().unwrap().to_string());
    }
    // One by id prefix first, then everything, twice.
    env.osmeter()
        .args(["push", &ids[0][..ids[0].len() - 2], "--to", &url])
        .assert()
        .success()
        .stdout(predicate::str::contains("copied 1 run to"))
        .stdout(predicate::str::contains(pg::PASSWORD).not());
    env.osmeter()
        .args(["push", "--all", "--to", &url])
        .assert()
        .success()
        .stdout(predicate::str::contains("copied 1 run to"))
        .stdout(predicate::str::contains("skipped 1 already there"));
    let out = env
        .osmeter()
        .args(["push", "--all", "--json", "--to", &url])
        .output()
        .unwrap();
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["copied"].as_array().unwrap().len(), 0);
    assert_eq!(report["skipped"].as_array().unwrap().len(), 2);

    assert_eq!(count(&url, "SELECT count(*) FROM runs"), 2);
    assert_eq!(count(&url, "SELECT count(*) FROM measurements"), 2);
    // What arrived is what was measured, tags included.
    let mut local = Location::Sqlite(env.store()).open().unwrap();
    let mut remote = PostgresStore::open(&url).unwrap();
    for id in &ids {
        assert_eq!(remote.load(id).unwrap(), local.load(id).unwrap());
    }
    env.osmeter()
        .args(["runs", "--store", &url, "--tag", "kernel=b"])
        .assert()
        .success()
        .stdout(predicate::str::contains(&ids[1]))
        .stdout(predicate::str::contains(&ids[0]).not());
}

#[test]
fn push_usage_errors() {
    let env = TestEnv::new();
    env.osmeter()
        .args(["push", "--to", "/tmp/x.db"])
        .assert()
        .code(2);
    env.osmeter()
        .args(["push", "--all", "--to"])
        .arg(env.store())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the store the runs come from"));
    env.osmeter()
        .args([
            "push",
            "--all",
            "--to",
            "postgres://u:secret@host:notaport/db",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("malformed"))
        .stderr(predicate::str::contains("secret").not());
}

#[test]
fn wrong_password_is_a_clear_error_naming_server_and_user() {
    let url = pg::fresh_database();
    let bad = pg::cluster().url(pg::USER, "not-the-password", db_name(&url));
    let env = TestEnv::new();
    let server = format!("127.0.0.1:{}", pg::cluster().port);
    env.osmeter()
        .args(["runs", "--store", &bad])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "PostgreSQL at {server} refused user \"osmeter\""
        )))
        .stderr(predicate::str::contains("password"))
        .stderr(predicate::str::contains("not-the-password").not());
    // push names the destination the same way, and leaves the local store as it was.
    env.osmeter().args(QUICK_RUN).assert().success();
    let before = std::fs::read(env.store()).unwrap();
    env.osmeter()
        .args(["push", "--all", "--to", &bad])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("refused user"));
    assert_eq!(std::fs::read(env.store()).unwrap(), before);
}

#[test]
fn a_missing_database_is_named() {
    pg::cluster();
    let url = pg::cluster().url(pg::USER, pg::PASSWORD, "no_such_db");
    let err = format!("{:#}", PostgresStore::open(&url).err().unwrap());
    assert!(
        err.contains("database \"no_such_db\" does not exist") && err.contains("createdb"),
        "{err}"
    );
}

#[test]
fn a_url_that_requires_tls_is_refused_with_the_way_out() {
    let url = format!("{}?sslmode=require", pg::fresh_database());
    let err = format!("{:#}", PostgresStore::open(&url).err().unwrap());
    assert!(
        err.contains("TLS") && err.contains("sslmode=disable"),
        "{err}"
    );
}

#[test]
fn unreachable_port_is_a_clear_error() {
    let env = TestEnv::new();
    let port = free_port();
    env.osmeter()
        .args(["runs", "--store"])
        .arg(format!("postgres://osmeter:pw@127.0.0.1:{port}/x"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "cannot reach PostgreSQL at 127.0.0.1:{port} (user \"osmeter\")"
        )))
        .stderr(predicate::str::contains("listens on that address and port"));
}

#[test]
fn a_run_the_server_refuses_is_kept_locally_with_a_push_hint() {
    let url = pg::fresh_database();
    let bad = pg::cluster().url(pg::USER, "not-the-password", db_name(&url));
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("runs.db");
    let r = run("kept-1", "2026-11-01T00:00:00Z", "h", &[]);
    let err = store::save_with_fallback_to(
        &Location::Postgres(bad),
        Some(Ok(Location::Sqlite(local.clone()))),
        &r,
    )
    .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("refused user"), "{text}");
    assert!(
        text.contains(&format!(
            "osmeter push kept-1 --store {} --to URL",
            local.display()
        )),
        "{text}"
    );
    assert!(!text.contains("not-the-password"), "{text}");
    let mut s = Location::Sqlite(local).open().unwrap();
    assert_eq!(s.load("kept-1").unwrap().unwrap(), r);

    // And when the server is fine, nothing goes to the fallback.
    let elsewhere = dir.path().join("unused.db");
    let saved = store::save_with_fallback_to(
        &Location::Postgres(url),
        Some(Ok(Location::Sqlite(elsewhere.clone()))),
        &r,
    )
    .unwrap();
    assert!(saved.new && saved.store.starts_with("postgres://osmeter@"));
    assert!(!elsewhere.exists());
}

/// End to end: `osmeter run --store postgres://` with a wrong password still keeps the run locally.
/// Needs run.rs to call `store::save_with_fallback` (owned by the lead).
#[test]
fn run_with_a_refused_password_keeps_the_run_locally() {
    let url = pg::fresh_database();
    let bad = pg::cluster().url(pg::USER, "not-the-password", db_name(&url));
    let env = TestEnv::new();
    let data = env.dir.path().join("xdg");
    let out = env
        .osmeter()
        .env("XDG_DATA_HOME", &data)
        .args(QUICK_RUN)
        .args(["--json", "--store", &bad])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("refused user \"osmeter\""), "{err}");
    assert!(err.contains("osmeter push"), "{err}");
    assert!(!err.contains("not-the-password"), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = doc["id"].as_str().unwrap();
    let local = data.join("osmeter/runs.db");
    let mut s = Location::Sqlite(local.clone()).open().unwrap();
    assert!(
        s.load(id).unwrap().is_some(),
        "the run was not kept locally"
    );
    // And the hint works: push it once the password is right.
    env.osmeter()
        .args(["push", id, "--store"])
        .arg(&local)
        .args(["--to", &url])
        .assert()
        .success()
        .stdout(predicate::str::contains("copied 1 run"));
}

/// `latency` (a short run of the normal class, no root needed) and `stat` with a PostgreSQL store
/// that nothing listens on keep their run in the local store and say so on stderr, as `run` does.
#[test]
fn latency_and_stat_keep_their_run_locally_when_the_server_is_unreachable() {
    let port = free_port();
    let url = format!("postgres://osmeter:pw@127.0.0.1:{port}/x");
    let cases: [&[&str]; 2] = [
        &["latency", "--duration", "1s", "--classes", "normal"],
        &["stat", "--repeat", "1"],
    ];
    for args in cases {
        let env = TestEnv::new();
        let data = env.dir.path().join("xdg");
        let mut cmd = env.osmeter();
        cmd.env("XDG_DATA_HOME", &data)
            .args(args)
            .args(["--store", &url]);
        if args[0] == "stat" {
            cmd.args(["--", "true"]);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let local = data.join("osmeter/runs.db");
        assert!(
            err.contains(&format!("127.0.0.1:{port}")),
            "{args:?}: {err}"
        );
        assert!(
            err.contains(&local.display().to_string()),
            "{args:?} does not name the local store it kept the run in: {err}"
        );
        let mut s = Location::Sqlite(local).open().unwrap();
        let kept = s.list(&RunFilter::default()).unwrap();
        assert_eq!(kept.len(), 1, "{args:?}: {err}");
        assert!(
            err.contains(&format!("osmeter push {}", kept[0].id)),
            "{args:?} gives no push hint: {err}"
        );
    }
}

#[test]
fn a_database_of_schema_2_gains_the_fleet_columns_from_its_documents() {
    let url = pg::fresh_database();
    let mut old = run("old", "2026-11-01T10:00:00Z", "alpha", &[("kernel", "6.1")]);
    if let Some(f) = old.fingerprint.as_mut() {
        f.machine_id = Some("0123456789abcdef".into());
    }
    {
        // The database as osmeter wrote it at schema version 2, by the role that owns it.
        use osmeter::results::store::schema;
        let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        c.batch_execute(
            "CREATE TABLE osmeter_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO osmeter_meta VALUES ('application', 'osmeter'), ('schema_version', '2');",
        )
        .unwrap();
        for sql in &schema::MIGRATIONS[..2] {
            c.batch_execute(sql).unwrap();
        }
        c.execute(
            "INSERT INTO runs VALUES ($1, 'run', $2, 'alpha', 'quick', $3, 0, $4)",
            &[
                &old.id,
                &old.started_at,
                &old.tool_version,
                &serde_json::to_string(&old).unwrap(),
            ],
        )
        .unwrap();
        for f in schema::figure_rows(&old) {
            c.execute(
                "INSERT INTO figures VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                &[
                    &old.id,
                    &f.seq,
                    &f.key,
                    &f.group,
                    &f.unit,
                    &f.direction,
                    &f.value,
                    &f.ci_low,
                    &f.ci_high,
                ],
            )
            .unwrap();
        }
    }
    let mut s = PostgresStore::open(&url).unwrap();
    let list = s.list(&RunFilter::default()).unwrap();
    assert_eq!(list.len(), 1);
    let info = &list[0];
    assert_eq!(info.machine_id.as_deref(), Some("0123456789abcdef"));
    assert_eq!((info.figures, info.busy), (old.figures().len(), false));
    assert_eq!(info.placed_at, "2026-11-01T10:00:00Z");
    assert_eq!(
        (info.received_at.as_deref(), info.clock_offset),
        (None, None)
    );
    assert_eq!(s.load("old").unwrap().unwrap(), old);
    // A run saved now carries the server's receipt and this host's offset from it.
    s.save(&run("new", "2026-11-02T10:00:00Z", "alpha", &[]))
        .unwrap();
    let new = &s.list(&RunFilter::default()).unwrap()[0];
    assert_eq!(new.id, "new");
    assert!(new.received_at.is_some() && new.clock_offset.unwrap().abs() < 60.0);
    assert_eq!(
        count(
            &url,
            "SELECT count(*) FROM pg_indexes WHERE indexname = 'runs_placed_at'"
        ),
        1
    );
}

/// The plan PostgreSQL makes for `sql` with `args`, one line per node. Sequential scans are
/// priced out, so that on a few rows the plan shows which index can serve the query at all.
fn plan(url: &str, sql: &str, args: &[String]) -> String {
    let params: Vec<&(dyn postgres::types::ToSql + Sync)> = args
        .iter()
        .map(|a| a as &(dyn postgres::types::ToSql + Sync))
        .collect();
    plan_of(url, sql, &params)
}

/// [`plan`] for arguments of any type.
fn plan_of(url: &str, sql: &str, params: &[&(dyn postgres::types::ToSql + Sync)]) -> String {
    let mut c = pg::cluster().admin(db_name(url)).unwrap();
    c.batch_execute("SET enable_seqscan = off").unwrap();
    c.query(&format!("EXPLAIN (COSTS OFF) {sql}"), params)
        .unwrap()
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_fleets_queries_are_served_by_indexes() {
    use osmeter::results::store::postgres::list_statement;
    let url = pg::fresh_database();
    let mut s = PostgresStore::open(&url).unwrap();
    for (i, host) in ["alpha", "beta", "gamma"].iter().enumerate() {
        let started = format!("2026-11-0{}T10:00:00Z", i + 1);
        s.save(&run(&format!("r{i}"), &started, host, &[("wave", "1")]))
            .unwrap();
    }
    let since = RunFilter {
        since: Some("2026-11-02".into()),
        ..Default::default()
    };
    let (sql, args) = list_statement(&since);
    let p = plan(&url, &sql, &args);
    assert!(p.contains("runs_placed_at"), "{p}");
    let host = RunFilter {
        host: Some("beta".into()),
        ..Default::default()
    };
    let (sql, args) = list_statement(&host);
    let p = plan(&url, &sql, &args);
    assert!(p.contains("runs_host_placed_at"), "{p}");
    // Listing reads neither the documents nor the figures.
    assert!(!p.contains("documents") && !p.contains("figures"), "{p}");
    let tagged = RunFilter {
        tags: vec![("wave".into(), "1".into())],
        ..Default::default()
    };
    let (sql, args) = list_statement(&tagged);
    let p = plan(&url, &sql, &args);
    assert!(
        p.contains("run_tags_key_value") || p.contains("run_tags_pkey"),
        "{p}"
    );
    let p = plan(
        &url,
        "SELECT run_id, unit, direction, value, ci_low, ci_high FROM figures WHERE key = $1",
        &["syscall.null".into()],
    );
    assert!(p.contains("figures_key"), "{p}");
    let p = plan(
        &url,
        "SELECT document FROM documents WHERE run_id = $1",
        &["r1".into()],
    );
    assert!(p.contains("documents_pkey"), "{p}");
    // What a fleet's view and `compare --tag-a/--tag-b` read for a set of runs, in one
    // statement each: every row through an index on the run id (on a fleet's ten thousand runs,
    // benches/fleet_scale.rs shows the values read in the order of that index, without a sort).
    use osmeter::results::store::postgres::DIALECT;
    use osmeter::results::store::schema;
    let ids = vec!["r0", "r2"];
    let p = plan_of(&url, &schema::figures_of_runs_statement(&DIALECT), &[&ids]);
    assert!(p.contains("figures_pkey"), "{p}");
    let p = plan_of(&url, &schema::documents_statement(&DIALECT), &[&ids]);
    assert!(p.contains("documents_pkey"), "{p}");
    let p = plan_of(&url, &schema::tags_statement(&DIALECT), &[&ids]);
    assert!(p.contains("run_tags_pkey"), "{p}");
}

#[test]
fn the_values_of_a_set_of_runs_are_theirs_and_no_others() {
    let url = pg::fresh_database();
    store_cases::values_of_a_set_of_runs(&mut PostgresStore::open(&url).unwrap());
}

#[test]
fn documents_are_loaded_together_in_the_order_asked() {
    let url = pg::fresh_database();
    let mut admin = pg::cluster().admin(db_name(&url)).unwrap();
    store_cases::documents_together(&mut PostgresStore::open(&url).unwrap(), |sql| {
        admin.batch_execute(sql).unwrap();
    });
}

#[test]
fn a_database_of_schema_4_gains_each_runs_class_from_its_document() {
    use osmeter::results::store::schema;
    let url = pg::fresh_database();
    // Written by the role that owns the database, as osmeter would have.
    postgres::Client::connect(&url, postgres::NoTls)
        .unwrap()
        .batch_execute(&store_cases::schema_4_store(schema::Backend::Postgres))
        .unwrap();
    store_cases::schema_4_gains_classes(&mut PostgresStore::open(&url).unwrap());
    assert_eq!(
        count(
            &url,
            "SELECT value::int8 FROM osmeter_meta WHERE key = 'schema_version'"
        ),
        schema::current_version()
    );
}
