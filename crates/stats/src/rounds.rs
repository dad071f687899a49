//! A figure's value and its uncertainty from rounds: each round (a fresh process, at its own place
//! in a shuffled order) holds a few samples; the round's median is its value, and the rounds'
//! spread, not the samples', says how far the figure can be trusted.

use super::rng::Rng;
use super::summary::{self, median};

/// What a figure's rounds say about it.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundEstimate {
    /// The median of the round values: the typical round.
    pub value: f64,
    /// Two-level bootstrap interval of `value` at `level`.
    pub ci: [f64; 2],
    pub level: f64,
    /// Each round's median, in round order.
    pub round_values: Vec<f64>,
    /// Coefficient of variation of the round values (0 with one round).
    pub between_cv: f64,
    /// Median over rounds of each round's own coefficient of variation.
    pub within_cv: f64,
}

/// The value of one round: the median of its samples.
pub fn round_value(samples: &[f64]) -> f64 {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    median(&s)
}

/// The rounds' coefficient of variation, [`summary::cv`]; 0 where that has none (one round, or a
/// mean of zero), as a figure of one round is stored.
fn cv(xs: &[f64]) -> f64 {
    summary::cv(xs).unwrap_or(0.0)
}

/// Estimates a figure from its rounds' samples. The interval comes from a two-level bootstrap
/// (Kalibera and Jones): draw rounds with replacement, then each drawn round's samples with
/// replacement, and take the median of the drawn rounds' medians; `resamples` times, then the
/// central `level` of those values. Deterministic under `seed`. Rounds without samples are ignored;
/// None when no round has any.
pub fn estimate(
    rounds: &[Vec<f64>],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<RoundEstimate> {
    let rounds: Vec<&Vec<f64>> = rounds.iter().filter(|r| !r.is_empty()).collect();
    if rounds.is_empty() {
        return None;
    }
    let round_values: Vec<f64> = rounds.iter().map(|r| round_value(r)).collect();
    let mut sorted = round_values.clone();
    sorted.sort_by(f64::total_cmp);
    let value = median(&sorted);

    let mut rng = Rng::new(seed);
    let resamples = resamples.max(1);
    let mut stats = Vec::with_capacity(resamples);
    let mut drawn_values = vec![0.0; rounds.len()];
    let mut scratch: Vec<f64> = Vec::new();
    for _ in 0..resamples {
        for slot in drawn_values.iter_mut() {
            let round = rounds[rng.below(rounds.len())];
            scratch.clear();
            scratch.extend((0..round.len()).map(|_| round[rng.below(round.len())]));
            scratch.sort_by(f64::total_cmp);
            *slot = median(&scratch);
        }
        drawn_values.sort_by(f64::total_cmp);
        stats.push(median(&drawn_values));
    }
    stats.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    let ci = [quantile(&stats, tail), quantile(&stats, 1.0 - tail)];

    let mut within: Vec<f64> = rounds.iter().map(|r| cv(r)).collect();
    within.sort_by(f64::total_cmp);
    Some(RoundEstimate {
        value,
        ci,
        level,
        between_cv: cv(&round_values),
        within_cv: median(&within),
        round_values,
    })
}

/// The `q` quantile of sorted values, interpolating between neighbours.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use proptest::prelude::*;

    /// The spread of rounds is the one CV of the summary: the sample standard deviation over the
    /// mean's magnitude, and 0 where that says nothing (as this module's own copy gave before).
    #[test]
    fn the_rounds_cv_is_the_summary_cv() {
        assert_eq!(cv(&[]), 0.0);
        assert_eq!(cv(&[5.0]), 0.0);
        assert_eq!(cv(&[-1.0, 1.0]), 0.0);
        let xs = [9.0, 10.0, 11.0, 10.5];
        let n = xs.len() as f64;
        let m = xs.iter().sum::<f64>() / n;
        let sd = (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)).sqrt();
        assert_eq!(cv(&xs), sd / m);
        assert_eq!(cv(&[-2.0, -4.0]), cv(&[2.0, 4.0]));
    }

    /// Rounds of a figure: each round shifted by a multiplicative effect (cv `between`), its
    /// samples scattered around that (cv `within`).
    fn simulate(
        rng: &mut Rng,
        value: f64,
        between: f64,
        within: f64,
        rounds: usize,
        samples: usize,
    ) -> Vec<Vec<f64>> {
        (0..rounds)
            .map(|_| {
                let centre = value * (1.0 + between * rng.normal());
                (0..samples)
                    .map(|_| centre * (1.0 + within * rng.normal()))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn identical_rounds_give_a_point() {
        let r = estimate(&[vec![5.0; 3], vec![5.0; 4]], 0.95, 500, 1).unwrap();
        assert_eq!((r.value, r.ci), (5.0, [5.0, 5.0]));
        assert_eq!((r.between_cv, r.within_cv), (0.0, 0.0));
    }

    #[test]
    fn round_values_are_medians_and_the_value_their_median() {
        let r = estimate(
            &[vec![1.0, 9.0, 2.0], vec![4.0, 3.0], vec![], vec![7.0]],
            0.95,
            100,
            1,
        )
        .unwrap();
        assert_eq!(r.round_values, vec![2.0, 3.5, 7.0]);
        assert_eq!(r.value, 3.5);
        assert!(estimate(&[vec![]], 0.95, 10, 1).is_none());
    }

    #[test]
    fn the_interval_follows_the_rounds_not_the_samples() {
        // Tight samples (0.1 %) in rounds that move by 5 %: the interval is as wide as the rounds'
        // spread, far wider than the samples alone would say.
        let mut rng = Rng::new(9);
        let rounds = simulate(&mut rng, 1000.0, 0.05, 0.001, 7, 5);
        let r = estimate(&rounds, 0.95, 2000, 3).unwrap();
        let width = (r.ci[1] - r.ci[0]) / r.value;
        assert!(width > 0.03, "relative width {width}");
        assert!(r.between_cv > 10.0 * r.within_cv, "{r:?}");
        let pooled: Vec<f64> = rounds.concat();
        let s = crate::summary::summarize(&pooled);
        assert!(
            (s.ci95[1] - s.ci95[0]) < r.ci[1] - r.ci[0],
            "pooled {:?} vs rounds {:?}",
            s.ci95,
            r.ci
        );
    }

    #[test]
    fn a_bimodal_figure_spans_both_modes() {
        // Rounds landing at 1.4 or 5.2 (in GB/s), tight within each.
        let rounds: Vec<Vec<f64>> = [1.4, 5.2, 1.4, 5.3, 5.2, 1.4, 5.2]
            .iter()
            .map(|&v| vec![v * 0.999, v, v * 1.001])
            .collect();
        let r = estimate(&rounds, 0.95, 2000, 4).unwrap();
        assert!(r.ci[0] <= 1.41 && r.ci[1] >= 5.19, "{r:?}");
        assert!(r.between_cv > 0.4);
    }

    #[test]
    fn coverage_on_simulated_figures() {
        // The true value is the median of the round effect distribution, i.e. `value`.
        let mut rng = Rng::new(77);
        let trials = 400;
        let covered = (0..trials)
            .filter(|&t| {
                let rounds = simulate(&mut rng, 100.0, 0.03, 0.01, 9, 5);
                let r = estimate(&rounds, 0.95, 1000, t).unwrap();
                r.ci[0] <= 100.0 && 100.0 <= r.ci[1]
            })
            .count();
        let coverage = covered as f64 / trials as f64;
        // A percentile bootstrap of nine rounds runs a little short of its nominal 95 %.
        assert!((0.85..=0.995).contains(&coverage), "coverage {coverage}");
    }

    #[test]
    fn quantiles_interpolate() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&s, 0.0), 1.0);
        assert_eq!(quantile(&s, 1.0), 4.0);
        assert_eq!(quantile(&s, 0.5), 2.5);
        assert!((quantile(&s, 0.25) - 1.75).abs() < 1e-12);
    }

    proptest! {
        #[test]
        fn interval_stays_within_the_data_and_is_reproducible(
            rounds in proptest::collection::vec(proptest::collection::vec(0.0f64..1e6, 1..8), 1..10),
            seed: u64,
        ) {
            let a = estimate(&rounds, 0.95, 200, seed).unwrap();
            let b = estimate(&rounds, 0.95, 200, seed).unwrap();
            prop_assert_eq!(&a, &b);
            let all: Vec<f64> = rounds.concat();
            let lo = all.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = all.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            prop_assert!(lo <= a.ci[0] && a.ci[0] <= a.ci[1] && a.ci[1] <= hi);
            prop_assert!(lo <= a.value && a.value <= hi);
            prop_assert_eq!(a.round_values.len(), rounds.len());
        }
    }
}
