//! End-to-end tests of rounds: every figure measured in several rounds, each in a fresh process, in
//! a shuffled order that the seed fixes; each round's value stored beside the samples; probes that
//! check their own counters.

mod common;

use common::TestEnv;
use predicates::prelude::*;
use serde_json::Value;

const QUICK: &[&str] = &["--repeat", "2", "--min-time", "1ms", "--warmup", "0"];

fn run_json(env: &TestEnv, args: &[&str]) -> Value {
    let mut all = vec!["run", "--json", "--no-store"];
    all.extend_from_slice(args);
    all.extend_from_slice(QUICK);
    env.json(&all)
}

/// (figure label, round) -> place in the run's order.
fn positions(doc: &Value) -> Vec<(String, u64, u64)> {
    let mut out = Vec::new();
    for m in doc["measurements"].as_array().unwrap() {
        let label = format!("{} {}", m["probe"].as_str().unwrap(), m["params"]);
        for r in m["round_values"].as_array().unwrap() {
            out.push((
                label.clone(),
                r["round"].as_u64().unwrap(),
                r["position"].as_u64().unwrap(),
            ));
        }
    }
    out.sort();
    out
}

#[test]
fn rounds_are_interleaved_in_an_order_the_seed_fixes() {
    let env = TestEnv::new();
    let targets = ["syscall.null", "syscall.dup", "cpu.null", "signal.install"];
    let mut args: Vec<&str> = targets.to_vec();
    args.extend_from_slice(&["--rounds", "3", "--seed", "42"]);
    let a = run_json(&env, &args);
    let b = run_json(&env, &args);
    assert_eq!(a["options"]["seed"], 42);
    assert_eq!(a["options"]["rounds"], 3);
    let (pa, pb) = (positions(&a), positions(&b));
    assert_eq!(pa, pb, "the same seed gives the same order");
    assert_eq!(pa.len(), 4 * 3);
    // Round r of every figure comes before round r + 1 of any: positions 4r..4r+3.
    for (_, round, position) in &pa {
        assert_eq!(position / 4, *round, "{pa:?}");
    }
    // Not in the order given, and not the same in every round.
    let order_of = |round: u64| -> Vec<String> {
        let mut r: Vec<&(String, u64, u64)> = pa.iter().filter(|p| p.1 == round).collect();
        r.sort_by_key(|p| p.2);
        r.into_iter().map(|p| p.0.clone()).collect()
    };
    assert!(
        (0..3).any(|r| order_of(r) != order_of((r + 1) % 3)),
        "every round in the same order: {pa:?}"
    );
    let c = run_json(
        &env,
        &[&targets[..], &["--rounds", "3", "--seed", "43"]].concat(),
    );
    assert_ne!(positions(&c), pa, "another seed, another order");
    for m in a["measurements"].as_array().unwrap() {
        // Samples of all rounds, each round's value beside them, and the figure's interval from
        // the rounds.
        assert_eq!(m["samples"].as_array().unwrap().len(), 3 * 2);
        let grouped = m["rounds"].as_array().unwrap();
        assert_eq!(grouped.len(), 3);
        assert!(grouped.iter().all(|r| r.as_array().unwrap().len() == 2));
        let rounds = m["round_values"].as_array().unwrap();
        let values: Vec<f64> = rounds
            .iter()
            .map(|r| r["value"].as_f64().unwrap())
            .collect();
        for (value, samples) in values.iter().zip(grouped) {
            let s: Vec<f64> = samples
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            assert_eq!(*value, (s[0] + s[1]) / 2.0, "a round's value is its median");
        }
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(
            m["median"].as_f64().unwrap(),
            sorted[1],
            "median of the round values"
        );
        let ci = m["ci95"].as_array().unwrap();
        assert!(ci[0].as_f64().unwrap() <= ci[1].as_f64().unwrap());
    }
    let role = |probe: &str| {
        a["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["probe"] == probe)
            .unwrap()["role"]
            .clone()
    };
    assert_eq!(role("cpu.null"), "other");
    assert_eq!(role("syscall.null"), "os");
}

#[test]
fn bad_rounds_are_usage_errors_and_the_worker_is_not_for_people() {
    let env = TestEnv::new();
    for bad in ["0", "1001"] {
        env.osmeter()
            .args(["run", "syscall.null", "--no-store", "--rounds", bad])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("--rounds"));
    }
    env.osmeter()
        .args(["run", "syscall.null", "--no-store", "--seed", "x"])
        .assert()
        .code(2);
    env.osmeter()
        .arg("measure-worker")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("osmeter run"));
    // A descriptor 3 that a tool left open (`/usr/bin/time -o FILE` does, a pipe from a shell or a
    // CI runner could) is not the parent's pipe: still a usage error, and the file is untouched.
    let left_open = env.dir.path().join("time-output");
    std::fs::write(&left_open, "kept").unwrap();
    let bin = assert_cmd::cargo::cargo_bin("osmeter");
    for redirect in [r#"3>>"$2""#, "3>/dev/null", "3</dev/null"] {
        let out = std::process::Command::new("sh")
            .args([
                "-c",
                &format!(r#"exec "$1" measure-worker {redirect} < /dev/null"#),
                "sh",
            ])
            .arg(&bin)
            .arg(&left_open)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{redirect}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("osmeter run"));
    }
    let pipe = std::process::Command::new("sh")
        .args(["-c", r#"echo '{}' | "$1" measure-worker 3>&1 | cat"#, "sh"])
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&pipe.stderr).contains("osmeter run"),
        "a pipe on descriptor 3 that osmeter did not make: {pipe:?}"
    );
    assert_eq!(std::fs::read_to_string(&left_open).unwrap(), "kept");
    // And a run started with such a descriptor measures as any other.
    let run = std::process::Command::new("sh")
        .args(["-c", r#""$1" run syscall.null --no-store --rounds 1 --repeat 2 --min-time 1ms --warmup 0 3>>"$2""#, "sh"])
        .arg(&bin)
        .arg(&left_open)
        .env("HOME", env.dir.path())
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    assert_eq!(std::fs::read_to_string(&left_open).unwrap(), "kept");
    // Hidden from the help.
    env.osmeter()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("measure-worker").not());
}

#[test]
fn a_figure_whose_counters_contradict_its_probe_is_marked_and_the_others_are_not() {
    let env = TestEnv::new();
    let doc = run_json(
        &env,
        &["memory.page_fault", "syscall.null", "--rounds", "2"],
    );
    if doc["counters_unavailable"]
        .as_object()
        .is_some_and(|u| u.contains_key("software:page-faults"))
    {
        eprintln!("software counters unavailable here; nothing to check");
        return;
    }
    for m in doc["measurements"].as_array().unwrap() {
        let checks = m["checks"].as_array().expect("every figure is checked");
        assert!(!checks.is_empty(), "{m}");
        for c in checks {
            let marked = m["warnings"].as_array().into_iter().flatten().any(|w| {
                w.as_str()
                    .unwrap()
                    .contains("counters contradict the probe")
            });
            assert_eq!(c["holds"] == false, marked, "{m}");
        }
    }
    // Both kinds of page fault really fault once per operation.
    for m in doc["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["probe"] == "memory.page_fault")
    {
        let c = &m["checks"][0];
        assert_eq!(c["event"], "page-faults");
        assert_eq!(c["holds"], true, "{}: {c}", m["params"]);
    }
}
