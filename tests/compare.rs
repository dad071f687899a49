//! End-to-end tests of `osmeter compare` on runs saved into a test store, synthetic (known shifts) and
//! real.

mod common;

use common::{TestEnv, FAST};
use osmeter::results::model::{Measurement, Params, Run, Status, Unit};
use osmeter::results::store::{sqlite::SqliteStore, Store};
use predicates::prelude::*;

/// A run with syscall.null around `null_ns` and cpu.reference around 1000 ns, +-1 % wobble.
fn synthetic(id: &str, null_ns: f64, tag: &str, kernel: &str) -> Run {
    let wobble = [0.99, 1.0, 1.01, 0.995, 1.005, 1.0, 0.998, 1.002, 1.0];
    let figure = |probe: &str, center: f64| {
        let samples: Vec<f64> = wobble.iter().map(|w| w * center).collect();
        let mut m = Measurement::not_measured(
            probe,
            Params::new(),
            Unit::Nanoseconds,
            Status::Ok,
            String::new(),
        );
        m.reason = None;
        m.summary = Some(osmeter::stats::summary::summarize(&samples));
        m.samples = samples;
        m
    };
    Run {
        tool_version: "test".into(),
        suite: Some("quick".into()),
        tags: [("side".to_string(), tag.to_string())].into(),
        fingerprint: osmeter::results::fingerprint::Fingerprint::from_json(
            serde_json::json!({ "hostname": "h", "kernel_release": kernel }),
        ),
        measurements: vec![
            figure("cpu.reference", 1000.0),
            figure("syscall.null", null_ns),
        ],
        ..Run::new(
            id.into(),
            format!("2026-11-0{}T00:00:00Z", id.len() % 9 + 1),
        )
    }
}

fn store_runs(env: &TestEnv, runs: &[Run]) {
    let mut s = SqliteStore::open(&env.store()).unwrap();
    for r in runs {
        s.save(r).unwrap();
    }
}

#[test]
fn a_known_slowdown_is_flagged_and_gates_ci() {
    let env = TestEnv::new();
    store_runs(
        &env,
        &[
            synthetic("base", 200.0, "a", "6.1"),
            synthetic("slow", 230.0, "b", "6.6"),
        ],
    );
    env.osmeter()
        .args(["compare", "base", "slow"])
        .assert()
        .success()
        .stdout(predicate::str::contains("kernel_release: 6.1 -> 6.6"))
        .stdout(predicate::str::contains("1 of 2 figures changed"))
        .stdout(predicate::str::contains("SLOWER"));
    env.osmeter()
        .args(["compare", "base", "slow", "--fail-if-slower", "10"])
        .assert()
        .code(4);
    // 15 % slower does not cross a 20 % gate.
    env.osmeter()
        .args(["compare", "base", "slow", "--fail-if-slower", "20"])
        .assert()
        .success();
}

#[test]
fn identical_runs_flag_nothing_and_json_has_the_figures() {
    let env = TestEnv::new();
    store_runs(
        &env,
        &[
            synthetic("one", 200.0, "a", "6.1"),
            synthetic("two", 200.0, "b", "6.1"),
        ],
    );
    let out = env
        .osmeter()
        .args(["compare", "one", "two", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let figures = doc["figures"].as_array().unwrap();
    assert_eq!(figures.len(), 2);
    assert!(figures.iter().all(|f| f["verdict"] == "no_change"));
    assert!(doc["fingerprint_differences"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn groups_by_tag_and_by_list() {
    let env = TestEnv::new();
    store_runs(
        &env,
        &[
            synthetic("a1", 200.0, "a", "6.1"),
            synthetic("a22", 201.0, "a", "6.1"),
            synthetic("b1", 150.0, "b", "6.1"),
            synthetic("b22", 151.0, "b", "6.1"),
        ],
    );
    let out = env
        .osmeter()
        .args([
            "compare", "--tag-a", "side=a", "--tag-b", "side=b", "--json",
        ])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["runs_a"].as_array().unwrap().len(), 2);
    let null = doc["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == "syscall.null")
        .unwrap()
        .clone();
    assert_eq!(null["verdict"], "faster");
    env.osmeter()
        .args(["compare", "--a", "a1", "a22", "--b", "b1", "b22"])
        .assert()
        .success()
        .stdout(predicate::str::contains("faster"));
}

#[test]
fn two_real_runs_compare() {
    let env = TestEnv::new();
    for _ in 0..2 {
        env.osmeter()
            .args(["run", "syscall.null", "cpu.reference"])
            .args(FAST)
            .assert()
            .success();
    }
    let out = env.osmeter().args(["runs", "--json"]).output().unwrap();
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    // --force: on a shared machine either run may be called busy; the verdict is not the subject.
    env.osmeter()
        .args(["compare", &ids[1], &ids[0], "--all", "--force"])
        .assert()
        .success()
        .stdout(predicate::str::contains("syscall.null"))
        .stdout(predicate::str::contains("CPU reference speed-up"))
        .stdout(predicate::str::contains("why: rounds 2 + 2"));
    // Measured in rounds: each verdict rests on the rounds, with the false discovery rate
    // controlled over the figures, and says why.
    let json = env
        .osmeter()
        .args([
            "compare",
            &ids[1],
            &ids[0],
            "--json",
            "--no-history",
            "--force",
        ])
        .output()
        .unwrap();
    assert!(json.status.success());
    let c: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let figures = c["figures"].as_array().unwrap();
    assert_eq!(figures.len(), 2);
    for f in figures {
        assert_eq!(f["noise_source"], "rounds", "{f}");
        assert!(f["q_value"].as_f64().unwrap() >= f["p_value"].as_f64().unwrap() * 0.999);
        let reason = f["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("rounds 2 + 2 (Welch on log round values)")
                && reason.contains("adjusted over 2 figures"),
            "{reason}"
        );
    }
    assert_eq!(c["alpha"], 0.05);
}

#[test]
fn bad_requests_are_usage_errors() {
    let env = TestEnv::new();
    store_runs(&env, &[synthetic("base", 200.0, "a", "6.1")]);
    env.osmeter()
        .args(["compare", "base"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("baseline and a candidate"));
    env.osmeter()
        .args(["compare", "base", "bsae"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("did you mean base"));
    env.osmeter()
        .args(["compare", "base", "base", "--fail-if-slower", "150"])
        .assert()
        .code(2);
    env.osmeter()
        .args(["compare", "--tag-a", "side=a", "--tag-b", "side=zzz"])
        .assert()
        .code(2);
}

/// Nothing changed: the answer is one line, not a sentence of method and an empty table.
#[test]
fn nothing_changed_is_said_in_one_line() {
    let env = TestEnv::new();
    store_runs(
        &env,
        &[
            synthetic("base", 200.0, "a", "6.1"),
            synthetic("same", 200.0, "b", "6.1"),
        ],
    );
    let out = env
        .osmeter()
        .args(["compare", "base", "same"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("No figure changed beyond noise: 2 compared (`--all` shows them"),
        "{text}"
    );
    assert!(
        !text.contains("verdict") && !text.contains("(run runs)"),
        "{text}"
    );
    // The sides, the answer, and the means below it: no table, no paragraph of method.
    assert!(text.lines().count() <= 8, "{text}");
    // --all still shows every figure and how it was judged.
    let all = env
        .osmeter()
        .args(["compare", "base", "same", "--all"])
        .output()
        .unwrap();
    let all = String::from_utf8_lossy(&all.stdout);
    assert!(
        all.contains("syscall.null") && all.contains("why:"),
        "{all}"
    );
}
