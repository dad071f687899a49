//! The best split of a series by energy distance, for the usual exponent 1 (distance |x - y|),
//! in O(n log n) rather than the O(n²) of summing every pair.
//!
//! As the split moves right by one value v, E-Divisive needs v's summed distance to the values
//! left of it and to those right of it. With exponent 1 the first is a Fenwick-tree question
//! (how many left values lie below v and what they add up to) and the second follows from v's
//! distance to the whole series, which sorted prefix sums give for every value at once. A history
//! of ten thousand runs, searched again for each of several hundred permutations, needs this.

/// Sums of the left part's values, by their rank among the series' distinct values.
struct Fenwick {
    count: Vec<f64>,
    sum: Vec<f64>,
}

impl Fenwick {
    fn new(n: usize) -> Fenwick {
        Fenwick {
            count: vec![0.0; n + 1],
            sum: vec![0.0; n + 1],
        }
    }

    fn add(&mut self, slot: usize, value: f64) {
        let mut i = slot + 1;
        while i < self.count.len() {
            self.count[i] += 1.0;
            self.sum[i] += value;
            i += i & i.wrapping_neg();
        }
    }

    /// How many values are in slots 0..=slot, and their sum.
    fn up_to(&self, slot: usize) -> (f64, f64) {
        let (mut c, mut s) = (0.0, 0.0);
        let mut i = slot + 1;
        while i > 0 {
            c += self.count[i];
            s += self.sum[i];
            i -= i & i.wrapping_neg();
        }
        (c, s)
    }
}

/// Each value's slot among the distinct values (ascending), and its summed distance to every
/// value of the series.
fn slots_and_distances(xs: &[f64]) -> (Vec<usize>, usize, Vec<f64>) {
    let n = xs.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    let mut prefix = vec![0.0; n + 1];
    for (k, &i) in order.iter().enumerate() {
        prefix[k + 1] = prefix[k] + xs[i];
    }
    let (mut slots, mut to_all) = (vec![0; n], vec![0.0; n]);
    let mut slot = 0;
    for (k, &i) in order.iter().enumerate() {
        if k > 0 && xs[i] != xs[order[k - 1]] {
            slot += 1;
        }
        slots[i] = slot;
        // Equal values on either side are at distance 0 whichever side they are counted on.
        let x = xs[i];
        let below = x * k as f64 - prefix[k];
        let above = (prefix[n] - prefix[k + 1]) - x * (n - k - 1) as f64;
        to_all[i] = below + above;
    }
    (slots, slot + 1, to_all)
}

/// E-Divisive's statistic of a split before `tau` of `n` values, from the sums of distances across
/// the split and within each side: the energy distance between the sides, weighted by their sizes.
pub(super) fn split_statistic(
    tau: usize,
    n: usize,
    across: f64,
    within_left: f64,
    within_right: f64,
) -> f64 {
    let (m, k) = (tau as f64, (n - tau) as f64);
    let energy = 2.0 * across / (m * k)
        - within_left / (m * (m - 1.0) / 2.0)
        - within_right / (k * (k - 1.0) / 2.0);
    m * k / (m + k) * energy
}

/// The best split of `xs` with exponent 1 (see `changepoint::best_split`): the index of the first
/// value of the right part and its Q. On ranks (whole or half numbers) every sum is exact.
pub fn best_split_linear(xs: &[f64], min: usize) -> Option<(usize, f64)> {
    let n = xs.len();
    if n < 2 * min {
        return None;
    }
    let (slots, distinct, to_all) = slots_and_distances(xs);
    let mut left = Fenwick::new(distinct);
    let (mut left_count, mut left_sum) = (0.0, 0.0);
    let mut within_left = 0.0;
    let mut within_right = to_all.iter().sum::<f64>() / 2.0;
    let mut across = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for tau in 1..n - 1 {
        // Value tau - 1 moves from the right part to the left part.
        let v = tau - 1;
        let x = xs[v];
        let (c, s) = left.up_to(slots[v]);
        let to_left = (x * c - s) + ((left_sum - s) - x * (left_count - c));
        let to_right = to_all[v] - to_left;
        within_left += to_left;
        within_right -= to_right;
        across += to_right - to_left;
        left.add(slots[v], x);
        left_count += 1.0;
        left_sum += x;
        if tau < min || n - tau < min {
            continue;
        }
        let q = split_statistic(tau, n, across, within_left, within_right);
        if best.is_none_or(|(_, b)| q > b && !super::changepoint::nearly_equal(q, b)) {
            best = Some((tau, q));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// Q of every split, summing every pair directly.
    fn direct(xs: &[f64], min: usize) -> Vec<(usize, f64)> {
        (min..=xs.len() - min)
            .map(|tau| {
                let (x, y) = xs.split_at(tau);
                let (m, k) = (x.len() as f64, y.len() as f64);
                let across: f64 = x
                    .iter()
                    .flat_map(|a| y.iter().map(move |b| (a - b).abs()))
                    .sum();
                let within = |s: &[f64]| -> f64 {
                    let mut t = 0.0;
                    for i in 0..s.len() {
                        for j in i + 1..s.len() {
                            t += (s[i] - s[j]).abs();
                        }
                    }
                    t / (s.len() * (s.len() - 1) / 2) as f64
                };
                let q = m * k / (m + k) * (2.0 * across / (m * k) - within(x) - within(y));
                (tau, q)
            })
            .collect()
    }

    #[test]
    fn the_best_split_is_the_one_every_pair_gives() {
        let mut rng = Rng::new(7);
        for n in [6, 7, 23, 64] {
            // Continuous values, and values with many ties (whole numbers from a few).
            let plain: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
            let tied: Vec<f64> = (0..n).map(|_| rng.below(4) as f64).collect();
            for xs in [plain, tied] {
                let all = direct(&xs, 3);
                let (tau, q) = best_split_linear(&xs, 3).unwrap();
                let top = all.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
                let scale = top.abs().max(1.0);
                assert!((q - top).abs() < 1e-9 * scale, "n {n}: {q} against {top}");
                let at = all.iter().find(|p| p.0 == tau).unwrap().1;
                assert!((q - at).abs() < 1e-9 * scale, "n {n}: split {tau}");
            }
        }
    }

    #[test]
    fn too_short_a_series_has_no_split() {
        assert_eq!(best_split_linear(&[1.0, 2.0, 3.0, 4.0, 5.0], 3), None);
        assert!(best_split_linear(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 3).is_some());
    }
}
