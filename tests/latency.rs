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
fn bad_input_is_a_usage_error_naming_the_value_and_what_is_allowed() {
    // Every refusal comes before anything is measured: each case would otherwise take a second.
    for (args, want) in [
        (&["--period", "0"][..], &["'0'", "--period", "positive"][..]),
        (&["--period", "0ms"], &["'0ms'", "positive"]),
        (&["--period", "10us"], &["'10us'", "between 50us and 1s"]),
        (
            &["--period", "5parsecs"],
            &["'5parsecs'", "ns, us, ms, s, min or h"],
        ),
        (&["--prio-high", "99"], &["'99'", "--prio-high", "1..=98"]),
        (&["--prio-medium", "0"], &["'0'", "--prio-medium", "1..=98"]),
        (
            &["--classes", "high,realtime"],
            &["'realtime'", "high, medium, normal"],
        ),
        (
            &["--paths", "signal"],
            &["'signal'", "timer, futex, eventfd, pipe"],
        ),
        (&["--duration", "25h"], &["'25h'", "at most 24h"]),
        (
            &["--duration", "500us"],
            &["--duration", "shorter than one period"],
        ),
        (&["--buffer", "5ms,1,1ms"], &["'5ms,1,1ms'", "2 or more"]),
        (&["--compute-fraction", "1.5"], &["'1.5'", "below 1"]),
        (&["--cpus", "100000"], &["'100000'", "--cpus"]),
        (&["--cpus", "0,one"], &["'one'", "e.g. 0,1"]),
        (
            &["--load", "cpu,gpu"],
            &[
                "'gpu'",
                "cpu, memory, io, net, fork, faults, desktop, server",
            ],
        ),
        (
            &["--threshold", "soon", "--trace"],
            &["'soon'", "--threshold"],
        ),
        (&["--episodes", "0", "--trace"], &["'0'", "--episodes"]),
        (&["--fail-over=-1ms"], &["'-1ms'", "--fail-over"]),
        (
            &["--compute", "2ms"],
            &["--compute", "less than the period"],
        ),
        (&["--stages", "--paths", "pipe"], &["add timer to --paths"]),
    ] {
        let started = std::time::Instant::now();
        let out = TestEnv::new()
            .osmeter()
            .arg("latency")
            .args(args)
            .arg("--no-store")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for w in want {
            assert!(err.contains(w), "{args:?}: {w:?} missing from {err}");
        }
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{args:?} measured before refusing"
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

/// "61.2 ms" in a progress line, in nanoseconds.
fn progress_ns(text: &str) -> u64 {
    let (number, unit) = text.trim().split_once(' ').unwrap();
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => panic!("unit {other:?} in {text:?}"),
    };
    (number.parse::<f64>().unwrap() * scale) as u64
}

#[test]
fn the_progress_line_shows_the_worst_wake_so_far_and_a_hog_raises_it() {
    let _cpu = exclusive();
    let cpu = last_cpu();
    // Without root the hog cannot take SCHED_FIFO and delays the normal class by no known amount.
    let hogged = is_root();
    let h = hogged.then(|| hog(cpu, 1500, 60));
    let out = TestEnv::new()
        .osmeter()
        .env("OSMETER_PROGRESS", "always")
        .args(["latency", "--classes", "normal", "--paths", "timer"])
        .args(["--duration", "4s", "--cpus", &cpu.to_string()])
        .args(["--json", "--no-store"])
        .output()
        .unwrap();
    if let Some(h) = h {
        h.join().unwrap();
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let final_worst = run["sections"]["latency"]["streams"][0]["corrected"]["max_ns"]
        .as_u64()
        .unwrap();
    let seen: Vec<u64> = err
        .lines()
        .filter(|l| l.starts_with("latency: "))
        .map(|l| {
            let (_, worst) = l
                .split_once(", worst normal ")
                .unwrap_or_else(|| panic!("no worst case in {l:?}"));
            progress_ns(worst)
        })
        .collect();
    assert!(seen.len() >= 2, "{err}");
    // Rounded to three digits, each line's worst is at most the run's, and it never falls.
    for pair in seen.windows(2) {
        assert!(pair[0] <= pair[1], "{seen:?}\n{err}");
    }
    assert!(
        *seen.last().unwrap() <= final_worst + final_worst / 100,
        "{seen:?} against {final_worst}\n{err}"
    );
    if hogged {
        // The hog held the CPU 60 ms from 1.5 s after launch; the line drawn at 3 s of
        // measuring comes after it.
        assert!(
            *seen.last().unwrap() >= 50_000_000,
            "the hog's 60 ms is not in {seen:?}\n{err}"
        );
    }
}
