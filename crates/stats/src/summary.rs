//! Summary statistics that stay honest with few samples and with the outliers a shared VM produces.

use serde::{Deserialize, Serialize};

/// Modified z-score above which a sample is called an outlier (Iglewicz and Hoaglin's usual cut).
const OUTLIER_Z: f64 = 3.5;
/// Deviations smaller than this fraction of the median are clock-resolution noise, never outliers,
/// however tight the other samples are.
const OUTLIER_MIN_RELATIVE: f64 = 0.02;

/// The summary of one figure's samples, as stored with it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Summary {
    pub median: f64,
    pub mean: f64,
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    /// Coefficient of variation, stddev / mean.
    pub cv: f64,
    /// Distribution-free 95 % confidence interval of the median (order statistics).
    pub ci95: [f64; 2],
    /// Confidence actually achieved by `ci95` (below 0.95 when there are too few samples).
    pub ci_level: f64,
    /// Indices of samples flagged as outliers (modified z-score above 3.5).
    pub outliers: Vec<usize>,
}

pub fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The median of values in any order (NaN when there is none). Sorts them in place, so that a
/// caller drawing many medians (a bootstrap) reuses one buffer; [`median`] when they are sorted.
pub fn median_of(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    median(xs)
}

/// The median of values in any order and their median absolute deviation (MAD) from it, NaN for
/// both when there is none. The MAD is unscaled: times [`MAD_TO_SD`] it estimates the standard
/// deviation of normally distributed values, and unlike that it ignores a few wild ones.
pub fn median_and_mad(xs: &[f64]) -> (f64, f64) {
    let med = median_of(&mut xs.to_vec());
    let mut dev: Vec<f64> = xs.iter().map(|x| (x - med).abs()).collect();
    (med, median_of(&mut dev))
}

/// The MAD of normally distributed values times this estimates their standard deviation.
pub const MAD_TO_SD: f64 = 1.4826;

/// Coefficient of variation: the sample standard deviation over the magnitude of the mean. `None`
/// with fewer than two values, or when the mean is zero or not finite: a spread relative to no
/// size says nothing.
pub fn cv(xs: &[f64]) -> Option<f64> {
    let m = mean(xs);
    if xs.len() < 2 || m == 0.0 || !m.is_finite() {
        return None;
    }
    Some(stddev(xs) / m.abs())
}

pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample standard deviation (n - 1 in the denominator); 0 for fewer than two samples.
pub fn stddev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    (ss / (xs.len() - 1) as f64).sqrt()
}

/// P(X <= k) for X ~ Binomial(n, 1/2).
fn binomial_half_cdf(n: usize, k: usize) -> f64 {
    // Sum C(n, i) / 2^n in log space so large n does not overflow.
    let ln2n = n as f64 * std::f64::consts::LN_2;
    let mut ln_c = 0.0; // ln C(n, 0)
    let mut total = 0.0;
    for i in 0..=k.min(n) {
        if i > 0 {
            ln_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        total += (ln_c - ln2n).exp();
    }
    total.min(1.0)
}

/// Distribution-free confidence interval of the median from order statistics: the interval
/// [x_(k+1), x_(n-k)] covers the median with probability 1 - 2 P(X <= k), X ~ Bin(n, 1/2). Returns
/// the interval (0-based ranks) with the largest k whose coverage is still at least `level`; with too
/// few samples for that, the whole range and the coverage it really has.
pub fn median_ci_ranks(n: usize, level: f64) -> (usize, usize, f64) {
    if n == 0 {
        return (0, 0, 0.0);
    }
    let mut best = (0, n - 1, 1.0 - 2.0 * binomial_half_cdf(n, 0));
    let mut k = 1;
    while k < n / 2 {
        let coverage = 1.0 - 2.0 * binomial_half_cdf(n, k);
        if coverage < level {
            break;
        }
        best = (k, n - 1 - k, coverage);
        k += 1;
    }
    best
}

/// Indices of samples whose modified z-score (distance from the median in units of the median
/// absolute deviation) exceeds the cut. When more than half the samples are equal the MAD is zero;
/// the mean absolute deviation (scaled to match) stands in for it then.
pub fn outliers(xs: &[f64]) -> Vec<usize> {
    if xs.len() < 3 {
        return Vec::new();
    }
    let (med, mad) = median_and_mad(xs);
    // Iglewicz and Hoaglin's modified z-score: 0.6745 (x - median) / MAD.
    let scale = if mad > 0.0 {
        mad / 0.6745
    } else {
        let dev: Vec<f64> = xs.iter().map(|x| (x - med).abs()).collect();
        1.253314 * mean(&dev)
    };
    if scale <= 0.0 {
        return Vec::new();
    }
    xs.iter()
        .enumerate()
        .filter(|(_, x)| {
            let d = (*x - med).abs();
            d / scale > OUTLIER_Z && d > OUTLIER_MIN_RELATIVE * med.abs()
        })
        .map(|(i, _)| i)
        .collect()
}

/// Two-sided Student t quantile for 95 % with `df` degrees of freedom (table, then the normal limit).
pub fn t95(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        31..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// 95 % confidence interval of the mean (Student t).
pub fn mean_ci95(xs: &[f64]) -> [f64; 2] {
    let m = mean(xs);
    if xs.len() < 2 {
        return [m, m];
    }
    let half = t95(xs.len() - 1) * stddev(xs) / (xs.len() as f64).sqrt();
    [m - half, m + half]
}

/// The 95 % interval of the mean of a quantity that cannot be negative (a time, a count): the
/// t interval cut at zero. The true mean lies in [0, inf), so cutting keeps the coverage, and a
/// reader never sees a negative time.
pub fn mean_ci95_nonnegative(xs: &[f64]) -> [f64; 2] {
    let [lo, hi] = mean_ci95(xs);
    [lo.max(0.0), hi]
}

pub fn summarize(xs: &[f64]) -> Summary {
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let m = mean(xs);
    let sd = stddev(xs);
    let (lo, hi, level) = median_ci_ranks(sorted.len(), 0.95);
    Summary {
        median: median(&sorted),
        mean: m,
        stddev: sd,
        min: sorted.first().copied().unwrap_or(f64::NAN),
        max: sorted.last().copied().unwrap_or(f64::NAN),
        cv: cv(xs).unwrap_or(0.0),
        ci95: [sorted[lo], sorted[hi]],
        ci_level: level,
        outliers: outliers(xs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 4.0, 9.0]), 3.0);
    }

    #[test]
    fn medians_of_unsorted_values_and_their_mad() {
        assert_eq!(median_of(&mut [9.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_of(&mut [9.0, 4.0, 1.0, 2.0]), 3.0);
        assert!(median_of(&mut []).is_nan());
        // Deviations from 100: 0, 10, 10, 50 -> MAD 10, whatever the order.
        assert_eq!(median_and_mad(&[150.0, 90.0, 100.0, 110.0]), (105.0, 10.0));
        assert_eq!(median_and_mad(&[110.0, 100.0, 90.0]), (100.0, 10.0));
        let (m, d) = median_and_mad(&[]);
        assert!(m.is_nan() && d.is_nan());
    }

    #[test]
    fn cv_needs_two_values_and_a_mean() {
        let cv2 = cv(&[9.0, 11.0]).unwrap();
        assert!((cv2 - 2f64.sqrt() / 10.0).abs() < 1e-12, "{cv2}");
        assert_eq!(cv(&[-9.0, -11.0]), Some(cv2));
        assert_eq!(cv(&[5.0]), None);
        assert_eq!(cv(&[]), None);
        assert_eq!(cv(&[-1.0, 1.0]), None);
        assert_eq!(cv(&[1.0, f64::INFINITY]), None);
        assert_eq!(summarize(&[5.0]).cv, 0.0);
    }

    #[test]
    fn stddev_known_answer() {
        // Sum of squares around the mean 5 is 32; 32 / 7 under the root.
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert!((stddev(&xs) - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn binomial_cdf_known_answers() {
        assert!((binomial_half_cdf(5, 0) - 1.0 / 32.0).abs() < 1e-12);
        assert!((binomial_half_cdf(10, 1) - 11.0 / 1024.0).abs() < 1e-12);
        assert!((binomial_half_cdf(4, 4) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn median_ci_ranks_match_tables() {
        // n = 10: k = 1 gives 1 - 2*11/1024 = 0.9785, k = 2 gives 1 - 2*56/1024 = 0.8906.
        let (lo, hi, level) = median_ci_ranks(10, 0.95);
        assert_eq!((lo, hi), (1, 8));
        assert!((level - (1.0 - 22.0 / 1024.0)).abs() < 1e-12);
        // n = 5 cannot reach 95 %: whole range, 93.75 %.
        let (lo, hi, level) = median_ci_ranks(5, 0.95);
        assert_eq!((lo, hi), (0, 4));
        assert!((level - 0.9375).abs() < 1e-12);
    }

    #[test]
    fn outlier_is_flagged_and_normal_spread_is_not() {
        let xs = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 180.0];
        assert_eq!(outliers(&xs), vec![6]);
        assert!(outliers(&[100.0, 101.0, 99.0, 100.5, 99.5]).is_empty());
        // Most samples identical (MAD 0): the far one is still caught, equal ones never are.
        assert_eq!(outliers(&[5.0, 5.0, 5.0, 5.0, 5.0, 9.0]), vec![5]);
        assert!(outliers(&[5.0; 6]).is_empty());
        // Far in MAD units but within 2 % of the median: noise, not an outlier.
        assert!(outliers(&[100.0, 100.0, 100.0, 100.0, 100.0, 101.0]).is_empty());
    }

    #[test]
    fn t_quantiles() {
        assert_eq!(t95(1), 12.706);
        assert_eq!(t95(9), 2.262);
        assert_eq!(t95(1000), 1.960);
        let ci = mean_ci95(&[1.0, 2.0, 3.0]);
        let half = 4.303 * 1.0 / 3f64.sqrt();
        assert!((ci[0] - (2.0 - half)).abs() < 1e-12 && (ci[1] - (2.0 + half)).abs() < 1e-12);
    }

    #[test]
    fn the_interval_of_a_non_negative_mean_stops_at_zero() {
        let xs = [0.0, 0.0, 0.0, 9.0];
        assert!(mean_ci95(&xs)[0] < 0.0);
        let [lo, hi] = mean_ci95_nonnegative(&xs);
        assert_eq!(lo, 0.0);
        assert_eq!(hi, mean_ci95(&xs)[1]);
        assert!(lo <= mean(&xs) && mean(&xs) <= hi);
    }

    proptest! {
        #[test]
        fn summary_orders_hold(xs in proptest::collection::vec(0.0f64..1e9, 1..200)) {
            let s = summarize(&xs);
            prop_assert!(s.min <= s.ci95[0] && s.ci95[0] <= s.median);
            prop_assert!(s.median <= s.ci95[1] && s.ci95[1] <= s.max);
            prop_assert!(s.min <= s.mean + 1e-6 && s.mean <= s.max + 1e-6);
            prop_assert!((0.0..=1.0).contains(&s.ci_level));
            prop_assert!(s.stddev >= 0.0);
        }

        #[test]
        fn ci_coverage_is_at_least_95_once_n_is_six(n in 6usize..500) {
            let (lo, hi, level) = median_ci_ranks(n, 0.95);
            prop_assert!(level >= 0.95);
            prop_assert!(lo <= hi && hi < n);
            prop_assert_eq!(lo, n - 1 - hi);
        }
    }
}
