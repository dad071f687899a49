//! The statistics of A and B measured in pairs. Each pair is one round of A and one of B taken
//! within seconds of each other (or at the same time, in a duet or in lockstep), so whatever the
//! machine did over minutes moved both; the ratio B/A of a pair keeps the difference between the
//! set-ups and loses most of the drift. What is left is not normal noise: on a shared virtual
//! machine most pairs agree closely and a few, caught by the host's own changes of pace within
//! the pair, lie far out. The verdict therefore rests on ranks of the pairs' log ratios: the
//! Hodges-Lehmann estimate (the median of the pairwise means, the "Walsh averages"), its
//! distribution-free interval, and the Wilcoxon signed-rank test, exact up to [`EXACT_UP_TO`]
//! pairs. A few wild pairs move them little, where they would widen a t interval on the mean
//! several times; on normal noise they lose about 5 % of the t-test's efficiency. The log scale
//! makes a ratio and its inverse judged alike.

use crate::{dist, summary};
use serde::{Deserialize, Serialize};

/// Up to this many pairs the signed-rank distribution is counted exactly; beyond, its normal
/// approximation is within a fraction of a percent.
pub const EXACT_UP_TO: usize = 60;

/// One side's value of a figure in one pair (where [`crate::rounds::round_value`], the median,
/// serves a run's rounds): the quartile of the round's samples at the fast end
/// (the second fastest of five: the lower quartile of times, the upper of rates). On a shared VM
/// the host's pace jumps between two levels for a second or so, and a round's slower samples are
/// those it caught at the slow one: this quartile reads both sides at the faster pace, where the
/// median took whichever pace held most of the round, and it still gives a single wild sample no
/// weight. Chosen on the 20 A/A and 10 known-change tries of docs/ab.md (the change found 9 of
/// 10 times against 7 with the median, no A/A figure flagged either way).
pub fn fast_quartile(samples: &[f64], higher_is_better: bool) -> f64 {
    let mut sorted: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted.sort_by(f64::total_cmp);
    let k = sorted.len() / 4;
    if higher_is_better {
        sorted[sorted.len() - 1 - k]
    } else {
        sorted[k]
    }
}

/// The signed-rank test's efficiency relative to the t-test on normal noise (3/pi).
const EFFICIENCY: f64 = 3.0 / std::f64::consts::PI;

/// What the pairs of one figure say.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Paired {
    /// Pairs taken.
    pub pairs: usize,
    /// The Hodges-Lehmann estimate of the pairs' B/A ratio (on the log scale, back-transformed).
    pub ratio: f64,
    /// 95 % interval of `ratio` (distribution-free, from the signed-rank distribution).
    pub ci95: [f64; 2],
    /// Two-sided p-value of "no difference" (Wilcoxon signed-rank).
    pub p_value: f64,
    /// The spread of the pairs' log ratios, as a standard deviation estimated robustly (1.4826
    /// times their median absolute deviation): the noise that is left after pairing, with the
    /// wild pairs given no more weight than the verdict gives them.
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
        let mut walsh = Vec::with_capacity(n * (n + 1) / 2);
        for i in 0..n {
            for j in i..n {
                walsh.push((logs[i] + logs[j]) / 2.0);
            }
        }
        walsh.sort_by(f64::total_cmp);
        let center = summary::median(&walsh);
        let k = interval_rank(n, 0.05);
        let (lo, hi) = (walsh[k - 1], walsh[walsh.len() - k]);
        Some(Paired {
            pairs: n,
            ratio: center.exp(),
            ci95: [lo.exp(), hi.exp()],
            p_value: signed_rank_p(&logs),
            sd_log: summary::MAD_TO_SD * summary::median_and_mad(&logs).1,
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

/// P(W+ = s) for s in 0..=n(n+1)/2 under "no difference": each rank 1..n counted positive or not
/// with probability one half.
fn signed_rank_distribution(n: usize) -> Vec<f64> {
    let top = n * (n + 1) / 2;
    let mut p = vec![0.0; top + 1];
    p[0] = 1.0;
    let mut reach = 0;
    for rank in 1..=n {
        reach += rank;
        for s in (0..=reach).rev() {
            let with = if s >= rank { p[s - rank] } else { 0.0 };
            p[s] = (p[s] + with) / 2.0;
        }
    }
    p
}

/// The rank k (1-based) of the sorted Walsh averages that bound the two-sided interval at level
/// `alpha`: the largest k with P(W+ < k) <= alpha/2. With too few pairs for any such k the whole
/// range is the interval (k = 1).
fn interval_rank(n: usize, alpha: f64) -> usize {
    let m = n * (n + 1) / 2;
    let k = if n <= EXACT_UP_TO {
        let p = signed_rank_distribution(n);
        let mut below = 0.0;
        let mut k = 0;
        for (s, ps) in p.iter().enumerate() {
            below += ps;
            if below > alpha / 2.0 {
                break;
            }
            k = s + 1;
        }
        k
    } else {
        let sd = (n as f64 * (n as f64 + 1.0) * (2.0 * n as f64 + 1.0) / 24.0).sqrt();
        (m as f64 / 2.0 - dist::normal_quantile(1.0 - alpha / 2.0) * sd).floor() as usize
    };
    k.clamp(1, m.div_ceil(2))
}

/// Two-sided p-value of the Wilcoxon signed-rank test of the log ratios against 0. Zero
/// differences are set aside (Wilcoxon's rule); tied magnitudes get their mean rank, and then
/// the normal approximation with the tie correction is used, as it is beyond [`EXACT_UP_TO`].
fn signed_rank_p(logs: &[f64]) -> f64 {
    let mut nonzero: Vec<f64> = logs.iter().copied().filter(|x| *x != 0.0).collect();
    let n = nonzero.len();
    if n == 0 {
        return 1.0;
    }
    nonzero.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    let mut ranks = vec![0.0; n];
    let mut ties = false;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && nonzero[j + 1].abs() == nonzero[i].abs() {
            j += 1;
        }
        let mean_rank = (i + j + 2) as f64 / 2.0;
        for r in &mut ranks[i..=j] {
            *r = mean_rank;
        }
        let t = (j - i + 1) as f64;
        if t > 1.0 {
            ties = true;
            tie_term += t * t * t - t;
        }
        i = j + 1;
    }
    let w_plus: f64 = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| **x > 0.0)
        .map(|(_, r)| r)
        .sum();
    if n <= EXACT_UP_TO && !ties {
        let p = signed_rank_distribution(n);
        let w = w_plus.round() as usize;
        let lower: f64 = p[..=w].iter().sum();
        let upper: f64 = p[w..].iter().sum();
        return (2.0 * lower.min(upper)).min(1.0);
    }
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term / 48.0;
    if var <= 0.0 {
        return if w_plus == mean { 1.0 } else { 0.0 };
    }
    // Continuity correction of half a rank towards the mean.
    let z = ((w_plus - mean).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * (1.0 - dist::normal_cdf(z))).min(1.0)
}

/// Power the smallest findable change is stated at: a change that large is found this often.
pub const POWER: f64 = 0.8;

/// The smallest change (as a fraction) that `pairs` pairs with this spread of log ratios find
/// with [`POWER`] at the 5 % level.
pub fn findable(sd_log: f64, pairs: usize) -> f64 {
    if pairs < 2 {
        return f64::INFINITY;
    }
    // Below six pairs no signed-rank result reaches the 5 % level, whatever the change.
    if pairs < MIN_DECISIVE_PAIRS {
        return f64::INFINITY;
    }
    let df = (pairs - 1) as f64;
    let z = dist::t_quantile(0.975, df) + dist::normal_quantile(POWER);
    (z * sd_log / (pairs as f64 * EFFICIENCY).sqrt()).exp_m1()
}

/// The fewest pairs whose signed-rank test can reach the 5 % level (2/2^6 = 0.031).
pub const MIN_DECISIVE_PAIRS: usize = 6;

/// Pairs needed to find a change of `effect` (a fraction) with [`POWER`], at this spread; None
/// when even many thousands would not.
pub fn pairs_needed(sd_log: f64, effect: f64) -> Option<usize> {
    (MIN_DECISIVE_PAIRS..=100_000).find(|&n| findable(sd_log, n) <= effect)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_pairs_value_of_a_round_is_its_quartile_at_the_fast_end() {
        let times = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(fast_quartile(&times, false), 2.0);
        // A rate is faster when higher.
        assert_eq!(fast_quartile(&times, true), 4.0);
        assert_eq!(fast_quartile(&[3.0, 1.0, 2.0], false), 1.0);
        assert_eq!(fast_quartile(&[9.0], true), 9.0);
        // One wild sample of either kind moves it not at all.
        assert_eq!(fast_quartile(&[0.001, 2.0, 2.0, 3.0, 4.0], false), 2.0);
        assert_eq!(fast_quartile(&[2.0, 2.0, 3.0, 4.0, 1e9], false), 2.0);
        assert!(fast_quartile(&[], false).is_nan());
    }

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_answers_of_the_hodges_lehmann_estimate_and_signed_rank_test() {
        // Log ratios 0.01 .. 0.08 (eight pairs, all B slower): the Walsh averages are symmetric
        // around 0.045, every rank is positive, so p = 2/2^8.
        let logs = [0.01f64, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08];
        let ratios: Vec<f64> = logs.iter().map(|x| x.exp()).collect();
        let p = Paired::of(&ratios).unwrap();
        assert!((p.ratio.ln() - 0.045).abs() < 1e-12, "{}", p.ratio.ln());
        assert!((p.p_value - 2.0 / 256.0).abs() < 1e-12, "{}", p.p_value);
        // n = 8: P(W+ <= 3) = 5/256 <= 0.025 < P(W+ <= 4) = 7/256, so k = 4: the 4th smallest
        // and 4th largest of the 36 Walsh averages, 0.02 and 0.07.
        assert!((p.ci95[0].ln() - 0.02).abs() < 1e-12, "{:?}", p.ci95);
        assert!((p.ci95[1].ln() - 0.07).abs() < 1e-12, "{:?}", p.ci95);
        assert!(p.excludes_one());
        // Mixed signs: W+ = 1 + 3 + 4 = 8 of the ranks of |-0.02|, 0.01, 0.03, 0.04 and -0.05.
        let mixed: Vec<f64> = [0.01f64, -0.02, 0.03, 0.04, -0.05]
            .iter()
            .map(|x| x.exp())
            .collect();
        // For n = 5, P(W+ >= 8) = 16/32 is the smaller tail (P(W+ <= 8) = 19/32): p = 1.
        assert!((Paired::of(&mixed).unwrap().p_value - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_few_wild_pairs_move_the_verdict_little() {
        // Twenty pairs close to 1.05 and three far out either way, as a host that changed pace
        // within a pair leaves them.
        let mut ratios: Vec<f64> = (0..20)
            .map(|i| 1.05 + 0.002 * ((i % 5) as f64 - 2.0))
            .collect();
        ratios.extend([0.80, 1.30, 0.85]);
        let p = Paired::of(&ratios).unwrap();
        assert!((p.ratio - 1.05).abs() < 0.005, "{}", p.ratio);
        assert!(p.ci95[0] > 1.03 && p.ci95[1] < 1.07, "{:?}", p.ci95);
        assert!(p.p_value < 0.01, "{}", p.p_value);
        assert!(p.sd_log < 0.01, "{}", p.sd_log);
    }

    #[test]
    fn the_exact_distribution_sums_to_one_and_matches_the_normal_one_far_out() {
        for n in [1usize, 2, 5, 12, 40] {
            let p = signed_rank_distribution(n);
            assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            assert_eq!(p.len(), n * (n + 1) / 2 + 1);
        }
        // Around the switch to the normal approximation the two intervals agree within a rank.
        let exact = interval_rank(EXACT_UP_TO, 0.05) as f64;
        let n = EXACT_UP_TO as f64;
        let normal =
            n * (n + 1.0) / 4.0 - 1.959_964 * (n * (n + 1.0) * (2.0 * n + 1.0) / 24.0).sqrt();
        assert!((exact - normal).abs() <= 1.5, "{exact} {normal}");
        // Too few pairs for any rank: the whole range.
        assert_eq!(interval_rank(4, 0.05), 1);
    }

    #[test]
    fn too_few_or_broken_ratios_say_nothing() {
        assert!(Paired::of(&[1.1]).is_none());
        assert!(Paired::of(&[1.1, 0.0]).is_none());
        assert!(Paired::of(&[1.1, f64::NAN]).is_none());
        // Identical pairs: every magnitude tied, so the normal approximation with its tie
        // correction decides, and eight pairs are enough.
        let p = Paired::of(&[1.05; 8]).unwrap();
        assert!(p.p_value < 0.05, "{}", p.p_value);
        assert!(
            p.ci95.iter().all(|c| (c - 1.05).abs() < 1e-12),
            "{:?}",
            p.ci95
        );
        assert!(Paired::of(&[1.0, 1.0]).unwrap().p_value == 1.0);
    }

    #[test]
    fn more_pairs_find_smaller_changes() {
        let sd = 0.02;
        assert!(findable(sd, 10) > findable(sd, 40));
        // About (1.96 + 0.84) * 0.02 / sqrt(n * 3/pi) for many pairs.
        let big = findable(sd, 400);
        let expected = 2.80 * 0.02 / (400.0 * EFFICIENCY).sqrt();
        assert!((big - expected).abs() < 0.0005, "{big} {expected}");
        assert!(findable(sd, MIN_DECISIVE_PAIRS - 1).is_infinite());
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
