//! Rank test and resampling for comparing two sets of samples without assuming a distribution.

use crate::stats::rng::SplitMix64;

/// Two-sided p-value of the Mann-Whitney U test (Wilcoxon rank-sum) for samples `a` and `b`. Exact
/// (by counting arrangements) when both are small and there are no ties, else the normal
/// approximation with tie and continuity corrections.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    // Ranks of the pooled samples, ties given their mean rank.
    let mut pooled: Vec<(f64, usize)> = a
        .iter()
        .map(|&x| (x, 0))
        .chain(b.iter().map(|&x| (x, 1)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = pooled.len();
    let mut ranks = vec![0.0; n];
    let mut tie_term = 0.0; // sum of t^3 - t over tie groups
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let mean_rank = (i + j) as f64 / 2.0 + 1.0;
        for r in ranks.iter_mut().take(j + 1).skip(i) {
            *r = mean_rank;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let r1: f64 = pooled
        .iter()
        .zip(&ranks)
        .filter(|(p, _)| p.1 == 0)
        .map(|(_, r)| r)
        .sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let u = u1.min((n1 * n2) as f64 - u1);

    if tie_term == 0.0 && n1 * n2 <= 400 {
        return exact_two_sided(n1, n2, u);
    }
    let mean = (n1 * n2) as f64 / 2.0;
    let nf = n as f64;
    let var = (n1 * n2) as f64 / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((mean - u).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_upper_tail(z)).min(1.0)
}

/// P(U <= u) * 2 under the null, counting the arrangements of ranks (no ties).
fn exact_two_sided(n1: usize, n2: usize, u: f64) -> f64 {
    // counts[k] = number of arrangements with U = k, built up one sample at a time:
    // f(i, j, k) = f(i - 1, j, k - j) + f(i, j - 1, k).
    let max_u = n1 * n2;
    let mut table = vec![vec![vec![0f64; max_u + 1]; n2 + 1]; n1 + 1];
    for row in table.iter_mut() {
        row[0][0] = 1.0;
    }
    for cell in table[0].iter_mut() {
        cell[0] = 1.0;
    }
    for i in 1..=n1 {
        for j in 1..=n2 {
            for k in 0..=i * j {
                let with_a_last = if k >= j { table[i - 1][j][k - j] } else { 0.0 };
                table[i][j][k] = with_a_last + table[i][j - 1][k];
            }
        }
    }
    let counts = &table[n1][n2];
    let total: f64 = counts.iter().sum();
    let upto = u.floor() as usize;
    let tail: f64 = counts.iter().take(upto + 1).sum();
    (2.0 * tail / total).min(1.0)
}

/// Upper tail of the standard normal, P(Z > z) (Abramowitz and Stegun 7.1.26 on erfc).
pub fn normal_upper_tail(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    erfc / 2.0
}

/// The statistic a figure's value is of its samples, so that its interval is of the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statistic {
    Median,
    Mean,
}

impl Statistic {
    pub fn of(self, xs: &mut [f64]) -> f64 {
        match self {
            Statistic::Median => crate::stats::summary::median_of(xs),
            Statistic::Mean => xs.iter().sum::<f64>() / xs.len() as f64,
        }
    }

    /// The statistic of `samples` nearer to `value`: a `stat` figure is a mean over its runs, a
    /// benchmark's a median over its samples, a latency share a mean over its seconds.
    pub fn matching(value: f64, samples: &[f64]) -> Statistic {
        let mut xs = samples.to_vec();
        let (median, mean) = (Statistic::Median.of(&mut xs), Statistic::Mean.of(&mut xs));
        if (mean - value).abs() < (median - value).abs() {
            Statistic::Mean
        } else {
            Statistic::Median
        }
    }
}

/// 95 % percentile-bootstrap interval of median(b) / median(a).
pub fn ratio_ci95(a: &[f64], b: &[f64], resamples: usize, seed: u64) -> [f64; 2] {
    ratio_ci95_of(Statistic::Median, a, b, resamples, seed)
}

/// 95 % percentile-bootstrap interval of statistic(b) / statistic(a).
pub fn ratio_ci95_of(
    statistic: Statistic,
    a: &[f64],
    b: &[f64],
    resamples: usize,
    seed: u64,
) -> [f64; 2] {
    // SplitMix64 and a plain modulo, as the intervals stored and printed so far were drawn.
    let mut rng = SplitMix64(seed);
    let mut below = |n: usize| (rng.next_u64() % n as u64) as usize;
    let mut ra = vec![0.0; a.len()];
    let mut rb = vec![0.0; b.len()];
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for x in ra.iter_mut() {
            *x = a[below(a.len())];
        }
        for x in rb.iter_mut() {
            *x = b[below(b.len())];
        }
        let ma = statistic.of(&mut ra);
        if ma != 0.0 {
            ratios.push(statistic.of(&mut rb) / ma);
        }
    }
    if ratios.is_empty() {
        return [f64::NAN, f64::NAN];
    }
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
    [at(0.025), at(0.975)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_p_known_answers() {
        // Complete separation of 3 vs 3: only 1 of C(6,3) = 20 arrangements per side, p = 2/20.
        assert!((mann_whitney_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]) - 0.1).abs() < 1e-12);
        // 5 vs 5 separated: 2 / 252.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]);
        assert!((p - 2.0 / 252.0).abs() < 1e-12);
        // Interleaved samples: no evidence at all.
        assert!(mann_whitney_p(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0]) > 0.5);
    }

    #[test]
    fn normal_approximation_with_ties() {
        let a = vec![1.0; 30]
            .into_iter()
            .chain(vec![2.0; 30])
            .collect::<Vec<_>>();
        let b = vec![2.0; 30]
            .into_iter()
            .chain(vec![3.0; 30])
            .collect::<Vec<_>>();
        let p = mann_whitney_p(&a, &b);
        assert!(p < 1e-6, "{p}");
        assert!((mann_whitney_p(&a, &a) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn normal_tail_known_values() {
        assert!((normal_upper_tail(0.0) - 0.5).abs() < 1e-6);
        assert!((normal_upper_tail(1.959_964) - 0.025).abs() < 1e-5);
        assert!((normal_upper_tail(-1.0) - 0.841_345).abs() < 1e-5);
    }

    #[test]
    fn the_mean_of_mostly_zero_samples_gets_an_interval_around_it() {
        // Per-second shares over a threshold: mostly zero, so their median is 0 and a ratio of
        // medians has no interval, while the figure (a mean) has one.
        let a: Vec<f64> = (0..20)
            .map(|i| if i % 4 == 0 { 0.008 } else { 0.0 })
            .collect();
        let b: Vec<f64> = (0..20)
            .map(|i| if i % 4 == 0 { 0.004 } else { 0.0 })
            .collect();
        let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
        assert_eq!(Statistic::matching(mean(&a), &a), Statistic::Mean);
        let ratio = mean(&b) / mean(&a);
        let [lo, hi] = ratio_ci95_of(Statistic::Mean, &a, &b, 2000, 3);
        assert!(lo <= ratio && ratio <= hi, "{ratio} outside [{lo}, {hi}]");
        let timed: Vec<f64> = (0..20).map(|i| 100.0 + i as f64).collect();
        assert_eq!(Statistic::matching(109.0, &timed), Statistic::Median);
    }

    #[test]
    fn bootstrap_interval_brackets_a_known_shift() {
        let a: Vec<f64> = (0..20).map(|i| 100.0 + (i % 5) as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.1).collect();
        let [lo, hi] = ratio_ci95(&a, &b, 2000, 7);
        assert!(
            lo <= 1.1 && 1.1 <= hi && lo > 1.05 && hi < 1.15,
            "[{lo}, {hi}]"
        );
        assert_eq!(
            ratio_ci95(&a, &b, 2000, 7),
            [lo, hi],
            "same seed, same interval"
        );
    }
}
