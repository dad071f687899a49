use super::*;
use crate::results::model::{Measurement, Params, Status, Unit};
use crate::stats::summary::summarize;

/// A figure measured in five rounds of three samples, as `osmeter run` measures: the verdicts of a
/// comparison rest on the spread between rounds.
fn figure(probe: &str, params: Params, unit: Unit, center: f64) -> Measurement {
    let rounds: Vec<Vec<f64>> = [0.98, 1.0, 1.02, 0.99, 1.01]
        .iter()
        .map(|w| vec![w * center * 0.999, w * center, w * center * 1.001])
        .collect();
    let samples: Vec<f64> = rounds.iter().flatten().copied().collect();
    let mut m = Measurement::not_measured(probe, params, unit, Status::Ok, String::new());
    m.reason = None;
    m.summary = Some(summarize(&samples));
    m.samples = samples;
    m.rounds = rounds;
    m
}

fn run(id: &str, scale: f64, hardware: bool) -> Run {
    let mut r = crate::results::model::tests::empty_run();
    r.id = id.into();
    r.fingerprint = crate::results::fingerprint::Fingerprint::from_json(serde_json::json!({
        "hostname": "box", "kernel_release": if scale > 1.0 { "6.6" } else { "6.1" },
        "cache_l1d_bytes": 32768, "cache_l2_bytes": 1048576, "cache_l3_bytes": 33554432,
    }));
    let mut null = figure(
        "syscall.null",
        Params::new(),
        Unit::Nanoseconds,
        100.0 * scale,
    );
    if hardware {
        null.counters.user.insert("instructions".into(), 40.0);
        null.counters.kernel.insert("instructions".into(), 900.0);
    } else {
        null.counters.software.insert("page-faults".into(), 0.0);
        null.counters
            .software
            .insert("context-switches".into(), 0.001);
        r.counters_unavailable.insert(
            "user:instructions".into(),
            "not supported by this CPU".into(),
        );
    }
    let mut failed = Measurement::not_measured(
        "fs.create",
        Params::new(),
        Unit::Nanoseconds,
        Status::Failed,
        "scratch full".into(),
    );
    failed.warnings.push("large spread".into());
    r.measurements = vec![
        figure("cpu.reference", Params::new(), Unit::Nanoseconds, 2000.0),
        null,
        figure(
            "memory.copy",
            Params::new(),
            Unit::BytesPerSecond,
            5e9 / scale,
        ),
        failed,
    ];
    for pattern in ["stride128", "random"] {
        for shift in 12..=26 {
            let size = 1u64 << shift;
            let ns = match size {
                s if s <= 32 << 10 => 1.2,
                s if s <= 1 << 20 => 4.0,
                s if s <= 32 << 20 => 14.0,
                _ => 90.0,
            } * if pattern == "random" { 1.0 } else { 0.5 };
            let params: Params = [
                ("pattern".to_string(), serde_json::json!(pattern)),
                ("size".to_string(), serde_json::json!(size)),
            ]
            .into();
            r.measurements
                .push(figure("memory.latency", params, Unit::Nanoseconds, ns));
        }
    }
    r
}

#[test]
fn one_run_has_every_section_but_the_comparison() {
    let page = render_page(&[run("r1", 1.0, true)]).unwrap();
    for id in [
        "runs",
        "fingerprint",
        "summary",
        "time-bars",
        "bandwidth-bars",
        "memory-latency",
        "counters",
    ] {
        assert!(page.contains(&format!("<section id=\"{id}\">")), "{id}");
    }
    assert!(!page.contains("id=\"comparison\""));
    assert!(!page.contains("id=\"rate-bars\""), "no op/s figures");
    assert!(!page.contains("<script"));
    assert!(
        page.contains("L2 1 MiB"),
        "cache marker on the memory curve"
    );
    assert!(page.contains("kernel-mode instructions"));
    assert!(page.contains("class=\"warned\""));
    assert!(page.matches("<svg").count() >= 5);
}

#[test]
fn several_runs_add_differences_and_comparisons() {
    let runs = [
        run("base", 1.0, false),
        run("slow", 1.3, false),
        run("same", 1.0, false),
    ];
    let page = render_page(&runs).unwrap();
    assert!(page.contains("<section id=\"comparison\">"));
    assert!(page.contains("Fields that differ"));
    assert!(page.contains("kernel_release"));
    assert!(page.contains("R1 → R2") && page.contains("R1 → R3"));
    assert!(page.contains("context-switches"), "software counters drawn");
    assert!(page.contains("not supported by this CPU"), "reason listed");
    // R2 is 30 % slower in both time and bandwidth: flagged as slower.
    assert!(page.contains("<span class=\"bad\">slower</span>"));
    let xmlns = page.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(page.matches("http").count(), xmlns);
}

#[test]
fn an_empty_run_without_fingerprint_still_renders() {
    let mut r = crate::results::model::tests::empty_run();
    r.interrupted = true;
    let page = render_page(&[r.clone(), r]).unwrap();
    assert!(page.contains("no stored fingerprint"));
    assert!(page.contains("no figures in ns"));
    assert!(page.contains("no memory.latency figures"));
    assert!(page.contains("have no measured figure in common"));
    assert!(page.contains("interrupted"));
    assert!(render_page(&[]).is_err());
}

/// A memory.latency figure whose parameters cannot place it is left out of the curve, and the
/// page says which and why rather than drawing it somewhere made up.
#[test]
fn a_latency_figure_without_its_parameters_is_named_not_placed() {
    let mut r = run("r1", 1.0, true);
    let no_pattern: Params = [("size".to_string(), serde_json::json!(4096))].into();
    r.measurements
        .push(figure("memory.latency", no_pattern, Unit::Nanoseconds, 1.0));
    let page = render_page(&[r]).unwrap();
    assert!(page.contains("Left out of the curve: R1: memory.latency size=4096: parameter pattern"));
    assert!(!page.contains(">default<"), "no made-up pattern");
}

#[test]
fn the_page_opens_with_what_changed_and_keeps_the_fingerprint_closed_at_the_end() {
    let runs = [run("base", 1.0, false), run("slow", 1.3, false)];
    let page = render_page(&runs).unwrap();
    let at = |id: &str| {
        page.find(&format!("<section id=\"{id}\">"))
            .unwrap_or_else(|| panic!("no section {id}"))
    };
    assert!(at("overview") < at("runs") && at("runs") < at("comparison"));
    assert!(at("comparison") < at("fingerprint"));
    let overview = &page[at("overview")..at("runs")];
    assert!(overview.contains("What changed"), "{overview}");
    assert!(overview.contains("x slower"), "{overview}");
    let fingerprint = &page[at("fingerprint")..];
    assert!(fingerprint.contains("<details>\n<summary>System fingerprint</summary>"));
}

/// The page with this toolkit's own sections (the commands layer adds each domain's among them).
fn render_page(runs: &[Run]) -> Result<String> {
    render(runs, &page_sections(Vec::new(), Vec::new()))
}
