//! The geometric mean of ratios (speed-ups), and an interval for it that respects how the ratios
//! were measured.
//!
//! The figures of one comparison are not independent draws: the twenty sizes of one memory walk,
//! or the placements of one ping-pong, share their probe's process, code and machine state, and
//! move together. Treating them as independent would give the mean of a suite an interval far too
//! narrow, and an A/A comparison would often exclude 1. So the interval resamples whole clusters
//! (one per probe) with replacement, and takes the percentiles of the resampled means of logs:
//! a cluster bootstrap, which needs no model of how the figures of a cluster move together.
//!
//! Resampling sees how figures differ from each other, not an error they all share: a VM whose
//! host ran it 10 % faster for the whole of one run moves every figure at once, and every cluster
//! with it. Each figure's own interval (from its rounds) does hold that error, so the interval
//! given is the union of the bootstrap's and the one the figures' own intervals give when their
//! errors are taken to move together.

use super::rng::Rng;

/// Geometric mean of ratios; `None` when there is no value, or when any value is not a positive,
/// finite number.
///
/// The rule for a value that is zero, negative, infinite or NaN: the mean is undefined, it is not
/// taken over the others. A ratio of two positive times or rates is positive and finite, so such a
/// value is a failed or missing measurement, and its logarithm does not exist. Leaving it out
/// quietly would give a mean over fewer figures than the table beside it lists, leaning toward the
/// figures that worked. A caller that means to leave some values out filters them before, where the
/// reason can be read (compare keeps only figures with a positive, finite value on both sides).
pub fn geomean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values {
        if !is_ratio(v) {
            return None;
        }
        sum += v.ln();
        n += 1;
    }
    (n > 0).then(|| (sum / n as f64).exp())
}

/// Whether `v` can be a ratio of two positive measurements.
fn is_ratio(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

/// A `level` interval of the geometric mean of every value in `clusters`, resampling whole
/// clusters. `None` when a value is not positive and finite, by [`geomean`]'s rule, and with fewer
/// than two clusters holding a value: one cluster says nothing about how clusters vary. The interval always holds the geometric mean itself (a percentile interval of a
/// very skewed resampling can miss it by a hair; it is then widened to reach it).
pub fn clustered_interval(
    clusters: &[Vec<f64>],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<[f64; 2]> {
    // Per cluster: the sum of logs and the count, all the resampling needs.
    if !clusters.iter().flatten().all(|v| is_ratio(*v)) {
        return None;
    }
    let parts: Vec<(f64, usize)> = clusters
        .iter()
        .map(|c| {
            c.iter()
                .fold((0.0, 0usize), |(s, n), v| (s + v.ln(), n + 1))
        })
        .filter(|&(_, n)| n > 0)
        .collect();
    if parts.len() < 2 || resamples == 0 {
        return None;
    }
    let estimate = {
        let (s, n) = parts
            .iter()
            .fold((0.0, 0usize), |(s, n), p| (s + p.0, n + p.1));
        s / n as f64
    };
    let mut rng = Rng::new(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| {
            let (mut s, mut n) = (0.0, 0usize);
            for _ in 0..parts.len() {
                let p = parts[rng.below(parts.len())];
                s += p.0;
                n += p.1;
            }
            s / n as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    let lo = super::rounds::quantile(&means, tail).min(estimate);
    let hi = super::rounds::quantile(&means, 1.0 - tail).max(estimate);
    Some([lo.exp(), hi.exp()])
}

/// The interval of the geometric mean `g` if every figure's error moved with every other's (a
/// machine a little faster for the whole of one run): its half-width on the log scale is then the
/// mean of the figures' half-widths, not that mean shrunk by the square root of their number.
/// `half_widths` are the figures' 95 % half-widths on the log scale; `None` without any.
pub fn shared_error_interval(g: f64, half_widths: &[f64]) -> Option<[f64; 2]> {
    let w: Vec<f64> = half_widths
        .iter()
        .copied()
        .filter(|w| w.is_finite() && *w >= 0.0)
        .collect();
    if w.is_empty() || !(g.is_finite() && g > 0.0) {
        return None;
    }
    let mean = w.iter().sum::<f64>() / w.len() as f64;
    Some([g * (-mean).exp(), g * mean.exp()])
}

/// The smallest interval holding both.
pub fn union(a: Option<[f64; 2]>, b: Option<[f64; 2]>) -> Option<[f64; 2]> {
    match (a, b) {
        (Some([a0, a1]), Some([b0, b1])) => Some([a0.min(b0), a1.max(b1)]),
        (x, None) | (None, x) => x,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn geomean_known_answers() {
        assert_eq!(geomean([4.0, 1.0]), Some(2.0));
        assert!((geomean([0.5, 2.0, 8.0]).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(geomean(std::iter::empty()), None);
    }

    #[test]
    fn a_value_that_is_no_ratio_leaves_the_mean_undefined() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(geomean([2.0, bad, 8.0]), None, "{bad}");
            assert_eq!(
                clustered_interval(&[vec![2.0], vec![bad, 8.0]], 0.95, 100, 1),
                None,
                "{bad}"
            );
        }
    }

    #[test]
    fn identical_clusters_give_a_point() {
        let c = vec![vec![1.1, 1.1], vec![1.1], vec![1.1, 1.1, 1.1]];
        let [lo, hi] = clustered_interval(&c, 0.95, 500, 1).unwrap();
        assert!((lo - 1.1).abs() < 1e-12 && (hi - 1.1).abs() < 1e-12);
    }

    #[test]
    fn one_cluster_has_no_interval() {
        assert_eq!(clustered_interval(&[vec![1.0, 2.0]], 0.95, 500, 1), None);
        assert_eq!(
            clustered_interval(&[vec![1.0], vec![0.0, f64::NAN]], 0.95, 500, 1),
            None
        );
    }

    #[test]
    fn a_large_cluster_moving_together_widens_the_interval() {
        // Twenty figures of one probe 10 % faster, four probes of one figure unchanged: counted
        // as 24 independent figures the mean would look firmly above 1; by probe it is not.
        let mut c = vec![vec![1.1; 20]];
        c.extend((0..4).map(|k| vec![1.0 + 0.001 * k as f64]));
        let [lo, hi] = clustered_interval(&c, 0.95, 4000, 7).unwrap();
        assert!(lo <= 1.004 && hi >= 1.09, "[{lo}, {hi}]");
    }

    #[test]
    fn a_common_shift_is_found() {
        // Every probe 5 % faster, with some scatter: the interval excludes 1.
        let c: Vec<Vec<f64>> = (0..30)
            .map(|k| vec![1.05 + 0.01 * ((k % 5) as f64 - 2.0)])
            .collect();
        let [lo, hi] = clustered_interval(&c, 0.95, 2000, 3).unwrap();
        assert!(lo > 1.03 && hi < 1.07, "[{lo}, {hi}]");
    }

    #[test]
    fn same_seed_same_interval() {
        let c = vec![vec![0.9, 1.2], vec![1.05], vec![0.97, 1.01, 1.3]];
        assert_eq!(
            clustered_interval(&c, 0.95, 1000, 9),
            clustered_interval(&c, 0.95, 1000, 9)
        );
    }

    #[test]
    fn shared_error_is_the_mean_half_width() {
        let [lo, hi] = shared_error_interval(2.0, &[0.1, 0.3, f64::NAN]).unwrap();
        assert!((lo - 2.0 * (-0.2f64).exp()).abs() < 1e-12);
        assert!((hi - 2.0 * 0.2f64.exp()).abs() < 1e-12);
        assert_eq!(shared_error_interval(2.0, &[]), None);
        assert_eq!(shared_error_interval(0.0, &[0.1]), None);
        assert_eq!(union(Some([1.0, 2.0]), Some([0.5, 1.5])), Some([0.5, 2.0]));
        assert_eq!(union(None, Some([0.5, 1.5])), Some([0.5, 1.5]));
        assert_eq!(union(None, None), None);
    }

    proptest! {
        #[test]
        fn the_interval_holds_the_geomean_and_stays_positive(
            clusters in prop::collection::vec(
                prop::collection::vec(1e-6f64..1e6, 1..6), 2..12),
            seed in any::<u64>(),
        ) {
            let g = geomean(clusters.iter().flatten().copied()).unwrap();
            let [lo, hi] = clustered_interval(&clusters, 0.95, 200, seed).unwrap();
            prop_assert!(lo > 0.0);
            prop_assert!(lo <= g * (1.0 + 1e-12) && g <= hi * (1.0 + 1e-12), "{lo} {g} {hi}");
        }
    }
}
