//! The metrics export read by Prometheus's own tools: `promtool check metrics` on every kind of
//! run, node-exporter's textfile collector on what `--textfile DIR` writes, and the Grafana
//! dashboard in deploy/ asking only for metric names and labels osmeter writes. A tool missing is
//! a skip with its install command, or a failure in CI.

mod common;

use common::{consumer_missing, which, TestEnv, AB_FAST, FAST};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One stored run of every kind measured here (guest runs need a booted kernel), by id.
fn one_of_each(env: &TestEnv) -> Vec<String> {
    let trace = env.dir.path().join("t.osmt");
    env.osmeter()
        .args(["trace", "synth", "--refs", "20000", "-o"])
        .arg(&trace)
        .assert()
        .success();
    env.osmeter()
        .args(["run", "syscall.null", "memory.copy"])
        .args(FAST)
        .assert()
        .success();
    env.osmeter()
        .args(["stat", "-r", "3", "--", "true"])
        .assert()
        .success();
    env.osmeter()
        .args(["latency", "--duration", "2s", "--classes", "normal"])
        .assert()
        .success();
    env.osmeter()
        .args(["memsim", "--preset", "ds5000-200"])
        .arg(&trace)
        .assert()
        .success();
    env.osmeter()
        .args(AB_FAST)
        .args([
            "syscall.null",
            "--max-pairs",
            "2",
            "--b-wrap",
            "env OSMETER_AB=1",
        ])
        .assert()
        .success();
    let list = env.json(&["runs", "--json"]);
    let ids: Vec<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 5, "{list}");
    ids
}

fn exposition(env: &TestEnv, id: &str) -> String {
    let out = env
        .osmeter()
        .args(["export", id, "--format", "openmetrics"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn promtool() -> Option<PathBuf> {
    let found = which("promtool");
    if found.is_none() {
        consumer_missing("promtool", "apt-get install prometheus");
    }
    found
}

/// `promtool check metrics` on `text`: Ok, or what it said.
fn promtool_check(promtool: &Path, text: &str) -> Result<(), String> {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Metric names and label names of an exposition's samples.
fn names_and_labels(text: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut names, mut labels) = (BTreeSet::new(), BTreeSet::new());
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((name, rest)) = line.split_once('{') else {
            continue;
        };
        names.insert(name.to_string());
        // Label values are quoted; what precedes each `="` is a label name.
        let mut quoted = false;
        let mut escaped = false;
        let mut current = String::new();
        for c in rest.chars() {
            match (quoted, escaped, c) {
                (true, true, _) => escaped = false,
                (true, false, '\\') => escaped = true,
                (true, false, '"') => quoted = false,
                (true, false, _) => {}
                (false, _, '"') => quoted = true,
                (false, _, '=') => {
                    labels.insert(std::mem::take(&mut current));
                }
                (false, _, ',' | '}' | ' ') => current.clear(),
                (false, _, c) => current.push(c),
            }
        }
    }
    (names, labels)
}

#[test]
fn promtool_passes_the_metrics_of_every_kind_of_run() {
    let Some(promtool) = promtool() else { return };
    let env = TestEnv::new();
    for id in one_of_each(&env) {
        let text = exposition(&env, &id);
        assert!(text.ends_with("# EOF\n"), "{text}");
        if let Err(e) = promtool_check(&promtool, &text) {
            panic!("promtool check metrics on run {id}: {e}\n{text}");
        }
    }
}

/// Reads node-exporter's /metrics over plain HTTP/1.0.
fn scrape(port: u16) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    Some(text)
}

#[test]
fn textfile_writes_osmeter_prom_whole_and_node_exporter_reads_it() {
    let env = TestEnv::new();
    let id = env.run_id(&["syscall.null"]);
    let dir = env.dir.path().join("textfiles");
    std::fs::create_dir(&dir).unwrap();
    let textfile = dir.to_str().unwrap();
    env.osmeter()
        .args([
            "export",
            &id,
            "--format",
            "openmetrics",
            "--textfile",
            textfile,
        ])
        .assert()
        .success()
        .stdout("");
    assert_eq!(common::entries(&dir), ["osmeter.prom"]);
    let written = std::fs::read_to_string(dir.join("osmeter.prom")).unwrap();
    assert_eq!(written, exposition(&env, &id));

    // Not a directory, or not metrics: usage errors that say what to give instead.
    let file = dir.join("osmeter.prom");
    let out = env
        .osmeter()
        .args(["export", &id, "--format", "openmetrics", "--textfile"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory"));
    let out = env
        .osmeter()
        .args(["export", &id, "--format", "csv", "--textfile", textfile])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--format openmetrics"));

    let exporter = which("prometheus-node-exporter").or_else(|| which("node_exporter"));
    let Some(exporter) = exporter else {
        consumer_missing("node-exporter", "apt-get install prometheus-node-exporter");
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(exporter)
        .arg("--collector.disable-defaults")
        .arg("--collector.textfile")
        .arg(format!("--collector.textfile.directory={textfile}"))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut scraped = None;
    for _ in 0..100 {
        scraped = scrape(port);
        if scraped.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().unwrap();
    let log = child.wait_with_output().unwrap();
    let scraped = scraped.unwrap_or_else(|| {
        panic!(
            "node-exporter did not answer: {}",
            String::from_utf8_lossy(&log.stderr)
        )
    });
    assert!(
        scraped.contains("\nnode_textfile_scrape_error 0\n"),
        "node-exporter could not read osmeter.prom:\n{scraped}\n{}",
        String::from_utf8_lossy(&log.stderr)
    );
    assert!(
        scraped.contains(&format!("run=\"{id}\"")) && scraped.contains("osmeter_seconds{"),
        "{scraped}"
    );
}

/// Every PromQL expression of the dashboard: panel targets and template queries.
fn expressions(dashboard: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for t in panel["targets"].as_array().unwrap() {
            out.push(t["expr"].as_str().unwrap().to_string());
        }
    }
    for v in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(q) = v["query"]["query"].as_str() {
            out.push(q.to_string());
        }
    }
    out
}

/// The metric names and label names an expression uses: words after `{`/`,` and before a
/// matcher's operator are labels, as are the words in `by (...)`; words starting `osmeter_` are
/// metrics.
fn used(expr: &str) -> (Vec<String>, Vec<String>) {
    let (mut metrics, mut labels) = (Vec::new(), Vec::new());
    let mut quoted = false;
    let mut in_braces = false;
    let mut in_by = false;
    let mut word = String::new();
    let mut after_word = false;
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if quoted {
            quoted = c != '"' || chars[i - 1] == '\\';
            i += 1;
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
            after_word = true;
        } else {
            if after_word {
                let w = std::mem::take(&mut word);
                if in_by || (in_braces && matches!(c, '=' | '!' | '~')) {
                    labels.push(w);
                } else if w.starts_with("osmeter_") {
                    metrics.push(w);
                } else if w == "by" || w == "without" {
                    in_by = true;
                } else if !in_braces {
                    // A function or another label argument of label_values: its metric comes first.
                    if chars[..i]
                        .iter()
                        .collect::<String>()
                        .contains("label_values(osmeter")
                        && c == ')'
                    {
                        labels.push(w);
                    }
                }
                after_word = false;
            }
            match c {
                '"' => quoted = true,
                '{' => in_braces = true,
                '}' => in_braces = false,
                ')' if in_by => in_by = false,
                _ => {}
            }
        }
        i += 1;
    }
    (metrics, labels)
}

#[test]
fn the_grafana_dashboard_asks_only_for_metrics_and_labels_osmeter_writes() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/osmeter.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let env = TestEnv::new();
    let (mut names, mut labels) = (BTreeSet::new(), BTreeSet::new());
    for id in one_of_each(&env) {
        let (n, l) = names_and_labels(&exposition(&env, &id));
        names.extend(n);
        labels.extend(l);
    }
    let exprs = expressions(&dashboard);
    assert!(exprs.len() >= 8, "{exprs:?}");
    for expr in exprs {
        let (metrics, used_labels) = used(&expr);
        assert!(!metrics.is_empty(), "{expr:?} names no osmeter metric");
        for m in metrics {
            assert!(
                names.contains(&m),
                "{expr:?}: osmeter writes no {m} (it writes {names:?})"
            );
        }
        for l in used_labels {
            assert!(
                labels.contains(&l),
                "{expr:?}: osmeter writes no label {l} ({labels:?})"
            );
        }
    }
}

#[test]
fn the_expression_reader_finds_metrics_and_labels() {
    let (m, l) = used(r#"max by (host, figure) (osmeter_seconds{stat="a,b=c",host=~"$h"})"#);
    assert_eq!(m, ["osmeter_seconds"]);
    assert_eq!(l, ["host", "figure", "stat", "host"]);
    let (m, l) = used(r#"label_values(osmeter_seconds{host=~"$host"}, figure)"#);
    assert_eq!(m, ["osmeter_seconds"]);
    assert_eq!(l, ["host", "figure"]);
}
