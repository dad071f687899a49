//! A log-linear histogram of nanosecond values in constant memory, in the manner of HDR histograms.
//!
//! Values below 256 ns get one bucket each; above, every power of two is split into 128 equal
//! buckets, so a bucket is never wider than 1/128 of its lower bound (under 0.8 % relative error).
//! The top octave ends at 2^36 ns (about 68.7 s); larger values land in the last bucket and are
//! counted as clamped, while the exact maximum is kept apart. Recording never allocates.

use serde::Serialize;

/// log2 of the buckets per octave.
const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
/// Values below this get one bucket each.
const LINEAR: u64 = SUB << 1;
/// First octave above the linear part: 2^8 .. 2^9.
const FIRST_OCTAVE: u32 = SUB_BITS + 1;
/// One past the last octave: values reach 2^36 ns.
const END_OCTAVE: u32 = 36;
pub const BUCKETS: usize = (LINEAR + (END_OCTAVE - FIRST_OCTAVE) as u64 * SUB) as usize;
/// Largest value with a bucket of its own; larger ones are clamped into the last bucket.
pub const HIGHEST_TRACKABLE_NS: u64 = (1 << END_OCTAVE) - 1;

#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    total: u64,
    min: u64,
    max: u64,
    sum: u128,
    clamped: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.total)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish()
    }
}

/// Index of the bucket holding `v`.
fn index_of(v: u64) -> usize {
    let v = v.min(HIGHEST_TRACKABLE_NS);
    if v < LINEAR {
        return v as usize;
    }
    let octave = 63 - v.leading_zeros();
    let sub = (v >> (octave - SUB_BITS)) - SUB;
    (LINEAR + u64::from(octave - FIRST_OCTAVE) * SUB + sub) as usize
}

/// Lowest and highest value (inclusive) a bucket stands for.
pub fn bucket_bounds(index: usize) -> (u64, u64) {
    let i = index as u64;
    if i < LINEAR {
        return (i, i);
    }
    let octave = (i - LINEAR) / SUB + u64::from(FIRST_OCTAVE);
    let sub = (i - LINEAR) % SUB + SUB;
    let shift = octave - u64::from(SUB_BITS);
    let low = sub << shift;
    (low, low + (1 << shift) - 1)
}

/// One non-empty bucket, for plots and storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Bucket {
    pub low_ns: u64,
    pub high_ns: u64,
    pub count: u64,
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            counts: Box::new([0; BUCKETS]),
            total: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            clamped: 0,
        }
    }

    /// Adds one value. Constant time, no allocation.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    #[inline]
    pub fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.counts[index_of(ns)] += n;
        self.total += n;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += u128::from(ns) * u128::from(n);
        if ns > HIGHEST_TRACKABLE_NS {
            self.clamped += n;
        }
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.total += other.total;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.clamped += other.clamped;
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// Exact largest value recorded (0 when empty).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Exact smallest value recorded (0 when empty).
    pub fn min(&self) -> u64 {
        if self.total == 0 {
            0
        } else {
            self.min
        }
    }

    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum as f64 / self.total as f64
        }
    }

    /// Values above the trackable range (their bucket is the last one; `max` is still exact).
    pub fn clamped(&self) -> u64 {
        self.clamped
    }

    /// The value at quantile `q` (0..=1): the upper end of the bucket holding the ceil(q*count)-th
    /// smallest value, kept within the exact min and max. 0 when empty.
    pub fn percentile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let q = q.clamp(0.0, 1.0);
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        if rank == self.total {
            return self.max;
        }
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                if i == BUCKETS - 1 {
                    return self.max;
                }
                let (_, high) = bucket_bounds(i);
                return high.clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// Number of values strictly above `ns`, to bucket precision: values sharing `ns`'s bucket are
    /// taken as not above (an undercount of at most one bucket's worth).
    pub fn count_above(&self, ns: u64) -> u64 {
        if ns >= self.max {
            return 0;
        }
        self.counts[index_of(ns) + 1..].iter().sum()
    }

    /// Non-empty buckets in ascending order.
    pub fn buckets(&self) -> impl Iterator<Item = Bucket> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| {
                let (low_ns, high_ns) = bucket_bounds(i);
                Bucket {
                    low_ns,
                    high_ns,
                    count: c,
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bucket_bounds_tile_the_range_without_gaps() {
        let mut next = 0;
        for i in 0..BUCKETS {
            let (low, high) = bucket_bounds(i);
            assert_eq!(low, next, "bucket {i}");
            assert!(high >= low);
            assert_eq!(index_of(low), i);
            assert_eq!(index_of(high), i);
            next = high + 1;
        }
        assert_eq!(next, HIGHEST_TRACKABLE_NS + 1);
    }

    #[test]
    fn relative_width_is_under_one_percent_above_the_linear_part() {
        for i in LINEAR as usize..BUCKETS {
            let (low, high) = bucket_bounds(i);
            assert!(((high - low + 1) as f64) / (low as f64) <= 1.0 / 128.0 + 1e-12);
        }
        // 1 us .. 60 s is covered with room to spare, in a few tens of kilobytes.
        const { assert!(HIGHEST_TRACKABLE_NS > 60_000_000_000) };
        const { assert!(BUCKETS * 8 < 40_000) };
    }

    #[test]
    fn known_percentiles_of_one_to_a_hundred() {
        let mut h = Histogram::new();
        for v in 1..=100 {
            h.record(v);
        }
        assert_eq!(h.count(), 100);
        assert_eq!(h.percentile(0.5), 50);
        assert_eq!(h.percentile(0.9), 90);
        assert_eq!(h.percentile(0.99), 99);
        assert_eq!(h.percentile(1.0), 100);
        assert_eq!(h.percentile(0.0), 1);
        assert_eq!(h.max(), 100);
        assert_eq!(h.min(), 1);
        assert!((h.mean() - 50.5).abs() < 1e-9);
        assert_eq!(h.count_above(90), 10);
        assert_eq!(h.count_above(100), 0);
    }

    #[test]
    fn microsecond_values_keep_about_one_percent() {
        let mut h = Histogram::new();
        for _ in 0..999 {
            h.record(10_000);
        }
        h.record(5_000_000_000);
        let p50 = h.percentile(0.5) as f64;
        assert!((p50 - 10_000.0).abs() / 10_000.0 < 0.01, "{p50}");
        assert_eq!(h.percentile(0.9999), 5_000_000_000);
        assert_eq!(h.max(), 5_000_000_000);
        assert_eq!(h.count_above(1_000_000), 1);
        assert_eq!(h.buckets().count(), 2);
        assert_eq!(h.buckets().map(|b| b.count).sum::<u64>(), 1000);
    }

    #[test]
    fn huge_values_are_clamped_but_max_is_exact() {
        let mut h = Histogram::new();
        h.record(u64::MAX / 2);
        assert_eq!(h.clamped(), 1);
        assert_eq!(h.max(), u64::MAX / 2);
        assert_eq!(h.percentile(0.5), u64::MAX / 2);
        let empty = Histogram::new();
        assert_eq!(empty.percentile(0.5), 0);
        assert_eq!(empty.min(), 0);
    }

    proptest! {
        #[test]
        fn percentiles_are_monotone_and_bounded(values in proptest::collection::vec(0u64..200_000_000_000, 1..300)) {
            let mut h = Histogram::new();
            for &v in &values { h.record(v); }
            let qs = [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0];
            let ps: Vec<u64> = qs.iter().map(|&q| h.percentile(q)).collect();
            for w in ps.windows(2) { prop_assert!(w[0] <= w[1]); }
            prop_assert_eq!(*ps.last().unwrap(), *values.iter().max().unwrap());
            prop_assert!(ps[0] >= *values.iter().min().unwrap());
            // Each percentile is within one bucket of the exact order statistic.
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let rank = ((0.5 * sorted.len() as f64).ceil() as usize).max(1);
            let exact = sorted[rank - 1].min(HIGHEST_TRACKABLE_NS);
            let got = h.percentile(0.5).min(HIGHEST_TRACKABLE_NS);
            prop_assert!(got >= exact);
            prop_assert!((got - exact) as f64 <= exact as f64 / 128.0 + 1.0);
        }

        #[test]
        fn merge_conserves_count_and_extremes(a in proptest::collection::vec(0u64..10_000_000_000, 0..200),
                                              b in proptest::collection::vec(0u64..10_000_000_000, 0..200)) {
            let mut ha = Histogram::new();
            let mut hb = Histogram::new();
            let mut hall = Histogram::new();
            for &v in &a { ha.record(v); hall.record(v); }
            for &v in &b { hb.record(v); hall.record(v); }
            ha.merge(&hb);
            prop_assert_eq!(ha.count(), (a.len() + b.len()) as u64);
            prop_assert_eq!(ha.max(), hall.max());
            prop_assert_eq!(ha.min(), hall.min());
            prop_assert_eq!(ha.buckets().collect::<Vec<_>>(), hall.buckets().collect::<Vec<_>>());
        }
    }
}
