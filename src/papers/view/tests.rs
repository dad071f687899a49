//! Tests of the paper view's arithmetic and of today's values.

use super::*;
use crate::latency::accounting::gumbel_cdf;

/// Table 7's copy is the sum of the four phases before the compilation, Table 8's
/// MIPS-relative comes from Table 7's total against Sun3 Sprite, and its penalty is FUSE's
/// total over the kernel's.
#[test]
fn andrew_tables_add_the_copy_phases_and_derive_table_8_from_table_7() {
    use crate::papers::fixtures::{measured, ousterhout_run};
    use crate::papers::PaperId;
    // 100 ns per 1000 instructions: 10,000 MIPS.
    let mut run = ousterhout_run(100.0, 100.0, 1e10);
    let seconds = |fs: &str, phase: &str| -> f64 {
        let base = if fs == "ext4" { 1.0 } else { 1.5 };
        base * match phase {
            "mkdir" => 0.01,
            "copy" => 0.1,
            "stat" => 0.02,
            "read" => 0.05,
            "compile" => 2.0,
            _ => 2.18,
        }
    };
    for fs in ["ext4", "fuse"] {
        for phase in ["mkdir", "copy", "stat", "read", "compile", "total"] {
            run.measurements.push(measured(
                "app.andrew",
                crate::params![("phase", phase), ("fs", fs), ("sources", 10)],
                crate::results::model::Unit::Nanoseconds,
                seconds(fs, phase) * 1e9,
            ));
        }
    }
    let id = PaperId::Ousterhout89;
    let paper = Paper::load(id).unwrap();
    let here = Here {
        mhz: None,
        hostname: None,
    };
    let doc = build(&paper, crate::papers::spec::spec(id), &[run], &here).unwrap();
    let cell = |table: &str, column: &str, label: &str| {
        doc.cells
            .iter()
            .find(|p| p.table == table && p.column == column && p.now_label.contains(label))
            .unwrap_or_else(|| panic!("no {table} {column} {label}"))
            .clone()
    };
    let copy = cell("7", "copy", "ext4 in the kernel");
    assert!((copy.now_value.unwrap() - 0.18).abs() < 1e-9, "{copy:?}");
    assert!(copy.now_figure.unwrap().matches(" + ").count() == 3);
    assert!(copy.speedup_relative_to_cpu.is_some());
    let fuse_total = cell("7", "total", "fuse2fs").now_value.unwrap();
    assert!((fuse_total - 3.27).abs() < 1e-9);
    let sun3_mips = paper.machine("Sun3").and_then(|m| m.mips).unwrap();
    let local = cell("8", "mips_relative_local", "ext4 in the kernel");
    let want = (427.0 / 2.18) / (10_000.0 / sun3_mips);
    assert!(
        (local.now_value.unwrap() - want).abs() < 1e-9 * want,
        "{local:?}"
    );
    let penalty = cell("8", "remote_penalty", "fuse2fs");
    assert!(
        (penalty.now_value.unwrap() - 50.0).abs() < 1e-9,
        "{penalty:?}"
    );
    let [lo, hi] = penalty.now_ci95.unwrap();
    assert!(lo < 50.0 && 50.0 < hi, "{lo} {hi}");
    // Table 8's local column is the kernel's ext4 alone: no FUSE row gets it.
    let local_rows: Vec<&str> = doc
        .cells
        .iter()
        .filter(|p| p.table == "8" && p.column == "mips_relative_local")
        .map(|p| p.now_label.as_str())
        .collect();
    assert!(!local_rows.is_empty());
    assert!(
        local_rows.iter().all(|l| l.contains("ext4 in the kernel")),
        "{local_rows:?}"
    );
    // The copy sum is a primitive of the summary and plot, as compile and total are, and
    // the Andrew primitives are applications: out of the OS mean, as compare leaves them.
    let names: Vec<&str> = doc
        .relative_to_cpu
        .iter()
        .filter(|s| s.table == "7")
        .map(|s| s.column.as_str())
        .collect();
    assert_eq!(names, vec!["copy", "compile", "total"]);
    let os = doc.os_relative_to_cpu.as_ref().unwrap();
    assert!(
        os.left_out.iter().any(|l| l.contains("copy (application)")),
        "{os:?}"
    );
    let counted = doc
        .relative_to_cpu
        .iter()
        .filter(|s| s.counts_as_os())
        .count();
    assert_eq!(os.primitives, counted);
    assert!(doc
        .relative_to_cpu
        .iter()
        .filter(|s| s.probe == "app.andrew")
        .all(|s| !s.counts_as_os()));
}

/// Chen et al.'s Table VII: today's Ghostscript, Wish and web server times stand beside each
/// system's time only, in seconds, with the speed-up (the web server's time per request over
/// the paper's 1024-request trace); section 5.3's throughput is one over the time per request;
/// without the figures every such cell says why.
#[test]
fn applications_stand_beside_table_vii_times_and_the_web_throughput() {
    use crate::papers::fixtures::measured;
    use crate::papers::PaperId;
    use crate::results::model::Unit as RunUnit;
    let mut run = crate::results::fixtures::empty_run();
    run.measurements.push(measured(
        "app.ghostscript",
        crate::params![("pages", 13)],
        RunUnit::Nanoseconds,
        2.0e9,
    ));
    run.measurements.push(measured(
        "app.wish",
        crate::params![("panels", 100)],
        RunUnit::Nanoseconds,
        0.5e9,
    ));
    for (clients, ns) in [(1u64, 9.0e6), (16, 2.0e6)] {
        run.measurements.push(measured(
            "app.web",
            crate::params![
                ("conn", "close"),
                ("cache", "warm"),
                ("clients", clients),
                ("stat", "time")
            ],
            RunUnit::Nanoseconds,
            ns,
        ));
    }
    let id = PaperId::Chen96;
    let paper = Paper::load(id).unwrap();
    let spec = crate::papers::spec::spec(id);
    let doc = build(&paper, spec, &[run], &Here::default()).unwrap();
    let vii: Vec<&CellPair> = doc.cells.iter().filter(|p| p.table == "VII").collect();
    assert_eq!(vii.len(), 9, "{vii:?}");
    assert!(vii.iter().all(|p| p.column.starts_with("time_")));
    let nt = |row: &str| {
        *vii.iter()
            .find(|p| p.row == row && p.column == "time_nt")
            .unwrap()
    };
    assert_eq!(nt("Ghostscript").now_value, Some(2.0));
    assert!((nt("Ghostscript").speedup.unwrap() - 9.30 / 2.0).abs() < 1e-9);
    assert_eq!(nt("Wish").now_value, Some(0.5));
    // 16 clients' 2 ms per request, not one client's 9 ms, over 1024 requests.
    let web = nt("Web Server");
    assert!((web.now_value.unwrap() - 2.048).abs() < 1e-9, "{web:?}");
    assert!((web.speedup.unwrap() - 83.33 / 2.048).abs() < 1e-9);
    assert!(
        web.now_figure.as_deref().unwrap().ends_with("x 1024"),
        "{web:?}"
    );
    let throughput: Vec<&CellPair> = doc
        .cells
        .iter()
        .filter(|p| p.table == "5.3" && p.row == "throughput")
        .collect();
    assert_eq!(throughput.len(), 3, "{throughput:?}");
    for p in throughput {
        assert!((p.now_value.unwrap() - 500.0).abs() < 1e-9, "{p:?}");
    }
    let text = crate::papers::render::render(&paper, &doc, Some("VII"));
    assert!(text.contains("this machine, web server"), "{text}");
    // Each paper row's speed-up is against today's row of the same workload.
    let speedups = text
        .split("speed-up to today's row of the same workload")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    for (row, x) in [
        ("Wish", "14.1x"),
        ("Ghostscript", "8.46x"),
        ("Web Server", "22.2x"),
    ] {
        let line = speedups
            .lines()
            .find(|l| l.trim_start().starts_with(row))
            .unwrap();
        assert!(line.contains(x), "{row}: {line}");
    }
    // No figure: the cells say why, and the text says it was not measured.
    let empty = crate::results::fixtures::empty_run();
    let doc = build(&paper, spec, &[empty], &Here::default()).unwrap();
    let nt = doc
        .cells
        .iter()
        .find(|p| p.table == "VII" && p.row == "Ghostscript" && p.column == "time_nt")
        .unwrap();
    assert!(nt.now_value.is_none());
    assert!(
        nt.missing.as_deref().unwrap().contains("app.ghostscript"),
        "{nt:?}"
    );
}

/// The buffer model over a Gumbel law of one-second maxima: with location 1 ms and scale
/// 0.1 ms, a buffering of location + scale * ln 1000 is exceeded in a window with chance
/// 1 - exp(-1/1000), so once per 1000.5 s; the inverse gives the buffering back.
#[test]
fn gumbel_mttf_known_answers() {
    let (loc, scale) = (1e6, 1e5);
    let x = loc + scale * 1000f64.ln();
    let mttf = gumbel_mttf(loc, scale, 1.0, x);
    let want = 1.0 / -(-1e-3f64).exp_m1();
    assert!((mttf - want).abs() < 1e-9 * want, "{mttf}");
    assert!((want - 1000.5).abs() < 1e-3);
    let back = gumbel_tolerance(loc, scale, 1.0, mttf);
    assert!((back - x).abs() < 1e-6, "{back} {x}");
    // More buffering, rarer underruns; far out the chance is exact, not rounded to zero.
    assert!(gumbel_mttf(loc, scale, 1.0, x + scale) > mttf);
    let far = gumbel_mttf(loc, scale, 1.0, loc + 40.0 * scale);
    assert!((far / 40f64.exp() - 1.0).abs() < 1e-6, "{far}");
    // A buffering below every window's maximum underruns once per window.
    assert!((gumbel_mttf(loc, scale, 10.0, 0.0) - 10.0).abs() < 1e-9);
    // An hour between underruns with one-second windows: each window exceeds with 1/3600.
    let hour = gumbel_tolerance(loc, scale, 1.0, 3600.0);
    assert!((1.0 - gumbel_cdf(hour, loc, scale) - 1.0 / 3600.0).abs() < 1e-12);
}

#[test]
fn gumbel_median_known_answers() {
    // One window: the law's own median, where its distribution function is one half.
    let m = gumbel_median(1e6, 1e5, 1.0, 1.0);
    assert!((gumbel_cdf(m, 1e6, 1e5) - 0.5).abs() < 1e-12);
    // An hour of one-second windows: half the time the hour's maximum is below the median,
    // i.e. each of the 3600 windows' maxima is below it with probability 0.5^(1/3600).
    let h = gumbel_median(1e6, 1e5, 1.0, 3600.0);
    assert!(
        (gumbel_cdf(h, 1e6, 1e5).powf(3600.0) - 0.5).abs() < 1e-9,
        "{h}"
    );
    assert!((h - 1_855_520.0).abs() < 1.0, "{h}");
    // Longer horizons expect worse; shorter than a window is the window.
    assert!(gumbel_median(1e6, 1e5, 1.0, 86_400.0) > h);
    assert_eq!(gumbel_median(1e6, 1e5, 60.0, 1.0), m);
}
