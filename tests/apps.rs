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

/// Mount points below `dir` (none may be left when osmeter ends).
fn mounts_below(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4).map(str::to_string))
        .filter(|m| m.starts_with(&*dir.to_string_lossy()))
        .collect()
}

fn fuse2fs_running_on(dir: &std::path::Path) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| {
                let c = String::from_utf8_lossy(&c);
                c.contains("fuse2fs") && c.contains(&*dir.to_string_lossy())
            })
            .unwrap_or(false)
    })
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
fn andrew_runs_every_phase_on_ext4_and_on_fuse_and_unmounts() {
    if !is_root() {
        eprintln!("skipped: mounting images needs root");
        return;
    }
    let env = TestEnv::new();
    let scratch = tempfile::tempdir().unwrap();
    let mut args = vec![
        "run",
        "app.andrew",
        "--set",
        "sources=2",
        "--json",
        "--no-store",
        "--dir",
    ];
    let dir = scratch.path().to_string_lossy().into_owned();
    args.push(&dir);
    args.extend_from_slice(ONE_SHORT_ROUND);
    let run = env.json(&args);
    let ms = run["measurements"].as_array().unwrap();
    // Six figures (five phases and the total) on each of three file systems.
    assert_eq!(ms.len(), 18, "{run}");
    for m in ms {
        assert_eq!(m["status"], "ok", "{m}");
    }
    let compile = |fs: &str| measurement(&run, &format!("\"fs\":\"{fs}\",\"phase\":\"compile\""));
    for fs in ["dir", "ext4", "fuse"] {
        let c = compile(fs);
        // Three gcc runs (two sources, the link) are the workload's: far more CPU time than the
        // measuring process alone spends, and page faults by the thousand.
        assert!(software(c, "task-clock") > 10e6, "{fs}: {}", c["counters"]);
        assert!(
            software(c, "page-faults") > 1000.0,
            "{fs}: {}",
            c["counters"]
        );
        let note = c["warnings"].to_string();
        assert!(note.contains("gcc") && note.contains("-O2"), "{note}");
    }
    assert!(compile("fuse")["warnings"].to_string().contains("fuse2fs"));
    assert!(compile("ext4")["warnings"]
        .to_string()
        .contains("in-kernel ext4"));
    // Under FUSE every lookup is a round trip to the fuse2fs server in the workload's cgroup:
    // stat-ing the copy switches context far more often than with the kernel's ext4.
    let stat = |fs: &str| {
        software(
            measurement(&run, &format!("\"fs\":\"{fs}\",\"phase\":\"stat\"")),
            "context-switches",
        )
    };
    assert!(
        stat("fuse") > stat("ext4") + 10.0,
        "fuse {} ext4 {}",
        stat("fuse"),
        stat("ext4")
    );
    assert!(
        mounts_below(scratch.path()).is_empty(),
        "{:?}",
        mounts_below(scratch.path())
    );
    assert!(!fuse2fs_running_on(scratch.path()));
    assert_eq!(common::entries(scratch.path()), Vec::<String>::new());
    assert!(leaked_cgroups().is_empty(), "{:?}", leaked_cgroups());
}

#[test]
fn ctrl_c_during_a_fuse_compile_unmounts_and_removes_everything() {
    if !is_root() {
        eprintln!("skipped: mounting images needs root");
        return;
    }
    let env = TestEnv::new();
    let scratch = tempfile::tempdir().unwrap();
    let child = env
        .osmeter_std()
        .args([
            "run",
            "app.andrew",
            "--set",
            "fs=fuse",
            "--set",
            "phase=compile",
            "--set",
        ])
        .args(["sources=40", "--rounds", "3", "--no-store", "--dir"])
        .arg(scratch.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the image is mounted and gcc is at work, then interrupt.
    let t = std::time::Instant::now();
    while mounts_below(scratch.path()).is_empty() && t.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        !mounts_below(scratch.path()).is_empty(),
        "the image was never mounted"
    );
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: signalling the osmeter this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        mounts_below(scratch.path()).is_empty(),
        "{:?}",
        mounts_below(scratch.path())
    );
    assert!(!fuse2fs_running_on(scratch.path()));
    assert_eq!(common::entries(scratch.path()), Vec::<String>::new());
    assert!(leaked_cgroups().is_empty(), "{:?}", leaked_cgroups());
}

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
    let run = env.json(&args);
    let m = measurement(&run, "app.ghostscript");
    if !std::path::Path::new("/usr/bin/gs").exists() {
        // Skipped, naming the package and the command that installs it.
        assert_eq!(m["status"], "skipped", "{m}");
        let why = m["reason"].as_str().unwrap();
        assert!(why.contains("apt-get install -y ghostscript") && why.contains("--install"));
        return;
    }
    assert_eq!(m["status"], "ok", "{m}");
    // Rendering two pages at 150 dpi is tens of milliseconds of user time at least.
    assert!(software(m, "workload-user-ns") > 5e6, "{}", m["counters"]);
    assert!(m["warnings"].to_string().contains("2 pages"), "{m}");
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
