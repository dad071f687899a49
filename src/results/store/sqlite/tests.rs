use super::*;
use crate::results::model::tests::empty_run;
use crate::results::model::{Measurement, Params, Status, Summary, Unit};

fn run(id: &str, started: &str, host: &str, tags: &[(&str, &str)]) -> Run {
    let mut r = empty_run();
    r.id = id.into();
    r.started_at = started.into();
    r.suite = Some("quick".into());
    r.fingerprint = serde_json::json!({ "hostname": host });
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
