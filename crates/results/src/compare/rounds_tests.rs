//! The verdict on figures measured in rounds: the spread between rounds decides, and the false
//! discovery rate is controlled across the figures of a comparison. Synthetic round data with known
//! answers (no change, a 5 % change, one marginal figure among many).

use super::*;
use crate::results::model::tests::empty_run;
use crate::results::model::Measurement;
use crate::stats::rng::Rng;

use crate::results::model::tests::in_rounds;

/// `n` rounds of `samples` samples around `value`: each round moved by a factor with CV `between`
/// (page placement, the state of the machine), each sample by one with CV `within`.
fn simulated(rng: &mut Rng, value: f64, between: f64, within: f64) -> Vec<Vec<f64>> {
    (0..5)
        .map(|_| {
            let round = value * (1.0 + between * rng.normal());
            (0..3)
                .map(|_| round * (1.0 + within * rng.normal()))
                .collect()
        })
        .collect()
}

fn run_of(id: &str, ms: Vec<Measurement>) -> Run {
    let mut r = empty_run();
    r.id = id.into();
    r.measurements = ms;
    r
}

/// Two runs of 74 figures; B's are `effect` times A's.
fn pair(rng: &mut Rng, effect: f64) -> (Run, Run) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for i in 0..74 {
        let probe = format!("g{}.f{i}", i % 7);
        let value = 50.0 * (1.0 + i as f64);
        // Between-round spread larger than within: what one process's samples hide.
        a.push(in_rounds(&probe, simulated(rng, value, 0.02, 0.005)));
        b.push(in_rounds(
            &probe,
            simulated(rng, value * effect, 0.02, 0.005),
        ));
    }
    (run_of("a", a), run_of("b", b))
}

fn flagged(c: &Comparison) -> usize {
    c.figures
        .iter()
        .filter(|f| matches!(f.verdict, Verdict::Faster | Verdict::Slower))
        .count()
}

#[test]
fn same_system_twice_flags_at_most_five_percent_of_figures() {
    let mut rng = Rng::new(17);
    let mut total = 0;
    for _ in 0..20 {
        let (a, b) = pair(&mut rng, 1.0);
        let c = compare(&[&a], &[&b], &CompareConfig::default()).unwrap();
        assert_eq!(c.figures.len(), 74);
        for f in &c.figures {
            assert_eq!(f.noise_source, "rounds", "{}", f.reason);
            assert!(f.reason.starts_with("rounds 5 + 5"), "{}", f.reason);
            assert!(f.q_value.unwrap() >= f.p_value.unwrap() * (1.0 - 1e-12));
        }
        total += flagged(&c);
    }
    // 20 A/A comparisons of 74 figures: at most 5 % flagged (74 of 1480); with the false discovery
    // rate controlled, all but a few comparisons flag nothing at all.
    assert!(total <= 74, "{total} of 1480 figures flagged");
}

#[test]
fn a_five_percent_slowdown_is_found_on_most_figures() {
    let mut rng = Rng::new(18);
    let (a, b) = pair(&mut rng, 1.05);
    let c = compare(&[&a], &[&b], &CompareConfig::default()).unwrap();
    let slower = c
        .figures
        .iter()
        .filter(|f| f.verdict == Verdict::Slower)
        .count();
    assert!(slower >= 37, "{slower} of 74 found slower");
    assert!(c.figures.iter().all(|f| f.verdict != Verdict::Faster));
    let f = c
        .figures
        .iter()
        .find(|f| f.verdict == Verdict::Slower)
        .unwrap();
    assert!(
        f.reason.contains("adjusted over 74 figures"),
        "{}",
        f.reason
    );
    assert!(f.reason.contains("interval excludes 1"), "{}", f.reason);
}

/// Rounds whose values are exactly `values` (three equal samples each).
fn exact_rounds(values: &[f64]) -> Vec<Vec<f64>> {
    values.iter().map(|&v| vec![v; 3]).collect()
}

#[test]
fn a_marginal_figure_alone_is_a_change_but_not_among_fifty_unchanged_ones() {
    // A 6 % shift against a 3 % spread between rounds: p about 0.02 on its own.
    let a_rounds = [100.0, 104.0, 96.0, 102.0, 98.0];
    let b_rounds: Vec<f64> = a_rounds.iter().map(|v| v * 1.06).collect();
    let marginal_a = in_rounds("x.marginal", exact_rounds(&a_rounds));
    let marginal_b = in_rounds("x.marginal", exact_rounds(&b_rounds));
    let alone = compare(
        &[&run_of("a", vec![marginal_a.clone()])],
        &[&run_of("b", vec![marginal_b.clone()])],
        &CompareConfig::default(),
    )
    .unwrap();
    let f = &alone.figures[0];
    let p = f.p_value.unwrap();
    assert!((0.001..0.05).contains(&p), "p {p}");
    assert_eq!(f.q_value, Some(p), "one figure: nothing to adjust");
    assert_eq!(f.verdict, Verdict::Slower, "{}", f.reason);

    // The same figure among 50 that did not move at all.
    let (mut ma, mut mb) = (vec![marginal_a], vec![marginal_b]);
    for i in 0..50 {
        let same = exact_rounds(&[200.0 + i as f64, 190.0, 210.0, 205.0, 195.0]);
        ma.push(in_rounds(&format!("y.f{i}"), same.clone()));
        mb.push(in_rounds(&format!("y.f{i}"), same));
    }
    let many = compare(
        &[&run_of("a", ma)],
        &[&run_of("b", mb)],
        &CompareConfig::default(),
    )
    .unwrap();
    let f = many.figures.iter().find(|f| f.key == "x.marginal").unwrap();
    assert_eq!(f.p_value, Some(p), "its own test is unchanged");
    assert!((f.q_value.unwrap() - (p * 51.0).min(1.0)).abs() < 1e-12);
    assert_eq!(f.verdict, Verdict::NoChange);
    assert!(
        f.reason.contains("above the false discovery rate 0.05")
            && f.reason.contains("adjusted over 51 figures"),
        "{}",
        f.reason
    );
    assert_eq!(flagged(&many), 0);
}

#[test]
fn a_certain_change_below_the_minimum_effect_is_not_called_and_says_so() {
    // 2 % slower in every round, with almost no spread: certain, but under the 3 % minimum.
    let a = [100.0, 100.1, 99.9, 100.05, 99.95];
    let b: Vec<f64> = a.iter().map(|v| v * 1.02).collect();
    let c = compare(
        &[&run_of("a", vec![in_rounds("x.y", exact_rounds(&a))])],
        &[&run_of("b", vec![in_rounds("x.y", exact_rounds(&b))])],
        &CompareConfig::default(),
    )
    .unwrap();
    let f = &c.figures[0];
    assert!(f.q_value.unwrap() < 1e-6);
    assert_eq!(f.verdict, Verdict::NoChange);
    assert!(
        f.reason.contains("below 3.0 % (the minimum effect)"),
        "{}",
        f.reason
    );
}

#[test]
fn samples_of_one_process_look_certain_where_rounds_do_not() {
    // Within each round the samples agree to 0.1 %, but the rounds differ by 5 %: the pooled
    // samples of one process would call a 4 % shift certain; the rounds do not.
    let spread = [1.0, 1.05, 0.95, 1.03, 0.97];
    let rounds = |scale: f64| -> Vec<Vec<f64>> {
        spread
            .iter()
            .map(|s| vec![100.0 * scale * s, 100.1 * scale * s, 99.9 * scale * s])
            .collect()
    };
    let a = run_of("a", vec![in_rounds("x.y", rounds(1.0))]);
    let b = run_of("b", vec![in_rounds("x.y", rounds(1.04))]);
    let f = &compare(&[&a], &[&b], &CompareConfig::default())
        .unwrap()
        .figures[0];
    assert_eq!(f.verdict, Verdict::NoChange, "{}", f.reason);
    assert!(f.p_value.unwrap() > 0.05);
    // Each side's first round alone (one round per side): the rank test on samples, said so.
    let one = |r: &Run| {
        let mut m = r.measurements[0].clone();
        m.rounds.truncate(1);
        m.samples = m.rounds[0].clone();
        run_of(&r.id, vec![m])
    };
    let f = &compare(&[&one(&a)], &[&one(&b)], &CompareConfig::default())
        .unwrap()
        .figures[0];
    assert_eq!(f.noise_source, "samples");
    assert!(
        f.reason.contains("understate run-to-run noise"),
        "{}",
        f.reason
    );
}

/// Two runs of 74 figures in rounds with a `between` spread; every figure of B is `shift` times
/// A's (a machine slower, or faster, for the whole of one run).
fn shifted_pair(rng: &mut Rng, between: f64, shift: f64) -> (Run, Run) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for i in 0..74 {
        let probe = format!("g{}.f{i}", i % 20);
        let value = 50.0 * (1.0 + i as f64);
        a.push(in_rounds(&probe, simulated(rng, value, between, 0.005)));
        b.push(in_rounds(
            &probe,
            simulated(rng, value * shift, between, 0.005),
        ));
    }
    (run_of("a", a), run_of("b", b))
}

#[test]
fn a_whole_run_moved_within_its_figures_noise_is_no_geomean_finding() {
    // A VM whose host ran B 6 % faster: each figure's rounds spread 10 %, so no figure can say it,
    // and neither may the mean of them all.
    let mut rng = Rng::new(23);
    for _ in 0..5 {
        let (a, b) = shifted_pair(&mut rng, 0.10, 1.0 / 1.06);
        let c = compare(&[&a], &[&b], &CompareConfig::default()).unwrap();
        let [lo, hi] = c.geomean_ci95.unwrap();
        let g = c.geomean.unwrap();
        assert!(g > 1.02, "the shift is in the mean: {g}");
        assert!(lo <= 1.0 && 1.0 <= hi, "{g} [{lo}, {hi}]");
    }
}

#[test]
fn a_real_slowdown_of_every_figure_is_outside_the_geomean_interval() {
    let mut rng = Rng::new(24);
    let (a, b) = shifted_pair(&mut rng, 0.02, 1.20);
    let c = compare(&[&a], &[&b], &CompareConfig::default()).unwrap();
    let [lo, hi] = c.geomean_ci95.unwrap();
    assert!(hi < 1.0, "B is 1.2x slower: [{lo}, {hi}]");
    assert!(lo <= c.geomean.unwrap() && c.geomean.unwrap() <= hi);
}
