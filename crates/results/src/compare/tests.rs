use super::*;
use crate::results::fingerprint::Fingerprint;
use crate::results::model::tests::empty_run;
use crate::results::model::{Measurement, Params, Status, Summary};

/// Every comparison here is of runs of one kind.
fn cmp(a: &[&Run], b: &[&Run], config: &CompareConfig) -> Comparison {
    compare(a, b, config).unwrap()
}
use proptest::prelude::*;

fn figure(probe: &str, unit: Unit, samples: Vec<f64>) -> Measurement {
    let mut m = Measurement::not_measured(probe, Params::new(), unit, Status::Ok, String::new());
    m.reason = None;
    m.summary = Some(crate::stats::summary::summarize(&samples));
    m.samples = samples;
    m
}

/// Samples around `center` with a deterministic +-1 % wobble.
fn noisy(center: f64, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = crate::stats::rng::SplitMix64(seed);
    (0..n)
        .map(|_| center * (1.0 + ((rng.next_u64() % 2001) as f64 - 1000.0) / 100_000.0))
        .collect()
}

fn run_with(id: &str, ms: Vec<Measurement>) -> Run {
    let mut r = empty_run();
    r.id = id.into();
    r.measurements = ms;
    r
}

#[test]
fn a_ten_percent_slowdown_is_found_with_the_right_sign() {
    let a = run_with(
        "a",
        vec![figure(
            "syscall.null",
            Unit::Nanoseconds,
            noisy(200.0, 11, 1),
        )],
    );
    let b = run_with(
        "b",
        vec![figure(
            "syscall.null",
            Unit::Nanoseconds,
            noisy(220.0, 11, 2),
        )],
    );
    let c = cmp(&[&a], &[&b], &CompareConfig::default());
    let f = &c.figures[0];
    assert_eq!(f.verdict, Verdict::Slower);
    assert!((f.ratio - 1.1).abs() < 0.02, "{}", f.ratio);
    assert!(
        f.ratio_ci95.unwrap()[0] > 1.0
            && f.ratio_ci95.unwrap()[0] <= f.ratio
            && f.ratio <= f.ratio_ci95.unwrap()[1]
    );
    assert!(f.speedup < 1.0 && f.p_value.unwrap() < 0.01);
    // The other way round it is a speed-up.
    let back = cmp(&[&b], &[&a], &CompareConfig::default());
    assert_eq!(back.figures[0].verdict, Verdict::Faster);
}

#[test]
fn higher_bandwidth_is_faster() {
    let a = run_with(
        "a",
        vec![figure(
            "memory.copy",
            Unit::BytesPerSecond,
            noisy(1e9, 9, 3),
        )],
    );
    let b = run_with(
        "b",
        vec![figure(
            "memory.copy",
            Unit::BytesPerSecond,
            noisy(1.2e9, 9, 4),
        )],
    );
    let f = &cmp(&[&a], &[&b], &CompareConfig::default()).figures[0];
    assert_eq!(f.verdict, Verdict::Faster);
    assert!((f.speedup - 1.2).abs() < 0.03);
}

#[test]
fn a_tiny_but_certain_shift_is_below_the_effect_threshold() {
    let a = run_with(
        "a",
        vec![figure("x.y", Unit::Nanoseconds, noisy(100.0, 30, 5))],
    );
    let b = run_with(
        "b",
        vec![figure("x.y", Unit::Nanoseconds, noisy(101.5, 30, 6))],
    );
    let f = &cmp(&[&a], &[&b], &CompareConfig::default()).figures[0];
    assert!(
        f.p_value.unwrap() < 0.01,
        "the shift is real: {:?}",
        f.p_value
    );
    assert_eq!(
        f.verdict,
        Verdict::NoChange,
        "but 1.5 % is under the 3 % threshold"
    );
}

#[test]
fn geomeans_and_the_cpu_relative_figure() {
    // CPU got 2x faster, the OS figures 1.25x and 1.6x: geomean sqrt(2) ~ OS, relative 0.707.
    let a = run_with(
        "a",
        vec![
            figure("cpu.reference", Unit::Nanoseconds, vec![1000.0; 5]),
            figure("syscall.null", Unit::Nanoseconds, vec![250.0; 5]),
            figure("fs.read", Unit::Nanoseconds, vec![160.0; 5]),
        ],
    );
    let b = run_with(
        "b",
        vec![
            figure("cpu.reference", Unit::Nanoseconds, vec![500.0; 5]),
            figure("syscall.null", Unit::Nanoseconds, vec![200.0; 5]),
            figure("fs.read", Unit::Nanoseconds, vec![100.0; 5]),
        ],
    );
    let c = cmp(&[&a], &[&b], &CompareConfig::default());
    assert_eq!(c.cpu_speedup, Some(2.0));
    let os = (1.25f64 * 1.6).sqrt();
    assert!((c.os_speedup_relative_to_cpu.unwrap() - os / 2.0).abs() < 1e-12);
    assert!((c.geomean.unwrap() - (2.0f64 * 1.25 * 1.6).powf(1.0 / 3.0)).abs() < 1e-12);
    assert_eq!(c.geomean_by_group["syscall"], 1.25);
    // Three probes, one figure each: the interval spans their speed-ups' spread and holds the mean.
    let [lo, hi] = c.geomean_ci95.unwrap();
    let g = c.geomean.unwrap();
    assert!(lo <= g && g <= hi && lo >= 1.25 - 1e-9 && hi <= 2.0 + 1e-9 && lo < hi);
    // Each OS figure carries its own speed-up relative to the CPU's (in the JSON document too);
    // the CPU reference itself does not.
    let relative = |key: &str| {
        c.figures
            .iter()
            .find(|f| f.key.starts_with(key))
            .unwrap()
            .speedup_relative_to_cpu
    };
    assert_eq!(relative("syscall.null"), Some(0.625));
    assert_eq!(relative("fs.read"), Some(0.8));
    assert_eq!(relative("cpu.reference"), None);
    let json = serde_json::to_value(&c).unwrap();
    assert!(json["figures"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["speedup_relative_to_cpu"] == 0.625));
}

#[test]
fn groups_pool_their_samples_and_unmatched_figures_are_listed() {
    let a1 = run_with(
        "a1",
        vec![figure("x.y", Unit::Nanoseconds, noisy(100.0, 5, 7))],
    );
    let a2 = run_with(
        "a2",
        vec![figure("x.y", Unit::Nanoseconds, noisy(100.0, 5, 8))],
    );
    let mut only = figure("z.w", Unit::Nanoseconds, vec![1.0; 3]);
    only.params.insert("n".into(), serde_json::json!(3));
    let b = run_with(
        "b",
        vec![figure("x.y", Unit::Nanoseconds, noisy(100.0, 5, 9)), only],
    );
    let c = cmp(&[&a1, &a2], &[&b], &CompareConfig::default());
    assert_eq!(c.runs_a, ["a1", "a2"]);
    assert_eq!(c.figures.len(), 1);
    assert_eq!(c.only_in_b, ["z.w n=3"]);
}

#[test]
fn counter_deltas_explain_a_change() {
    let mut fa = figure("syscall.null", Unit::Nanoseconds, noisy(200.0, 9, 10));
    fa.counters.kernel.insert("instructions".into(), 400.0);
    fa.counters.user.insert("instructions".into(), 20.0);
    let mut fb = figure("syscall.null", Unit::Nanoseconds, noisy(300.0, 9, 11));
    fb.counters.kernel.insert("instructions".into(), 900.0);
    fb.counters.user.insert("instructions".into(), 20.5);
    let c = cmp(
        &[&run_with("a", vec![fa])],
        &[&run_with("b", vec![fb])],
        &CompareConfig::default(),
    );
    assert_eq!(
        c.figures[0].counter_deltas,
        vec![("kernel.instructions".to_string(), 400.0, 900.0)]
    );
}

#[test]
fn fingerprint_fields_that_differ_are_listed() {
    let a = serde_json::json!({"kernel_release": "6.1", "cpu": {"smt": "on"}, "same": 1});
    let b =
        serde_json::json!({"kernel_release": "6.6", "cpu": {"smt": "off"}, "same": 1, "new": true});
    let (a, b) = (
        Fingerprint::from_json(a).unwrap(),
        Fingerprint::from_json(b).unwrap(),
    );
    let d = fingerprint_differences(Some(&a), Some(&b));
    assert_eq!(
        d,
        vec![
            ("cpu.smt".into(), "on".into(), "off".into()),
            ("kernel_release".into(), "6.1".into(), "6.6".into()),
            ("new".into(), "(absent)".into(), "true".into()),
        ]
    );
    // A run without a fingerprint differs in every field the other has.
    assert!(fingerprint_differences(None, Some(&a))
        .iter()
        .any(|(k, x, y)| k == "kernel_release" && x == "(absent)" && y == "6.1"));
}

#[test]
fn settings_come_first_and_a_side_without_them_gets_one_line() {
    let fp = |settings: Option<&[(&str, &str)]>, release: &str| Fingerprint {
        kernel_release: Some(release.into()),
        settings: settings.map(|s| {
            s.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        }),
        ..Fingerprint::default()
    };
    let a = fp(
        Some(&[("vm.swappiness", "60"), ("kernel.randomize_va_space", "2")]),
        "6.1",
    );
    let b = fp(
        Some(&[("vm.swappiness", "10"), ("kernel.randomize_va_space", "0")]),
        "6.6",
    );
    let keys: Vec<String> = fingerprint_differences(Some(&a), Some(&b))
        .into_iter()
        .map(|d| d.0)
        .collect();
    assert_eq!(
        keys,
        [
            "settings.kernel.randomize_va_space",
            "settings.vm.swappiness",
            "kernel_release"
        ]
    );
    let old = fp(None, "6.1");
    let d = fingerprint_differences(Some(&old), Some(&b));
    assert_eq!(d[0].0, "settings");
    assert!(d[0].1.contains("not recorded"), "{d:?}");
    assert_eq!(d[0].2, "2 recorded");
    assert!(!d.iter().any(|x| x.0.starts_with("settings.")), "{d:?}");
}

/// Samples as odd as measurements get: zeros, ties and spreads of several orders of magnitude.
fn odd_samples() -> impl Strategy<Value = Vec<f64>> {
    proptest::collection::vec(prop_oneof![Just(0.0), Just(1.0), 1e-3f64..1e6], 2..25)
}

proptest! {
    #[test]
    fn every_interval_contains_its_ratio_and_stays_above_zero(
        a in odd_samples(),
        b in odd_samples(),
        rounds_a in proptest::collection::vec(odd_samples(), 1..5),
        rounds_b in proptest::collection::vec(odd_samples(), 1..5),
    ) {
        use crate::results::model::tests::in_rounds;
        let ra = run_with("a", vec![figure("x.one", Unit::Nanoseconds, a), in_rounds("x.rounds", rounds_a)]);
        let rb = run_with("b", vec![figure("x.one", Unit::Nanoseconds, b), in_rounds("x.rounds", rounds_b)]);
        for f in cmp(&[&ra], &[&rb], &CompareConfig::default()).figures {
            if let Some([lo, hi]) = f.ratio_ci95 {
                prop_assert!(lo >= 0.0, "{}: interval [{lo}, {hi}] below zero", f.key);
                prop_assert!(
                    lo <= f.ratio && f.ratio <= hi,
                    "{}: ratio {} outside its interval [{lo}, {hi}]", f.key, f.ratio
                );
            }
        }
    }

    #[test]
    fn a_run_compared_with_itself_never_changes(samples in proptest::collection::vec(1.0f64..1e6, 3..40)) {
        let r = run_with("a", vec![figure("x.y", Unit::Nanoseconds, samples)]);
        let c = cmp(&[&r], &[&r], &CompareConfig::default());
        prop_assert_eq!(c.figures[0].verdict, Verdict::NoChange);
        prop_assert!((c.figures[0].ratio - 1.0).abs() < 1e-12);
    }
}

#[test]
fn summary_is_unused_here_but_kept() {
    // The comparison works from raw samples; the stored summary is not trusted for it.
    let mut m = figure("x.y", Unit::Nanoseconds, vec![1.0, 2.0, 3.0]);
    m.summary = Some(Summary {
        median: 999.0,
        ..Default::default()
    });
    let r = run_with("a", vec![m]);
    assert_eq!(
        cmp(&[&r], &[&r], &CompareConfig::default()).figures[0].value_a,
        2.0
    );
}

#[test]
fn run_to_run_noise_from_history_raises_the_bar() {
    let a = run_with(
        "a",
        vec![figure("fs.x", Unit::Nanoseconds, noisy(100.0, 11, 20))],
    );
    let b = run_with(
        "b",
        vec![figure("fs.x", Unit::Nanoseconds, noisy(110.0, 11, 21))],
    );
    // Without history a clean 10 % shift is a change...
    assert_eq!(
        cmp(&[&a], &[&b], &CompareConfig::default()).figures[0].verdict,
        Verdict::Slower
    );
    // ...but not for a figure known to wander 5 % from run to run (the bar is then 15 %).
    // Earlier runs spread 5 % and stayed within 95-104, so 100 -> 110 is outside what was seen
    // but under three spreads.
    let seen = History {
        cv: 0.05,
        min: 95.0,
        max: 104.0,
    };
    let config = CompareConfig {
        history_noise: [("fs.x".to_string(), seen)].into(),
        ..CompareConfig::default()
    };
    let f = &cmp(&[&a], &[&b], &config).figures[0];
    assert_eq!(f.verdict, Verdict::NoChange);
    assert!((f.noise_floor - 0.15).abs() < 1e-12);
    assert_eq!(f.noise_source, "history");
}

#[test]
fn groups_that_disagree_among_themselves_flag_nothing() {
    // Each run is tight, but runs of one side differ by +-12 %: a 10 % shift between sides is noise.
    let centers_a = [100.0, 112.0, 89.0];
    let centers_b = [110.0, 98.0, 123.0];
    let ra: Vec<Run> = centers_a
        .iter()
        .enumerate()
        .map(|(i, c)| {
            run_with(
                "a",
                vec![figure("x.y", Unit::Nanoseconds, noisy(*c, 7, i as u64))],
            )
        })
        .collect();
    let rb: Vec<Run> = centers_b
        .iter()
        .enumerate()
        .map(|(i, c)| {
            run_with(
                "b",
                vec![figure(
                    "x.y",
                    Unit::Nanoseconds,
                    noisy(*c, 7, 10 + i as u64),
                )],
            )
        })
        .collect();
    let c = cmp(
        &ra.iter().collect::<Vec<_>>(),
        &rb.iter().collect::<Vec<_>>(),
        &CompareConfig::default(),
    );
    assert_eq!(
        c.figures[0].verdict,
        Verdict::NoChange,
        "floor {}",
        c.figures[0].noise_floor
    );
    assert_eq!(c.figures[0].noise_source, "rounds");
    // Consistent groups with the same 10 % shift do show it.
    let ra: Vec<Run> = (0..3)
        .map(|i| {
            run_with(
                "a",
                vec![figure("x.y", Unit::Nanoseconds, noisy(100.0, 7, i))],
            )
        })
        .collect();
    let rb: Vec<Run> = (0..3)
        .map(|i| {
            run_with(
                "b",
                vec![figure("x.y", Unit::Nanoseconds, noisy(110.0, 7, 10 + i))],
            )
        })
        .collect();
    let c = cmp(
        &ra.iter().collect::<Vec<_>>(),
        &rb.iter().collect::<Vec<_>>(),
        &CompareConfig::default(),
    );
    assert_eq!(c.figures[0].verdict, Verdict::Slower);
}

#[test]
fn robust_cv_known_answer() {
    // median 100, absolute deviations 0, 10, 10 -> MAD 10 -> 1.4826 * 10 / 100.
    assert!((robust_cv(&[90.0, 100.0, 110.0]).unwrap() - 0.148_26).abs() < 1e-12);
    assert_eq!(robust_cv(&[1.0, 2.0]), None);
}

#[test]
fn a_state_the_host_has_shown_before_is_not_a_change() {
    // Medians of earlier runs: two states, about 17 and 400 (a file system reusing inodes or not).
    let seen = History::from_medians(&[17.0, 16.5, 17.5, 400.0, 263.0]).unwrap();
    let a = run_with(
        "a",
        vec![figure("fs.x", Unit::Nanoseconds, noisy(17.0, 11, 30))],
    );
    let b = run_with(
        "b",
        vec![figure("fs.x", Unit::Nanoseconds, noisy(390.0, 11, 31))],
    );
    let config = CompareConfig {
        history_noise: [("fs.x".to_string(), seen)].into(),
        ..CompareConfig::default()
    };
    assert_eq!(
        cmp(&[&a], &[&b], &config).figures[0].verdict,
        Verdict::NoChange
    );
    // A value far outside anything seen is still a change.
    let c = run_with(
        "c",
        vec![figure("fs.x", Unit::Nanoseconds, noisy(2000.0, 11, 32))],
    );
    assert_eq!(
        cmp(&[&a], &[&c], &config).figures[0].verdict,
        Verdict::Slower
    );
}

#[test]
fn a_figure_whose_probe_was_contradicted_carries_the_caveat_into_the_comparison() {
    let plain = figure("memory.page_fault", Unit::Nanoseconds, noisy(300.0, 9, 5));
    let mut contradicted = figure("memory.page_fault", Unit::Nanoseconds, noisy(300.0, 9, 6));
    // What the probe's claim check stores when a run's counters saw no fault per touch.
    contradicted.checks = vec![crate::results::model::ClaimCheck {
        event: "page-faults".into(),
        expected: [1.0, 1.01],
        seen: 0.01,
        holds: false,
        why: "every touch faults one new page".into(),
    }];
    let a = run_with("a", vec![plain]);
    let b = run_with("b", vec![contradicted]);
    let c = cmp(&[&a], &[&b], &CompareConfig::default());
    let f = &c.figures[0];
    assert_eq!(f.caveats.len(), 1, "{:?}", f.caveats);
    assert!(
        f.caveats[0].starts_with("B: counters contradict the probe: page-faults 0.01"),
        "{}",
        f.caveats[0]
    );
    // Shown even though nothing changed, and kept in the JSON.
    assert_eq!(f.verdict, Verdict::NoChange);
    let shown = text::render(&c, false);
    assert!(
        shown.contains("memory.page_fault") && shown.contains("caveat: B: counters contradict"),
        "{shown}"
    );
    assert!(serde_json::to_string(&c).unwrap().contains("\"caveats\""));
    // Without contradictions there is nothing to say.
    let clean = cmp(&[&a], &[&a], &CompareConfig::default());
    assert!(clean.figures[0].caveats.is_empty());
    assert!(!serde_json::to_string(&clean).unwrap().contains("caveats"));
}

/// `compare` writes both sides of a row in one unit, the one that suits the larger side: 950 ns
/// against 1.2 us reads "950 ns  1200 ns" (nanoseconds stay nanoseconds below 10 us), and 950 ns
/// against 12 us reads "0.95 us  12 us", never "950 ns  12 us".
#[test]
fn both_sides_of_a_row_are_written_in_one_unit() {
    for (b_ns, unit) in [(1200.0, "ns"), (12_000.0, "us")] {
        let a = run_with(
            "a",
            vec![figure(
                "syscall.null",
                Unit::Nanoseconds,
                noisy(950.0, 11, 1),
            )],
        );
        let b = run_with(
            "b",
            vec![figure(
                "syscall.null",
                Unit::Nanoseconds,
                noisy(b_ns, 11, 2),
            )],
        );
        let c = cmp(&[&a], &[&b], &CompareConfig::default());
        let text = text::render(&c, true);
        let row = text
            .lines()
            .find(|l| l.starts_with("syscall.null") && !l.contains("why:"))
            .unwrap_or_else(|| panic!("no row for syscall.null in:\n{text}"));
        let f = &c.figures[0];
        let scale = Unit::Nanoseconds.scale_for(b_ns);
        assert_eq!(scale.name, unit);
        let side_a = crate::units::in_scale(f.value_a, scale);
        let side_b = crate::units::in_scale(f.value_b, scale);
        assert!(
            row.contains(&format!("{side_a} ")) && row.contains(&side_b),
            "row {row:?} should hold {side_a:?} and {side_b:?}"
        );
        assert_eq!(
            row.matches(&format!(" {unit}")).count(),
            2,
            "both sides in {unit}: {row:?}"
        );
        let other = if unit == "ns" { " us" } else { " ns" };
        assert!(!row.contains(other), "a side in another unit: {row:?}");
    }
}

#[test]
fn a_placement_figure_is_compared_only_between_runs_with_the_same_pages() {
    use crate::meter::pages::Pages;
    let side = |id: &str, center: f64, pages: Option<Pages>| {
        let mut m = figure("memory.latency", Unit::Nanoseconds, noisy(center, 9, 3));
        m.pages = pages;
        let mut r = empty_run();
        r.id = id.into();
        r.measurements = vec![m];
        r
    };
    let config = CompareConfig::default();
    // Same pages: a 30 % change is found.
    let (a, b) = (
        side("a", 100.0, Some(Pages::Huge)),
        side("b", 130.0, Some(Pages::Huge)),
    );
    assert_eq!(
        cmp(&[&a], &[&b], &config).figures[0].verdict,
        Verdict::Slower
    );
    // Older runs that said nothing compare as before.
    let (a, b) = (side("a", 100.0, None), side("b", 130.0, None));
    assert_eq!(
        cmp(&[&a], &[&b], &config).figures[0].verdict,
        Verdict::Slower
    );
    // 2 MiB against 4 KiB pages, or against a run that did not say: not compared, and why.
    for other in [Some(Pages::Base), None] {
        let (a, b) = (side("a", 100.0, Some(Pages::Huge)), side("b", 130.0, other));
        let c = cmp(&[&a], &[&b], &config);
        let f = &c.figures[0];
        assert_eq!(f.verdict, Verdict::Untested);
        assert!(
            f.reason.starts_with("not compared: A had 2 MiB pages, B "),
            "{}",
            f.reason
        );
        let text = text::render(&c, false);
        assert!(
            text.contains("1 figure(s) not compared: their runs had different kinds of pages"),
            "{text}"
        );
    }
}

#[test]
fn a_machine_that_ran_faster_as_a_whole_is_said_once_and_not_called_a_change() {
    // B's machine ran 1.25x as fast: the yardstick and the system call moved together, the DRAM
    // walk did not move, and only fs.read changed beyond the machine's own move.
    let side = |id: &str, cpu: f64, null: f64, read: f64, seed: u64| {
        run_with(
            id,
            vec![
                figure("cpu.reference", Unit::Nanoseconds, noisy(cpu, 15, seed)),
                figure("syscall.null", Unit::Nanoseconds, noisy(null, 15, seed + 1)),
                figure(
                    "memory.latency",
                    Unit::Nanoseconds,
                    noisy(90.0, 15, seed + 2),
                ),
                figure("fs.read", Unit::Nanoseconds, noisy(read, 15, seed + 3)),
            ],
        )
    };
    let a = side("a", 1000.0, 250.0, 200.0, 10);
    let b = side("b", 800.0, 200.0, 100.0, 20);
    let c = cmp(&[&a], &[&b], &CompareConfig::default());
    let m = c.machine_speed.as_ref().expect("the yardstick moved");
    assert!((m.speedup - 1.25).abs() < 0.03, "{}", m.speedup);
    let verdict = |key: &str| {
        let f = c.figures.iter().find(|f| f.key == key).unwrap();
        (f.verdict, f.reason.clone())
    };
    assert_eq!(verdict("cpu.reference").0, Verdict::Faster);
    let (null, why) = verdict("syscall.null");
    assert_eq!(null, Verdict::NoChange, "{why}");
    assert!(why.contains("as fast in B"), "{why}");
    // Unmoved as measured, 1.25x slower relative to the machine: not a finding either way.
    assert_eq!(verdict("memory.latency").0, Verdict::NoChange);
    assert_eq!(verdict("fs.read").0, Verdict::Faster);
    // The relative geometric mean leaves the machine's move out: fs.read's 1.6x over four.
    let g = m.geomean_relative.unwrap();
    let [lo, hi] = m.geomean_relative_ci95.unwrap();
    assert!(lo <= g && g <= hi, "{lo} {g} {hi}");
    assert!(g < c.geomean.unwrap());
    let text = text::render(&c, false);
    assert!(text.contains("MACHINE SPEED") && text.contains("Relative to the machine's own speed"));
    let json = serde_json::to_value(&c).unwrap();
    assert!(json["machine_speed"]["speedup"].as_f64().unwrap() > 1.2);

    // On another CPU model the yardstick's move is the other machine's speed, not drift: the
    // figures are judged as measured.
    let mut other = b.clone();
    other.fingerprint = Some(Fingerprint {
        cpu_model: Some("Another CPU".into()),
        ..Fingerprint::default()
    });
    let c = cmp(&[&a], &[&other], &CompareConfig::default());
    assert!(c.machine_speed.is_none());
    let f = c.figures.iter().find(|f| f.key == "syscall.null").unwrap();
    assert_eq!(f.verdict, Verdict::Faster);
}
