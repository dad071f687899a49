//! The statistics of A and B measured in pairs. Each pair is one round of A and one of B taken
//! within seconds of each other (or at the same time, in a duet), so whatever the machine did over
//! minutes moved both; the ratio B/A of a pair keeps the difference between the set-ups and loses
//! most of the drift. The verdict rests on the log ratios of the pairs: their mean, a Student t
//! interval and its two-sided p-value (a paired t-test on the log scale, so a ratio and its inverse
//! are judged alike).

use crate::dist;
use serde::{Deserialize, Serialize};

/// What the pairs of one figure say.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// Pairs taken.
    pub pairs: usize,
    /// Geometric mean of the pairs' B/A ratios.
    pub ratio: f64,
    /// 95 % interval of `ratio`.
    pub ci95: [f64; 2],
    /// Two-sided p-value of "no difference".
    pub p_value: f64,
    /// Standard deviation of the pairs' log ratios: the noise that is left after pairing.
    pub sd_log: f64,
}

impl Paired {
    /// From the pairs' B/A ratios; None for fewer than two, or any ratio not positive and finite.
    pub fn of(ratios: &[f64]) -> Option<Paired> {
        let n = ratios.len();
        if n < 2 || ratios.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
            return None;
        }
        let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
        let mean = logs.iter().sum::<f64>() / n as f64;
        let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let sd = var.sqrt();
        let se = sd / (n as f64).sqrt();
        let df = (n - 1) as f64;
        let reach = dist::t_quantile(0.975, df) * se;
        let p_value = if se > 0.0 {
            dist::t_two_sided_p(mean / se, df)
        } else if mean == 0.0 {
            1.0
        } else {
            0.0
        };
        Some(Paired {
            pairs: n,
            ratio: mean.exp(),
            ci95: [(mean - reach).exp(), (mean + reach).exp()],
            p_value,
            sd_log: sd,
        })
    }

    /// Half the interval's width on the log scale, as a fraction: the precision reached.
    pub fn half_width(&self) -> f64 {
        (self.ci95[1] / self.ci95[0]).ln() / 2.0
    }

    /// The interval holds no ratio of 1.
    pub fn excludes_one(&self) -> bool {
        self.ci95[0] > 1.0 || self.ci95[1] < 1.0
    }
}

/// Power the smallest findable change is stated at: a change that large is found this often.
pub const POWER: f64 = 0.8;

/// The smallest change (as a fraction) that `pairs` pairs with this spread of log ratios find
/// with [`POWER`] at the 5 % level.
pub fn findable(sd_log: f64, pairs: usize) -> f64 {
    if pairs < 2 {
        return f64::INFINITY;
    }
    let df = (pairs - 1) as f64;
    let z = dist::t_quantile(0.975, df) + dist::normal_quantile(POWER);
    (z * sd_log / (pairs as f64).sqrt()).exp_m1()
}

/// Pairs needed to find a change of `effect` (a fraction) with [`POWER`], at this spread; None
/// when even many thousands would not.
pub fn pairs_needed(sd_log: f64, effect: f64) -> Option<usize> {
    (2..=100_000).find(|&n| findable(sd_log, n) <= effect)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_answer_of_a_paired_t_interval() {
        // log ratios 0.01, 0.03, 0.02, 0.04, 0.00: mean 0.02, sd 0.0158, t(0.975, 4) = 2.776.
        let ratios: Vec<f64> = [0.01f64, 0.03, 0.02, 0.04, 0.00]
            .iter()
            .map(|x| x.exp())
            .collect();
        let p = Paired::of(&ratios).unwrap();
        assert!((p.ratio - 0.02f64.exp()).abs() < 1e-12);
        let reach = 2.776_445 * 0.015_811_39 / 5f64.sqrt();
        assert!(
            (p.ci95[0] - (0.02 - reach).exp()).abs() < 1e-4,
            "{:?}",
            p.ci95
        );
        assert!(
            (p.ci95[1] - (0.02 + reach).exp()).abs() < 1e-4,
            "{:?}",
            p.ci95
        );
        // t = 0.02 / (0.0158/sqrt 5) = 2.83 on 4 degrees of freedom: p = 0.047.
        assert!((p.p_value - 0.0474).abs() < 0.002, "{}", p.p_value);
        assert!(p.excludes_one());
    }

    #[test]
    fn too_few_or_broken_ratios_say_nothing() {
        assert!(Paired::of(&[1.1]).is_none());
        assert!(Paired::of(&[1.1, 0.0]).is_none());
        assert!(Paired::of(&[1.1, f64::NAN]).is_none());
        // Identical pairs: certain.
        let p = Paired::of(&[1.05, 1.05, 1.05]).unwrap();
        assert_eq!(p.p_value, 0.0);
        assert!(Paired::of(&[1.0, 1.0]).unwrap().p_value == 1.0);
    }

    #[test]
    fn more_pairs_find_smaller_changes() {
        let sd = 0.02;
        assert!(findable(sd, 10) > findable(sd, 40));
        // About (1.96 + 0.84) * 0.02 / sqrt(n) for many pairs.
        let big = findable(sd, 400);
        assert!((big - (2.80 * 0.02 / 20.0)).abs() < 0.0005, "{big}");
        let n = pairs_needed(sd, 0.01).unwrap();
        assert!(findable(sd, n) <= 0.01 && findable(sd, n - 1) > 0.01);
        assert!(pairs_needed(1.0, 1e-6).is_none());
    }

    proptest! {
        #[test]
        fn the_interval_holds_the_ratio_and_turns_with_the_sides(
            ratios in proptest::collection::vec(0.5f64..2.0, 2..40)
        ) {
            let p = Paired::of(&ratios).unwrap();
            prop_assert!(p.ci95[0] <= p.ratio * (1.0 + 1e-12) && p.ratio <= p.ci95[1] * (1.0 + 1e-12));
            // B/A and A/B: the same test, mirrored.
            let inverse: Vec<f64> = ratios.iter().map(|r| 1.0 / r).collect();
            let q = Paired::of(&inverse).unwrap();
            prop_assert!((p.ratio * q.ratio - 1.0).abs() < 1e-9);
            prop_assert!((p.p_value - q.p_value).abs() < 1e-9);
        }
    }
}
