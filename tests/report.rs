//! End-to-end tests of `osmeter report`: reports of real and synthetic stored runs are written, hold
//! nothing from the network and no script, and load in a real headless Chromium with every section
//! and plot in the rendered DOM and no console error. Screenshots land next to the test output
//! (target/report-screenshot*.png) for a person to look at.

mod common;

use common::browser::{chromium, run_chromium, screenshot_path};
use common::{TestEnv, FAST};
use osmeter::results::model::{Measurement, Params, Run, RunOptions, Status, Unit};
use osmeter::results::store::{sqlite::SqliteStore, Store};
use osmeter::stats::summary::summarize;
use predicates::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn figure(probe: &str, params: Params, unit: Unit, center: f64) -> Measurement {
    let wobble = [0.985, 1.0, 1.012, 0.994, 1.006, 1.0, 0.997];
    let samples: Vec<f64> = wobble.iter().map(|w| w * center).collect();
    let mut m = Measurement::not_measured(probe, params, unit, Status::Ok, String::new());
    m.reason = None;
    m.summary = Some(summarize(&samples));
    m.samples = samples;
    m
}

fn params(pairs: &[(&str, serde_json::Value)]) -> Params {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// Latency of one dependent load on a machine with 32 KiB L1d, 1 MiB L2 and 32 MiB L3; the
/// sequential stride is helped by the prefetcher.
fn load_ns(size: u64, random: bool) -> f64 {
    let ns = match size {
        s if s <= 32 << 10 => 1.3,
        s if s <= 1 << 20 => 4.2,
        s if s <= 32 << 20 => 16.0,
        _ => 95.0,
    };
    if random {
        ns
    } else {
        (ns * 0.45_f64).max(1.3)
    }
}

/// A run with syscall, process and cpu figures, a bandwidth, a memory-latency curve and counters:
/// user/kernel instructions when `hardware`, else software events and the reason hardware ones are
/// missing. `slow` multiplies the OS times.
fn synthetic(id: &str, slow: f64, hardware: bool, tags: &[(&str, &str)]) -> Run {
    let mut ms = vec![
        figure("cpu.reference", Params::new(), Unit::Nanoseconds, 2000.0),
        figure(
            "syscall.null",
            Params::new(),
            Unit::Nanoseconds,
            95.0 * slow,
        ),
        figure(
            "syscall.dup",
            Params::new(),
            Unit::Nanoseconds,
            310.0 * slow,
        ),
        figure(
            "syscall.clock_gettime",
            Params::new(),
            Unit::Nanoseconds,
            22.0,
        ),
        figure(
            "process.fork_exit",
            Params::new(),
            Unit::Nanoseconds,
            95_000.0 * slow,
        ),
        figure(
            "ipc.pipe_pingpong",
            params(&[("placement", "same".into())]),
            Unit::Nanoseconds,
            4_100.0 * slow,
        ),
        figure(
            "ipc.pipe_pingpong",
            params(&[("placement", "cross".into())]),
            Unit::Nanoseconds,
            9_800.0 / slow,
        ),
        figure(
            "memory.copy",
            params(&[("size", 1_048_576.into())]),
            Unit::BytesPerSecond,
            11.5e9 / slow,
        ),
        figure(
            "fs.read",
            params(&[("size", 65_536.into())]),
            Unit::BytesPerSecond,
            3.2e9,
        ),
    ];
    for m in ms.iter_mut() {
        let kernel = match m.probe.as_str() {
            "cpu.reference" => 3.0,
            "syscall.clock_gettime" => 0.0,
            "process.fork_exit" => 210_000.0,
            "memory.copy" => 120.0,
            _ => 900.0 * slow,
        };
        if hardware {
            m.counters.user.insert(
                "instructions".into(),
                if kernel > 100.0 { 60.0 } else { 5000.0 },
            );
            m.counters.kernel.insert("instructions".into(), kernel);
            m.counters.user.insert("cycles".into(), 100.0);
        } else {
            m.counters.software.insert(
                "page-faults".into(),
                if m.probe == "process.fork_exit" {
                    130.0
                } else {
                    0.0
                },
            );
            m.counters.software.insert(
                "context-switches".into(),
                if m.probe.starts_with("ipc") {
                    2.0
                } else {
                    0.0001
                },
            );
        }
    }
    ms[2]
        .warnings
        .push("large spread: CV 12 % over 7 samples".into());
    ms.push(Measurement::not_measured(
        "net.tcp_connect",
        Params::new(),
        Unit::Nanoseconds,
        Status::Skipped,
        "no loopback interface".into(),
    ));
    for pattern in ["stride128", "random"] {
        for shift in 12..=27 {
            for size in [1u64 << shift, 3u64 << (shift - 1)] {
                if size > 1 << 27 {
                    continue;
                }
                ms.push(figure(
                    "memory.latency",
                    params(&[("pattern", pattern.into()), ("size", size.into())]),
                    Unit::Nanoseconds,
                    load_ns(size, pattern == "random") * slow.sqrt(),
                ));
            }
        }
    }
    let mut counters_unavailable = std::collections::BTreeMap::new();
    if !hardware {
        for e in [
            "user:cycles",
            "user:instructions",
            "kernel:cycles",
            "kernel:instructions",
        ] {
            counters_unavailable.insert(
                e.to_string(),
                "perf_event_open: the virtual CPU exposes no hardware PMU (ENOENT)".to_string(),
            );
        }
    }
    Run {
        finished_at: Some("2026-11-20T10:01:00Z".into()),
        tool_version: "test".into(),
        suite: Some("quick".into()),
        options: RunOptions {
            samples: 7,
            min_sample_ms: 5.0,
            warmup_samples: 1,
            cpu: Some(1),
            ..Default::default()
        },
        tags: tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        fingerprint: osmeter::results::fingerprint::Fingerprint::from_json(serde_json::json!({
            "hostname": "bench1",
            "kernel_release": if slow > 1.0 { "6.6.0-patched" } else { "6.6.0" },
            "cpu_model": "Test CPU",
            "hypervisor": if hardware { serde_json::Value::Null } else { "kvm".into() },
            "cache_l1d_bytes": 32768,
            "cache_l2_bytes": 1048576,
            "cache_l3_bytes": 33554432,
            "notes": [],
        })),
        counters_unavailable,
        measurements: ms,
        ..Run::new(id.into(), "2026-11-20T10:00:00Z".into())
    }
}

fn save(env: &TestEnv, runs: &[Run]) {
    let mut s = SqliteStore::open(&env.store()).unwrap();
    for r in runs {
        s.save(r).unwrap();
    }
}

fn real_run(env: &TestEnv, tag: &str) -> String {
    env.run_id(&["syscall", "cpu.reference", "--tag", tag])
}

/// Checks that need no browser: the file is whole, offline and script-free.
fn check_static(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert!(!html.to_lowercase().contains("<script"), "no script");
    let without_xmlns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(
        !without_xmlns.contains("http://") && !without_xmlns.contains("https://"),
        "nothing may be loaded from the network"
    );
    assert!(!html.contains("<link") && !html.contains("<img") && !html.contains("@import"));
    assert!(html.contains("@media print"));
}

/// Loads the report in Chromium: every section id and at least `min_svgs` plots in the rendered
/// DOM, no console error; then a full-page screenshot into target/.
fn check_in_browser(report: &Path, sections: &[&str], min_svgs: usize, shot: &str) {
    check_in_browser_sized(report, sections, min_svgs, shot, 4000);
}

/// The same with a window `height` pixels tall, for pages longer than the default.
fn check_in_browser_sized(
    report: &Path,
    sections: &[&str],
    min_svgs: usize,
    shot: &str,
    height: u32,
) {
    let Some(bin) = chromium() else { return };
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", report.display());
    let (dom, log) = run_chromium(&bin, profile.path(), &["--dump-dom".into()], &url);
    for line in log.lines() {
        assert!(
            !line.contains("Uncaught") && !line.contains("ERROR:CONSOLE"),
            "console error while loading the report: {line}"
        );
    }
    assert!(
        dom.contains("</html>"),
        "no DOM dumped; chromium said:\n{log}"
    );
    for id in sections {
        assert!(
            dom.contains(&format!("<section id=\"{id}\">")),
            "section {id} missing from the rendered DOM"
        );
    }
    let svgs = dom.matches("<svg").count();
    assert!(
        svgs >= min_svgs,
        "{svgs} <svg> in the DOM, want >= {min_svgs}"
    );
    assert!(dom.matches("<figcaption>").count() >= min_svgs);
    assert!(dom.contains("<text"), "plot text is SVG text");

    let path = screenshot_path(shot);
    let _ = std::fs::remove_file(&path);
    let (_, log) = run_chromium(
        &bin,
        profile.path(),
        &[
            format!("--screenshot={}", path.display()),
            format!("--window-size=1280,{height}"),
        ],
        &url,
    );
    let png = std::fs::read(&path).unwrap_or_else(|e| panic!("no screenshot ({e}):\n{log}"));
    assert!(png.starts_with(b"\x89PNG"), "screenshot is a PNG");
    // The page itself beside its screenshot, for a closer look.
    let _ = std::fs::copy(report, path.with_extension("html"));
    eprintln!("screenshot: {}", path.display());
}

#[test]
fn a_report_of_every_kind_loads_in_chromium() {
    let env = TestEnv::new();
    let ids = common::two_of_each(&env);
    let report = env.dir.path().join("kinds.html");
    env.osmeter()
        .arg("report")
        .args(["run", "stat", "latency", "memsim"].map(|k| ids[k][0].clone()))
        .arg(&ids["run"][1])
        .arg("-o")
        .arg(&report)
        .assert()
        .success();
    check_in_browser_sized(
        &report,
        &["runs", "summary", "stat", "latency", "memsim", "comparison"],
        3,
        "report-kinds.png",
        9000,
    );
}

const ALWAYS: &[&str] = &[
    "runs",
    "fingerprint",
    "summary",
    "time-bars",
    "bandwidth-bars",
    "memory-latency",
    "counters",
];

#[test]
fn report_of_synthetic_runs_has_every_plot_and_loads_in_chromium() {
    let env = TestEnv::new();
    let runs = [
        synthetic("6b0300aa-base0001", 1.0, true, &[("kernel", "6.6")]),
        synthetic(
            "6b0300bb-patch001",
            1.25,
            true,
            &[("kernel", "6.6-patched")],
        ),
    ];
    save(&env, &runs);
    let out = env.dir.path().join("report.html");
    env.osmeter()
        .args(["report", "6b0300aa", "6b0300bb", "-o"])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("report of 2 run(s) written"));
    let html = std::fs::read_to_string(&out).unwrap();
    check_static(&html);
    // Figures come from the stored data.
    for text in [
        "kernel_release",
        "6.6.0-patched",
        "L2 1 MiB",
        "user-mode instructions",
        "Speed-up of R2 kernel=6.6-patched against R1",
        "process.fork_exit",
        "no loopback interface",
        "1.25×",
    ] {
        assert!(html.contains(text), "report lacks {text:?}");
    }
    let mut sections = ALWAYS.to_vec();
    sections.push("comparison");
    // Per-group time charts (cpu, syscall, process, ipc), bandwidth, memory curve, two counter
    // charts, one comparison.
    check_in_browser(&out, &sections, 9, "report-screenshot.png");

    // One run: no comparison, a curve per pattern.
    let one = env.dir.path().join("one.html");
    env.osmeter()
        .args(["report", "6b0300bb", "-o"])
        .arg(&one)
        .assert()
        .success();
    let html = std::fs::read_to_string(&one).unwrap();
    check_static(&html);
    assert!(!html.contains("id=\"comparison\""));
    // Four time groups, bandwidth, memory curve, counters.
    check_in_browser(&one, ALWAYS, 7, "report-screenshot-one-run.png");
}

#[test]
fn report_of_real_runs_and_a_counterless_vm_run() {
    let env = TestEnv::new();
    let a = real_run(&env, "kernel=one");
    let b = real_run(&env, "kernel=two");
    save(&env, &[synthetic("6b03ffff-vm000001", 1.0, false, &[])]);
    let out = env.dir.path().join("real.html");
    env.osmeter()
        .args(["report", &a, &b, "6b03ffff", "-o"])
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(&out).unwrap();
    check_static(&html);
    assert!(html.contains(&a) && html.contains(&b));
    assert!(html.contains("syscall.null"));
    assert!(
        html.contains("context-switches"),
        "software counters of the VM run"
    );
    assert!(
        html.contains("exposes no hardware PMU"),
        "why hardware counters are missing"
    );
    let mut sections = ALWAYS.to_vec();
    sections.push("comparison");
    check_in_browser(&out, &sections, 6, "report-screenshot-real.png");
}

/// Runs osmeter with these arguments, expects success, and returns the id of the run it saved.
fn stored_run(env: &TestEnv, args: &[&str]) -> String {
    env.saved(args).1
}

#[test]
fn report_of_real_latency_and_memsim_runs() {
    let env = TestEnv::new();
    let latency = stored_run(
        &env,
        &[
            "latency",
            "--duration",
            "2s",
            "--classes",
            "normal",
            "--paths",
            "timer",
            "--json",
        ],
    );
    let trace = env.dir.path().join("T");
    let trace_arg = trace.to_str().unwrap();
    env.osmeter()
        .args([
            "trace", "synth", "-o", trace_arg, "--refs", "20000", "--seed", "1",
        ])
        .assert()
        .success();
    let memsim = stored_run(
        &env,
        &[
            "memsim",
            trace_arg,
            "--preset",
            "ds5000-200",
            "--curve",
            "l1d:1K-64K:4:64",
            "--interval",
            "5000",
        ],
    );
    let out = env.dir.path().join("latency-memsim.html");
    env.osmeter()
        .args(["report", &latency, &memsim, "-o"])
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(&out).unwrap();
    check_static(&html);
    let section = |id: &str| -> &str {
        let start = html
            .find(&format!("<section id=\"{id}\">"))
            .unwrap_or_else(|| panic!("no section {id}"));
        let len = html[start..].find("</section>").unwrap();
        &html[start..start + len]
    };
    // The latency section: one histogram, the percentile table and the buffer table of the
    // default configurations (5 periods by 3 buffer counts).
    let lat = section("latency");
    assert_eq!(lat.matches("<svg").count(), 1, "one histogram panel");
    assert!(lat.contains("<div class=\"panel-title\">normal/timer</div>"));
    assert!(lat.contains("normal/timer cpu"), "the stream's row");
    assert!(lat.contains("share of all periods"));
    assert!(lat.contains("tolerated lateness"));
    assert_eq!(lat.matches("<table class=\"buffers\">").count(), 1);
    let buffers = &lat[lat.find("<table class=\"buffers\">").unwrap()..];
    assert_eq!(
        buffers.matches("<tr>").count(),
        1 + 15,
        "header and 15 configurations"
    );
    // The memsim section: one stacked bar chart, the MCPI and miss-rate tables, the miss-ratio
    // curve and the MCPI over the trace.
    let mem = section("memsim");
    assert_eq!(
        mem.matches("<svg").count(),
        4,
        "stacked bars, the curve, the intervals' MCPI and miss rates"
    );
    assert!(mem.contains("Miss-ratio curve l1d:1K-64K:4:64"));
    assert!(mem.contains("MCPI over the trace: ds5000-200"));
    assert!(mem.contains("Miss rates over the trace: ds5000-200"));
    assert!(mem.contains("l1i miss rate") && mem.contains("l1d miss rate"));
    assert!(mem.contains("every 5000 references"));
    for text in [
        "ds5000-200",
        "icache",
        "dcache",
        "wbuffer",
        "l1i",
        "l1d",
        "compulsory",
    ] {
        assert!(mem.contains(text), "memsim section lacks {text:?}");
    }
    assert!(mem.contains("20000 references"));
    // Plots in the whole page: the five above and the empty-run sections have none.
    assert_eq!(html.matches("<svg").count(), 5);
    let sections = ["runs", "fingerprint", "latency", "memsim"];
    check_in_browser_sized(
        &out,
        &sections,
        4,
        "report-screenshot-latency-memsim.png",
        7200,
    );
}

/// Real latency runs under three loads: the histograms are small multiples, a panel per
/// class/path stream, each with a line per run (load) in a colour of its own, and the legend
/// names the loads.
#[test]
fn latency_runs_under_several_loads_are_small_multiples() {
    let env = TestEnv::new();
    let ids: Vec<String> = [None, Some("cpu"), Some("memory")]
        .into_iter()
        .map(|load| {
            let mut args = vec![
                "latency",
                "--duration",
                "1s",
                "--classes",
                "normal",
                "--paths",
                "timer,futex",
            ];
            if let Some(l) = load {
                args.extend(["--load", l]);
            }
            stored_run(&env, &args)
        })
        .collect();
    let out = env.dir.path().join("loads.html");
    env.osmeter()
        .arg("report")
        .args(&ids)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(&out).unwrap();
    check_static(&html);
    let start = html.find("<section id=\"latency\">").unwrap();
    let lat = &html[start..start + html[start..].find("</section>").unwrap()];
    let panels: Vec<&str> = lat.split("<div class=\"panel\">").skip(1).collect();
    assert_eq!(
        panels.len(),
        2,
        "a panel per stream (normal/timer, normal/futex)"
    );
    for (panel, name) in panels.iter().zip(["normal/timer", "normal/futex"]) {
        assert!(panel.contains(name), "panel {name}");
        // plotters writes a line's colour as its stroke: three runs, three colours.
        let svg = &panel[..panel.find("</svg>").unwrap()];
        let colours: std::collections::BTreeSet<&str> = svg
            .split("stroke=\"#")
            .skip(1)
            .map(|s| &s[..6])
            .filter(|c| !["FFFFFF", "000000"].contains(c) && !c.starts_with("E1E4E8"))
            .collect();
        assert!(
            colours.len() >= 3,
            "a colour per load in {name}: {colours:?}"
        );
    }
    for load in ["load: none", "load: cpu", "load: memory"] {
        assert!(lat.contains(load), "the legend names {load}");
    }
    check_in_browser(
        &out,
        &["runs", "latency"],
        3,
        "report-screenshot-latency-loads.png",
    );
}

/// A real latency run with stages, causes with stacks and the computing pipeline: each has its
/// table in the latency section, and the page loads in Chromium.
#[test]
fn report_of_a_latency_run_with_stages_causes_and_compute() {
    let env = TestEnv::new();
    let root = common::is_root();
    let mut args = vec![
        "latency",
        "--duration",
        "2s",
        "--classes",
        "normal",
        "--paths",
        "timer",
        "--compute",
        "200us",
    ];
    if root {
        // A 1 us threshold: every run has late wakes, so some episodes are kept.
        args.extend(["--stages", "--trace", "--threshold", "1us"]);
    } else {
        eprintln!("not root: the report shows the computing pipeline only");
    }
    let id = stored_run(&env, &args);
    let out = env.dir.path().join("latency-detail.html");
    env.osmeter()
        .args(["report", &id, "-o"])
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(&out).unwrap();
    check_static(&html);
    let start = html.find("<section id=\"latency\">").unwrap();
    let lat = &html[start..start + html[start..].find("</section>").unwrap()];
    let rows = |class: &str| -> usize {
        let t = &lat[lat
            .find(&format!("<table class=\"{class}\">"))
            .unwrap_or_else(|| panic!("no {class} table"))..];
        t[..t.find("</table>").unwrap()].matches("<tr>").count()
    };
    assert_eq!(rows("compute"), 1 + 3, "header and depths 2, 3, 4");
    assert!(lat.contains("The buffer model run for real"));
    if root {
        // interrupt, handler, thread, to_user and total (softirq only where timers expire there).
        assert!(rows("stages") >= 6, "header, four stages or five, total");
        assert!(lat.contains("traced wakes split"));
        assert!(lat.contains("What ran instead"));
        if lat.contains("<table class=\"causes\">") {
            assert!(rows("causes") >= 2);
        } else {
            assert!(lat.contains("No stack was sampled"));
        }
    }
    check_in_browser_sized(
        &out,
        &["runs", "fingerprint", "latency"],
        1,
        "report-screenshot-latency-detail.png",
        5000,
    );
}

/// Ousterhout's tables beside a paper run, and his relative-speed plot with a bar per primitive and
/// run: select from `osmeter paper`, getpid and memcpy from `osmeter run`.
#[test]
fn report_sets_real_runs_beside_ousterhout() {
    let env = TestEnv::new();
    let mut paper = vec!["paper", "ousterhout89", "--table", "4", "--quick"];
    paper.extend_from_slice(FAST);
    let a = stored_run(&env, &paper);
    let mut run = vec!["run", "syscall.null", "memory.copy", "cpu.reference"];
    run.extend_from_slice(FAST);
    let b = stored_run(&env, &run);
    let out = env.dir.path().join("paper.html");
    env.osmeter()
        .args(["report", &a, &b, "-o"])
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(&out).unwrap();
    check_static(&html);
    let section = html
        .split("<section id=\"paper-ousterhout89\">")
        .nth(1)
        .and_then(|s| s.split("</section>").next())
        .expect("a then-and-now section for Ousterhout 1989");
    // The tables of the first run: Table 4 with today's row, and the speed-ups.
    assert!(section.contains("Table 4. select with a zero timeout over pipes"));
    assert!(section.contains("<b>this machine</b>"));
    assert!(section.contains("speed-up to this machine"));
    // The plot: select's columns from one run, getpid and memcpy (marked) from the other.
    for bar in ["select 10 full", "getpid", "bcopy cached (hardware)"] {
        assert!(section.contains(bar), "no {bar} in the plot");
    }
    assert!(section.contains("OS primitives (geometric mean)"));
    assert!(section.contains("<svg") && section.contains("<figcaption>"));
    assert!(
        !html.contains("id=\"paper-chen-bershad93\""),
        "no memsim run, no section"
    );
    check_in_browser(
        &out,
        &["runs", "paper-ousterhout89"],
        2,
        "report-screenshot-paper.png",
    );
}

#[test]
fn unknown_run_is_a_usage_error_with_suggestions() {
    let env = TestEnv::new();
    save(&env, &[synthetic("6b0300aa-base0001", 1.0, true, &[])]);
    let out = env.dir.path().join("r.html");
    env.osmeter()
        .args(["report", "6b0300aa-base0002", "-o"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("did you mean 6b0300aa-base0001"));
    assert!(!out.exists());
    // The arguments themselves are checked by the parser.
    env.osmeter().args(["report", "6b0300aa"]).assert().code(2);
    env.osmeter()
        .args(["report", "-o", "x.html"])
        .assert()
        .code(2);
}

#[test]
fn unwritable_output_fails_cleanly_and_leaves_nothing() {
    let env = TestEnv::new();
    save(&env, &[synthetic("6b0300aa-base0001", 1.0, true, &[])]);
    let before = common::entries(env.dir.path());
    for target in [
        env.dir.path().join("no-such-dir").join("r.html"),
        // A directory where the file should go.
        env.dir.path().to_path_buf(),
        // Not creatable even by root.
        PathBuf::from("/proc/osmeter-report.html"),
    ] {
        env.osmeter()
            .args(["report", "6b0300aa", "-o"])
            .arg(&target)
            .assert()
            .code(1)
            .stderr(predicate::str::contains("cannot write the report to"))
            .stderr(predicate::str::contains("choose a writable path with -o"));
    }
    let mut after = common::entries(env.dir.path());
    let mut before = before;
    before.sort();
    after.sort();
    assert_eq!(before, after, "no partial or temporary file left behind");
    assert!(!Path::new("/proc/osmeter-report.html").exists());
}

#[test]
fn an_existing_report_is_replaced_whole() {
    let env = TestEnv::new();
    save(&env, &[synthetic("6b0300aa-base0001", 1.0, true, &[])]);
    let out = env.dir.path().join("r.html");
    std::fs::write(&out, "old").unwrap();
    env.osmeter()
        .args(["report", "6b0300aa", "-o"])
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
}

#[test]
fn twenty_runs_in_one_report() {
    let env = TestEnv::new();
    let runs: Vec<Run> = (0..20)
        .map(|i| {
            synthetic(
                &format!("6b04{i:04x}-twenty{i:02}"),
                1.0 + i as f64 * 0.02,
                i % 2 == 0,
                &[("n", &i.to_string())],
            )
        })
        .collect();
    save(&env, &runs);
    let ids: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
    let out = env.dir.path().join("twenty.html");
    let start = Instant::now();
    env.osmeter()
        .arg("report")
        .args(&ids)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let took = start.elapsed();
    let html = std::fs::read_to_string(&out).unwrap();
    check_static(&html);
    assert_eq!(html.matches("<h3>R1 → R").count(), 19);
    let _ = std::fs::copy(&out, screenshot_path("report-twenty-runs.html"));
    // Timing is only reported: other work shares this machine.
    eprintln!(
        "report of 20 runs: {:.0} ms, {} KiB",
        took.as_secs_f64() * 1e3,
        html.len() / 1024
    );
}
