//! Second by second: the lateness percentiles of each whole second of a run and how many of its
//! periods were later than a few fixed thresholds. Comparing two runs needs repetitions to judge
//! a difference against; one run has a single p99, but it has a p99 for every second, and two runs
//! are compared second against second (as the worst case per second already is).
//!
//! The values of the current second are kept (preallocated) and reduced when the next second
//! starts: a few selections over about a thousand values, once a second, on the measuring thread
//! right after a wake, well before its next deadline.

use serde::{Deserialize, Serialize};

/// Width of a window.
pub const SECOND_NS: u64 = 1_000_000_000;
/// Thresholds whose exceedances are counted: the `over` figures of a run.
pub const OVER_NS: [u64; 3] = [100_000, 1_000_000, 10_000_000];

/// One whole second of one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SecondStats {
    /// Periods due in this second (woken and missed).
    pub periods: u32,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    /// Periods later than each of `OVER_NS`.
    pub over: [u32; 3],
}

/// The nearest-rank percentile q (0..1] of `v`, which it reorders.
fn nearest_rank(v: &mut [u64], q: f64) -> u64 {
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    *v.select_nth_unstable(rank - 1).1
}

impl SecondStats {
    /// Of the lateness of every period due in one second (reordered).
    pub fn of(values: &mut [u64]) -> Option<SecondStats> {
        if values.is_empty() {
            return None;
        }
        let over = OVER_NS.map(|t| values.iter().filter(|&&v| v > t).count() as u32);
        Some(SecondStats {
            periods: values.len() as u32,
            p99_ns: nearest_rank(values, 0.99),
            p90_ns: nearest_rank(values, 0.90),
            p50_ns: nearest_rank(values, 0.50),
            over,
        })
    }
}

/// Collects the seconds of one stream, periods in order.
#[derive(Debug, Clone)]
pub struct Seconds {
    current: u64,
    values: Vec<u64>,
    done: Vec<SecondStats>,
}

impl Seconds {
    pub fn new(period_ns: u64, planned_periods: u64) -> Seconds {
        let per_second = (SECOND_NS / period_ns.max(1)).clamp(1, planned_periods.max(1));
        let span = period_ns.saturating_mul(planned_periods);
        Seconds {
            current: 0,
            values: Vec::with_capacity(per_second as usize + 1),
            done: Vec::with_capacity((span / SECOND_NS) as usize + 1),
        }
    }

    /// The period due `at_ns` after the start was `lateness_ns` late.
    #[inline]
    pub fn record(&mut self, at_ns: u64, lateness_ns: u64) {
        let second = at_ns / SECOND_NS;
        if second != self.current {
            self.close();
            // A second with no period (a period longer than a second) leaves no entry.
            self.current = second;
        }
        self.values.push(lateness_ns);
    }

    fn close(&mut self) {
        if let Some(s) = SecondStats::of(&mut self.values) {
            self.done.push(s);
        }
        self.values.clear();
    }

    /// The whole seconds among the first `periods` periods (a second cut short by the end of the
    /// run is left out, as the window maxima leave it out).
    pub fn whole(&self, period_ns: u64, periods: u64) -> Vec<SecondStats> {
        let whole = (periods.saturating_mul(period_ns) / SECOND_NS) as usize;
        let mut out: Vec<SecondStats> = self.done.iter().take(whole).copied().collect();
        if out.len() < whole && !self.values.is_empty() {
            // The last second ended exactly with the run: it was never closed.
            let mut rest = self.values.clone();
            out.extend(SecondStats::of(&mut rest));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn each_second_gets_its_percentiles_and_exceedances() {
        // 1 ms periods for 2.5 s: the first second 1..=1000 us late, the second all 50 us, with
        // two periods at 20 ms.
        let mut s = Seconds::new(MS, 2500);
        for k in 0..2500u64 {
            let late = match k {
                0..=999 => (k + 1) * 1_000,
                1500 | 1600 => 20 * MS,
                _ => 50_000,
            };
            s.record(k * MS, late);
        }
        let w = s.whole(MS, 2500);
        assert_eq!(w.len(), 2, "the half second at the end is left out");
        assert_eq!(w[0].periods, 1000);
        assert_eq!(
            (w[0].p50_ns, w[0].p90_ns, w[0].p99_ns),
            (500_000, 900_000, 990_000)
        );
        // Over 100 us: 101..=1000 us, 900 periods; none over 1 ms (1000 us is not over it).
        assert_eq!(w[0].over, [900, 0, 0]);
        assert_eq!((w[1].p50_ns, w[1].p99_ns), (50_000, 50_000));
        assert_eq!(w[1].over, [2, 2, 2]);
    }

    #[test]
    fn a_run_ending_on_a_second_keeps_its_last_second() {
        let mut s = Seconds::new(500 * MS, 4);
        for k in 0..4 {
            s.record(k * 500 * MS, k);
        }
        let w = s.whole(500 * MS, 4);
        assert_eq!(w.len(), 2);
        assert_eq!(w[1].periods, 2);
        assert_eq!(w[1].p99_ns, 3);
        assert!(Seconds::new(MS, 10).whole(MS, 0).is_empty());
    }

    proptest! {
        #[test]
        fn percentiles_are_ordered_values_of_the_second(values in prop::collection::vec(0u64..10_000_000_000, 1..400)) {
            let mut v = values.clone();
            let s = SecondStats::of(&mut v).unwrap();
            prop_assert!(s.p50_ns <= s.p90_ns && s.p90_ns <= s.p99_ns);
            for p in [s.p50_ns, s.p90_ns, s.p99_ns] {
                prop_assert!(values.contains(&p));
            }
            // Nearest rank: at least a share q of the values is at or below the q-percentile.
            let at_most = values.iter().filter(|&&x| x <= s.p90_ns).count();
            prop_assert!(at_most * 10 >= values.len() * 9);
            prop_assert!(s.over[0] >= s.over[1] && s.over[1] >= s.over[2]);
            prop_assert_eq!(s.periods as usize, values.len());
        }
    }
}
