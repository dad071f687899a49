//! Application workloads end to end: real interpreters (and, below, real gcc, ghostscript and
//! fuse2fs), counted through a real cgroup, with nothing left behind.

mod common;

use common::apps::{figure, leaked_cgroups, run_of, software};
use common::{is_root, TestEnv};
use osmeter::results::model::Status;

#[test]
fn interpreters_start_counted_whole_in_a_cgroup_that_is_removed() {
    let env = TestEnv::new();
    let run = run_of(env.json(&[
        "run",
        "app.interp",
        "--rounds",
        "2",
        "--repeat",
        "2",
        "--min-time",
        "1ms",
        "--json",
        "--no-store",
    ]));
    for interp in ["python3", "perl", "tclsh"] {
        let m = figure(&run, "app.interp", &[("interp", interp)]);
        assert_eq!(m.status, Status::Ok, "{m:?}");
        assert!(m.summary.as_ref().unwrap().median > 0.0, "{m:?}");
        // Each operation starts a process: it faults pages in and spends time in both modes.
        assert!(software(m, "page-faults") >= 10.0, "{m:?}");
        assert!(software(m, "workload-user-ns") + software(m, "workload-kernel-ns") > 0.0);
        if is_root() {
            // Counted through the cgroup: the interpreter's own CPU time is in task-clock.
            assert!(
                software(m, "task-clock") > 100_000.0,
                "{interp}: {:?}",
                m.counters
            );
            assert!(
                m.warnings.iter().all(|w| !w.contains("getrusage")),
                "{:?}",
                m.warnings
            );
        }
        // Interrupts are named by source, and the machine's time by state.
        assert!(
            m.counters.software.keys().any(|k| k.starts_with("irq:")),
            "{:?}",
            m.counters
        );
        assert!(m.counters.software.contains_key("machine-idle-ns"));
    }
    assert!(leaked_cgroups().is_empty(), "{:?}", leaked_cgroups());
}

#[test]
fn the_table_shows_the_whole_workload_view() {
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .args([
            "run",
            "app.interp",
            "--set",
            "interp=perl",
            "--rounds",
            "1",
            "--repeat",
            "1",
            "--min-time",
            "1ms",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("App figures counted whole"), "{text}");
    let row = text
        .lines()
        .filter(|l| l.starts_with("app.interp interp=perl"))
        .nth(1)
        .unwrap_or_else(|| panic!("no whole-workload row: {text}"));
    assert!(row.contains('%'), "{row}");
}

#[test]
fn an_unknown_interpreter_is_a_clear_failure() {
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .args([
            "run",
            "app.interp",
            "--set",
            "interp=ruby",
            "--rounds",
            "1",
            "--repeat",
            "1",
            "--no-store",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("unknown interpreter \"ruby\"") && text.contains("python3, perl, tclsh"),
        "{text}"
    );
}

#[test]
fn suites_hold_the_app_workloads_they_should() {
    let env = TestEnv::new();
    let out = env.osmeter().args(["list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("apps ") && text.contains("app.interp"),
        "{text}"
    );
}

const ONE_SHORT_ROUND: &[&str] = &[
    "--rounds",
    "1",
    "--repeat",
    "1",
    "--warmup",
    "0",
    "--min-time",
    "1ms",
];

#[test]
fn ghostscript_renders_the_generated_document_counted_whole() {
    let env = TestEnv::new();
    let mut args = vec![
        "run",
        "app.ghostscript",
        "--set",
        "pages=2",
        "--json",
        "--no-store",
    ];
    args.extend_from_slice(ONE_SHORT_ROUND);
    let run = run_of(env.json(&args));
    let m = figure(&run, "app.ghostscript", &[]);
    if !std::path::Path::new("/usr/bin/gs").exists() {
        // Skipped, naming the package and the command that installs it.
        assert_eq!(m.status, Status::Skipped, "{m:?}");
        let why = m.reason.as_deref().unwrap();
        assert!(why.contains("apt-get install -y ghostscript") && why.contains("--install"));
        return;
    }
    assert_eq!(m.status, Status::Ok, "{m:?}");
    // Rendering two pages at 150 dpi is tens of milliseconds of user time at least.
    assert!(software(m, "workload-user-ns") > 5e6, "{:?}", m.counters);
    assert!(m.warnings.iter().any(|w| w.contains("2 pages")), "{m:?}");
}

#[test]
fn install_with_everything_present_changes_nothing() {
    if !is_root() || !std::path::Path::new("/usr/bin/gs").exists() {
        return;
    }
    let env = TestEnv::new();
    let mut args = vec![
        "run",
        "app.ghostscript",
        "--set",
        "pages=1",
        "--install",
        "--no-store",
    ];
    args.extend_from_slice(ONE_SHORT_ROUND);
    let out = env.osmeter().args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("installing"));
}
