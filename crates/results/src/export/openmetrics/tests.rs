//! The exposition checked by a small parser of the OpenMetrics text format, written from its rules:
//! metadata before samples, one family at a time, names and labels well formed, escaped values, unique
//! label sets, and a final `# EOF`.

use super::super::*;
use std::collections::{BTreeMap, HashSet};

#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Parses `name{a="x",b="y"} value`; labels may contain escaped quotes, backslashes and newlines.
fn parse_sample(line: &str) -> Result<Sample, String> {
    let brace = line.find('{').ok_or("no label set")?;
    let name = line[..brace].to_string();
    if !valid_name(&name) {
        return Err(format!("bad metric name {name:?}"));
    }
    let mut labels = BTreeMap::new();
    let rest: Vec<char> = line[brace + 1..].chars().collect();
    let mut i = 0;
    loop {
        let start = i;
        while i < rest.len() && rest[i] != '=' {
            i += 1;
        }
        let key: String = rest[start..i].iter().collect();
        if !valid_name(&key) {
            return Err(format!("bad label name {key:?}"));
        }
        if rest.get(i + 1) != Some(&'"') {
            return Err("label value not quoted".into());
        }
        i += 2;
        let mut val = String::new();
        loop {
            match rest.get(i) {
                None => return Err("unterminated label value".into()),
                Some('\\') => {
                    match rest.get(i + 1) {
                        Some('\\') => val.push('\\'),
                        Some('"') => val.push('"'),
                        Some('n') => val.push('\n'),
                        other => return Err(format!("bad escape {other:?}")),
                    }
                    i += 2;
                }
                Some('"') => {
                    i += 1;
                    break;
                }
                Some('\n') => return Err("raw newline in label value".into()),
                Some(c) => {
                    val.push(*c);
                    i += 1;
                }
            }
        }
        if labels.insert(key.clone(), val).is_some() {
            return Err(format!("label {key} repeated"));
        }
        match rest.get(i) {
            Some(',') => i += 1,
            Some('}') => {
                i += 1;
                break;
            }
            other => return Err(format!("expected , or }} after a label, found {other:?}")),
        }
    }
    let tail: String = rest[i..].iter().collect();
    let value_text = tail.strip_prefix(' ').ok_or("no space before the value")?;
    let value = match value_text {
        "NaN" => f64::NAN,
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        t => t.parse::<f64>().map_err(|_| format!("bad value {t:?}"))?,
    };
    Ok(Sample {
        name,
        labels,
        value,
    })
}

/// Validates a whole exposition and returns its samples.
fn parse_exposition(text: &str) -> Result<Vec<Sample>, String> {
    let lines: Vec<&str> = text.split('\n').collect();
    if lines.last() != Some(&"") || lines.get(lines.len().wrapping_sub(2)) != Some(&"# EOF") {
        return Err("must end with \"# EOF\" and a line feed".into());
    }
    let mut samples = Vec::new();
    let mut typed: HashSet<String> = HashSet::new();
    let mut finished: HashSet<String> = HashSet::new();
    let mut current: Option<String> = None;
    let mut seen: HashSet<(String, BTreeMap<String, String>)> = HashSet::new();
    for line in &lines[..lines.len() - 2] {
        if let Some(meta) = line.strip_prefix("# ") {
            let mut parts = meta.splitn(3, ' ');
            let (kind, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            if !matches!(kind, "TYPE" | "HELP" | "UNIT") || !valid_name(name) {
                return Err(format!("bad metadata line {line:?}"));
            }
            if kind == "TYPE" {
                if finished.contains(name) || !typed.insert(name.to_string()) {
                    return Err(format!("family {name} declared twice"));
                }
                if let Some(prev) = current.replace(name.to_string()) {
                    finished.insert(prev);
                }
                if parts.next() != Some("gauge") {
                    return Err(format!("{name} is not a gauge"));
                }
            } else if current.as_deref() != Some(name) {
                return Err(format!("{kind} for {name} outside its family"));
            }
            if kind == "UNIT" && !name.ends_with(&format!("_{}", parts.next().unwrap_or("?"))) {
                return Err(format!("{name} does not end with its unit"));
            }
            continue;
        }
        let s = parse_sample(line).map_err(|e| format!("{e} in {line:?}"))?;
        if current.as_deref() != Some(s.name.as_str()) {
            return Err(format!("sample of {} outside its family", s.name));
        }
        if !seen.insert((s.name.clone(), s.labels.clone())) {
            return Err(format!("duplicate sample {line:?}"));
        }
        samples.push(s);
    }
    Ok(samples)
}

#[test]
fn exposition_parses_and_carries_the_figures() {
    let text = render(
        &openmetrics::OpenMetrics,
        &sample_run(),
        ExportOptions::default(),
    );
    let samples = parse_exposition(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let median = samples
        .iter()
        .find(|s| s.name == "osmeter_seconds" && s.labels["stat"] == "value")
        .unwrap();
    assert_eq!(median.labels["figure"], "syscall.null");
    assert_eq!(median.labels["kind"], "run");
    assert!((median.value - 200e-9).abs() < 1e-18);
    let copy = samples
        .iter()
        .find(|s| s.labels.get("figure").is_some_and(|p| p.contains("warm")))
        .unwrap();
    assert_eq!(
        copy.labels["figure"],
        "memory.copy cache=hot, \"warm\" size=16384"
    );
    assert!(samples
        .iter()
        .any(|s| s.name == "osmeter_perf_events_per_operation" && s.labels["scope"] == "kernel"));
    assert!(
        !text.contains("pipe_pingpong"),
        "skipped figures are not exported as values"
    );
    check_snapshot("run.om.txt", &text);
}

#[test]
fn the_parser_rejects_broken_expositions() {
    assert!(
        parse_exposition("# TYPE a gauge\na{x=\"1\"} 1\n").is_err(),
        "no EOF"
    );
    assert!(
        parse_exposition("a{x=\"1\"} 1\n# EOF\n").is_err(),
        "no TYPE"
    );
    assert!(
        parse_exposition("# TYPE a gauge\na{x=\"1} 1\n# EOF\n").is_err(),
        "unterminated"
    );
    assert!(
        parse_exposition("# TYPE a gauge\na{x=\"1\"} 1\na{x=\"1\"} 2\n# EOF\n").is_err(),
        "duplicate"
    );
    assert!(
        parse_exposition("# TYPE a gauge\na{x=\"\\q\"} 1\n# EOF\n").is_err(),
        "bad escape"
    );
    assert!(parse_exposition("# TYPE a gauge\na{x=\"1\"} 1\n# EOF\n").is_ok());
}

/// A stored string holding what the text format must escape reads back as it was.
#[test]
fn label_values_escape_backslash_quote_and_line_feed() {
    let mut run = sample_run();
    let hostile = "a\\b \"c\"\nd";
    run.fingerprint = crate::results::fingerprint::Fingerprint::from_json(
        serde_json::json!({"hostname": hostile}),
    );
    let text = render(&openmetrics::OpenMetrics, &run, ExportOptions::default());
    assert!(text.contains(r#"host="a\\b \"c\"\nd""#), "{text}");
    let samples = parse_exposition(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(samples.iter().all(|s| s.labels["host"] == hostile));
}
