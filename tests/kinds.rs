//! Every kind of run (run, stat, latency, memsim, ab) is first-class: listed with its kind and
//! figures, shown as text, exported in every format, compared with a run of its kind (and refused
//! against another kind), all end to end on real measurements.

mod common;

use common::TestEnv;
use predicates::prelude::*;

#[test]
fn every_kind_is_listed_shown_exported_and_compared() {
    let env = TestEnv::new();
    let ids = common::two_of_each(&env);

    let table = env.osmeter().arg("runs").output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout).to_string();
    assert!(table.lines().next().unwrap().contains("kind"));
    for kind in ["run", "stat", "latency", "memsim", "ab"] {
        assert!(table.contains(&format!(" {kind} ")), "{table}");
    }

    let shown_as = [
        ("run", "syscall.null"),
        ("stat", "wall time"),
        ("latency", "Wakeup latency"),
        ("memsim", "MCPI"),
        ("ab", "B/A"),
    ];
    for (kind, marker) in shown_as {
        let id = &ids[kind][0];
        let out = env.osmeter().args(["show", id]).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(marker), "show of a {kind} run:\n{text}");
        assert!(
            !text.contains("\"schema\""),
            "show of a {kind} run is text, not the raw document"
        );

        for format in ["csv", "markdown", "openmetrics"] {
            let out = env
                .osmeter()
                .args(["export", id, "-f", format])
                .output()
                .unwrap();
            assert!(out.status.success(), "export {kind} {format}");
            let text = String::from_utf8_lossy(&out.stdout);
            let rows = match format {
                "csv" => text.lines().skip(1).count(),
                "markdown" => text.lines().filter(|l| l.starts_with("| ")).count(),
                _ => text.lines().filter(|l| !l.starts_with('#')).count(),
            };
            assert!(rows >= 3, "export of a {kind} run as {format}:\n{text}");
            assert!(
                text.contains(kind),
                "the {kind} kind is named in its {format} export"
            );
        }

        let c = env.json(&[
            "compare",
            &ids[kind][0],
            &ids[kind][1],
            "--json",
            "--all",
            "--force",
        ]);
        assert_eq!(c["kind"], kind);
        let figures = c["figures"].as_array().unwrap();
        assert!(
            figures.len() >= 3,
            "compare of two {kind} runs compares their figures: {c}"
        );
        assert!(figures.iter().all(|f| f["reason"].as_str().is_some()));
        let text = env
            .osmeter()
            .args(["compare", &ids[kind][0], &ids[kind][1], "--force"])
            .output()
            .unwrap();
        // Some figures changed ("2 of 5 figures changed ...") or none ("... 5 compared").
        let said = String::from_utf8_lossy(&text.stdout);
        let n = figures.len();
        assert!(
            said.contains(&format!("of {n} figures")) || said.contains(&format!(": {n} compared")),
            "{said}"
        );
    }

    // Exact figures: the same trace and machine give the same MCPI; another trace changes it.
    let memsim = env.json(&[
        "compare",
        &ids["memsim"][0],
        &ids["memsim"][1],
        "--json",
        "--all",
    ]);
    let total = memsim["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == "ds5000-200 mcpi.total.total")
        .expect("the machine's total MCPI is a figure");
    assert_eq!(total["noise_source"], "exact");
    assert!(total["p_value"].is_null());

    env.osmeter()
        .args(["compare", &ids["latency"][0], &ids["memsim"][0]])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("latency run"))
        .stderr(predicate::str::contains("memsim run"))
        .stderr(predicate::str::contains("one kind"));
}

#[test]
fn a_report_of_every_kind_draws_each_in_its_own_sections() {
    let env = TestEnv::new();
    let ids = common::two_of_each(&env);
    let report = env.dir.path().join("mix.html");
    let mut args = vec!["report".to_string()];
    for kind in ["latency", "run", "stat", "memsim", "ab"] {
        args.push(ids[kind][0].clone());
    }
    args.push(ids["latency"][1].clone());
    env.osmeter()
        .args(&args)
        .arg("-o")
        .arg(&report)
        .assert()
        .success();
    let html = std::fs::read_to_string(&report).unwrap();
    for id in [
        "runs",
        "stat",
        "latency",
        "memsim",
        "ab",
        "summary",
        "comparison",
    ] {
        assert!(
            html.contains(&format!("<section id=\"{id}\">")),
            "section {id}"
        );
    }
    for wrong in ["0 samples of at least 0 ms", "chosen probes"] {
        assert!(!html.contains(wrong), "{wrong}");
    }
    assert!(html.contains("The paper's assertions on ds5000-200"));
    assert!(html.contains("wall time"));
    assert!(html.contains("runs of different kinds are not compared"));
    // The latency baseline against the other latency run: a comparison with figures.
    assert!(html.contains("common figures changed beyond noise"));
}
