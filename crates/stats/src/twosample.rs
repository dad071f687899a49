//! Two figures compared through their round values: how much faster or slower B is than A, an
//! interval for that ratio, and a p-value for "no change".
//!
//! Timing figures vary multiplicatively (a disturbance adds a fraction, not a constant), so the test
//! works on logarithms: Welch's t-test on log round values, whose difference of means is the log of
//! the ratio of geometric means. Welch's form does not assume both runs are equally noisy. Each round
//! value (a round's median) already carries the within-round noise, so testing round values is the
//! summary-measures analysis of the two-level design: the between-round variance is the one that
//! counts.

use super::dist;

/// B against A.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioTest {
    /// Geometric mean of B's round values over A's (B / A).
    pub ratio: f64,
    /// Confidence interval of the ratio at `level`.
    pub ci: [f64; 2],
    pub level: f64,
    /// Two-sided p-value of "same geometric mean".
    pub p_value: f64,
    /// Welch-Satterthwaite degrees of freedom (infinite when neither side varies).
    pub df: f64,
    pub rounds: [usize; 2],
}

/// Why two figures could not be compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotComparable {
    /// Fewer than two rounds in all: nothing to estimate a spread from.
    TooFewRounds,
    /// A round value is zero, negative or not finite, so it has no logarithm.
    NotPositive,
}

impl std::fmt::Display for NotComparable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotComparable::TooFewRounds => "fewer than three rounds between the two figures",
            NotComparable::NotPositive => "a round value is zero or negative",
        })
    }
}

fn mean_var(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = if xs.len() > 1 {
        xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, v)
}

/// Welch's t-test on the logarithms of `a`'s and `b`'s round values. A side with a single round
/// borrows the other side's variance (the only estimate there is); with one round on both sides
/// nothing can be said.
pub fn log_ratio_test(a: &[f64], b: &[f64], level: f64) -> Result<RatioTest, NotComparable> {
    if a.is_empty() || b.is_empty() || a.len() + b.len() < 3 {
        return Err(NotComparable::TooFewRounds);
    }
    if a.iter().chain(b).any(|&x| !(x > 0.0 && x.is_finite())) {
        return Err(NotComparable::NotPositive);
    }
    let la: Vec<f64> = a.iter().map(|x| x.ln()).collect();
    let lb: Vec<f64> = b.iter().map(|x| x.ln()).collect();
    let (ma, mut va) = mean_var(&la);
    let (mb, mut vb) = mean_var(&lb);
    if la.len() == 1 {
        va = vb;
    }
    if lb.len() == 1 {
        vb = va;
    }
    let (na, nb) = (la.len() as f64, lb.len() as f64);
    let diff = mb - ma;
    let se2 = va / na + vb / nb;
    let (p_value, df, half) = if se2 <= 0.0 {
        // Neither side varies at all: any difference is certain, none is nothing.
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        (p, f64::INFINITY, 0.0)
    } else {
        // Welch-Satterthwaite; a side that borrowed its variance contributes no degrees of its own.
        let term = |v: f64, n: f64| {
            if n > 1.0 {
                (v / n).powi(2) / (n - 1.0)
            } else {
                0.0
            }
        };
        let df = se2 * se2 / (term(va, na) + term(vb, nb));
        let se = se2.sqrt();
        let t = diff / se;
        let q = dist::t_quantile(0.5 + level / 2.0, df);
        (dist::t_two_sided_p(t, df), df, q * se)
    };
    Ok(RatioTest {
        ratio: diff.exp(),
        ci: [(diff - half).exp(), (diff + half).exp()],
        level,
        p_value,
        df,
        rounds: [a.len(), b.len()],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use proptest::prelude::*;

    /// Round values of a figure: a true value, a multiplicative effect per round (cv `between`).
    fn rounds(rng: &mut Rng, value: f64, between: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| value * (1.0 + between * rng.normal()))
            .collect()
    }

    #[test]
    fn known_answer_against_a_hand_computation() {
        // logs: a = ln 100 + {-0.01, 0, 0.01}, b = ln 110 + {-0.02, 0, 0.02}.
        let a: Vec<f64> = [-0.01f64, 0.0, 0.01]
            .iter()
            .map(|d| 100.0 * d.exp())
            .collect();
        let b: Vec<f64> = [-0.02f64, 0.0, 0.02]
            .iter()
            .map(|d| 110.0 * d.exp())
            .collect();
        let r = log_ratio_test(&a, &b, 0.95).unwrap();
        assert!((r.ratio - 1.1).abs() < 1e-12);
        // va = 1e-4, vb = 4e-4; se^2 = 5e-4/3; df = se^4 / ((va/3)^2/2 + (vb/3)^2/2) = 50/17 * ...
        let se2: f64 = 5e-4 / 3.0;
        let df = se2 * se2 / ((1e-4f64 / 3.0).powi(2) / 2.0 + (4e-4f64 / 3.0).powi(2) / 2.0);
        assert!((r.df - df).abs() < 1e-9, "{} {df}", r.df);
        let t = 1.1f64.ln() / se2.sqrt();
        assert!((r.p_value - dist::t_two_sided_p(t, df)).abs() < 1e-12);
        let half = dist::t_quantile(0.975, df) * se2.sqrt();
        assert!((r.ci[0] - (1.1f64.ln() - half).exp()).abs() < 1e-12);
    }

    #[test]
    fn no_change_is_not_called() {
        let mut rng = Rng::new(5);
        let a = rounds(&mut rng, 1000.0, 0.02, 5);
        let b = rounds(&mut rng, 1000.0, 0.02, 5);
        let r = log_ratio_test(&a, &b, 0.95).unwrap();
        assert!(r.p_value > 0.05, "{r:?}");
        assert!(r.ci[0] < 1.0 && 1.0 < r.ci[1], "{r:?}");
    }

    #[test]
    fn a_five_percent_slowdown_is_found_and_sized() {
        let mut rng = Rng::new(6);
        let a = rounds(&mut rng, 1000.0, 0.01, 5);
        let b = rounds(&mut rng, 1050.0, 0.01, 5);
        let r = log_ratio_test(&a, &b, 0.95).unwrap();
        assert!(r.p_value < 0.001, "{r:?}");
        assert!(r.ci[0] > 1.0 && r.ci[0] < 1.05 && 1.05 < r.ci[1], "{r:?}");
    }

    #[test]
    fn a_bimodal_figure_gives_a_wide_interval_and_no_verdict() {
        // tcp_bandwidth-like: rounds land at 1.4 or 5.2 GB/s, in both runs.
        let a = [1.4e9, 5.2e9, 5.3e9, 1.4e9, 5.2e9];
        let b = [5.2e9, 1.4e9, 1.5e9, 5.2e9, 1.4e9];
        let r = log_ratio_test(&a, &b, 0.95).unwrap();
        assert!(r.p_value > 0.2, "{r:?}");
        assert!(r.ci[0] < 0.5 && r.ci[1] > 1.5, "{r:?}");
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(
            log_ratio_test(&[1.0], &[2.0], 0.95),
            Err(NotComparable::TooFewRounds)
        );
        assert_eq!(
            log_ratio_test(&[1.0, 0.0], &[2.0], 0.95),
            Err(NotComparable::NotPositive)
        );
        let same = log_ratio_test(&[3.0, 3.0], &[3.0, 3.0], 0.95).unwrap();
        assert_eq!((same.ratio, same.p_value), (1.0, 1.0));
        let shifted = log_ratio_test(&[3.0, 3.0], &[6.0, 6.0], 0.95).unwrap();
        assert_eq!(shifted.p_value, 0.0);
        assert!(
            [shifted.ratio, shifted.ci[0], shifted.ci[1]]
                .iter()
                .all(|r| (r - 2.0).abs() < 1e-12),
            "{shifted:?}"
        );
        // One round on one side borrows the other's spread.
        let one = log_ratio_test(&[100.0], &[99.0, 101.0, 100.0], 0.95).unwrap();
        assert!(one.p_value > 0.5 && one.df > 0.0, "{one:?}");
    }

    /// With a hierarchical noise model (round effects and sample noise), "no change" is called
    /// at about the test's level, and a real change of 5 % nearly always.
    #[test]
    fn false_and_true_positive_rates_on_simulated_runs() {
        let mut rng = Rng::new(2024);
        let (trials, mut false_calls, mut found) = (4000, 0, 0);
        for _ in 0..trials {
            let a = rounds(&mut rng, 500.0, 0.015, 5);
            let b = rounds(&mut rng, 500.0, 0.015, 5);
            if log_ratio_test(&a, &b, 0.95).unwrap().p_value < 0.05 {
                false_calls += 1;
            }
            let c = rounds(&mut rng, 525.0, 0.015, 5);
            if log_ratio_test(&a, &c, 0.95).unwrap().p_value < 0.05 {
                found += 1;
            }
        }
        let fp = false_calls as f64 / trials as f64;
        assert!((0.03..0.07).contains(&fp), "false positive rate {fp}");
        assert!(found as f64 / trials as f64 > 0.95, "power {found}");
    }

    proptest! {
        #[test]
        fn swapping_sides_inverts_the_ratio(
            a in proptest::collection::vec(1.0f64..1e6, 2..12),
            b in proptest::collection::vec(1.0f64..1e6, 2..12),
        ) {
            let ab = log_ratio_test(&a, &b, 0.95).unwrap();
            let ba = log_ratio_test(&b, &a, 0.95).unwrap();
            prop_assert!((ab.ratio * ba.ratio - 1.0).abs() < 1e-9);
            prop_assert!((ab.p_value - ba.p_value).abs() < 1e-9);
            prop_assert!(ab.ci[0] <= ab.ratio * (1.0 + 1e-12) && ab.ratio <= ab.ci[1] * (1.0 + 1e-12));
            prop_assert!((0.0..=1.0).contains(&ab.p_value));
        }

        #[test]
        fn scaling_both_sides_changes_nothing(
            a in proptest::collection::vec(1.0f64..1e3, 2..8),
            b in proptest::collection::vec(1.0f64..1e3, 2..8),
            k in 0.001f64..1000.0,
        ) {
            let r1 = log_ratio_test(&a, &b, 0.9).unwrap();
            let sa: Vec<f64> = a.iter().map(|x| x * k).collect();
            let sb: Vec<f64> = b.iter().map(|x| x * k).collect();
            let r2 = log_ratio_test(&sa, &sb, 0.9).unwrap();
            prop_assert!((r1.ratio - r2.ratio).abs() < 1e-9 * r1.ratio);
            prop_assert!((r1.p_value - r2.p_value).abs() < 1e-6);
        }
    }
}
