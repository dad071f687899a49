//! Change points in a series (a figure over stored runs): E-Divisive means (Matteson and James,
//! "A nonparametric approach for multiple change point analysis", 2014), the method MongoDB uses on
//! its performance history.
//!
//! For a split of a segment into a left part X and a right part Y, the energy distance between them
//! is twice the mean distance across the split minus the mean distances within each side; scaled by
//! |X||Y|/(|X|+|Y|) it is Q. The split with the largest Q is the candidate; a permutation test asks
//! how often shuffled values give as large a Q. A significant split is kept and the segments on
//! either side are searched again (bisection), until no candidate is significant. No distribution is
//! assumed, so a bimodal figure is not mistaken for a change as long as both modes occur on both
//! sides. (This implementation keeps each candidate's right part to the end of its segment.)

use super::rng::Rng;

#[derive(Debug, Clone, PartialEq)]
pub struct ChangePointConfig {
    /// Fewest values on either side of a change.
    pub min_segment: usize,
    /// A candidate is kept when its permutation p-value is below this.
    pub significance: f64,
    pub permutations: usize,
    /// Exponent of the distances, in (0, 2); 1 is the usual choice.
    pub alpha: f64,
    /// Search each segment on the ranks of its values instead of the values: one disturbed run
    /// (a value several times the others) then weighs no more than any other high value, so a
    /// step is not hidden behind the spread a few such runs give a segment. The permutation test
    /// stays exact: shuffling ranks is shuffling values.
    pub ranks: bool,
    pub seed: u64,
}

impl Default for ChangePointConfig {
    fn default() -> Self {
        ChangePointConfig {
            min_segment: 3,
            significance: 0.05,
            permutations: 199,
            alpha: 1.0,
            ranks: false,
            seed: 0x05_11_e7_e4,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChangePoint {
    /// Index of the first value after the change.
    pub index: usize,
    /// Permutation p-value of the split when it was accepted.
    pub p_value: f64,
    /// The divergence statistic Q of the split.
    pub q: f64,
    /// Median of the values before and after the change, within the segments it was found in.
    pub before: f64,
    pub after: f64,
}

/// The best split of `xs` (index of the first value of the right part) and its Q; None when `xs`
/// is too short to have two parts of `min_segment` values.
pub fn best_split(xs: &[f64], min_segment: usize, alpha: f64) -> Option<(usize, f64)> {
    let n = xs.len();
    let min = min_segment.max(2);
    if n < 2 * min {
        return None;
    }
    if alpha == 1.0 {
        return super::energy::best_split_linear(xs, min);
    }
    let d = |i: usize, j: usize| (xs[i] - xs[j]).abs().powf(alpha);
    // Sums of distances within the left part, within the right part, and across the split, kept up
    // to date as the split moves right by one value.
    let mut within_left = 0.0;
    let mut within_right = 0.0;
    for i in 0..n {
        for j in i + 1..n {
            within_right += d(i, j);
        }
    }
    let mut across = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for tau in 1..n - 1 {
        // Value tau - 1 moves from the right part to the left part.
        let v = tau - 1;
        let to_left: f64 = (0..v).map(|i| d(i, v)).sum();
        let to_right: f64 = (v + 1..n).map(|j| d(v, j)).sum();
        within_left += to_left;
        within_right -= to_right;
        across += to_right - to_left;
        if tau < min || n - tau < min {
            continue;
        }
        let q = super::energy::split_statistic(tau, n, across, within_left, within_right);
        if best.is_none_or(|(_, b)| q > b && !nearly_equal(q, b)) {
            best = Some((tau, q));
        }
    }
    best
}

/// Equal but for rounding: a shuffle that only reorders values within each part has the same Q in
/// exact arithmetic, summed in another order. Treating such values as equal keeps the result the
/// same whatever the series' scale.
pub(super) fn nearly_equal(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// The values a segment is searched on: its values, or their ranks (1 = smallest; ties share the
/// mean of their ranks).
fn searched(segment: &[f64], config: &ChangePointConfig) -> Vec<f64> {
    if !config.ranks {
        return segment.to_vec();
    }
    let mut order: Vec<usize> = (0..segment.len()).collect();
    order.sort_by(|&a, &b| segment[a].total_cmp(&segment[b]));
    let mut ranks = vec![0.0; segment.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && segment[order[j + 1]] == segment[order[i]] {
            j += 1;
        }
        let shared = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = shared;
        }
        i = j + 1;
    }
    ranks
}

/// Change points of `series`, in index order.
pub fn e_divisive(series: &[f64], config: &ChangePointConfig) -> Vec<ChangePoint> {
    let mut rng = Rng::new(config.seed);
    let mut bounds = vec![0, series.len()];
    let mut found = Vec::new();
    loop {
        // The strongest candidate over every current segment.
        let mut candidate: Option<(usize, usize, usize, f64)> = None; // (start, end, split, q)
        for w in bounds.windows(2) {
            let (start, end) = (w[0], w[1]);
            if let Some((split, q)) = best_split(
                &searched(&series[start..end], config),
                config.min_segment,
                config.alpha,
            ) {
                if candidate.is_none_or(|c| q > c.3 && !nearly_equal(q, c.3)) {
                    candidate = Some((start, end, start + split, q));
                }
            }
        }
        let Some((start, end, index, q)) = candidate else {
            break;
        };
        let mut shuffled = searched(&series[start..end], config);
        let mut as_large = 0usize;
        // Once so many shuffles reach Q that the p-value cannot fall below the significance,
        // the rest cannot change the answer (the search ends at the first rejected candidate).
        let p_of = |as_large: usize| (as_large + 1) as f64 / (config.permutations + 1) as f64;
        for _ in 0..config.permutations {
            rng.shuffle(&mut shuffled);
            let perm_q = best_split(&shuffled, config.min_segment, config.alpha)
                .map_or(f64::NEG_INFINITY, |b| b.1);
            if perm_q >= q || nearly_equal(perm_q, q) {
                as_large += 1;
                if p_of(as_large) >= config.significance {
                    break;
                }
            }
        }
        let p_value = p_of(as_large);
        if p_value >= config.significance {
            break;
        }
        let med = |s: &[f64]| super::rounds::round_value(s);
        found.push(ChangePoint {
            index,
            p_value,
            q,
            before: med(&series[start..index]),
            after: med(&series[index..end]),
        });
        bounds.push(index);
        bounds.sort_unstable();
    }
    found.sort_by_key(|c| c.index);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use proptest::prelude::*;

    fn noisy(rng: &mut Rng, levels: &[(f64, usize)], sd: f64) -> Vec<f64> {
        levels
            .iter()
            .flat_map(|&(level, n)| {
                (0..n)
                    .map(|_| level + sd * rng.normal())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn q_known_answer() {
        // X = {0, 0}, Y = {1, 1}: across mean 1, within 0 -> energy 2, Q = 2*2/4 * 2 = 2.
        assert_eq!(best_split(&[0.0, 0.0, 1.0, 1.0], 2, 1.0), Some((2, 2.0)));
        // X = {0, 1}, Y = {0, 1} would be the best 2-2 split of [0, 1, 0, 1]? Its energy is
        // 2 * (2/4) - 1 - 1 = -1: no split of an alternating series looks like a change.
        let (_, q) = best_split(&[0.0, 1.0, 0.0, 1.0], 2, 1.0).unwrap();
        assert!(q <= 0.0, "{q}");
        assert_eq!(best_split(&[1.0, 2.0, 3.0], 2, 1.0), None);
    }

    #[test]
    fn incremental_sums_match_a_direct_computation() {
        let mut rng = Rng::new(1);
        let xs: Vec<f64> = (0..23).map(|_| rng.normal()).collect();
        for alpha in [0.5, 1.0, 1.5] {
            let direct = |tau: usize| {
                let (x, y) = xs.split_at(tau);
                let d = |a: f64, b: f64| (a - b).abs().powf(alpha);
                let (m, k) = (x.len() as f64, y.len() as f64);
                let across: f64 = x
                    .iter()
                    .flat_map(|a| y.iter().map(move |b| d(*a, *b)))
                    .sum();
                let within = |s: &[f64]| -> f64 {
                    let mut t = 0.0;
                    for i in 0..s.len() {
                        for j in i + 1..s.len() {
                            t += d(s[i], s[j]);
                        }
                    }
                    t / (s.len() * (s.len() - 1) / 2) as f64
                };
                m * k / (m + k) * (2.0 * across / (m * k) - within(x) - within(y))
            };
            let (tau, q) = best_split(&xs, 3, alpha).unwrap();
            let best_direct = (3..=20).map(direct).fold(f64::NEG_INFINITY, f64::max);
            assert!((q - best_direct).abs() < 1e-9 && (q - direct(tau)).abs() < 1e-9);
        }
    }

    #[test]
    fn one_step_is_found_where_it_is() {
        let mut rng = Rng::new(2);
        let xs = noisy(&mut rng, &[(10.0, 40), (13.0, 40)], 1.0);
        let cps = e_divisive(&xs, &ChangePointConfig::default());
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert!((39..=41).contains(&cps[0].index), "{cps:?}");
        assert!(cps[0].p_value <= 0.01);
        assert!(cps[0].before < 10.5 && cps[0].after > 12.5);
    }

    #[test]
    fn two_steps_are_both_found() {
        let mut rng = Rng::new(3);
        let xs = noisy(&mut rng, &[(5.0, 30), (8.0, 25), (4.0, 30)], 0.7);
        let idx: Vec<usize> = e_divisive(&xs, &ChangePointConfig::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(idx.len(), 2, "{idx:?}");
        assert!(
            (29..=31).contains(&idx[0]) && (54..=56).contains(&idx[1]),
            "{idx:?}"
        );
    }

    #[test]
    fn noise_alone_gives_nothing() {
        let mut rng = Rng::new(4);
        let xs = noisy(&mut rng, &[(100.0, 60)], 2.0);
        assert!(e_divisive(&xs, &ChangePointConfig::default()).is_empty());
    }

    #[test]
    fn a_five_percent_step_in_run_figures_is_found() {
        // A figure over 30 stored runs, 1 % run-to-run spread, 5 % slower from run 18 on.
        let mut rng = Rng::new(5);
        let xs: Vec<f64> = (0..30)
            .map(|i| {
                let level = if i < 18 { 1000.0 } else { 1050.0 };
                level * (1.0 + 0.01 * rng.normal())
            })
            .collect();
        let cps = e_divisive(&xs, &ChangePointConfig::default());
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert!((17..=19).contains(&cps[0].index), "{cps:?}");
    }

    #[test]
    fn a_bimodal_figure_is_not_a_change() {
        // Runs alternate at random between two modes all along: no place where it changed.
        let mut rng = Rng::new(6);
        let xs: Vec<f64> = (0..50)
            .map(|_| if rng.unit() < 0.5 { 1.4 } else { 5.2 } * (1.0 + 0.01 * rng.normal()))
            .collect();
        assert!(e_divisive(&xs, &ChangePointConfig::default()).is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]
        #[test]
        fn shifting_and_scaling_the_series_changes_nothing(
            xs in proptest::collection::vec(-100.0f64..100.0, 0..40),
            scale in 0.01f64..100.0,
            shift in -1e3f64..1e3,
        ) {
            let config = ChangePointConfig { permutations: 49, ..Default::default() };
            let a = e_divisive(&xs, &config);
            let moved: Vec<f64> = xs.iter().map(|x| x * scale + shift).collect();
            let b = e_divisive(&moved, &config);
            let ia: Vec<usize> = a.iter().map(|c| c.index).collect();
            let ib: Vec<usize> = b.iter().map(|c| c.index).collect();
            prop_assert_eq!(ia.clone(), ib);
            // Sorted, inside the series, every segment long enough.
            let mut edges = vec![0];
            edges.extend(ia);
            edges.push(xs.len());
            prop_assert!(edges.windows(2).all(|w| w[1] >= w[0] + config.min_segment || xs.len() < 2 * config.min_segment));
        }
    }

    #[test]
    fn ranks_share_ties_and_keep_the_order() {
        let config = ChangePointConfig {
            ranks: true,
            ..Default::default()
        };
        assert_eq!(
            searched(&[5.0, 1.0, 5.0, 3.0], &config),
            vec![3.5, 1.0, 3.5, 2.0]
        );
        assert_eq!(
            searched(&[5.0, 1.0], &ChangePointConfig::default()),
            vec![5.0, 1.0]
        );
    }

    #[test]
    fn on_ranks_a_step_is_found_behind_a_few_disturbed_runs() {
        // A figure measured on a shared machine (syscall.null, ns, before and after a seccomp
        // filter): eight runs at about 200, then twelve at about 245 of which four were disturbed
        // (554-1128). On the values' logarithms the disturbed runs' spread hides the step
        // (permutation p about 0.03); on ranks it stands out.
        let series: Vec<f64> = [
            197.0, 192.0, 194.0, 194.0, 212.0, 199.0, 217.0, 223.0, 277.0, 1023.0, 586.0, 554.0,
            250.0, 247.0, 1128.0, 625.0, 240.0, 241.0, 242.0, 244.0,
        ]
        .iter()
        .map(|v: &f64| v.ln())
        .collect();
        let strict = ChangePointConfig {
            significance: 0.01,
            permutations: 499,
            ..Default::default()
        };
        assert!(e_divisive(&series, &strict).is_empty());
        let found = e_divisive(
            &series,
            &ChangePointConfig {
                ranks: true,
                ..strict
            },
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].index, 8);
        assert!(found[0].p_value < 0.01);
        // The level either side is still the values' (here their logarithms'), not the ranks'.
        assert!((found[0].before - 196.0f64.ln()).abs() < 0.02, "{found:?}");
    }
}
