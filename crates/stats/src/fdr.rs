//! Control of the false discovery rate when a comparison tests many figures at once: with 74
//! figures and a 5 % test each, three or four would be "changed" by chance alone.

/// Benjamini-Hochberg adjusted p-values (q-values), in the order given: figure i is called changed at
/// false-discovery rate α exactly when `q[i] <= α`. Valid for independent or positively dependent
/// tests. NaN p-values (figures that could not be tested) stay NaN and do not count among the tests.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    step_up(p, 1.0)
}

/// Benjamini-Yekutieli adjusted p-values: Benjamini-Hochberg made valid under any dependence
/// between the tests, at the price of a factor 1 + 1/2 + ... + 1/m.
pub fn benjamini_yekutieli(p: &[f64]) -> Vec<f64> {
    let m = p.iter().filter(|x| !x.is_nan()).count();
    let harmonic: f64 = (1..=m).map(|k| 1.0 / k as f64).sum();
    step_up(p, harmonic.max(1.0))
}

fn step_up(p: &[f64], penalty: f64) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p.len()).filter(|&i| !p[i].is_nan()).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let m = order.len() as f64;
    let mut q = vec![f64::NAN; p.len()];
    // From the largest p down, each q is the smallest m p_(k) / k over ranks k at or above its own.
    let mut running = f64::INFINITY;
    for (rank, &i) in order.iter().enumerate().rev() {
        let k = (rank + 1) as f64;
        running = running.min(p[i].clamp(0.0, 1.0) * m * penalty / k);
        q[i] = running.min(1.0);
    }
    q
}

/// Which figures are called changed at false-discovery rate `alpha`, given their adjusted p-values.
pub fn discoveries(q: &[f64], alpha: f64) -> Vec<bool> {
    q.iter().map(|&x| x <= alpha).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_answer_by_hand() {
        // Sorted: 0.005, 0.01, 0.03, 0.04 -> m p / k: 0.02, 0.02, 0.04, 0.04 (already monotone).
        let q = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.02, 0.04, 0.04, 0.02];
        for (a, b) in q.iter().zip(want) {
            assert!((a - b).abs() < 1e-15, "{q:?}");
        }
        // m p / k = 0.03, 0.03, 0.021: the last rank's smaller ratio lowers the two before it.
        let q = benjamini_hochberg(&[0.02, 0.01, 0.021]);
        assert!(q.iter().all(|x| (x - 0.021).abs() < 1e-15), "{q:?}");
        // BY with m = 4: factor 1 + 1/2 + 1/3 + 1/4 = 25/12.
        let by = benjamini_yekutieli(&[0.01, 0.04, 0.03, 0.005]);
        assert!((by[3] - 0.02 * 25.0 / 12.0).abs() < 1e-15, "{by:?}");
    }

    #[test]
    fn untested_figures_are_left_out() {
        let q = benjamini_hochberg(&[0.01, f64::NAN, 0.02]);
        assert!(q[1].is_nan());
        // m = 2, not 3.
        assert!(
            (q[0] - 0.02).abs() < 1e-15 && (q[2] - 0.02).abs() < 1e-15,
            "{q:?}"
        );
        assert_eq!(discoveries(&q, 0.05), vec![true, false, true]);
    }

    #[test]
    fn seventy_four_null_figures_rarely_yield_a_discovery() {
        // Uniform p-values (no change anywhere): BH keeps the chance of any false call near alpha.
        let mut rng = crate::rng::Rng::new(11);
        let trials = 2000;
        let mut any = 0;
        for _ in 0..trials {
            let p: Vec<f64> = (0..74).map(|_| rng.unit()).collect();
            if discoveries(&benjamini_hochberg(&p), 0.05).contains(&true) {
                any += 1;
            }
        }
        let rate = any as f64 / trials as f64;
        assert!((0.03..0.07).contains(&rate), "{rate}");
    }

    proptest! {
        #[test]
        fn adjusted_values_keep_order_and_bounds(p in proptest::collection::vec(0.0f64..=1.0, 1..100)) {
            let q = benjamini_hochberg(&p);
            for i in 0..p.len() {
                prop_assert!(q[i] >= p[i] - 1e-15 && q[i] <= 1.0);
                for j in 0..p.len() {
                    if p[i] <= p[j] {
                        prop_assert!(q[i] <= q[j] + 1e-15);
                    }
                }
            }
            let by = benjamini_yekutieli(&p);
            prop_assert!(q.iter().zip(&by).all(|(a, b)| a <= b));
        }

        #[test]
        fn discoveries_match_the_step_up_rule(p in proptest::collection::vec(0.0f64..=0.2, 1..60), alpha in 0.01f64..0.2) {
            // The textbook rule: reject the k smallest, k the largest rank with p_(k) <= k alpha / m.
            let m = p.len();
            let mut sorted = p.clone();
            sorted.sort_by(f64::total_cmp);
            let k = (1..=m).rev().find(|&k| sorted[k - 1] <= k as f64 * alpha / m as f64).unwrap_or(0);
            let called = discoveries(&benjamini_hochberg(&p), alpha);
            prop_assert_eq!(called.iter().filter(|&&c| c).count(), k);
            if k > 0 {
                let cut = sorted[k - 1];
                prop_assert!(p.iter().zip(&called).all(|(x, c)| *c == (*x <= cut)));
            }
        }
    }
}
