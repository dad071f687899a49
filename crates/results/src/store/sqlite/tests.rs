use super::*;
use crate::results::model::tests::empty_run;
use crate::results::model::{Measurement, Params, Status, Summary, Unit};
use std::path::{Path, PathBuf};

fn run(id: &str, started: &str, host: &str, tags: &[(&str, &str)]) -> Run {
    let mut r = empty_run();
    r.id = id.into();
    r.started_at = started.into();
    r.suite = Some("quick".into());
    r.fingerprint = crate::results::fingerprint::Fingerprint::from_json(
        serde_json::json!({ "hostname": host }),
    );
    r.tags = tags
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
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
    r.measurements.push(m);
    r
}

#[test]
fn saves_loads_lists_and_removes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/runs.db");
    let mut s = SqliteStore::open(&path).unwrap();
    let a = run("a1", "2026-11-01T10:00:00Z", "alpha", &[("kernel", "6.1")]);
    let b = run("b2", "2026-11-02T10:00:00Z", "beta", &[("kernel", "6.6")]);
    assert!(s.save(&a).unwrap());
    assert!(s.save(&b).unwrap());
    assert!(
        !s.save(&a).unwrap(),
        "a second save of the same id is a no-op"
    );
    assert_eq!(s.load("a1").unwrap().unwrap(), a);
    assert!(s.load("zz").unwrap().is_none());

    let all = s.list(&RunFilter::default()).unwrap();
    assert_eq!(
        all.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["b2", "a1"]
    );
    assert_eq!(all[0].figures, 1);
    assert_eq!(all[0].tags["kernel"], "6.6");
    let by_host = s
        .list(&RunFilter {
            host: Some("alpha".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(by_host.len(), 1);
    let by_tag = s
        .list(&RunFilter {
            tags: vec![("kernel".into(), "6.6".into())],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(by_tag[0].id, "b2");
    let since = s
        .list(&RunFilter {
            since: Some("2026-11-02".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(since.len(), 1);

    assert!(s.remove("a1").unwrap());
    assert!(!s.remove("a1").unwrap());
    let left: i64 = s
        .conn
        .query_row("SELECT count(*) FROM measurements", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 1, "the removed run's measurements went with it");
    drop(s);
    // Reopening keeps everything and does not migrate again.
    let mut s = SqliteStore::open(&path).unwrap();
    assert_eq!(s.ids().unwrap(), ["b2"]);
}

#[test]
fn a_file_that_is_not_sqlite_is_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "my precious notes, not a database\n").unwrap();
    let err = SqliteStore::open(&path).err().unwrap().to_string();
    assert!(err.contains("not a SQLite database"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "my precious notes, not a database\n"
    );
}

#[test]
fn another_programs_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE mine (x INTEGER)")
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    let err = SqliteStore::open(&path).err().unwrap().to_string();
    assert!(err.contains("not osmeter's"), "{err}");
    assert!(
        std::fs::read(&path).unwrap() == before,
        "the foreign database was modified"
    );
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    drop(SqliteStore::open(&path).unwrap());
    Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE osmeter_meta SET value = '99' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    let err = SqliteStore::open(&path).err().unwrap().to_string();
    assert!(
        err.contains("schema version 99") && err.contains("upgrade osmeter"),
        "{err}"
    );
}

/// A store of schema 1 whose version reads -1 was "migrated" from nothing to the current
/// version, stamped current, and then failed on the columns it never got.
#[test]
fn a_schema_version_no_osmeter_wrote_is_refused_before_any_write() {
    for version in ["-1", "0"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute(
                "CREATE TABLE osmeter_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                [],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO osmeter_meta VALUES ('application', 'osmeter'), \
                 ('schema_version', ?1)",
                [version],
            )
            .unwrap();
            conn.execute_batch(schema::MIGRATIONS[0]).unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        for err in [
            SqliteStore::open(&path).err(),
            SqliteStore::open_read_only(&path).err(),
        ] {
            let err = format!("{:#}", err.expect("refused"));
            assert!(
                err.contains(&format!(
                    "schema_version {version}, a version no osmeter wrote"
                )),
                "{err}"
            );
        }
        assert_eq!(std::fs::read(&path).unwrap(), before, "{version}");
    }
}

#[test]
fn concurrent_writers_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut s = SqliteStore::open(&path).unwrap();
                for i in 0..25 {
                    let r = run(&format!("w{w}-{i}"), "2026-11-01T00:00:00Z", "h", &[]);
                    assert!(s.save(&r).unwrap());
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let mut s = SqliteStore::open(&path).unwrap();
    assert_eq!(s.ids().unwrap().len(), 50);
}

#[test]
fn foreign_files_without_tables_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    for (name, sql) in [
        ("view.db", "CREATE VIEW answer AS SELECT 42"),
        ("appid.db", "PRAGMA application_id = 1234"),
        ("userver.db", "PRAGMA user_version = 7"),
    ] {
        let path = dir.path().join(name);
        Connection::open(&path).unwrap().execute_batch(sql).unwrap();
        let before = std::fs::read(&path).unwrap();
        for err in [
            SqliteStore::open(&path).err(),
            SqliteStore::open_read_only(&path).err(),
        ] {
            let err = format!("{:#}", err.expect("refused"));
            assert!(err.contains("not osmeter's"), "{name}: {err}");
        }
        assert_eq!(std::fs::read(&path).unwrap(), before, "{name} was modified");
    }
}

/// A store of a few runs with 200 bytes flipped at the start of the root page of `table`.
fn damaged_store(dir: &Path, table: &str) -> PathBuf {
    let path = dir.join(format!("{table}.db"));
    let mut s = SqliteStore::open(&path).unwrap();
    for i in 0..20 {
        let r = run(&format!("r{i:02}"), "2026-11-01T00:00:00Z", "h", &[]);
        s.save(&r).unwrap();
    }
    let (root, page_size): (i64, i64) = (
        s.conn
            .query_row(
                "SELECT rootpage FROM sqlite_master WHERE name = ?1",
                [table],
                |r| r.get(0),
            )
            .unwrap(),
        s.conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap(),
    );
    drop(s); // the last connection checkpoints the log into the file
    let mut bytes = std::fs::read(&path).unwrap();
    let start = ((root - 1) * page_size) as usize;
    for b in &mut bytes[start..start + 200] {
        *b ^= 0xff;
    }
    std::fs::write(&path, &bytes).unwrap();
    path
}

#[test]
fn a_damaged_store_is_never_written_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    // Damage that reading the list does not meet (an index only saving uses): the save's check
    // finds it anyway.
    let path = damaged_store(dir.path(), "measurements_probe");
    let before = std::fs::read(&path).unwrap();
    let mut s = SqliteStore::open(&path).unwrap();
    assert_eq!(s.list(&RunFilter::default()).unwrap().len(), 20);
    let new = run("new", "2026-11-02T00:00:00Z", "h", &[]);
    for err in [s.save(&new).unwrap_err(), s.remove("r01").unwrap_err()] {
        let err = format!("{err:#}");
        assert!(
            err.contains(&format!("the store {} is damaged", path.display()))
                && err.contains(".dump")
                && !err.contains("***"),
            "{err}"
        );
    }
    drop(s);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the damaged store was written"
    );
}

#[test]
fn reading_a_damaged_store_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = damaged_store(dir.path(), "runs");
    let err = SqliteStore::open_read_only(&path)
        .and_then(|mut s| s.list(&RunFilter::default()))
        .unwrap_err();
    let err = format!("{err:#}");
    assert!(
        err.contains(&format!("the store {} is damaged", path.display())),
        "{err}"
    );
}

#[test]
fn reading_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/runs.db");
    let mut s = SqliteStore::open_read_only(&path).unwrap();
    assert!(s.list(&RunFilter::default()).unwrap().is_empty());
    assert!(s.ids().unwrap().is_empty());
    assert!(!dir.path().join("sub").exists());
    // A store written earlier reads back the same through the read-only door.
    let path = dir.path().join("runs.db");
    SqliteStore::open(&path)
        .unwrap()
        .save(&run("a", "2026-11-01T00:00:00Z", "h", &[]))
        .unwrap();
    let mut s = SqliteStore::open_read_only(&path).unwrap();
    assert_eq!(s.ids().unwrap(), ["a"]);
    assert!(s.save(&run("b", "2026-11-01T00:00:00Z", "h", &[])).is_err());
    assert!(s.remove("a").is_err());
    drop(s);
    // Nor does reading leave SQLite's side files behind once it is done.
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["runs.db"]);
    assert_eq!(SqliteStore::open(&path).unwrap().ids().unwrap(), ["a"]);
}

#[test]
fn a_path_that_looks_like_a_uri_is_a_file_name() {
    // Relative names starting with "file:" would be read as URIs; they get a "./".
    assert_eq!(
        integrity::literal(Path::new("file:runs.db?mode=memory")).as_ref(),
        Path::new("./file:runs.db?mode=memory")
    );
    for kept in ["/tmp/file:x.db", "runs.db", "./file:x"] {
        assert_eq!(
            integrity::literal(Path::new(kept)).as_ref(),
            Path::new(kept)
        );
    }
}

/// What SQLite plans for `sql` (EXPLAIN QUERY PLAN's details, one per line).
fn plan(s: &SqliteStore, sql: &str, args: &[String]) -> String {
    let mut stmt = s
        .conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap();
    let rows = stmt
        .query_map(rusqlite::params_from_iter(args.iter()), |r| {
            r.get::<_, String>(3)
        })
        .unwrap();
    rows.map(Result::unwrap).collect::<Vec<_>>().join("\n")
}

#[test]
fn a_fleets_queries_are_served_by_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("runs.db")).unwrap();
    let since = RunFilter {
        since: Some("2026-11-01".into()),
        ..Default::default()
    };
    let (sql, args) = list_query(&since);
    let p = plan(&s, &sql, &args);
    assert!(
        p.contains("USING INDEX runs_placed_at (placed_at>?)"),
        "{p}"
    );
    let host = RunFilter {
        host: Some("alpha".into()),
        ..Default::default()
    };
    let (sql, args) = list_query(&host);
    let p = plan(&s, &sql, &args);
    assert!(
        p.contains("USING INDEX runs_host_placed_at (host=?)"),
        "{p}"
    );
    // No listing reads the whole figures table to count a run's figures.
    assert!(!p.contains("figures"), "{p}");
    let tagged = RunFilter {
        tags: vec![("wave".into(), "50".into())],
        ..Default::default()
    };
    let (sql, args) = list_query(&tagged);
    let p = plan(&s, &sql, &args);
    assert!(!p.contains("SCAN t"), "{p}");
    let p = plan(
        &s,
        "SELECT run_id, unit, direction, value, ci_low, ci_high FROM figures WHERE key = ?1",
        &["syscall.null".into()],
    );
    assert!(p.contains("USING INDEX figures_key (key=?)"), "{p}");
}

#[test]
fn a_store_of_schema_2_gains_the_fleet_columns_from_its_documents() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let mut old = run("old", "2026-11-01T10:00:00Z", "alpha", &[("kernel", "6.1")]);
    if let Some(f) = old.fingerprint.as_mut() {
        f.machine_id = Some("0123456789abcdef".into());
    }
    {
        // The store as osmeter wrote it at schema version 2.
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE osmeter_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO osmeter_meta VALUES ('application', 'osmeter'), ('schema_version', '2');",
        )
        .unwrap();
        for sql in &schema::MIGRATIONS[..2] {
            conn.execute_batch(sql).unwrap();
        }
        conn.execute(
            "INSERT INTO runs VALUES (?1, 'run', ?2, 'alpha', 'quick', ?3, 0, ?4)",
            params![
                old.id,
                old.started_at,
                old.tool_version,
                serde_json::to_string(&old).unwrap()
            ],
        )
        .unwrap();
        conn.execute("INSERT INTO run_tags VALUES ('old', 'kernel', '6.1')", [])
            .unwrap();
        insert_figures(&conn, &old).unwrap();
    }
    let mut s = SqliteStore::open(&path).unwrap();
    let list = s.list(&RunFilter::default()).unwrap();
    assert_eq!(list.len(), 1);
    let info = &list[0];
    assert_eq!(info.machine_id.as_deref(), Some("0123456789abcdef"));
    assert_eq!((info.figures, info.busy), (1, false));
    assert_eq!(info.placed_at, "2026-11-01T10:00:00Z");
    assert_eq!(
        (info.received_at.as_deref(), info.clock_offset),
        (None, None)
    );
    assert_eq!(s.load("old").unwrap().unwrap(), old);
    // A run saved now has its receipt and an offset of nil (the store's clock is this host's).
    s.save(&run("new", "2026-11-02T10:00:00Z", "alpha", &[]))
        .unwrap();
    let new = &s.list(&RunFilter::default()).unwrap()[0];
    assert_eq!(new.id, "new");
    assert!(new.received_at.is_some() && new.clock_offset.unwrap().abs() < 1.0);
}

#[test]
fn the_reads_of_a_set_of_runs_are_served_by_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("runs.db")).unwrap();
    let ids = vec![serde_json::to_string(&["a", "b"]).unwrap()];
    // A run's values from the index that holds them all, in its order: no table lookups, no sort.
    let p = plan(&s, &schema::figures_of_runs_statement(&DIALECT), &ids);
    assert!(
        p.contains("USING COVERING INDEX figures_run_values (run_id=?)")
            && !p.contains("TEMP B-TREE"),
        "{p}"
    );
    let p = plan(&s, &schema::documents_statement(&DIALECT), &ids);
    assert!(p.contains("SEARCH documents USING INDEX"), "{p}");
    let p = plan(&s, &schema::tags_statement(&DIALECT), &ids);
    assert!(p.contains("SEARCH run_tags USING INDEX"), "{p}");
}
