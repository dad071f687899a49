//! Probes whose figures depend on state outside the timed operation say what that state was, and
//! osmeter controls it where it can (issue 30): the file probes' file system, the layout of the
//! process that forks.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// One quick round of `args`, as the run's JSON document, with its scratch space in `dir`: given
/// with --dir when `user_dir`, else as the system's temporary directory (TMPDIR).
fn run(args: &[&str], dir: &Path, user_dir: bool) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_osmeter"));
    cmd.args([
        "run",
        "--rounds",
        "1",
        "-r",
        "2",
        "--min-time",
        "5ms",
        "--no-store",
        "--json",
    ]);
    if user_dir {
        cmd.arg("--dir").arg(dir);
    } else {
        cmd.env("TMPDIR", dir);
    }
    let out = cmd.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn warnings(run: &Value, probe: &str) -> Vec<String> {
    let m = run["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["probe"] == probe)
        .unwrap_or_else(|| panic!("no {probe} in {run}"));
    assert_eq!(m["status"], "ok", "{m}");
    m["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect()
}

fn mounts_below(dir: &Path) -> usize {
    let dir = std::fs::canonicalize(dir).unwrap();
    osmeter::mounts::points_below(&osmeter::mounts::read().unwrap(), &dir).len()
}

#[test]
fn fork_is_measured_from_a_process_laid_out_the_same_every_round() {
    let dir = tempfile::tempdir().unwrap();
    let run = run(&["process.fork_exit"], dir.path(), true);
    let w = warnings(&run, "process.fork_exit");
    assert!(
        w.iter()
            .any(|n| n.contains("KiB of page tables, laid out without address-space randomisation")),
        "{w:?}"
    );
}

#[test]
fn the_user_s_directory_is_measured_as_it_is_and_named() {
    // --dir: the scratch directory's own file system, with its type and a warning.
    let dir = tempfile::tempdir().unwrap();
    let run = run(
        &[
            "fs.create_delete",
            "--set",
            "size=0",
            "--set",
            "fsync=false",
        ],
        dir.path(),
        true,
    );
    let w = warnings(&run, "fs.create_delete");
    let note = w
        .iter()
        .find(|n| n.starts_with("file system: "))
        .unwrap_or_else(|| panic!("{w:?}"));
    assert!(
        note.contains("as it is (chosen with --dir or --fs)")
            && note.contains("changes this figure"),
        "{note}"
    );
    assert_eq!(mounts_below(dir.path()), 0);
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn by_default_each_round_gets_a_fresh_file_system_that_goes_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = run(
        &[
            "fs.create_delete",
            "fs.open_close",
            "--set",
            "size=0",
            "--set",
            "fsync=false",
        ],
        dir.path(),
        false,
    );
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    for (probe, fresh) in [
        ("fs.create_delete", "a fresh ext4 image made for each round"),
        ("fs.open_close", "a fresh tmpfs made for each round"),
    ] {
        let w = warnings(&run, probe);
        let want = if root { fresh } else { "not root" };
        assert!(
            w.iter()
                .any(|n| n.starts_with("file system: ") && n.contains(want)),
            "{probe}: {w:?}"
        );
    }
    assert_eq!(mounts_below(dir.path()), 0);
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}
