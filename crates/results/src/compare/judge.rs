//! The verdict on each figure of a comparison, in two steps. First each figure is tested on its own:
//! where the sides were measured in rounds (fresh processes, shuffled order), on the variation
//! between rounds (Welch's test on log round values); where each side has a single round, on its
//! samples (rank test), which understates run-to-run noise and is said to. Then the false discovery
//! rate is controlled across all tested figures of the comparison (Benjamini-Hochberg): with 74
//! figures, a per-figure test at 5 % would call three or four of them changed by chance alone.
//! A figure is called changed when its adjusted p-value (q) is at most the comparison's level, the
//! interval of its ratio excludes 1, the change is at least the minimum effect (raised to three
//! times the run-to-run spread stored history shows, where there is history), and the values do
//! not both lie in a range the host has shown before. Each figure gets the reason in words.

use super::{rank, CompareConfig, Side, Verdict, NOISE_MULTIPLE};
use crate::results::figure::Figure;
use crate::stats::{dist, fdr, twosample};
use crate::units::Unit;

/// What the statistics say about one figure present on both sides.
pub(super) struct Judgement {
    pub ratio_ci95: Option<[f64; 2]>,
    pub p_value: Option<f64>,
    /// p-value adjusted for the number of figures tested (Benjamini-Hochberg).
    pub q_value: Option<f64>,
    pub noise_floor: f64,
    pub noise_source: String,
    pub verdict: Verdict,
    pub reason: String,
}

/// A figure tested on its own, before the false discovery rate is controlled.
pub(super) struct Test {
    ci: [f64; 2],
    p: f64,
    /// How the figure was tested, for the reason.
    method: String,
    noise_floor: f64,
    noise_source: &'static str,
    /// Stored history has seen both values already.
    shown_before: bool,
}

/// Either the figure is settled without a test (exact, or nothing to judge a spread by), or it
/// waits for the other figures' p-values.
pub(super) enum Step {
    Settled(Judgement),
    Tested(Test),
}

fn seed_of(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, c| {
        (h ^ c as u64).wrapping_mul(0x100_0000_01b3)
    })
}

fn changed(yes: bool, better: bool) -> Verdict {
    match (yes, better) {
        (false, _) => Verdict::NoChange,
        (true, true) => Verdict::Faster,
        (true, false) => Verdict::Slower,
    }
}

/// First step: the figure on its own.
pub(super) fn test(key: &str, a: &Side, b: &Side, config: &CompareConfig) -> Step {
    let (va, vb) = (a.value(), b.value());
    let ratio = vb / va;
    let better = a.figure.direction.speedup(va, vb) > 1.0;
    if a.exact() && b.exact() {
        let yes = beyond(ratio, config.min_effect);
        return Step::Settled(Judgement {
            ratio_ci95: None,
            p_value: None,
            q_value: None,
            noise_floor: config.min_effect,
            noise_source: "exact".into(),
            verdict: changed(yes, better),
            reason: format!(
                "exact figures (a simulation): {} the {:.0} % minimum effect",
                if yes {
                    "differ by at least"
                } else {
                    "differ by less than"
                },
                config.min_effect * 100.0
            ),
        });
    }
    let (ra, rb) = (a.round_values(), b.round_values());
    let between = twosample::log_ratio_test(&ra, &rb, 0.95).ok();
    let (ci, p, method, source) = match between {
        Some(t) if ra.len() + rb.len() >= 3 && (ra.len() > 1 || rb.len() > 1) => (
            // Welch's interval is of the geometric means of the rounds; the figures shown are
            // each side's own value, so the same width is set around their ratio.
            // (min and max keep a zero-width interval on its ratio despite rounding).
            [
                (ratio * t.ci[0] / t.ratio).min(ratio),
                (ratio * t.ci[1] / t.ratio).max(ratio),
            ],
            t.p_value,
            format!(
                "rounds {} + {} (Welch on log round values)",
                ra.len(),
                rb.len()
            ),
            "rounds",
        ),
        _ => {
            let (sa, sb) = (a.samples(), b.samples());
            if sa.len() < 2 && sb.len() < 2 {
                let own = own_interval(a).zip(own_interval(b));
                let Some((ci, p)) = own.and_then(|(ia, ib)| from_intervals(va, ia, vb, ib)) else {
                    let reason = if own.is_some() {
                        "one value on each side, an interval reaching zero or of no width: no \
                         ratio to judge"
                    } else {
                        "one value on each side: nothing to judge its spread by"
                    };
                    return Step::Settled(Judgement {
                        ratio_ci95: None,
                        p_value: None,
                        q_value: None,
                        noise_floor: config.min_effect,
                        noise_source: "unknown".into(),
                        verdict: Verdict::Untested,
                        reason: reason.into(),
                    });
                };
                (
                    ci,
                    p,
                    format!(
                        "intervals of each side ({}; normal on the log scale, one value a side)",
                        interval_kind(&a.figure)
                    ),
                    "intervals",
                )
            } else {
                let statistic = rank::Statistic::matching(va, &sa);
                (
                    rank::ratio_ci95_of(statistic, &sa, &sb, config.resamples, seed_of(key)),
                    rank::mann_whitney_p(&sa, &sb),
                    format!(
                        "samples {} + {} of one round per side (rank test; samples of one process \
                     understate run-to-run noise)",
                        sa.len(),
                        sb.len()
                    ),
                    "samples",
                )
            }
        }
    };
    if !(ci[0] <= ratio && ratio <= ci[1]) {
        // An interval that misses its own estimate (resampled values that are mostly zero, say)
        // would read as a contradiction; no verdict is better than a wrong-looking one.
        return Step::Settled(Judgement {
            ratio_ci95: None,
            p_value: None,
            q_value: None,
            noise_floor: config.min_effect,
            noise_source: source.into(),
            verdict: Verdict::Untested,
            reason: format!(
                "{method}: the resampled interval does not contain the ratio of the figures                  (their values are mostly equal, or zero): nothing to judge by"
            ),
        });
    }
    let seen = config.history_noise.get(key).copied();
    let (noise_floor, noise_source) = match seen {
        Some(h) if NOISE_MULTIPLE * h.cv > config.min_effect => (NOISE_MULTIPLE * h.cv, "history"),
        _ => (config.min_effect, source),
    };
    Step::Tested(Test {
        ci,
        p,
        method,
        noise_floor,
        noise_source,
        shown_before: seen.is_some_and(|h| h.covers(va, vb, config.min_effect)),
    })
}

/// The 95 % interval a figure carries from its own run, where the side is that one run.
fn own_interval(side: &Side) -> Option<[f64; 2]> {
    (side.run_values.len() == 1)
        .then_some(side.figure.interval)
        .flatten()
}

/// Where a figure's own interval comes from, by what it measures: Wilson's interval for a share,
/// the Poisson interval of the failure count for a time between failures, order statistics for a
/// percentile.
fn interval_kind(f: &Figure) -> &'static str {
    match f.unit {
        Unit::Ratio => "Wilson",
        Unit::Seconds => "Poisson",
        _ => "order statistics",
    }
}

/// The ratio B/A judged from each side's own 95 % interval: each interval read as a normal one on
/// the log scale (standard error = its log width / 2 x 1.96), the two errors added in quadrature.
/// Gives the 95 % interval of the ratio and the two-sided p-value of "no change" from the same z,
/// so the interval excludes 1 exactly when p < 0.05 and the p-value can join the others in the
/// false discovery rate. None where a value or an interval end is not positive (no log), or
/// both intervals have no width.
pub(super) fn from_intervals(
    va: f64,
    ia: [f64; 2],
    vb: f64,
    ib: [f64; 2],
) -> Option<([f64; 2], f64)> {
    let positive = [va, vb, ia[0], ia[1], ib[0], ib[1]]
        .iter()
        .all(|x| x.is_finite() && *x > 0.0);
    if !positive {
        return None;
    }
    let z = dist::normal_quantile(0.975);
    let se = |i: [f64; 2]| (i[1].ln() - i[0].ln()).max(0.0) / (2.0 * z);
    let se = (se(ia).powi(2) + se(ib).powi(2)).sqrt();
    if se <= 0.0 {
        return None;
    }
    let d = vb.ln() - va.ln();
    let p = 2.0 * dist::normal_cdf(-(d / se).abs());
    Some(([(d - z * se).exp(), (d + z * se).exp()], p))
}

fn beyond(ratio: f64, floor: f64) -> bool {
    ratio.ln().abs() >= (1.0 + floor).ln()
}

/// Second step: the false discovery rate controlled across every tested figure, and the verdicts.
/// `ratios` and `better` are per step, in the same order.
pub(super) fn decide(
    steps: Vec<Step>,
    ratios: &[f64],
    better: &[bool],
    config: &CompareConfig,
) -> Vec<Judgement> {
    let p: Vec<f64> = steps
        .iter()
        .map(|s| match s {
            Step::Tested(t) => t.p,
            Step::Settled(_) => f64::NAN,
        })
        .collect();
    let tested = p.iter().filter(|x| !x.is_nan()).count();
    let q = fdr::benjamini_hochberg(&p);
    steps
        .into_iter()
        .enumerate()
        .map(|(i, step)| match step {
            Step::Settled(j) => j,
            Step::Tested(t) => verdict(t, q[i], tested, ratios[i], better[i], config),
        })
        .collect()
}

fn verdict(
    t: Test,
    q: f64,
    tested: usize,
    ratio: f64,
    better: bool,
    config: &CompareConfig,
) -> Judgement {
    let significant = q <= config.alpha;
    let excludes_one = t.ci[0] > 1.0 || t.ci[1] < 1.0;
    let big_enough = beyond(ratio, t.noise_floor);
    let yes = significant && excludes_one && big_enough && !t.shown_before;
    let change = (ratio - 1.0).abs() * 100.0;
    let floor = t.noise_floor * 100.0;
    let floor_why = if t.noise_source == "history" {
        format!("{NOISE_MULTIPLE} x the run-to-run spread stored history shows")
    } else {
        "the minimum effect".to_string()
    };
    let fdr = format!("q {q:.4} (p {:.4} adjusted over {tested} figures)", t.p);
    let reason = if yes {
        format!(
            "{}: {fdr} <= {}, interval excludes 1, change {change:.1} % >= {floor:.1} % \
             ({floor_why})",
            t.method, config.alpha
        )
    } else if !significant {
        format!(
            "{}: {fdr} is above the false discovery rate {}",
            t.method, config.alpha
        )
    } else if !excludes_one {
        format!("{}: the 95 % interval of the ratio includes 1", t.method)
    } else if !big_enough {
        format!(
            "{}: {fdr} but the change {change:.1} % is below {floor:.1} % ({floor_why})",
            t.method
        )
    } else {
        format!(
            "{}: {fdr}, but both values lie in the range this host has already shown",
            t.method
        )
    };
    Judgement {
        ratio_ci95: Some(t.ci),
        p_value: Some(t.p),
        q_value: Some(q),
        noise_floor: t.noise_floor,
        noise_source: t.noise_source.to_string(),
        verdict: changed(yes, better),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Side;
    use super::*;
    use crate::results::compare::CompareConfig;
    use crate::results::figure::{Direction, Evidence};

    /// One run a side, one value, with the interval the run gave it (or none).
    fn side(unit: Unit, direction: Direction, value: f64, interval: Option<[f64; 2]>) -> Side {
        let mut figure = Figure::exact("k", "latency", unit, direction, value);
        figure.interval = interval;
        figure.evidence = Evidence::Rounds(vec![vec![value]]);
        Side {
            figure,
            run_values: vec![value],
            rounds: vec![vec![value]],
            explain: Vec::new(),
            caveats: Vec::new(),
            pages: Vec::new(),
        }
    }

    fn judge(a: &Side, b: &Side) -> Judgement {
        let config = CompareConfig::default();
        let step = test("k", a, b, &config);
        let (va, vb) = (a.value(), b.value());
        let better = a.figure.direction.speedup(va, vb) > 1.0;
        decide(vec![step], &[vb / va], &[better], &config)
            .pop()
            .unwrap()
    }

    #[test]
    fn the_ratio_of_two_log_symmetric_intervals_has_a_known_answer() {
        let z = dist::normal_quantile(0.975);
        let own = |v: f64| [v * (-0.1 * z).exp(), v * (0.1 * z).exp()];
        let b = 0.5f64.exp();
        let (ci, p) = from_intervals(1.0, own(1.0), b, own(b)).unwrap();
        assert!((p - 4.0695e-4).abs() < 1e-7, "{p}");
        assert!(
            (ci[0] - 1.2496).abs() < 1e-3 && (ci[1] - 2.1753).abs() < 1e-3,
            "{ci:?}"
        );
        // Nothing to take a log of, or no width on either side.
        assert_eq!(from_intervals(0.0, [0.0, 0.01], 0.1, [0.05, 0.2]), None);
        assert_eq!(from_intervals(1.0, [1.0, 1.0], 2.0, [2.0, 2.0]), None);
    }

    #[test]
    fn disjoint_percentile_intervals_call_a_slowdown() {
        let a = side(
            Unit::Nanoseconds,
            Direction::Lower,
            100.0,
            Some([95.0, 105.0]),
        );
        let b = side(
            Unit::Nanoseconds,
            Direction::Lower,
            200.0,
            Some([190.0, 210.0]),
        );
        let j = judge(&a, &b);
        assert_eq!(j.verdict, Verdict::Slower, "{}", j.reason);
        assert_eq!(j.noise_source, "intervals");
        assert!(
            j.reason
                .contains("intervals of each side (order statistics"),
            "{}",
            j.reason
        );
        let [lo, hi] = j.ratio_ci95.unwrap();
        assert!(lo > 1.0 && lo < 2.0 && hi > 2.0, "{lo} {hi}");
        assert!(j.p_value.unwrap() < 1e-6);
    }

    #[test]
    fn a_longer_time_between_failures_is_better() {
        let a = side(Unit::Seconds, Direction::Higher, 10.0, Some([5.0, 20.0]));
        let b = side(Unit::Seconds, Direction::Higher, 100.0, Some([50.0, 200.0]));
        let j = judge(&a, &b);
        assert_eq!(j.verdict, Verdict::Faster, "{}", j.reason);
        assert!(j.reason.contains("(Poisson"), "{}", j.reason);
        let j = judge(&b, &a);
        assert_eq!(j.verdict, Verdict::Slower, "{}", j.reason);
    }

    #[test]
    fn overlapping_intervals_are_no_change_and_say_why() {
        let a = side(Unit::Ratio, Direction::Lower, 0.010, Some([0.008, 0.0125]));
        let b = side(Unit::Ratio, Direction::Lower, 0.011, Some([0.0088, 0.0137]));
        let j = judge(&a, &b);
        assert_eq!(j.verdict, Verdict::NoChange, "{}", j.reason);
        assert!(
            j.reason.starts_with("intervals of each side (Wilson"),
            "{}",
            j.reason
        );
        let [lo, hi] = j.ratio_ci95.unwrap();
        assert!(lo < 1.0 && hi > 1.0, "{lo} {hi}");
        assert!(j.p_value.unwrap() > 0.05);
    }

    #[test]
    fn no_interval_or_one_reaching_zero_stays_untested() {
        let a = side(Unit::Nanoseconds, Direction::Lower, 100.0, None);
        let b = side(Unit::Nanoseconds, Direction::Lower, 200.0, None);
        let j = judge(&a, &b);
        assert_eq!(j.verdict, Verdict::Untested);
        assert_eq!(
            j.reason,
            "one value on each side: nothing to judge its spread by"
        );
        assert_eq!((j.p_value, j.ratio_ci95), (None, None));
        // An interval on one side only is not a spread of both.
        let b = side(
            Unit::Nanoseconds,
            Direction::Lower,
            200.0,
            Some([190.0, 210.0]),
        );
        assert_eq!(judge(&a, &b).verdict, Verdict::Untested);
        let a = side(Unit::Ratio, Direction::Lower, 0.0, Some([0.0, 0.001]));
        let b = side(Unit::Ratio, Direction::Lower, 0.05, Some([0.04, 0.06]));
        let j = judge(&a, &b);
        assert_eq!(j.verdict, Verdict::Untested);
        assert!(j.reason.contains("reaching zero"), "{}", j.reason);
    }
}
