//! End-to-end tests of `osmeter latency`: a short run with JSON output, stored; bad input refused.

mod common;

use common::{is_root, TestEnv};

#[test]
fn a_short_run_accounts_for_every_period_and_is_stored() {
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
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .args([
            "latency",
            "--duration",
            "1s",
            "--classes",
            "normal",
            "--fail-over",
            "1ns",
            "--no-store",
        ])
        .output()
        .unwrap();
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
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let child = env
        .osmeter_std()
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
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed().as_secs() < 10);
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
