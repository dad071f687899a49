//! Issue 44's hostile cases, items 5 to 8 (tests/hostile_round4.rs holds the others): stores from
//! elsewhere, threads that cannot start, resource limits named right, and a host name that is not
//! UTF-8. Each test runs the real binary and is named after what it proves. The cases of another
//! user run osmeter as nobody (root and setpriv needed, else they say they are skipped); resource
//! limits are set on the osmeter process alone, as `ulimit` in its shell would.

mod common;

use common::procs;
use common::TestEnv;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn all_output(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// Longer than any case here takes on the slowest machine: only a hang reaches it.
const HANG: Duration = Duration::from_secs(240);

/// Runs `cmd` to its end, or kills it at [`HANG`] and fails: the cases here once never ended.
fn output_or_hang(cmd: &mut Command, what: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ended = procs::wait_until(HANG, || matches!(child.try_wait(), Ok(Some(_))));
    if !ended {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "{what}: still running after {HANG:?}; it printed:\n{}",
            all_output(&out)
        );
    }
    child.wait_with_output().unwrap()
}

/// One case as nobody at a time: RLIMIT_NPROC counts every process of the user, so two cases at
/// once would count each other's.
static AS_NOBODY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A directory nobody may traverse (mode 755), for what nobody reads.
fn open_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// A directory of nobody's own inside `parent`.
fn nobodys_dir(parent: &Path, name: &str) -> PathBuf {
    let d = parent.join(name);
    std::fs::create_dir(&d).unwrap();
    std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
    d
}

/// osmeter as nobody (see common::osmeter_as_nobody) with a home of its own under `home`, so
/// nothing it writes goes to root's.
fn as_nobody(home: &Path) -> Option<Command> {
    let mut c = common::osmeter_as_nobody()?;
    c.env_remove("OSMETER_STORE")
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"));
    Some(c)
}

// ---- item 5: stores from elsewhere -------------------------------------------------------------

/// Every file in `dir` with its bytes, to see that nothing was written or left beside a store.
fn files_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut all: Vec<(String, Vec<u8>)> = common::entries(dir)
        .into_iter()
        .map(|name| {
            let bytes = std::fs::read(dir.join(&name)).unwrap_or_default();
            (name, bytes)
        })
        .collect();
    all.sort();
    all
}

#[test]
fn a_store_of_an_unknown_schema_version_is_refused_untouched() {
    for version in ["-1", "0"] {
        let env = TestEnv::new();
        env.osmeter()
            .args(["stat", "-r", "1", "--", "true"])
            .assert()
            .success();
        // Another tool, or a hand, wrote a version no osmeter wrote; the tables stay as they are.
        let db = rusqlite::Connection::open(env.store()).unwrap();
        db.execute(
            "UPDATE osmeter_meta SET value = ?1 WHERE key = 'schema_version'",
            [version],
        )
        .unwrap();
        drop(db);
        let before = files_of(env.dir.path());
        for args in [
            vec!["run", "syscall.null"],
            vec!["stat", "-r", "1", "--", "true"],
            vec!["runs"],
        ] {
            let mut cmd = env.osmeter();
            cmd.args(&args);
            if args[0] == "run" {
                cmd.args(common::FAST);
            }
            let out = cmd.output().unwrap();
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{version} {args:?}: {err}");
            assert!(
                err.contains(&format!(
                    "holds schema_version {version}, a version no osmeter wrote"
                )) && err.contains("leaves it untouched"),
                "{version} {args:?}: {err}"
            );
            assert!(!err.contains("no such column"), "{err}");
            assert!(out.stdout.is_empty(), "measured before refusing: {err}");
            assert_eq!(files_of(env.dir.path()), before, "{version} {args:?}");
        }
    }
}

/// Makes a store at `path` as root, holding one run.
fn make_store(env: &TestEnv, path: &Path) {
    env.osmeter()
        .args(["stat", "-r", "1", "--store"])
        .arg(path)
        .args(["--", "true"])
        .assert()
        .success();
}

#[test]
fn a_store_this_user_may_not_write_is_refused_before_measuring_and_its_own_wal_is_not_blamed() {
    let _one = AS_NOBODY.lock().unwrap_or_else(|e| e.into_inner());
    let top = open_dir();
    let Some(_) = as_nobody(top.path()) else {
        eprintln!("skipped: needs root and setpriv to run as another user");
        return;
    };
    let env = TestEnv::new();
    let home = nobodys_dir(top.path(), "home");
    for (dir, mode) in [("roots", 0o755), ("sticky", 0o1777)] {
        let d = top.path().join(dir);
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
        let store = d.join("runs.db");
        make_store(&env, &store);
        // Root's own osmeter (or any reader of root's) has the store open: its -wal and -shm are
        // there, root's, as the store is.
        let holder = rusqlite::Connection::open(&store).unwrap();
        let _: i64 = holder
            .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
            .unwrap();
        assert!(d.join("runs.db-wal").exists());
        let before = std::fs::read(&store).unwrap();
        let out = output_or_hang(
            as_nobody(&home)
                .unwrap()
                .args(["run", "syscall.null", "--store"])
                .arg(&store)
                .args(common::FAST),
            dir,
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{dir}: {err}");
        assert!(
            err.contains(&format!("cannot write the store {}", store.display()))
                && err.contains("not writable by this user (uid 65534)")
                && err.contains("belongs to uid 0"),
            "{dir}: {err}"
        );
        assert!(
            !err.contains("belongs to another user") && !err.contains("remove it"),
            "the store's own -wal blamed: {err}"
        );
        assert!(
            out.stdout.is_empty(),
            "{dir}: measured before refusing: {err}"
        );
        drop(holder);
        assert_eq!(std::fs::read(&store).unwrap(), before);
    }
}

#[test]
fn a_store_that_stops_being_writable_while_measuring_says_so_and_where_the_run_went() {
    let _one = AS_NOBODY.lock().unwrap_or_else(|e| e.into_inner());
    let top = open_dir();
    let Some(_) = as_nobody(top.path()) else {
        eprintln!("skipped: needs root and setpriv to run as another user");
        return;
    };
    let home = nobodys_dir(top.path(), "home");
    let dir = nobodys_dir(top.path(), "stores");
    let store = dir.join("runs.db");
    let out = output_or_hang(
        as_nobody(&home)
            .unwrap()
            .args(["stat", "-r", "1", "--store"])
            .arg(&store)
            .args(["--", "true"]),
        "making nobody's store",
    );
    assert!(out.status.success(), "{}", all_output(&out));
    let mut run = as_nobody(&home).unwrap();
    run.args([
        "run",
        "syscall.null",
        "--repeat",
        "20",
        "--min-time",
        "50ms",
    ])
    .arg("--store")
    .arg(&store)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let child = run.spawn().unwrap();
    let _guard = procs::KillMarked(store.display().to_string());
    // Once it measures (its store was checked before), root takes the store over.
    let measuring = procs::wait_until(HANG, || {
        procs::descendants(child.id()).iter().any(|&p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| text(&c).contains("measure-worker"))
        })
    });
    assert!(measuring, "no measuring process started");
    std::os::unix::fs::chown(&store, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("cannot write the store {}", store.display()))
            && err.contains("the store is not writable by this user (uid 65534)"),
        "{err}"
    );
    assert!(!err.contains("belongs to another user"), "{err}");
    let rescue = home.join("data/osmeter/runs.db");
    let id = err
        .split("osmeter: run ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no run named: {err}"))
        .to_string();
    assert!(
        err.contains(&format!(
            "run {id} was saved to {} instead",
            rescue.display()
        )),
        "{err}"
    );
    let env = TestEnv::new();
    let kept = env.json(&["runs", "--json", "--store", rescue.to_str().unwrap()]);
    assert_eq!(kept[0]["id"], id.as_str(), "{kept}");
}

// ---- item 8: a host name that is not UTF-8 -----------------------------------------------------

#[test]
fn a_host_name_that_is_not_utf8_is_kept_escaped() {
    let env = TestEnv::new();
    if !common::is_root() || common::which("unshare").is_none() {
        eprintln!("skipped: needs root and unshare (the fingerprint's own test reads such a name)");
        return;
    }
    // A UTS namespace of its own, so the machine's name stays; the kernel takes any bytes.
    let osmeter = assert_cmd::cargo::cargo_bin("osmeter");
    let mut cmd = Command::new("unshare");
    cmd.env("OSMETER_STORE", env.store())
        .args(["--uts", "sh", "-c"])
        .arg("printf 'a\\377b' > /proc/sys/kernel/hostname && exec \"$@\"")
        .arg("sh")
        .arg(&osmeter)
        .args(["run", "syscall.null"])
        .args(common::FAST);
    let out = output_or_hang(&mut cmd, "unshare --uts");
    if !out.status.success() && !text(&out.stderr).contains("osmeter") {
        eprintln!(
            "skipped: this kernel or container refuses a UTS namespace ({}); the fingerprint's \
             own test reads such a name",
            text(&out.stderr).trim()
        );
        return;
    }
    assert!(out.status.success(), "{}", all_output(&out));
    let runs = env.json(&["runs", "--json"]);
    assert_eq!(runs[0]["host"], "a\\xffb", "{runs}");
    let shown = env
        .osmeter()
        .args(["runs", "--host", "a\\xffb"])
        .output()
        .unwrap();
    assert!(
        text(&shown.stdout).contains("a\\xffb"),
        "{}",
        text(&shown.stdout)
    );
}
