use super::*;
use crate::results::fingerprint::Fingerprint;
use crate::results::model::tests::in_rounds;
use crate::results::model::{Measurement, Run};
use crate::results::store::sqlite::SqliteStore;
use proptest::prelude::*;

/// A run of `host` (of CPU `cpu`) started at minute `minute`, stating syscall.null and
/// process.fork_exit with the given medians.
fn run(host: &str, cpu: &str, minute: u32, null_ns: f64, fork_ns: f64) -> Run {
    let mut run = Run::new(
        format!("{host}-{minute:04}"),
        format!(
            "2026-11-{:02}T{:02}:{:02}:00Z",
            1 + minute / 1440,
            minute / 60 % 24,
            minute % 60
        ),
    );
    run.tool_version = "0".into();
    run.fingerprint = Some(Fingerprint {
        hostname: Some(host.into()),
        cpu_model: Some(cpu.into()),
        cpus_online: Some(2),
        kernel_release: Some("6.1.0-test".into()),
        preempt_model: Some("voluntary".into()),
        ..Default::default()
    });
    run.measurements = vec![
        measured("syscall.null", null_ns),
        measured("process.fork_exit", fork_ns),
    ];
    run
}

fn measured(probe: &str, median: f64) -> Measurement {
    in_rounds(probe, vec![vec![median * 0.99, median, median * 1.01]])
}

fn store_of(runs: &[Run]) -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("runs.db")).unwrap();
    for r in runs {
        store.save(r).unwrap();
    }
    (dir, store)
}

/// Six hosts of one class, each with `per_host` runs; host-e's syscall.null is 30 % slower from
/// its run `slow_from` on. Two more hosts of another CPU make a class too small to judge.
fn fleet_runs(per_host: u32, slow_from: u32) -> Vec<Run> {
    let mut runs = Vec::new();
    for (i, host) in ["host-a", "host-b", "host-c", "host-d", "host-e", "host-f"]
        .iter()
        .enumerate()
    {
        for k in 0..per_host {
            // A little spread between hosts and runs, as a real fleet has.
            let wobble = 1.0 + 0.004 * ((i as f64 * 1.7 + k as f64 * 0.9).sin());
            let null = if *host == "host-e" && k >= slow_from {
                130.0
            } else {
                100.0 * wobble
            };
            runs.push(run(
                host,
                "Xeon",
                k * 10 + i as u32,
                null,
                150_000.0 * wobble,
            ));
        }
    }
    for host in ["odd-1", "odd-2"] {
        runs.push(run(host, "Epyc", 5, 300.0, 90_000.0));
    }
    runs
}

#[test]
fn the_slowed_host_and_only_its_figure_are_called_and_dated() {
    let (_dir, mut store) = store_of(&fleet_runs(12, 6));
    let report = fleet(&mut store, &FleetQuery::default()).unwrap();
    let called: Vec<(String, String)> = report
        .outliers()
        .map(|(f, c)| (c.host.clone(), f.figure.clone()))
        .collect();
    assert_eq!(
        called,
        vec![("host-e".to_string(), "syscall.null".to_string())]
    );
    let (_, cell) = report.outliers().next().unwrap();
    assert!(cell.slower && cell.q_value < 0.05, "{cell:?}");
    // Judged on its stretch after the change (6 runs at 130 ns), not on all its runs.
    assert!(cell.ratio > 1.25 && cell.ratio < 1.35, "{cell:?}");
    assert_eq!(cell.runs, 6);
    let e = report.hosts.iter().find(|h| h.host == "host-e").unwrap();
    assert_eq!((e.slower, e.faster, e.runs), (1, 0, 12));
    // Since when: the change point is the first slow run.
    assert_eq!(report.changes.len(), 1);
    let change = &report.changes[0];
    assert_eq!(change.run, "host-e-0064");
    assert!(change.before < 101.0 && change.after == 130.0, "{change:?}");
    // The two-host class is shown but not judged.
    let odd = report
        .classes
        .iter()
        .find(|c| c.name.starts_with("Epyc"))
        .unwrap();
    assert!(odd.not_judged.as_deref().unwrap().contains("at least 3"));
    assert!(odd
        .figures
        .iter()
        .flat_map(|f| &f.cells)
        .all(|c| !c.outlier));
}

#[test]
fn the_page_draws_every_host_and_outlines_the_one_off() {
    let (_dir, mut store) = store_of(&fleet_runs(12, 6));
    let report = fleet(&mut store, &FleetQuery::default()).unwrap();
    let page = html::render(&report);
    for host in ["host-a", "host-b", "host-c", "host-d", "host-e", "host-f"] {
        assert!(
            page.contains(&format!("<th class=\"host\">{host}</th>")),
            "{host}"
        );
    }
    // One outlined square, host-e's, and its change in the table of changes.
    assert_eq!(page.matches("class=\"off\"").count(), 1);
    let off = &page[page.find("class=\"off\"").unwrap()..];
    assert!(
        off[..off.find("</td>").unwrap()].contains("title=\"host-e: 130 ns"),
        "{off}"
    );
    assert!(page.contains("id=\"fleet-changes\"") && page.contains("host-e-0064"));
    assert!(page.contains("Not judged: 2 host(s)"));
    let text = text::render(&report);
    assert!(text
        .lines()
        .filter(|l| !l.starts_with("store: "))
        .all(|l| l.chars().count() <= 100));
}

#[test]
fn a_fleet_of_equals_has_no_outlier() {
    let (_dir, mut store) = store_of(&fleet_runs(5, 99));
    let report = fleet(&mut store, &FleetQuery::default()).unwrap();
    assert_eq!(report.outliers().count(), 0, "{:#?}", report.classes);
    assert!(report.changes.is_empty());
}

#[test]
fn figure_filters_and_since_narrow_what_is_compared() {
    let (_dir, mut store) = store_of(&fleet_runs(12, 6));
    let query = FleetQuery {
        figures: vec!["process".to_string()],
        ..FleetQuery::default()
    };
    let report = fleet(&mut store, &query).unwrap();
    let figures: std::collections::BTreeSet<&str> = report
        .classes
        .iter()
        .flat_map(|c| c.figures.iter().map(|f| f.figure.as_str()))
        .collect();
    assert_eq!(
        figures.into_iter().collect::<Vec<_>>(),
        vec!["process.fork_exit"]
    );
    let err = fleet(
        &mut store,
        &FleetQuery {
            figures: vec!["nosuch".to_string()],
            ..FleetQuery::default()
        },
    )
    .unwrap_err();
    assert!(err.is::<crate::error::UsageError>(), "{err:#}");
    // Only the slow stretch: host-e is off from its first run in the window, so no change.
    let since = FleetQuery {
        filter: RunFilter {
            since: Some("2026-11-01T01:00:00Z".into()),
            ..RunFilter::default()
        },
        ..FleetQuery::default()
    };
    let report = fleet(&mut store, &since).unwrap();
    assert_eq!(report.outliers().count(), 1);
    assert!(report.changes.is_empty(), "{:?}", report.changes);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Whatever the values: every interval holds its estimate and stays above zero, and scaling
    /// every value by one factor changes no call.
    #[test]
    fn intervals_hold_their_estimates_and_calls_do_not_depend_on_scale(
        values in proptest::collection::vec(50.0f64..500.0, 4..8),
        scale in 0.01f64..100.0,
    ) {
        let hosts: Vec<String> = (0..values.len()).map(|i| format!("h{i}")).collect();
        let runs = |factor: f64| -> Vec<Run> {
            hosts.iter().zip(&values).map(|(h, v)| run(h, "X", 1, v * factor, 1000.0)).collect()
        };
        let (_d1, mut a) = store_of(&runs(1.0));
        let (_d2, mut b) = store_of(&runs(scale));
        let ra = fleet(&mut a, &FleetQuery::default()).unwrap();
        let rb = fleet(&mut b, &FleetQuery::default()).unwrap();
        for c in ra.classes.iter().flat_map(|c| &c.figures).flat_map(|f| &f.cells) {
            prop_assert!(c.interval[0] >= 0.0);
            prop_assert!(c.interval[0] <= c.value && c.value <= c.interval[1]);
            prop_assert!(c.ratio_interval[0] <= c.ratio && c.ratio <= c.ratio_interval[1]);
        }
        let calls = |r: &FleetReport| -> Vec<(String, String, bool)> {
            r.outliers().map(|(f, c)| (c.host.clone(), f.figure.clone(), c.slower)).collect()
        };
        prop_assert_eq!(calls(&ra), calls(&rb));
    }
}
