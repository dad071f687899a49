//! End-to-end tests of `osmeter latency`: a short run with JSON output, stored; bad input refused.

mod common;
#[path = "common/cpu_hog.rs"]
mod cpu_hog;

use common::{interrupt_after, is_root, TestEnv};
use cpu_hog::{exclusive, hog, last_cpu};

#[test]
fn a_short_run_accounts_for_every_period_and_is_stored() {
    let _cpu = exclusive();
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .args([
            "latency",
            "--duration",
            "2s",
            "--paths",
            "timer,futex,eventfd,pipe",
            "--json",
            "--buffer",
            "5ms,3,2ms",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["measurements"].as_array().unwrap().len(), 0);
    let doc = &run["sections"]["latency"];
    assert_eq!(doc["schema"], "osmeter.latency/1");
    let streams = doc["streams"].as_array().unwrap();
    let classes: Vec<&str> = streams
        .iter()
        .map(|s| s["class"].as_str().unwrap())
        .collect();
    assert!(classes.contains(&"normal"));
    if is_root() {
        assert!(classes.contains(&"high") && classes.contains(&"medium"));
    } else {
        assert_eq!(doc["skipped"].as_array().unwrap().len(), 2);
    }
    for s in streams {
        assert!(s["error"].is_null(), "{s}");
        let (woken, missed) = (s["woken"].as_u64().unwrap(), s["missed"].as_u64().unwrap());
        assert_eq!(woken + missed, 2000, "{}", s["path"]);
        assert_eq!(s["corrected"]["count"].as_u64().unwrap(), 2000);
        assert_eq!(s["raw"]["count"].as_u64().unwrap(), woken);
        assert_eq!(s["buffers"].as_array().unwrap().len(), 16);
        let hist: u64 = s["histogram_corrected"]["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b[2].as_u64().unwrap())
            .sum();
        assert_eq!(hist, 2000);
        assert_eq!(s["windows"][0]["window"], "1s");
    }
    // Stored, and listed as a latency run.
    let shown = env
        .osmeter()
        .args(["show", run["id"].as_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(shown.status.success());
    let back: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(back["sections"]["latency"]["schema"], "osmeter.latency/1");
}

#[test]
fn the_table_names_every_section_and_fail_over_exits_5() {
    let _cpu = exclusive();
    let env = TestEnv::new();
    let mut cmd = env.osmeter();
    cmd.args([
        "latency",
        "--duration",
        "1s",
        "--classes",
        "normal",
        "--fail-over",
        "1ns",
        "--no-store",
    ]);
    if is_root() {
        cmd.args(["--cpu-dma-latency", "0"]);
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(5));
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "normal/timer",
        "normal/futex",
        "Worst case per window",
        "Buffer model",
        "Estimated worst case",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
}

#[test]
fn bad_input_is_a_usage_error() {
    let _cpu = exclusive();
    for args in [
        &["--period", "0"][..],
        &["--period", "0ms"],
        &["--prio-high", "99"],
        &["--prio-medium", "0"],
        &["--classes", "realtime"],
        &["--paths", "signal"],
        &["--duration", "25h"],
        &["--buffer", "5ms,1,1ms"],
        &["--cpus", "100000"],
    ] {
        let out = TestEnv::new()
            .osmeter()
            .arg("latency")
            .args(args)
            .arg("--no-store")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn ctrl_c_stops_the_run_and_the_loads_and_keeps_what_was_measured() {
    let _cpu = exclusive();
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let (out, stopping) = interrupt_after(
        env.osmeter_std()
            .args([
                "latency",
                "--duration",
                "60s",
                "--classes",
                "normal",
                "--paths",
                "timer",
                "--load",
                "server,faults",
                "--load-cmd",
                "sleep 100",
                "--json",
                "--no-store",
                "--dir",
            ])
            .arg(dir.path()),
        std::time::Duration::from_millis(1500),
        || {},
    );
    assert!(stopping.as_secs() < 10);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let doc = &run["sections"]["latency"];
    assert_eq!(doc["interrupted"], true);
    let s = &doc["streams"][0];
    let periods = s["periods"].as_u64().unwrap();
    assert!(periods > 0 && periods < 60_000);
    assert_eq!(
        s["woken"].as_u64().unwrap() + s["missed"].as_u64().unwrap(),
        periods
    );
    let loads = doc["loads"].as_array().unwrap();
    assert_eq!(loads.len(), 6, "{loads:?}"); // net, io, fork, cpu, faults and the command
    for l in &loads[..5] {
        assert!(l["rate"].as_f64().unwrap() > 0.0, "{l}");
    }
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "the io load left files behind"
    );
}

fn tracefs_state() -> (bool, Vec<String>) {
    let mounted = std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .any(|l| l.split_whitespace().nth(2) == Some("tracefs"));
    let instances = std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("osmeter-"))
                .collect()
        })
        .unwrap_or_default();
    (mounted, instances)
}

#[test]
fn cause_capture_names_an_injected_delay_and_restores_tracefs() {
    let _cpu = exclusive();
    if !is_root() {
        eprintln!("skipped: cause capture needs root");
        return;
    }
    let before = tracefs_state();
    let cpu = last_cpu();
    let h = hog(cpu, 800, 40);
    let out = TestEnv::new()
        .osmeter()
        .args([
            "latency",
            "--trace",
            "--threshold",
            "15ms",
            "--episodes",
            "1",
            "--classes",
            "normal",
            "--paths",
            "timer",
            "--duration",
            "2s",
            "--cpus",
            &cpu.to_string(),
            "--json",
            "--no-store",
        ])
        .output()
        .unwrap();
    h.join().unwrap();
    if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("tracefs") {
        eprintln!("skipped: {}", String::from_utf8_lossy(&out.stderr));
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let eps = run["sections"]["latency"]["episodes"].as_array().unwrap();
    assert_eq!(eps.len(), 1, "{eps:?}");
    let ran = eps[0]["ran"].as_array().unwrap();
    assert!(
        ran.iter().any(|r| r[0] == "osm-hog"),
        "the hog is not named: {}",
        eps[0]["summary"]
    );
    assert_eq!(tracefs_state(), before, "tracefs not restored");
}
