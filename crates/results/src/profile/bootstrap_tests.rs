use super::{intervals, poisson, side_mean, values, Cell};
use crate::stats::rng::Rng;
use proptest::prelude::*;

fn cell(samples: u64, ns_per_op: f64) -> Cell {
    Cell {
        samples,
        ns_per_op,
        into: vec![0],
    }
}

#[test]
fn poisson_draws_have_the_mean_and_variance_of_their_law() {
    let mut rng = Rng::new(7);
    for mean in [0.5, 3.0, 9.9, 10.0, 400.0, 25_000.0] {
        let n = 20_000;
        let draws: Vec<f64> = (0..n).map(|_| poisson(&mut rng, mean) as f64).collect();
        let m = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
        // Standard errors: sqrt(mean / n) for the mean, about mean * sqrt(2 / n) for the variance.
        assert!(
            (m - mean).abs() < 5.0 * (mean / n as f64).sqrt(),
            "{mean}: {m}"
        );
        assert!(
            (var - mean).abs() < 5.0 * mean * (2.0 / n as f64).sqrt() + 0.05,
            "{mean}: {var}"
        );
    }
    assert_eq!(poisson(&mut rng, 0.0), 0);
}

/// One run a side: the interval is the sampling noise of the counts, 1.96 * sqrt(n) samples either
/// side for n samples (their Poisson law), here 10 000 samples of 1 ns each against none.
#[test]
fn one_run_a_side_gives_the_sampling_noise_of_the_counts() {
    let a = vec![vec![cell(0, 0.0)]];
    let b = vec![vec![cell(10_000, 10_000.0)]];
    let [lo, hi] = intervals(&a, &b, 1, 1)[0];
    assert!((lo - 9_804.0).abs() < 30.0, "{lo}");
    assert!((hi - 10_196.0).abs() < 30.0, "{hi}");
}

/// Two runs on one side that disagree, with so many samples that their own noise is nothing: the
/// side's mean over two runs drawn with replacement is 100, 200 or 300 (a quarter, half and a
/// quarter of the time), so the interval runs from the one end to the other.
#[test]
fn runs_that_disagree_are_resampled() {
    let many = 100_000_000;
    let a = vec![vec![cell(many, 100.0)], vec![cell(many, 300.0)]];
    let b = vec![vec![cell(many, 0.0)]];
    let [lo, hi] = intervals(&a, &b, 1, 3)[0];
    assert!((lo + 300.0).abs() < 1.0, "{lo}");
    assert!((hi + 100.0).abs() < 1.0, "{hi}");
    assert_eq!(side_mean(&a, 1), vec![200.0]);
}

#[test]
fn a_cell_counts_in_every_quantity_it_names() {
    let run = vec![
        Cell {
            samples: 2,
            ns_per_op: 20.0,
            into: vec![0, 2],
        },
        Cell {
            samples: 1,
            ns_per_op: 5.0,
            into: vec![0, 1],
        },
    ];
    assert_eq!(values(&run, 3), vec![25.0, 5.0, 20.0]);
    // The same cells a side: every draw's difference of a fixed cell is 0.
    let fixed = vec![vec![cell(0, 4.0)]];
    assert_eq!(intervals(&fixed, &fixed, 1, 9)[0], [0.0, 0.0]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The interval holds the point estimate, and four times the samples at the same rates
    /// (each sample standing for a quarter of the time) give a narrower one.
    #[test]
    fn the_interval_holds_the_estimate_and_narrows_with_more_samples(
        na in 50u64..3000,
        nb in 50u64..3000,
        per_sample in 0.5f64..40.0,
        seed in any::<u64>(),
    ) {
        let side = |n: u64, scale: u64| {
            vec![vec![cell(n * scale, n as f64 * per_sample)]]
        };
        let delta = (nb as f64 - na as f64) * per_sample;
        let [lo, hi] = intervals(&side(na, 1), &side(nb, 1), 1, seed)[0];
        prop_assert!(lo <= delta && delta <= hi, "{lo} {delta} {hi}");
        let [lo4, hi4] = intervals(&side(na, 4), &side(nb, 4), 1, seed)[0];
        prop_assert!(lo4 <= delta && delta <= hi4, "{lo4} {delta} {hi4}");
        prop_assert!(hi4 - lo4 < hi - lo, "{} !< {}", hi4 - lo4, hi - lo);
    }
}
