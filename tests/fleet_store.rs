//! The shared store under many writers and faults, against a real PostgreSQL (a throwaway cluster,
//! see common/pg.rs): fifty `osmeter push` processes at once land every run exactly once; the server
//! restarting while fifty pushes wait in the middle of their saves loses nothing, doubles nothing,
//! says what happened, and the same pushes repeated land the rest once; a host whose clock is
//! hours ahead is placed by the server's clock; two hosts of one name are told apart by machine
//! id; a password full of URL characters works percent-encoded.

mod common;
#[path = "common/fleet_gen.rs"]
mod fleet_gen;
#[path = "common/pg.rs"]
mod pg;

use common::TestEnv;
use osmeter::results::model::Run;
use osmeter::results::store::sqlite::SqliteStore;
use osmeter::results::store::Store;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{OnceLock, RwLock};
use std::time::{Duration, Instant};

/// The restart test stops the server every other test here uses, and the fifty pushes take most
/// of its connections: those two run alone.
static SERVER: RwLock<()> = RwLock::new(());

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

/// A real run (one cheap probe, short samples) that the made-up fleet copies.
fn template() -> &'static Run {
    static TEMPLATE: OnceLock<Run> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let env = TestEnv::new();
        let mut args = QUICK_RUN.to_vec();
        args.push("--json");
        serde_json::from_value(env.json(&args)).expect("a run document")
    })
}

/// Local stores of `hosts` made-up hosts with `runs` runs each; with `overlap`, each store also
/// holds the first run of the host before it, so two pushes send that run at once.
fn local_stores(dir: &Path, hosts: usize, runs: usize, overlap: bool) -> Vec<PathBuf> {
    (0..hosts)
        .map(|h| {
            let path = dir.join(format!("host-{h}.db"));
            let mut store = SqliteStore::open(&path).unwrap();
            for k in 0..runs {
                store.save(&fleet_gen::fleet_run(template(), h, k)).unwrap();
            }
            if overlap {
                let other = (h + hosts - 1) % hosts;
                store
                    .save(&fleet_gen::fleet_run(template(), other, 0))
                    .unwrap();
            }
            path
        })
        .collect()
}

fn push(local: &Path, url: &str, extra: &[&str]) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("osmeter"))
        .args(["push", "--json", "--store"])
        .arg(local)
        .args(["--to", url])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// What one push said: (exit code, copied ids, skipped ids, stderr).
fn finished(child: Child) -> (i32, Vec<String>, Vec<String>, String) {
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let ids = |doc: &serde_json::Value, key: &str| -> Vec<String> {
        doc[key]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    (
        out.status.code().unwrap_or(-1),
        ids(&doc, "copied"),
        ids(&doc, "skipped"),
        err,
    )
}

/// Rows of each table in the database of `url`, and the runs stored more than once.
fn rows(url: &str) -> [i64; 5] {
    let db = url.rsplit('/').next().unwrap();
    let mut c = pg::cluster().admin(db).unwrap();
    let n = |c: &mut postgres::Client, sql: &str| -> i64 { c.query_one(sql, &[]).unwrap().get(0) };
    [
        n(&mut c, "SELECT count(*) FROM runs"),
        n(&mut c, "SELECT count(DISTINCT id) FROM runs"),
        n(&mut c, "SELECT count(*) FROM measurements"),
        n(&mut c, "SELECT count(*) FROM figures"),
        n(&mut c, "SELECT count(*) FROM run_tags"),
    ]
}

/// The rows `runs` runs of the template make in each table.
fn rows_of(runs: i64) -> [i64; 5] {
    let t = template();
    [
        runs,
        runs,
        runs * t.measurements.len() as i64,
        runs * t.figures().len() as i64,
        runs * 2,
    ]
}

#[test]
fn fifty_pushes_at_once_land_every_run_exactly_once() {
    // Fifty sessions at once: alone, so that the server's connection limit is theirs.
    let _alone = SERVER.write().unwrap_or_else(|e| e.into_inner());
    let url = pg::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let stores = local_stores(dir.path(), 50, 4, true);
    let children: Vec<Child> = stores.iter().map(|s| push(s, &url, &["--all"])).collect();
    let mut copied = Vec::new();
    let mut skipped = 0;
    for child in children {
        let (code, c, s, err) = finished(child);
        assert_eq!(code, 0, "{err}");
        assert!(!err.contains(pg::PASSWORD), "{err}");
        copied.extend(c);
        skipped += s.len();
    }
    // Every run copied by exactly one of the pushes; the 50 runs two stores hold, skipped by the
    // other (already there, or landed by the other push meanwhile).
    let before = copied.len();
    copied.sort();
    copied.dedup();
    assert_eq!((before, copied.len(), skipped), (200, 200, 50));
    assert_eq!(rows(&url), rows_of(200));
    // The same fifty pushes again: nothing new.
    let children: Vec<Child> = stores.iter().map(|s| push(s, &url, &["--all"])).collect();
    for child in children {
        let (code, c, s, err) = finished(child);
        assert_eq!((code, c.len(), s.len()), (0, 0, 5), "{err}");
    }
    assert_eq!(rows(&url), rows_of(200));
}

/// Waits until `n` sessions of the database wait for the lock on `table`.
fn wait_for_waiters(db: &str, table: &str, n: i64) {
    let mut c = pg::cluster().admin(db).unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let waiting: i64 = c
            .query_one(
                "SELECT count(*) FROM pg_locks l JOIN pg_class t ON t.oid = l.relation \
                 WHERE NOT l.granted AND t.relname = $1",
                &[&table],
            )
            .unwrap()
            .get(0);
        if waiting >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {waiting} of {n} pushes reached the locked table"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_server_restart_during_fifty_pushes_loses_and_doubles_nothing() {
    let _alone = SERVER.write().unwrap_or_else(|e| e.into_inner());
    let url = pg::fresh_database();
    let db = url.rsplit('/').next().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let stores = local_stores(dir.path(), 50, 3, false);
    // One run of each host is there already.
    for (h, store) in stores.iter().enumerate() {
        let id = fleet_gen::fleet_run(template(), h, 0).id;
        let (code, c, _, err) = finished(push(store, &url, &[&id]));
        assert_eq!((code, c.len()), (0, 1), "{err}");
    }
    // Every push then stops inside its first save, after its run's row, before its figures: the
    // figures table is locked. The server restarts while all fifty wait there.
    let mut locker = pg::cluster().admin(&db).unwrap();
    let mut tx = locker.transaction().unwrap();
    tx.batch_execute("LOCK TABLE figures IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let children: Vec<Child> = stores.iter().map(|s| push(s, &url, &["--all"])).collect();
    wait_for_waiters(&db, "figures", 50);
    pg::cluster().restart().unwrap();
    drop(tx);
    drop(locker);
    for child in children {
        let (code, copied, _, err) = finished(child);
        assert_eq!((code, copied.len()), (1, 0), "{err}");
        assert!(
            err.contains("ended the connection")
                && err.contains("shut down or restarted")
                && err.contains("repeating the same command copies the rest")
                && !err.contains(pg::PASSWORD),
            "{err}"
        );
    }
    // Nothing of the saves the restart cut: no run, measurement, figure or tag of them.
    assert_eq!(rows(&url), rows_of(50));
    // The same pushes repeated, all at once: each lands its other two runs and skips the first.
    let children: Vec<Child> = stores.iter().map(|s| push(s, &url, &["--all"])).collect();
    for child in children {
        let (code, c, s, err) = finished(child);
        assert_eq!((code, c.len(), s.len()), (0, 2, 1), "{err}");
    }
    assert_eq!(rows(&url), rows_of(150));
}

fn runs_json(env: &TestEnv, url: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["runs", "--json", "--store", url];
    args.extend_from_slice(extra);
    env.json(&args).as_array().unwrap().clone()
}

#[test]
fn a_host_whose_clock_is_hours_ahead_is_placed_by_the_servers_clock() {
    let _shared = SERVER.read().unwrap_or_else(|e| e.into_inner());
    if common::which("faketime").is_none() {
        assert!(std::env::var_os("CI").is_none(), "CI installs faketime");
        eprintln!("skipped: needs faketime (apt-get install faketime)");
        return;
    }
    let url = pg::fresh_database();
    let env = TestEnv::new();
    let osmeter = assert_cmd::cargo::cargo_bin("osmeter");
    // The host five hours ahead measures and pushes later; its time is all it knows.
    let ahead = |args: &[&str]| {
        let out = Command::new("faketime")
            .args(["-f", "+5h"])
            .arg(&osmeter)
            .args(args)
            .env("OSMETER_STORE", env.store())
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    ahead(QUICK_RUN);
    ahead(&["push", "--all", "--to", &url]);
    std::thread::sleep(Duration::from_millis(1100));
    // A host with a good clock measures after it, straight into the server.
    env.osmeter()
        .args(QUICK_RUN)
        .args(["--store", &url])
        .assert()
        .success();
    let list = runs_json(&env, &url, &[]);
    assert_eq!(list.len(), 2);
    let (newest, skewed) = (&list[0], &list[1]);
    // By its own clock the skewed run is the newer; by the server's it came first.
    assert!(
        skewed["started_at"].as_str() > newest["started_at"].as_str(),
        "{list:?}"
    );
    let offset = skewed["clock_offset"].as_f64().unwrap();
    assert!((offset - 5.0 * 3600.0).abs() < 120.0, "{offset}");
    assert!(newest["clock_offset"].as_f64().unwrap().abs() < 120.0);
    assert!(skewed["placed_at"].as_str() < newest["started_at"].as_str());
    assert!(skewed["received_at"].is_string());
    // --since is judged on the server's clock: the skewed run started before the good one.
    let since = runs_json(
        &env,
        &url,
        &["--since", newest["started_at"].as_str().unwrap()],
    );
    assert_eq!(since.len(), 1);
    assert_eq!(since[0]["id"], newest["id"]);
    // The text says so.
    let out = env
        .osmeter()
        .args(["runs", "--store", &url])
        .output()
        .unwrap();
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        text.contains("h 00 min ahead: placed at") || text.contains("4 h 59 min ahead: placed at"),
        "{text}"
    );
    assert!(
        err.contains("1 run(s) came from a host whose clock was off"),
        "{err}"
    );
    // History follows the same order: the skewed run first.
    // (--include-busy: this shared machine is busy as often as not, which is not the point here.)
    let history = env.json(&[
        "history",
        "syscall.null",
        "--include-busy",
        "--json",
        "--store",
        &url,
    ]);
    let points: Vec<&str> = history["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["run"].as_str().unwrap())
        .collect();
    assert_eq!(
        points,
        [
            skewed["id"].as_str().unwrap(),
            newest["id"].as_str().unwrap()
        ]
    );
}

#[test]
fn two_hosts_of_one_name_are_told_apart_by_machine_id() {
    let _shared = SERVER.read().unwrap_or_else(|e| e.into_inner());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/etc/machine-id").is_file() {
        eprintln!("skipped: needs root (a mount namespace) and /etc/machine-id");
        return;
    }
    let url = pg::fresh_database();
    let env = TestEnv::new();
    let ids = [
        "11111111111111111111111111111111",
        "22222222222222222222222222222222",
    ];
    for (i, id) in ids.iter().enumerate() {
        let file = env.dir.path().join(format!("machine-id-{i}"));
        std::fs::write(&file, format!("{id}\n")).unwrap();
        let local = env.dir.path().join(format!("twin-{i}.db"));
        // A host of its own: its own host name and machine id, in namespaces that end with it.
        let out = Command::new("unshare")
            .args(["--uts", "--mount", "--", "sh", "-c"])
            .arg(
                "hostname twin && mount --bind \"$ID\" /etc/machine-id && \
                 exec \"$OSMETER\" run syscall.null --repeat 2 --min-time 1ms --warmup 0 \
                 --store \"$LOCAL\"",
            )
            .env("ID", &file)
            .env("OSMETER", assert_cmd::cargo::cargo_bin("osmeter"))
            .env("LOCAL", &local)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = Command::new(assert_cmd::cargo::cargo_bin("osmeter"))
            .args(["push", "--all", "--store"])
            .arg(&local)
            .args(["--to", &url])
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    let keyed: Vec<String> = ids
        .iter()
        .map(|id| osmeter::results::fingerprint::parse::keyed_machine_id(id))
        .collect();
    let list = runs_json(&env, &url, &[]);
    let mut machines: Vec<&str> = list
        .iter()
        .map(|r| r["machine_id"].as_str().unwrap())
        .collect();
    machines.sort();
    let mut want: Vec<&str> = keyed.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(machines, want);
    assert!(list.iter().all(|r| r["host"] == "twin"));
    // Both lines of `runs` and both hosts of `fleet` carry their machine's id.
    let text = env
        .osmeter()
        .args(["runs", "--store", &url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let fleet = env.json(&["fleet", "--json", "--store", &url]);
    let hosts: Vec<&str> = fleet["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    for id in &keyed {
        let name = format!("twin [{}]", &id[..8]);
        assert!(text.contains(&name), "{text}");
        assert!(hosts.contains(&name.as_str()), "{hosts:?}");
    }
    assert_eq!(hosts.len(), 2);
}

/// Percent-encodes every byte but the unreserved ones of RFC 3986.
fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[test]
fn a_password_of_url_characters_works_percent_encoded() {
    let _shared = SERVER.read().unwrap_or_else(|e| e.into_inner());
    let cluster = pg::cluster();
    let password = "p@ss:w/rd?#%&=+ $'\"é\\[]";
    let mut admin = cluster.admin("postgres").unwrap();
    admin
        .batch_execute(&format!(
            "CREATE ROLE odd LOGIN PASSWORD $pw${password}$pw$"
        ))
        .unwrap();
    admin
        .batch_execute("CREATE DATABASE odd OWNER odd")
        .unwrap();
    let url = format!(
        "postgres://odd:{}@127.0.0.1:{}/odd",
        percent_encoded(password),
        cluster.port
    );
    let env = TestEnv::new();
    env.osmeter()
        .args(QUICK_RUN)
        .args(["--store", &url])
        .assert()
        .success();
    assert_eq!(runs_json(&env, &url, &[]).len(), 1);
    // The same password through $PGPASSWORD, as it is.
    let bare = format!("postgres://odd@127.0.0.1:{}/odd", cluster.port);
    let out = env
        .osmeter()
        .args(["runs", "--json", "--store", &bare])
        .env("PGPASSWORD", password)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Written raw into the URL it is refused before connecting, without being shown, and the
    // message names the way: percent-encoding.
    let raw = format!("postgres://odd:{password}@127.0.0.1:{}/odd", cluster.port);
    let out = env
        .osmeter()
        .args(["runs", "--store", &raw])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("%40") && !err.contains("w/rd"), "{err}");
    // A wrong one: refused by the server, and not shown either.
    let wrong = url.replace("%C3%A9", "e");
    let out = env
        .osmeter()
        .args(["runs", "--store", &wrong])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("refused user \"odd\"") && !err.contains("w/rd") && !err.contains("w%2Frd"),
        "{err}"
    );
}
