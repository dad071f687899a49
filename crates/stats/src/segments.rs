//! The stretches of a series between its change points: where each one starts and ends, its level
//! and how well that level is known.
//!
//! A stretch's level is the median of its values, and its interval the distribution-free interval of
//! that median from order statistics: stored runs of one figure are not normal (a bad neighbour
//! gives one run a long tail), and a stretch may hold only a handful of runs. With few values the
//! interval is the whole range and its real coverage, below 95 %, is stated.

use super::summary::{median, median_ci_ranks};

#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Index of the first value.
    pub start: usize,
    /// One past the last value.
    pub end: usize,
    /// Median of the values.
    pub level: f64,
    /// Interval of the median at 95 % where the values allow it.
    pub interval: [f64; 2],
    /// The interval's coverage (0.95 or more, less when there are too few values for it).
    pub coverage: f64,
}

impl Segment {
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

/// The segments of `series` cut at `cuts` (indices of the first value after each change, in any
/// order; duplicates, 0 and indices past the end cut nothing). Empty for an empty series.
pub fn segments(series: &[f64], cuts: &[usize]) -> Vec<Segment> {
    let mut edges: Vec<usize> = cuts
        .iter()
        .copied()
        .filter(|&c| c > 0 && c < series.len())
        .collect();
    edges.push(0);
    edges.push(series.len());
    edges.sort_unstable();
    edges.dedup();
    edges
        .windows(2)
        .filter(|w| w[1] > w[0])
        .map(|w| summarise(series, w[0], w[1]))
        .collect()
}

fn summarise(series: &[f64], start: usize, end: usize) -> Segment {
    let mut sorted = series[start..end].to_vec();
    sorted.sort_by(f64::total_cmp);
    let (lo, hi, coverage) = median_ci_ranks(sorted.len(), 0.95);
    Segment {
        start,
        end,
        level: median(&sorted),
        interval: [sorted[lo], sorted[hi]],
        coverage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_answers() {
        // Two stretches of five: medians 3 and 30; five values give only the range, at 1 - 2/32.
        let xs = [5.0, 1.0, 3.0, 2.0, 4.0, 30.0, 10.0, 50.0, 20.0, 40.0];
        let s = segments(&xs, &[5]);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].start, s[0].end, s[0].level), (0, 5, 3.0));
        assert_eq!(s[0].interval, [1.0, 5.0]);
        assert!((s[0].coverage - 0.9375).abs() < 1e-12);
        assert_eq!((s[1].start, s[1].end, s[1].level), (5, 10, 30.0));
        assert_eq!(s[1].interval, [10.0, 50.0]);
        // Twenty values 1..=20: the 95 % order-statistic interval of the median is the 6th to the
        // 15th value (coverage 1 - 2 P(Bin(20, 1/2) <= 5) = 0.9586).
        let xs: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        let s = segments(&xs, &[]);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].level, 10.5);
        assert_eq!(s[0].interval, [6.0, 15.0]);
        assert!(
            (s[0].coverage - 0.958_610_5).abs() < 1e-6,
            "{}",
            s[0].coverage
        );
    }

    #[test]
    fn one_value_and_no_values() {
        assert!(segments(&[], &[0, 3]).is_empty());
        let s = segments(&[7.0], &[0, 1, 5]);
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].level, s[0].interval), (7.0, [7.0, 7.0]));
        assert_eq!(s[0].coverage, 0.0);
    }

    proptest! {
        #[test]
        fn segments_tile_the_series_and_hold_their_level(
            xs in proptest::collection::vec(-1e6f64..1e6, 0..60),
            cuts in proptest::collection::vec(0usize..70, 0..6),
        ) {
            let s = segments(&xs, &cuts);
            // Back to back from 0 to the end, none empty.
            let mut at = 0;
            for seg in &s {
                prop_assert_eq!(seg.start, at);
                prop_assert!(!seg.is_empty());
                at = seg.end;
                let part = &xs[seg.start..seg.end];
                let (min, max) = part.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
                prop_assert!(min <= seg.interval[0] && seg.interval[0] <= seg.level);
                prop_assert!(seg.level <= seg.interval[1] && seg.interval[1] <= max);
                // As many values on either side of the level.
                let below = part.iter().filter(|&&x| x < seg.level).count();
                let above = part.iter().filter(|&&x| x > seg.level).count();
                prop_assert!(below <= part.len() / 2 && above <= part.len() / 2);
            }
            prop_assert_eq!(at, xs.len());
            let wanted = cuts.iter().filter(|&&c| c > 0 && c < xs.len()).collect::<std::collections::BTreeSet<_>>().len();
            prop_assert_eq!(s.len(), if xs.is_empty() { 0 } else { wanted + 1 });
        }
    }
}
