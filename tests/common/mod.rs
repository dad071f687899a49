//! Shared set-up of the end-to-end tests: every test gets its own store, so none touches the user's.
#![allow(dead_code)]

pub mod apps;
pub mod browser;
pub mod nobody;
pub mod procs;
pub mod schema_check;

use assert_cmd::Command;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub struct TestEnv {
    pub dir: tempfile::TempDir,
}

impl TestEnv {
    pub fn new() -> TestEnv {
        // A test that reads stored runs through osmeter's library reads their sections typed,
        // as the binary does.
        osmeter::hand_down_document_kinds();
        TestEnv {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn store(&self) -> PathBuf {
        self.dir.path().join("runs.db")
    }

    /// `osmeter` with OSMETER_STORE pointing into this test's directory.
    pub fn osmeter(&self) -> Command {
        Command::from_std(self.osmeter_std())
    }

    /// Runs osmeter with these arguments, which must succeed, and returns the JSON it printed.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.osmeter().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "osmeter {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("stdout is JSON")
    }

    /// Runs `osmeter run` with short samples and `--json` and returns the stored run's id.
    pub fn run_id(&self, args: &[&str]) -> String {
        let mut all = vec!["run", "--json"];
        all.extend_from_slice(args);
        all.extend_from_slice(FAST);
        self.json(&all)["id"].as_str().unwrap().to_string()
    }

    /// Runs osmeter with these arguments, which must succeed and keep a run; returns its stdout and
    /// the id of the run it saved (from the "run ID ... saved to" line on stderr).
    pub fn saved(&self, args: &[&str]) -> (String, String) {
        let out = self.osmeter().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "osmeter {args:?}: {err}");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            saved_id(&err),
        )
    }

    /// The same, as a std Command (for tests that send signals).
    pub fn osmeter_std(&self) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("osmeter"));
        c.env("OSMETER_STORE", self.store())
            .env("OSMETER_CACHE", test_cache())
            // Output is fitted to COLUMNS when set: the tests read it at the width of a pipe
            // (100) whatever the shell that started them exports; tests/width.rs sets its own.
            .env_remove("COLUMNS");
        default_signals(&mut c);
        c
    }
}

/// The id of the run osmeter's stderr says it saved ("run ID ... saved to").
#[allow(dead_code)]
pub fn saved_id(stderr: &str) -> String {
    stderr
        .split_whitespace()
        .skip_while(|w| *w != "run")
        .nth(1)
        .unwrap_or_else(|| panic!("no saved run id in: {stderr}"))
        .to_string()
}

/// Stores two runs of every kind and returns their ids by kind.
pub fn two_of_each(env: &TestEnv) -> BTreeMap<&'static str, Vec<String>> {
    let trace = |seed: &str| {
        let t = env.dir.path().join(format!("t{seed}.osmt"));
        env.osmeter()
            .args(["trace", "synth", "--refs", "60000", "--seed", seed, "-o"])
            .arg(&t)
            .assert()
            .success();
        t
    };
    let (t1, t2) = (trace("1"), trace("2"));
    for _ in 0..2 {
        env.osmeter()
            .args(["run", "syscall"])
            .args(FAST)
            .assert()
            .success();
        env.osmeter()
            .args(["stat", "-r", "3", "--", "true"])
            .assert()
            .success();
        env.osmeter()
            .args(["latency", "--duration", "2s", "--classes", "normal"])
            .assert()
            .success();
        env.osmeter()
            .args(AB_FAST)
            .args(["syscall.null", "syscall.dup", "--max-pairs", "2"])
            .args(["--b-wrap", "env OSMETER_AB=1"])
            .assert()
            .success();
    }
    for t in [&t1, &t2] {
        env.osmeter()
            .args(["memsim", "--preset", "ds5000-200", "--assertions"])
            .arg(t)
            .assert()
            .success();
    }
    let list = env.json(&["runs", "--json"]);
    let mut by_kind: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for r in list.as_array().unwrap() {
        let kind = match r["kind"].as_str().unwrap() {
            "run" => "run",
            "stat" => "stat",
            "latency" => "latency",
            "memsim" => "memsim",
            "ab" => "ab",
            other => panic!("unexpected kind {other}"),
        };
        assert!(
            r["figures"].as_u64().unwrap() > 0,
            "a {kind} run states figures: {r}"
        );
        by_kind
            .entry(kind)
            .or_default()
            .push(r["id"].as_str().unwrap().to_string());
    }
    assert_eq!(by_kind.len(), 5);
    assert!(by_kind.values().all(|ids| ids.len() == 2));
    by_kind
}

/// Short samples: the end-to-end tests check behaviour, not figures.
pub const FAST: &[&str] = &[
    "--repeat",
    "3",
    "--rounds",
    "2",
    "--min-time",
    "1ms",
    "--warmup",
    "0",
];

/// `ab` with short samples (the number of pairs is each test's): the end-to-end tests check behaviour, not verdicts.
pub const AB_FAST: &[&str] = &["ab", "--repeat", "3", "--min-time", "1ms", "--warmup", "0"];

/// osmeter's cache while the tests run (the kernel packages the guest tests boot, their
/// symbol tables and guest file systems, the reference mix's calibration, scripts/seccomp-run's
/// filter): under the build's target directory (`target/tmp/osmeter-cache` by default), so that
/// the tests leave the user's ~/.cache alone, every test run after the first finds what the first
/// fetched, and a CI that keeps target/ fetches nothing twice. README.md says what goes there.
pub fn test_cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("osmeter-cache")
}

/// The variable that keeps the tests from fetching Debian kernel packages (README.md).
pub const NO_DOWNLOADS: &str = "OSMETER_TEST_NO_DOWNLOADS";

/// Whether the tests may fetch kernel packages with `apt-get download` (about 100 MB, once, into
/// [`test_cache`]); says so on stderr when they may not.
pub fn downloads_allowed() -> bool {
    if std::env::var_os(NO_DOWNLOADS).is_some_and(|v| !v.is_empty() && v != "0") {
        eprintln!("skipped: {NO_DOWNLOADS} is set, and this test boots a Debian kernel package");
        return false;
    }
    true
}

pub fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

pub fn which(cmd: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(cmd))
        .find(|p| p.is_file())
}

/// A test that reads an output back with the tool that consumes it found the tool missing: on a
/// user's machine the test is skipped, saying loudly what was not checked and how to install the
/// tool; in CI (CI set), where every such tool is installed, it fails.
pub fn consumer_missing(tool: &str, install: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{tool} is missing: {install}"
    );
    eprintln!("SKIPPED: {tool} is not installed ({install})");
}

/// osmeter started as nobody, without capabilities (through setpriv), for the paths an
/// unprivileged user takes; None unless the tests run as root and setpriv exists.
pub fn osmeter_as_nobody() -> Option<std::process::Command> {
    if !is_root() {
        return None;
    }
    let setpriv = which("setpriv")?;
    let mut c = std::process::Command::new(setpriv);
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
    ])
    .arg(assert_cmd::cargo::cargo_bin("osmeter"));
    default_signals(&mut c);
    Some(c)
}

/// Makes `cmd` start with every signal at its default action and none blocked, as from a
/// terminal (the helpers above build every osmeter command so; a test that wants a disposition of
/// its own sets it in a `pre_exec` of its own, which runs after this one).
/// `cargo test` under `nohup`, a CI runner or a terminal multiplexer may hand the tests SIGHUP
/// ignored (and a shell's background job SIGINT and SIGQUIT), and a child inherits that, as it
/// should: osmeter keeps an ignored SIGHUP ignored. A test that sends osmeter a signal describes
/// what a user at a terminal sees, so it sets the dispositions it needs rather than take the
/// runner's.
pub fn default_signals(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls (sigaction, sigprocmask) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for signal in 1..32 {
                if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                    libc::signal(signal, libc::SIG_DFL);
                }
            }
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            Ok(())
        });
    }
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Starts `cmd` with its output captured, sends it SIGINT after `after` (checking first, with
/// `while_running`, anything that must be seen while it runs), and returns what it printed and how
/// long it took to stop once signalled.
pub fn interrupt_after(
    cmd: &mut std::process::Command,
    after: std::time::Duration,
    while_running: impl FnOnce(),
) -> (std::process::Output, std::time::Duration) {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    while_running();
    // SAFETY: signalling the child this function started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let signalled = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    (out, signalled.elapsed())
}

/// One round of one sample a figure, no warm-up, samples of at least `min_time`: the quickest run
/// that still measures.
pub const fn one_round(min_time: &'static str) -> [&'static str; 8] {
    [
        "--rounds",
        "1",
        "--repeat",
        "1",
        "--warmup",
        "0",
        "--min-time",
        min_time,
    ]
}

/// The write end of a pipe whose read end is already closed, as `| head -1` leaves it once head
/// has read its line: every write to it fails with EPIPE (or SIGPIPE).
pub fn closed_pipe() -> std::process::Stdio {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors are fresh and owned here; the read end is closed at once.
    unsafe {
        drop(std::os::fd::OwnedFd::from_raw_fd(fds[0]));
        std::process::Stdio::from(std::os::fd::OwnedFd::from_raw_fd(fds[1]))
    }
}
