//! Issue 44's hostile cases, items 5 to 8 (tests/hostile_round4.rs holds the others): stores from
//! elsewhere, threads that cannot start, resource limits named right, and a host name that is not
//! UTF-8. Each test runs the real binary and is named after what it proves. The cases of another
//! user run osmeter as nobody (root and setpriv needed, else they say they are skipped); resource
//! limits are set on the osmeter process alone, as `ulimit` in its shell would.

mod common;

use common::nobody::{
    all_output, as_nobody, as_nobody_with_tasks, nobodys_dir, open_dir, output_or_hang, text,
    AS_NOBODY, HANG,
};
use common::procs;
use common::TestEnv;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// Sets `limits` (resource, bytes or count or seconds, soft = hard) in the child before it runs
/// its program, as `ulimit` in the shell that starts it would.
fn with_limits(cmd: &mut Command, limits: &[(libc::__rlimit_resource_t, u64)]) {
    let limits = limits.to_vec();
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(move || {
            for &(resource, value) in &limits {
                let l = libc::rlimit {
                    rlim_cur: value,
                    rlim_max: value,
                };
                if libc::setrlimit(resource, &l) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
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

// ---- item 6: a thread that cannot start never hangs osmeter ------------------------------------

#[test]
fn a_thread_that_cannot_start_ends_latency_with_the_limit_named() {
    let _one = AS_NOBODY.lock().unwrap_or_else(|e| e.into_inner());
    let top = open_dir();
    let Some(_) = as_nobody_with_tasks(top.path(), 1) else {
        eprintln!("skipped: needs root and setpriv to run as another user");
        return;
    };
    let home = nobodys_dir(top.path(), "home");
    let mut refused = String::new();
    let mut measured = false;
    // Each limit lets one more thread start than the one before, so one of them refuses the
    // signalling thread that the waiting side once waited for for ever.
    for tasks in 1..=6u64 {
        let mut cmd = as_nobody_with_tasks(&home, tasks).unwrap();
        cmd.args(["latency", "--duration", "1s", "--classes", "normal"])
            .args(["--paths", "futex", "--no-store"]);
        let out = output_or_hang(&mut cmd, &format!("ulimit -u {tasks}"));
        let all = all_output(&out);
        assert!(
            !all.contains("panicked") && !all.contains("failed to spawn"),
            "ulimit -u {tasks}: {all}"
        );
        match out.status.code() {
            Some(0) => measured = true,
            Some(1) => {
                let err = text(&out.stderr);
                assert!(
                    err.contains("cannot start the thread")
                        && err
                            .contains("processes and threads at once (RLIMIT_NPROC, `ulimit -u`)"),
                    "ulimit -u {tasks}: {err}"
                );
                refused.push_str(&err);
            }
            other => panic!("ulimit -u {tasks}: exit {other:?}: {all}"),
        }
    }
    assert!(
        refused.contains("cannot start the thread sig-normal-futex"),
        "{refused}"
    );
    assert!(measured, "no limit was high enough to measure: {refused}");
}

#[test]
fn memsim_without_a_thread_to_spare_names_the_limit_and_the_way_round_it() {
    let _one = AS_NOBODY.lock().unwrap_or_else(|e| e.into_inner());
    let top = open_dir();
    let Some(_) = as_nobody_with_tasks(top.path(), 1) else {
        eprintln!("skipped: needs root and setpriv to run as another user");
        return;
    };
    let home = nobodys_dir(top.path(), "home");
    let trace = top.path().join("t.osmt");
    let env = TestEnv::new();
    env.osmeter()
        .args(["trace", "synth", "--refs", "20000", "--seed", "5", "-o"])
        .arg(&trace)
        .assert()
        .success();
    let memsim = |threads: &str| {
        let mut cmd = as_nobody_with_tasks(&home, 1).unwrap();
        cmd.arg("memsim").arg(&trace).args([
            "--preset",
            "paper",
            "--no-store",
            "--threads",
            threads,
        ]);
        output_or_hang(&mut cmd, "memsim under ulimit -u 1")
    };
    // More simulation threads than the limit lets start, whatever the number of CPUs.
    let out = memsim("4");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("RLIMIT_NPROC") && err.contains("--threads 1"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // The way round it works under the same limit.
    let out = memsim("1");
    assert!(out.status.success(), "{}", all_output(&out));
}

#[test]
fn latency_under_an_address_space_limit_ends_with_the_limit_named() {
    let env = TestEnv::new();
    let mut named = false;
    // From a limit that leaves room for everything down to one that leaves none, closely enough
    // that no limit between refusing and measuring is skipped over.
    for mib in (48..=256u64).rev().step_by(8) {
        let limit = [(libc::RLIMIT_AS, mib << 20)];
        // A limit under which the program cannot even be loaded is the loader's, not osmeter's.
        let mut version = env.osmeter_std();
        version.arg("--version");
        with_limits(&mut version, &limit);
        if !version.output().is_ok_and(|o| o.status.success()) {
            continue;
        }
        let mut cmd = env.osmeter_std();
        cmd.args([
            "latency",
            "--duration",
            "1s",
            "--load",
            "memory",
            "--no-store",
        ]);
        with_limits(&mut cmd, &limit);
        let out = output_or_hang(&mut cmd, &format!("ulimit -v {}", mib << 10));
        let all = all_output(&out);
        assert!(
            !all.contains("memory allocation of") && !all.contains("panicked"),
            "{mib} MiB: {all}"
        );
        match out.status.code() {
            Some(0) => {}
            Some(1) => {
                assert!(
                    all.contains(&format!(
                        "the address-space limit (RLIMIT_AS, `ulimit -v` {} KiB)",
                        mib << 10
                    )),
                    "{mib} MiB: {all}"
                );
                named = true;
            }
            other => panic!("{mib} MiB: exit {other:?}: {all}"),
        }
    }
    assert!(named, "no limit was tight enough to refuse the memory load");
}

#[test]
fn a_probe_size_past_the_address_space_limit_is_refused_before_measuring() {
    let env = TestEnv::new();
    // `ulimit -v 1048576`: two buffers of 600 MB cannot fit in 1 GiB of address space, whatever
    // the machine has free.
    let mut cmd = env.osmeter_std();
    cmd.args([
        "run",
        "memory.copy",
        "--set",
        "size=600000000",
        "--no-store",
    ])
    .args(common::FAST);
    with_limits(&mut cmd, &[(libc::RLIMIT_AS, 1 << 30)]);
    let out = output_or_hang(&mut cmd, "ulimit -v 1048576");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the address-space limit (RLIMIT_AS, `ulimit -v` 1048576 KiB) leaves"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "measured before refusing: {err}");
}

// ---- item 7: limits named right ---------------------------------------------------------------

#[test]
fn a_file_size_limit_is_named_and_leaves_no_empty_store_behind() {
    let env = TestEnv::new();
    let (data, tmp) = (env.dir.path().join("data"), env.dir.path().join("tmp"));
    std::fs::create_dir(&tmp).unwrap();
    let store = env.dir.path().join("new/runs.db");
    let mut cmd = env.osmeter_std();
    cmd.env("XDG_DATA_HOME", &data)
        .env("TMPDIR", &tmp)
        .args(["run", "syscall.null", "--store"])
        .arg(&store)
        .args(common::FAST);
    // `ulimit -f 8`: 8 KiB, less than a new store's first transaction.
    with_limits(&mut cmd, &[(libc::RLIMIT_FSIZE, 8 << 10)]);
    let out = output_or_hang(&mut cmd, "ulimit -f 8");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "cannot write the store {}: file too large",
            store.display()
        )) && err.contains("(RLIMIT_FSIZE, `ulimit -f` 8 blocks of 1 KiB"),
        "{err}"
    );
    assert!(!err.contains("Error code"), "{err}");
    // The figures still reach the user, who is told they are the only copy.
    assert!(text(&out.stdout).contains("syscall.null"), "{err}");
    assert!(
        err.contains("the figures printed above are the only copy"),
        "{err}"
    );
    // Neither the store nor the places tried after it keep an empty file or directory.
    assert!(
        !store.exists() && !store.parent().unwrap().exists(),
        "{err}"
    );
    assert!(!data.join("osmeter/runs.db").exists(), "{err}");
    assert!(
        common::entries(&tmp).is_empty(),
        "{:?}",
        common::entries(&tmp)
    );
}

/// `export` and `report` past `ulimit -f`: the limit is named (they were killed by SIGXFSZ with no
/// word, exit 153), no half-written output is left, and the store still reads.
#[test]
fn an_export_past_the_file_size_limit_names_it_and_leaves_no_half_file() {
    let env = TestEnv::new();
    let id = env.run_id(&["syscall.null"]);
    for (args, out_name) in [
        (
            &["export", id.as_str(), "--format", "json", "-o"][..],
            "out.json",
        ),
        (&["report", id.as_str(), "-o"][..], "out.html"),
    ] {
        let target = env.dir.path().join(out_name);
        let mut cmd = env.osmeter_std();
        cmd.args(args).arg(&target);
        // 4 KiB: less than either document.
        with_limits(&mut cmd, &[(libc::RLIMIT_FSIZE, 4 << 10)]);
        let out = output_or_hang(&mut cmd, "ulimit -f 4");
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("RLIMIT_FSIZE"), "{args:?}: {err}");
        assert!(!target.exists(), "{args:?} left {}", target.display());
        let stray: Vec<String> = common::entries(env.dir.path())
            .into_iter()
            .filter(|e| e.contains(out_name))
            .collect();
        assert!(stray.is_empty(), "{args:?} left {stray:?}");
    }
    let runs = env.json(&["runs", "--json"]);
    assert_eq!(runs[0]["id"], id.as_str(), "the store still reads");
}

/// Waits for the measuring process of round `round` (of 2) of `probe`, after the progress line
/// that names it (the harness's own processes of that round have ended by then), and returns its
/// pid and the thread collecting osmeter's stderr.
fn round_worker(
    child: &mut std::process::Child,
    round: u32,
    probe: &str,
) -> (u32, std::thread::JoinHandle<String>) {
    let stderr = child.stderr.take().unwrap();
    let (lines, seen) = std::sync::mpsc::channel();
    let collector = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = lines.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let label = format!("round {round}/2: {probe}");
    assert!(
        seen.iter().any(|l: String| l.contains(&label)),
        "no progress line for {label}"
    );
    let mut worker = None;
    let found = procs::wait_until(HANG, || {
        worker = procs::descendants(child.id()).into_iter().find(|&p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| text(&c).contains("measure-worker"))
        });
        worker.is_some()
    });
    assert!(found, "no measuring process for {label}");
    (worker.unwrap(), collector)
}

/// The figure of `probe` in a run's JSON.
fn figure<'a>(doc: &'a serde_json::Value, probe: &str) -> &'a serde_json::Value {
    doc["measurements"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["probe"] == probe))
        .unwrap_or_else(|| panic!("no {probe} in {doc}"))
}

/// CPU seconds `pid` has used so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(") ").map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of stat; `after` starts at field 3.
    (ticks(11) + ticks(12)) / 100.0
}

/// `run PROBE` with two rounds of 60 samples of 100 ms, progress lines on stderr and its JSON on
/// stdout.
fn long_run(env: &TestEnv, probe: &str) -> std::process::Child {
    env.osmeter_std()
        .env("OSMETER_PROGRESS", "always")
        .args(["run", probe, "--json", "--no-store", "--rounds", "2"])
        .args(["--repeat", "60", "--min-time", "100ms", "--warmup", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_worker_killed_by_the_cpu_time_limit_is_named_so_not_blamed_on_the_oom_killer() {
    let env = TestEnv::new();
    let mut cmd = env.osmeter_std();
    cmd.args([
        "run",
        "syscall.null",
        "--rounds",
        "1",
        "--warmup",
        "20",
        "--json",
    ])
    .args(["--repeat", "3", "--min-time", "300ms", "--no-store"]);
    // `ulimit -t 3`: the round's 23 samples of 300 ms need more than twice that, the harness's
    // own cost (no warm-up) less.
    with_limits(&mut cmd, &[(libc::RLIMIT_CPU, 3)]);
    let out = output_or_hang(&mut cmd, "ulimit -t 3");
    let all = all_output(&out);
    assert!(
        all.contains("the CPU-time limit osmeter runs under (RLIMIT_CPU, `ulimit -t` 3 s)"),
        "{all}"
    );
    assert!(!all.contains("out-of-memory"), "{all}");
    assert!(!all.contains("harness's own cost failed"), "{all}");
}

#[test]
fn a_kill_9_of_a_worker_is_named_as_another_processs_not_the_oom_killers() {
    let env = TestEnv::new();
    let mut child = long_run(&env, "syscall.null");
    // The second round's: a figure whose first round fails is not measured further.
    let (worker, collector) = round_worker(&mut child, 2, "syscall.null");
    procs::signal(worker, libc::SIGKILL);
    let out = child.wait_with_output().unwrap();
    let err = collector.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = figure(&doc, "syscall.null");
    let warnings = m["warnings"].to_string();
    assert!(
        warnings.contains(
            "round 2 failed: the measuring process was killed (SIGKILL) by another process"
        ),
        "{warnings}"
    );
    assert!(
        !warnings.contains("out-of-memory killer (the kernel"),
        "{warnings}"
    );
    // The first round measured the figure.
    assert!(
        m["samples"].as_array().is_some_and(|s| !s.is_empty()),
        "{m}"
    );
}

#[test]
fn a_sigterm_from_another_process_cuts_one_round_and_the_run_goes_on_with_its_figures() {
    let env = TestEnv::new();
    let mut child = long_run(&env, "syscall.null");
    // The second round's, so the figure stands whatever the cut round kept.
    let (worker, collector) = round_worker(&mut child, 2, "syscall.null");
    // Past its calibration, as a rule into its samples: counted in CPU time, which a busy machine
    // only makes slower to come.
    procs::wait_until(HANG, || cpu_seconds(worker) >= 0.5 || !procs::alive(worker));
    procs::signal(worker, libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    let err = collector.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "not the user's Ctrl-C: {err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["interrupted"], false, "{err}");
    let m = figure(&doc, "syscall.null");
    let warnings = m["warnings"].to_string();
    assert!(
        warnings.contains(&format!(
            "the measuring process got SIGTERM from process {}",
            std::process::id()
        )),
        "{warnings}"
    );
    // A round cut after some samples keeps them, and says so.
    if warnings.contains("round 2 cut short after") {
        assert!(
            warnings.contains("the samples taken before it are kept"),
            "{warnings}"
        );
    } else {
        assert!(
            warnings.contains("before it had taken a sample"),
            "{warnings}"
        );
    }
    assert!(
        m["samples"].as_array().is_some_and(|s| !s.is_empty()),
        "{m}"
    );
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
