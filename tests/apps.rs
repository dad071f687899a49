//! Application workloads end to end: real interpreters (and, below, real gcc, ghostscript and
//! fuse2fs), counted through a real cgroup, with nothing left behind.

mod common;

use common::TestEnv;
use serde_json::Value;
use std::path::PathBuf;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The cgroup v2 directory osmeter makes workload cgroups in (beside this process's own).
fn cgroup_home() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let root = osmeter::apps::cell::cgroup2_mount(&mounts)?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = osmeter::apps::cell::v2_path(&own)?
        .trim_start_matches('/')
        .to_string();
    Some(root.join(rel))
}

/// Workload cgroups whose process is gone: what a run that cleans up leaves none of.
fn leaked_cgroups() -> Vec<String> {
    let Some(home) = cgroup_home() else {
        return Vec::new();
    };
    std::fs::read_dir(home)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| {
                    n.strip_prefix("osmeter-app-")
                        .and_then(|r| r.split('-').next())
                        .and_then(|p| p.parse::<u32>().ok())
                        .is_some_and(|pid| !PathBuf::from(format!("/proc/{pid}")).exists())
                })
                .collect()
        })
        .unwrap_or_default()
}

fn measurement<'a>(run: &'a Value, label_part: &str) -> &'a Value {
    run["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| {
            let params = m["params"].to_string();
            format!("{} {params}", m["probe"].as_str().unwrap()).contains(label_part)
        })
        .unwrap_or_else(|| panic!("no measurement {label_part} in {run}"))
}

fn software(m: &Value, name: &str) -> f64 {
    m["counters"]["software"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("no software.{name} in {}", m["counters"]))
}

#[test]
fn interpreters_start_counted_whole_in_a_cgroup_that_is_removed() {
    let env = TestEnv::new();
    let run = env.json(&[
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
    ]);
    for interp in ["python3", "perl", "tclsh"] {
        let m = measurement(&run, &format!("\"interp\":\"{interp}\""));
        assert_eq!(m["status"], "ok", "{m}");
        assert!(m["median"].as_f64().unwrap() > 0.0, "{m}");
        // Each operation starts a process: it faults pages in and spends time in both modes.
        assert!(software(m, "page-faults") >= 10.0, "{m}");
        assert!(software(m, "workload-user-ns") + software(m, "workload-kernel-ns") > 0.0);
        if is_root() {
            // Counted through the cgroup: the interpreter's own CPU time is in task-clock.
            assert!(
                software(m, "task-clock") > 100_000.0,
                "{interp}: {}",
                m["counters"]
            );
            assert!(
                m["warnings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|w| !w.as_str().unwrap().contains("getrusage")),
                "{m}"
            );
        }
        // Interrupts are named by source, and the machine's time by state.
        assert!(
            m["counters"]["software"]
                .as_object()
                .unwrap()
                .keys()
                .any(|k| k.starts_with("irq:")),
            "{m}"
        );
        assert!(m["counters"]["software"]["machine-idle-ns"].is_number());
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
