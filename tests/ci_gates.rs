//! `compare` and `history` as CI gates: `--junit FILE` read back by a real JUnit reader (the
//! junit-parser crate, as CI dashboards read such files), `--ktap` read by the rules of the
//! kernel's KTAP format (Documentation/dev-tools/ktap.rst, as kunit_parser applies them), each
//! case agreeing with the verdict the JSON gives and the exit code.

mod common;

use common::TestEnv;
use serde_json::Value;
use std::path::Path;

/// The result lines of a KTAP document, checked as a KTAP parser checks them: the version line
/// first, one plan `1..N`, then exactly N results numbered 1 to N in order, each `ok` or `not ok`,
/// a name without `#`, an optional directive after ` # `. Returns (passed, name, directive).
fn ktap_results(text: &str) -> Vec<(bool, String, Option<String>)> {
    let mut lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    assert_eq!(lines.next(), Some("KTAP version 1"), "{text}");
    let plan = lines.next().expect("a plan line");
    let planned: usize = plan
        .strip_prefix("1..")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a plan: {plan:?}"));
    let mut results = Vec::new();
    for (i, line) in lines.enumerate() {
        let (passed, rest) = match line.strip_prefix("not ok ") {
            Some(rest) => (false, rest),
            None => (
                true,
                line.strip_prefix("ok ")
                    .unwrap_or_else(|| panic!("not a result line: {line:?}")),
            ),
        };
        let (number, rest) = rest.split_once(' ').expect("a number and a name");
        assert_eq!(number.parse::<usize>().unwrap(), i + 1, "{line}");
        let (name, directive) = match rest.split_once(" # ") {
            Some((name, d)) => (name, Some(d.to_string())),
            None => (rest, None),
        };
        assert!(!name.is_empty() && !name.contains('#'), "{line}");
        assert!(line.chars().all(|c| !c.is_control()), "{line:?}");
        results.push((passed, name.to_string(), directive));
    }
    assert_eq!(results.len(), planned, "{text}");
    results
}

fn run(env: &TestEnv, wrapper: Option<&str>) -> String {
    let bin = assert_cmd::cargo::cargo_bin("osmeter");
    let mut cmd = match wrapper {
        Some(rules) => {
            let mut c = std::process::Command::new(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/seccomp-run"),
            );
            c.args([rules, "--"]).arg(&bin);
            c
        }
        None => std::process::Command::new(&bin),
    };
    let out = cmd
        .args(["run", "syscall.null", "syscall.dup", "--json"])
        // Enough rounds for a several-fold change to be judged, not only seen.
        .args([
            "--rounds",
            "5",
            "--repeat",
            "3",
            "--min-time",
            "1ms",
            "--warmup",
            "0",
        ])
        .env("OSMETER_STORE", env.store())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["id"].as_str().unwrap().to_string()
}

#[test]
fn compare_writes_junit_and_ktap_that_agree_with_its_verdicts_and_exit_code() {
    if common::which("cc").is_none() {
        eprintln!("skipped: scripts/seccomp-run needs a C compiler (apt-get install gcc)");
        return;
    }
    let env = TestEnv::new();
    let a = run(&env, None);
    // 4000 rules of seccomp filter make every system call several times slower: a real change.
    let b = run(&env, Some("4000"));
    let junit = env.dir.path().join("gate.xml");
    let args = |extra: &[&str]| {
        let mut all = vec!["compare", &a, &b, "--force", "--fail-if-slower", "10"];
        all.extend_from_slice(extra);
        all.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    // The verdicts as the JSON gives them (without the gate, which would end it with exit 4).
    let json = env.json(&["compare", &a, &b, "--force", "--json"]);
    let slower: Vec<String> = json["figures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["verdict"] == "slower" && f["speedup"].as_f64().unwrap() < 0.9)
        .map(|f| f["key"].as_str().unwrap().to_string())
        .collect();
    // The filter makes syscall.null several times slower; on a machine busy enough to hide even
    // that, the gate must still agree with the verdicts, which is what is checked below.
    if !slower.contains(&"syscall.null".to_string()) {
        eprintln!("note: the change was not found on this machine now: {json:#}");
    }

    let out = env
        .osmeter()
        .args(args(&["--junit", junit.to_str().unwrap(), "--ktap"]))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(if slower.is_empty() { 0 } else { 4 }),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let suites = junit_parser::from_reader(std::io::BufReader::new(
        std::fs::File::open(&junit).unwrap(),
    ))
    .expect("a JUnit reader reads it");
    assert_eq!(suites.suites.len(), 1);
    let suite = &suites.suites[0];
    let figures = json["figures"].as_array().unwrap().len();
    assert_eq!(suite.cases.len(), figures);
    assert_eq!(suite.tests as usize, figures);
    assert_eq!(suite.failures as usize, slower.len());
    for case in &suite.cases {
        assert_eq!(
            case.classname.as_deref(),
            Some("osmeter.syscall"),
            "{case:?}"
        );
        assert_eq!(
            case.status.is_failure(),
            slower.contains(&case.original_name),
            "{case:?}"
        );
    }

    let ktap = ktap_results(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(ktap.len(), figures);
    for (passed, name, _) in &ktap {
        assert_eq!(!passed, slower.contains(name), "{name}");
    }

    // Without --fail-if-slower the files say the same (every figure called slower fails) and the
    // exit code stays 0, as compare's does.
    let out = env
        .osmeter()
        .args([
            "compare",
            &a,
            &b,
            "--force",
            "--junit",
            junit.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let again = std::fs::read_to_string(&junit).unwrap();
    let any_slower = json["figures"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["verdict"] == "slower");
    assert_eq!(again.contains("<failure "), any_slower, "{again}");
}

#[test]
fn history_gates_its_latest_change_and_says_when_runs_are_too_few() {
    let env = TestEnv::new();
    run(&env, None);
    let junit = env.dir.path().join("history.xml");
    let out = env
        .osmeter()
        .args([
            "history",
            "syscall.null",
            "--fail-if-slower",
            "5",
            "--ktap",
            "--junit",
        ])
        .arg(&junit)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ktap = ktap_results(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(ktap.len(), 1);
    let (passed, name, directive) = &ktap[0];
    assert!(passed);
    assert_eq!(name, "syscall.null");
    assert!(
        directive.as_deref().is_some_and(|d| d.starts_with("SKIP ")),
        "{directive:?}"
    );
    let suites = junit_parser::from_reader(std::io::BufReader::new(
        std::fs::File::open(&junit).unwrap(),
    ))
    .unwrap();
    assert!(suites.suites[0].cases[0].status.is_skipped());
}

#[test]
fn a_gate_file_that_cannot_be_written_and_ktap_with_json_are_refused() {
    let env = TestEnv::new();
    let a = run(&env, None);
    let out = env
        .osmeter()
        .args(["compare", &a, &a, "--force", "--junit"])
        .arg(env.dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot write the JUnit report") && err.contains("--junit"),
        "{err}"
    );
    let out = env
        .osmeter()
        .args(["compare", &a, &a, "--ktap", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // Nothing half-written left beside the store.
    let left: Vec<String> = common::entries(env.dir.path())
        .into_iter()
        .filter(|e| !e.starts_with("runs.db"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
