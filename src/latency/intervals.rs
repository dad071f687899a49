//! 95 % intervals for what one latency run states: a percentile (from the order statistics of the
//! stored histogram), a share of periods (Wilson's score interval) and a count of failures over
//! the measured time (the exact Poisson interval), from which the MTTF's follows.
//!
//! All three treat the periods as independent draws. Wakes are not quite that (a stall makes
//! several late in a row, and a run of underruns is counted as one failure for that reason), so
//! the intervals are the narrowest honest statement, not a guarantee; comparing runs second by
//! second (see `seconds`) does not lean on independence within a second.

/// The normal quantile of 97.5 %.
const Z: f64 = 1.959_963_984_540_054;

/// Ranks (1-based) of the order statistics that bound the q-quantile of n values with 95 %
/// confidence: n q -/+ z sqrt(n q (1-q)), the binomial's normal approximation, widened to whole
/// ranks and clamped to [1, n].
pub fn quantile_ranks(n: u64, q: f64) -> Option<(u64, u64)> {
    if n == 0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let nf = n as f64;
    let half = Z * (nf * q * (1.0 - q)).sqrt();
    let lo = ((nf * q - half).floor() as i64).clamp(1, n as i64) as u64;
    let hi = ((nf * q + half).ceil() as i64 + 1).clamp(1, n as i64) as u64;
    Some((lo, hi))
}

/// The stored bucket `[low_ns, high_ns, count]` that holds the value of this rank.
fn bucket_of_rank(buckets: &[[u64; 3]], rank: u64) -> Option<[u64; 3]> {
    let mut seen = 0;
    for b in buckets {
        seen += b[2];
        if seen >= rank {
            return Some(*b);
        }
    }
    None
}

/// 95 % interval of the q-quantile of the histogram's values: from the low edge of the bucket
/// holding the lower order statistic to the high edge of the one holding the upper.
pub fn quantile_interval(buckets: &[[u64; 3]], q: f64) -> Option<[f64; 2]> {
    let n: u64 = buckets.iter().map(|b| b[2]).sum();
    let (lo, hi) = quantile_ranks(n, q)?;
    Some([
        bucket_of_rank(buckets, lo)?[0] as f64,
        bucket_of_rank(buckets, hi)?[1] as f64,
    ])
}

/// Wilson's 95 % score interval of a share k of n (sensible at k = 0 and k = n too).
pub fn wilson(k: u64, n: u64) -> Option<[f64; 2]> {
    if n == 0 || k > n {
        return None;
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = Z * Z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some([(centre - half).max(0.0), (centre + half).min(1.0)])
}

/// P(X <= k) for X Poisson with mean m, summed in logarithms so large k and m do not overflow.
fn poisson_cdf(k: u64, m: f64) -> f64 {
    if m <= 0.0 {
        return 1.0;
    }
    let mut log_term = -m;
    let mut sum = log_term.exp();
    for i in 1..=k {
        log_term += m.ln() - (i as f64).ln();
        sum += log_term.exp();
    }
    sum.min(1.0)
}

/// The m in [lo, hi] where `f` (decreasing in m) crosses `target`, by bisection.
fn solve_decreasing(f: impl Fn(f64) -> f64, target: f64, mut lo: f64, mut hi: f64) -> f64 {
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-12 * hi.max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// Counts above this use the normal approximation (the exact sums get long, and the two agree).
const EXACT_UP_TO: u64 = 20_000;

/// The exact (Garwood) 95 % interval of a Poisson mean from one observed count k: the means
/// under which seeing k or more, or k or fewer, has probability 2.5 %.
pub fn poisson(k: u64) -> [f64; 2] {
    let kf = k as f64;
    if k > EXACT_UP_TO {
        // Square-root transform: sqrt of a Poisson count is nearly normal with variance 1/4.
        let (lo, hi) = (kf.sqrt() - Z / 2.0, (kf + 1.0).sqrt() + Z / 2.0);
        return [lo * lo, hi * hi];
    }
    let top = kf + 10.0 * (kf + 1.0).sqrt() + 10.0;
    let lower = if k == 0 {
        0.0
    } else {
        // P(X >= k) = 1 - P(X <= k-1) = 2.5 %: P(X <= k-1) decreases in m.
        solve_decreasing(|m| poisson_cdf(k - 1, m), 0.975, 0.0, top)
    };
    let upper = solve_decreasing(|m| poisson_cdf(k, m), 0.025, 0.0, top);
    [lower, upper]
}

/// 95 % interval of the mean time between failures when `failures` were seen in `seconds`; None
/// without a failure (the MTTF then has only a lower bound).
pub fn mttf(failures: u64, seconds: f64) -> Option<[f64; 2]> {
    if failures == 0 || seconds <= 0.0 {
        return None;
    }
    let [lo, hi] = poisson(failures);
    Some([seconds / hi, seconds / lo])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-12)
    }

    #[test]
    fn poisson_intervals_match_the_tables() {
        // Garwood's exact limits, as tabulated (e.g. in Ulm 1990).
        for (k, lo, hi) in [
            (0, 0.0, 3.689),
            (1, 0.0253, 5.572),
            (2, 0.2422, 7.225),
            (10, 4.795, 18.39),
            (100, 81.36, 121.6),
        ] {
            let [a, b] = poisson(k);
            assert!(close(a, lo, 2e-3) || (lo == 0.0 && a == 0.0), "{k}: {a}");
            assert!(close(b, hi, 2e-3), "{k}: {b}");
        }
        // The approximation takes over smoothly where the exact sums stop.
        let [a, b] = poisson(EXACT_UP_TO);
        let [c, d] = poisson(EXACT_UP_TO + 1);
        assert!(close(a, c, 1e-3) && close(b, d, 1e-3), "{a} {c} {b} {d}");
    }

    #[test]
    fn mttf_interval_is_the_time_over_the_rate_interval() {
        // 10 failures in 100 s: MTTF 10 s, between 100/18.39 and 100/4.795 s.
        let [lo, hi] = mttf(10, 100.0).unwrap();
        assert!(
            close(lo, 5.438, 2e-3) && close(hi, 20.85, 2e-3),
            "{lo} {hi}"
        );
        assert_eq!(mttf(0, 100.0), None);
    }

    #[test]
    fn wilson_matches_known_values() {
        // 1 of 10: [0.0179, 0.4042]; 0 of 100: [0, 0.0370].
        let [a, b] = wilson(1, 10).unwrap();
        assert!(close(a, 0.01787, 2e-3) && close(b, 0.4042, 2e-3), "{a} {b}");
        let [a, b] = wilson(0, 100).unwrap();
        assert!(a.abs() < 1e-12 && close(b, 0.03699, 2e-3), "{b}");
        assert_eq!(wilson(1, 0), None);
    }

    #[test]
    fn quantile_ranks_and_intervals() {
        // n = 1000, median: 500 -/+ 1.96 * 15.8 = ranks 469 and 532.
        assert_eq!(quantile_ranks(1000, 0.5), Some((469, 532)));
        // Ten buckets of 100 values, 1 us wide each from 0.
        let buckets: Vec<[u64; 3]> = (0..10).map(|i| [i * 1000, i * 1000 + 999, 100]).collect();
        assert_eq!(quantile_interval(&buckets, 0.5), Some([4000.0, 5999.0]));
        // p99 of 1000: ranks 983..=997, all in the last bucket.
        assert_eq!(quantile_interval(&buckets, 0.99), Some([9000.0, 9999.0]));
        assert_eq!(quantile_interval(&[], 0.5), None);
    }

    proptest! {
        #[test]
        fn intervals_hold_their_estimate(k in 0u64..1500, extra in 0u64..5000) {
            let n = k + extra;
            if n > 0 {
                let [a, b] = wilson(k, n).unwrap();
                let p = k as f64 / n as f64;
                prop_assert!(a <= p + 1e-12 && p <= b + 1e-12);
            }
            let [lo, hi] = poisson(k);
            prop_assert!(lo <= k as f64 && k as f64 <= hi);
            let [lo2, hi2] = poisson(k + 1);
            prop_assert!(lo2 >= lo && hi2 >= hi);
        }
    }
}
