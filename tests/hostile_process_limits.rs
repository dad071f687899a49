//! Issue 44 item 6, the process half: a process osmeter cannot start (a fork refused under
//! `ulimit -u`, RLIMIT_NPROC, for an unprivileged user) ends the command with exit 1 and the
//! limit named: its values, what could not start, and `ulimit -u` as the way out. Where the
//! refused process is a probe's own (the child of `process.fork_exit`, the partner of an ipc
//! probe, both started inside the measuring process), that figure fails with the same words. In
//! every case no process of the user's is left running, no scratch file is left behind, and the
//! store stays readable with what it held.
//!
//! Each command tries a ladder of limits, from one task above what nobody already runs up to one
//! that lets it measure: each rung lets one more task start, so some rung refuses each process
//! the command starts, wherever it is and whatever threads run beside it, without the test
//! knowing how many tasks osmeter uses. osmeter runs as nobody (root, setpriv and prlimit
//! needed, else the tests say they are skipped).

mod common;

use common::nobody::{
    all_output, as_nobody, as_nobody_with_tasks, nobodys_dir, nobodys_tasks, open_dir,
    output_or_hang, text, AS_NOBODY,
};
use common::{procs, FAST};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The words every refusal of RLIMIT_NPROC carries (crates/base/src/system/limits.rs).
const NAMED: &str = "processes and threads at once (RLIMIT_NPROC, `ulimit -u`)";

/// The highest rung tried: far more tasks than any command here needs to measure.
const TOP_RUNG: u64 = 16;

/// What one command did under one limit.
#[derive(Debug)]
enum Outcome {
    /// It measured every figure.
    Measured,
    /// osmeter itself could not start a process (or a thread): exit 1, the limit on stderr.
    Refused(String),
    /// The measuring process could not start a probe's own process: the figure failed, with the
    /// limit as its reason.
    FigureRefused(String),
}

/// nobody's home, scratch directory (its TMPDIR) and store, in a directory nobody may enter.
struct Place {
    _top: tempfile::TempDir,
    home: PathBuf,
    scratch: PathBuf,
    store: PathBuf,
}

impl Place {
    fn new() -> Place {
        let top = open_dir();
        let home = nobodys_dir(top.path(), "home");
        let scratch = nobodys_dir(top.path(), "scratch");
        let store = home.join("runs.db");
        Place {
            _top: top,
            home,
            scratch,
            store,
        }
    }

    /// The ids of the runs in the store, read as nobody (whose store it is).
    fn run_ids(&self) -> Vec<String> {
        let mut cmd = as_nobody(&self.home).unwrap();
        cmd.args(["runs", "--json", "--store"]).arg(&self.store);
        let out = output_or_hang(&mut cmd, "runs");
        assert!(out.status.success(), "runs: {}", all_output(&out));
        let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        list.as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    }
}

/// The store with one run in it, made without a limit: what every rung must leave readable.
fn first_run(place: &Place) -> String {
    let mut cmd = as_nobody(&place.home).unwrap();
    cmd.env("TMPDIR", &place.scratch)
        .args(["run", "syscall.null", "--store"])
        .arg(&place.store)
        .args(FAST);
    let out = output_or_hang(&mut cmd, "the first run");
    assert!(out.status.success(), "{}", all_output(&out));
    let ids = place.run_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

/// What a `run --json` or a `stat` ended with, from its exit code, stderr and (for `run`) the
/// reasons of its failed figures.
fn outcome(args: &[&str], out: &std::process::Output) -> Outcome {
    let all = all_output(out);
    assert!(
        !all.contains("panicked") && !all.contains("failed to spawn"),
        "{args:?}: {all}"
    );
    let refused_figures: Vec<String> = serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|doc| doc["measurements"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|m| m["status"] == "failed")
        .map(|m| m["reason"].as_str().unwrap_or("").to_string())
        .collect();
    match out.status.code() {
        Some(0) if refused_figures.is_empty() => Outcome::Measured,
        Some(0 | 1) if !refused_figures.is_empty() => {
            for reason in &refused_figures {
                assert!(
                    reason.contains(NAMED),
                    "{args:?}: a figure failed: {reason}"
                );
            }
            Outcome::FigureRefused(refused_figures.join("\n"))
        }
        Some(1) => {
            let err = text(&out.stderr);
            assert!(
                err.contains("cannot start ") && err.contains(NAMED),
                "{args:?}: {err}"
            );
            Outcome::Refused(err)
        }
        other => panic!("{args:?}: exit {other:?}: {all}"),
    }
}

/// `args` under each rung of the ladder up to the first that measures, each checked to leave
/// nothing behind: no task of nobody's, no scratch file, the store with its runs.
fn ladder(place: &Place, args: &[&str]) -> Vec<(u64, Outcome)> {
    let before = place.run_ids();
    let mut seen = Vec::new();
    for tasks in 1..=TOP_RUNG {
        let mut cmd = as_nobody_with_tasks(&place.home, tasks).unwrap();
        // The store goes right after the subcommand: after `stat ... --` it would be the
        // command's own argument.
        cmd.env("TMPDIR", &place.scratch)
            .arg(args[0])
            .arg("--store")
            .arg(&place.store)
            .args(&args[1..]);
        let out = output_or_hang(&mut cmd, &format!("{args:?} under ulimit -u {tasks}"));
        let ended = outcome(args, &out);
        // Nothing of the command outlives it: no worker, partner, child or guardian of nobody's
        // (a process being reaped may take a moment to leave /proc).
        let gone = procs::wait_until(Duration::from_secs(10), || nobodys_tasks() == 0);
        assert!(
            gone,
            "{args:?} under ulimit -u {tasks} left {} task(s) of nobody's running ({ended:?})",
            nobodys_tasks()
        );
        let left = common::entries(&place.scratch);
        assert!(
            left.is_empty(),
            "{args:?} under ulimit -u {tasks} left scratch files: {left:?}"
        );
        let ids = place.run_ids();
        assert!(
            before.iter().all(|id| ids.contains(id)),
            "{args:?} under ulimit -u {tasks}: the store lost runs: {before:?} -> {ids:?}"
        );
        let measured = matches!(ended, Outcome::Measured);
        seen.push((tasks, ended));
        if measured {
            // For the record (`cargo test --test hostile_process_limits -- --nocapture`).
            eprintln!("{args:?}: {seen:#?}");
            return seen;
        }
    }
    panic!("{args:?}: no limit up to {TOP_RUNG} tasks let it measure: {seen:#?}")
}

/// Skips (saying so) where osmeter cannot be run as nobody under a limit.
fn can_run_as_nobody() -> bool {
    if as_nobody_with_tasks(Path::new("/"), 1).is_none() {
        eprintln!("skipped: needs root, setpriv and prlimit to run as another user");
        return false;
    }
    true
}

/// The refusals a ladder met, of each kind.
fn refusals(seen: &[(u64, Outcome)]) -> (Vec<&str>, Vec<&str>) {
    let here = seen
        .iter()
        .filter_map(|(_, o)| match o {
            Outcome::Refused(e) => Some(e.as_str()),
            _ => None,
        })
        .collect();
    let figures = seen
        .iter()
        .filter_map(|(_, o)| match o {
            Outcome::FigureRefused(e) => Some(e.as_str()),
            _ => None,
        })
        .collect();
    (here, figures)
}

#[test]
fn a_fork_the_limit_refuses_fails_the_forking_figure_with_the_limit_named() {
    if !can_run_as_nobody() {
        return;
    }
    let _one = AS_NOBODY.lock().unwrap_or_else(|e| e.into_inner());
    let place = Place::new();
    let first = first_run(&place);
    let mut args = vec!["run", "process.fork_exit", "--json"];
    args.extend_from_slice(FAST);
    let seen = ladder(&place, &args);
    let (here, figures) = refusals(&seen);
    // The lowest rungs refuse osmeter's own processes (its measuring process), a higher one only
    // the probe's child, inside the measuring process.
    assert!(
        here.iter()
            .any(|e| e.contains("cannot start the measuring process")),
        "{seen:#?}"
    );
    assert!(
        figures
            .iter()
            .any(|r| r.contains("cannot start the child process to fork")),
        "{seen:#?}"
    );
    assert!(place.run_ids().contains(&first));
}

#[test]
fn a_partner_process_the_limit_refuses_fails_the_ipc_figure_with_the_limit_named() {
    if !can_run_as_nobody() {
        return;
    }
    let _one = AS_NOBODY.lock().unwrap_or_else(|e| e.into_inner());
    let place = Place::new();
    let first = first_run(&place);
    let mut args = vec!["run", "ipc.pipe_pingpong", "--json"];
    args.extend_from_slice(FAST);
    let seen = ladder(&place, &args);
    let (_, figures) = refusals(&seen);
    assert!(
        figures
            .iter()
            .any(|r| r.contains("cannot start the partner process")),
        "{seen:#?}"
    );
    assert!(place.run_ids().contains(&first));
}

#[test]
fn a_command_the_limit_refuses_ends_stat_with_the_limit_named() {
    if !can_run_as_nobody() {
        return;
    }
    let _one = AS_NOBODY.lock().unwrap_or_else(|e| e.into_inner());
    let place = Place::new();
    let first = first_run(&place);
    let seen = ladder(&place, &["stat", "-r", "2", "--", "true"]);
    let (here, figures) = refusals(&seen);
    assert!(figures.is_empty(), "{seen:#?}");
    // The command itself (or its guardian, which osmeter starts to hold it) was refused.
    assert!(
        here.iter().any(|e| e.contains("cannot start `true`")),
        "{seen:#?}"
    );
    // The refusal says what to do: the limit and how to raise it, or what to end.
    assert!(
        here.iter().all(|e| e.contains("raise it with `ulimit -u`")),
        "{seen:#?}"
    );
    // The last rung measured and kept its run beside the first.
    let ids = place.run_ids();
    assert!(ids.contains(&first) && ids.len() == 2, "{ids:?}");
}
