//! Where every period of a periodic measuring thread went: woken (with its lateness) or missed
//! (a later wake served it; its lateness is implied by when that wake came). Pure logic over
//! nanosecond timestamps, so it is tested with a fake clock.
//!
//! The "raw" distribution is what a tool that only looks at its own wakes sees; the "corrected" one
//! adds every missed period, so nothing the load did hides in a gap.

use super::buffer::{BufferConfig, BufferTracker};
use super::histogram::Histogram;
use super::seconds::Seconds;
use serde::{Deserialize, Serialize};

/// Window widths for worst-case-per-window figures.
pub const WINDOWS: [(&str, u64); 3] = [
    ("1s", 1_000_000_000),
    ("1min", 60_000_000_000),
    ("1h", 3_600_000_000_000),
];

/// The maxima of consecutive windows of one width, preallocated so recording does not allocate.
#[derive(Debug, Clone)]
pub struct WindowMaxima {
    pub name: &'static str,
    pub width_ns: u64,
    pub maxima: Vec<u64>,
}

#[derive(Debug, Clone)]
pub struct Accounting {
    pub period_ns: u64,
    pub woken: u64,
    pub missed: u64,
    pub raw: Histogram,
    pub corrected: Histogram,
    pub windows: Vec<WindowMaxima>,
    pub buffers: Vec<(BufferConfig, BufferTracker)>,
    /// Percentiles and exceedances of each second, for comparing runs second against second.
    pub seconds: Seconds,
}

impl Accounting {
    /// `planned_periods` sizes the window arrays; only widths that fit at least once are kept.
    pub fn new(period_ns: u64, planned_periods: u64, buffers: &[BufferConfig]) -> Accounting {
        let span = period_ns.saturating_mul(planned_periods);
        let windows = WINDOWS
            .iter()
            .filter(|(_, w)| *w <= span)
            .map(|&(name, width_ns)| WindowMaxima {
                name,
                width_ns,
                maxima: Vec::with_capacity((span / width_ns + 1) as usize),
            })
            .collect();
        Accounting {
            period_ns,
            woken: 0,
            missed: 0,
            raw: Histogram::new(),
            corrected: Histogram::new(),
            windows,
            buffers: buffers
                .iter()
                .map(|c| (*c, BufferTracker::new(c)))
                .collect(),
            seconds: Seconds::new(period_ns, planned_periods),
        }
    }

    /// One period's outcome, in period order. `index` counts periods from 0.
    #[inline]
    pub fn period(&mut self, index: u64, lateness_ns: u64, woken: bool) {
        if woken {
            self.woken += 1;
            self.raw.record(lateness_ns);
        } else {
            self.missed += 1;
        }
        self.corrected.record(lateness_ns);
        let at = index.saturating_mul(self.period_ns);
        for w in &mut self.windows {
            let slot = (at / w.width_ns) as usize;
            // Within the planned span this never grows past the reserved capacity.
            while w.maxima.len() <= slot {
                w.maxima.push(0);
            }
            if lateness_ns > w.maxima[slot] {
                w.maxima[slot] = lateness_ns;
            }
        }
        for (_, t) in &mut self.buffers {
            t.observe(lateness_ns);
        }
        self.seconds.record(at, lateness_ns);
    }

    pub fn periods(&self) -> u64 {
        self.woken + self.missed
    }

    /// Maxima of complete windows only: a window cut short by the end of the run would understate.
    pub fn complete_window_maxima(&self, w: &WindowMaxima) -> Vec<u64> {
        let span = self.periods().saturating_mul(self.period_ns);
        let complete = (span / w.width_ns) as usize;
        w.maxima.iter().take(complete).copied().collect()
    }
}

/// Absolute deadlines of a timer-driven thread: `first_ns + k * period_ns` for k in 0..total.
#[derive(Debug, Clone, Copy)]
pub struct Deadlines {
    pub first_ns: u64,
    pub period_ns: u64,
    pub total: u64,
}

impl Deadlines {
    pub fn at(&self, k: u64) -> u64 {
        self.first_ns + k * self.period_ns
    }

    /// The thread slept for deadline `k` and runs at `now`: period k is woken, every later deadline
    /// already past is missed with lateness `now - deadline`. Returns the next deadline index to
    /// sleep for (`total` when the run is over).
    pub fn wake(&self, acct: &mut Accounting, k: u64, now: u64) -> u64 {
        acct.period(k, now.saturating_sub(self.at(k)), true);
        let mut j = k + 1;
        while j < self.total && self.at(j) <= now {
            acct.period(j, now - self.at(j), false);
            j += 1;
        }
        j
    }
}

/// Spread of the window maxima of one width.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WindowSummary {
    pub window: String,
    pub windows: usize,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub max_ns: u64,
    /// The maxima themselves when there are few enough to keep (up to 3600).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub maxima_ns: Vec<u64>,
}

pub fn summarise_windows(name: &'static str, maxima: &[u64]) -> Option<WindowSummary> {
    if maxima.is_empty() {
        return None;
    }
    let mut s = maxima.to_vec();
    s.sort_unstable();
    let q = |p: f64| s[((p * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
    Some(WindowSummary {
        window: name.to_string(),
        windows: s.len(),
        min_ns: s[0],
        p50_ns: q(0.5),
        p90_ns: q(0.9),
        max_ns: *s.last().unwrap(),
        maxima_ns: if maxima.len() <= 3600 {
            maxima.to_vec()
        } else {
            Vec::new()
        },
    })
}

/// A Gumbel (extreme value type I) fit of window maxima and what it projects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GumbelFit {
    pub method: String,
    pub window: String,
    pub windows: usize,
    pub location_ns: f64,
    pub scale_ns: f64,
    /// Kolmogorov-Smirnov distance between the maxima and the fitted law (0 perfect; above ~0.3
    /// with tens of windows the estimate should not be trusted).
    pub ks_distance: f64,
    pub estimates: Vec<HorizonEstimate>,
}

/// The estimated worst case over a horizon: as likely to be exceeded as not (median), and the
/// level exceeded with 1 % chance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HorizonEstimate {
    pub horizon: String,
    pub median_ns: f64,
    pub p99_ns: f64,
}

pub const MIN_WINDOWS_FOR_FIT: usize = 10;
pub const HORIZONS: [(&str, f64); 3] = [("1h", 3600.0), ("1d", 86_400.0), ("30d", 2_592_000.0)];
const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

pub fn gumbel_cdf(x: f64, location: f64, scale: f64) -> f64 {
    (-(-(x - location) / scale).exp()).exp()
}

/// Fits by the method of moments (scale = s·√6/π, location = mean − γ·scale). Needs at least
/// MIN_WINDOWS_FOR_FIT maxima that are not all equal; otherwise says why not.
pub fn fit_gumbel(window: &'static str, width_s: f64, maxima: &[u64]) -> Result<GumbelFit, String> {
    let n = maxima.len();
    if n < MIN_WINDOWS_FOR_FIT {
        return Err(format!(
            "{n} complete {window} windows; the fit needs at least {MIN_WINDOWS_FOR_FIT} (run longer)"
        ));
    }
    let xs: Vec<f64> = maxima.iter().map(|&v| v as f64).collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    if var <= 0.0 {
        return Err("every window had the same maximum; nothing to fit".into());
    }
    let scale = var.sqrt() * 6f64.sqrt() / std::f64::consts::PI;
    let location = mean - EULER_GAMMA * scale;
    let mut sorted = xs.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let mut ks: f64 = 0.0;
    for (i, &x) in sorted.iter().enumerate() {
        let f = gumbel_cdf(x, location, scale);
        ks = ks
            .max((i + 1) as f64 / n as f64 - f)
            .max(f - i as f64 / n as f64);
    }
    let estimates = HORIZONS
        .iter()
        .map(|&(horizon, secs)| {
            // The maximum of m independent Gumbel maxima is Gumbel with location shifted by scale·ln m.
            let shifted = location + scale * (secs / width_s).max(1.0).ln();
            HorizonEstimate {
                horizon: horizon.to_string(),
                median_ns: shifted - scale * (2f64.ln()).ln(),
                p99_ns: shifted - scale * (-(0.99f64.ln())).ln(),
            }
        })
        .collect();
    Ok(GumbelFit {
        method: "moments".to_string(),
        window: window.to_string(),
        windows: n,
        location_ns: location,
        scale_ns: scale,
        ks_distance: ks,
        estimates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;

    fn sched(total: u64) -> Deadlines {
        Deadlines {
            first_ns: 10 * MS,
            period_ns: MS,
            total,
        }
    }

    #[test]
    fn punctual_wakes_miss_nothing() {
        let d = sched(100);
        let mut a = Accounting::new(MS, 100, &[]);
        let mut k = 0;
        while k < d.total {
            k = d.wake(&mut a, k, d.at(k) + 5 * US);
        }
        assert_eq!((a.woken, a.missed), (100, 0));
        assert_eq!(a.raw.count(), 100);
        assert_eq!(a.corrected.count(), 100);
        assert_eq!(a.raw.max(), 5 * US);
    }

    #[test]
    fn a_late_wake_counts_the_periods_it_jumped_as_missed() {
        let d = sched(10);
        let mut a = Accounting::new(MS, 10, &[]);
        // Deadline 2 is served 3.5 ms late: deadlines 3, 4 and 5 are already past.
        let mut k = 0;
        let mut wakes = 0;
        while k < d.total {
            let late = if k == 2 { 3_500 * US } else { 10 * US };
            k = d.wake(&mut a, k, d.at(k) + late);
            wakes += 1;
        }
        assert_eq!(wakes, 7);
        assert_eq!(a.woken, 7);
        assert_eq!(a.missed, 3);
        assert_eq!(a.periods(), 10);
        assert_eq!(a.raw.count(), 7);
        assert_eq!(a.corrected.count(), 10);
        // The missed periods' implied lateness: 2.5, 1.5 and 0.5 ms.
        assert_eq!(a.corrected.count_above(400 * US), 4);
        assert_eq!(a.raw.count_above(400 * US), 1);
        assert_eq!(a.raw.max(), 3_500 * US);
        assert_eq!(a.corrected.max(), 3_500 * US);
    }

    #[test]
    fn a_wake_past_the_end_still_accounts_for_every_period() {
        let d = sched(5);
        let mut a = Accounting::new(MS, 5, &[]);
        let k = d.wake(&mut a, 0, d.at(0) + 20 * MS);
        assert_eq!(k, 5);
        assert_eq!((a.woken, a.missed), (1, 4));
    }

    #[test]
    fn window_maxima_per_second_and_buffer_failures_follow_the_sequence() {
        // 3 s at 1 ms; one spike of 2 ms per second at a different place each second.
        let d = sched(3000);
        let cfg = BufferConfig::parse("1ms,2,0.5").unwrap();
        let mut a = Accounting::new(MS, 3000, &[cfg]);
        let mut k = 0;
        while k < d.total {
            let late = match k {
                100 => 2 * MS,
                1500 => 1_200 * US,
                2999 => 700 * US,
                _ => 20 * US,
            };
            k = d.wake(&mut a, k, d.at(k) + late);
        }
        assert_eq!(a.periods(), 3000);
        assert_eq!(a.missed, 3); // two after the 2 ms spike, one after the 1.2 ms one
        assert_eq!(a.windows.len(), 1, "only 1 s windows fit in 3 s");
        let w = a.complete_window_maxima(&a.windows[0]);
        assert_eq!(w, vec![2 * MS, 1_200 * US, 700 * US]);
        let s = summarise_windows("1s", &w).unwrap();
        assert_eq!(
            (s.min_ns, s.p50_ns, s.max_ns),
            (700 * US, 1_200 * US, 2 * MS)
        );
        // Tolerance 0.5 ms: spike at 100 (2 ms, then 1 ms and 0 ms implied → 2 overruns in a row),
        // spike at 1500 (1.2 ms, then 0.2 ms: one overrun), 2999 (0.7 ms): three failures.
        let (_, t) = a.buffers[0];
        assert_eq!(t.periods, 3000);
        assert_eq!(t.failures, 3);
        assert_eq!(t.overruns, 4);
    }

    #[test]
    fn gumbel_fit_recovers_known_parameters() {
        // Quantiles of a Gumbel(location 100 us, scale 20 us) at evenly spaced probabilities.
        let (mu, beta) = (100_000.0, 20_000.0);
        let n = 400;
        let maxima: Vec<u64> = (0..n)
            .map(|i| {
                let p = (i as f64 + 0.5) / n as f64;
                (mu - beta * (-p.ln()).ln()) as u64
            })
            .collect();
        let fit = fit_gumbel("1s", 1.0, &maxima).unwrap();
        assert!((fit.location_ns - mu).abs() / mu < 0.02, "{fit:?}");
        assert!((fit.scale_ns - beta).abs() / beta < 0.05, "{fit:?}");
        assert!(fit.ks_distance < 0.03, "{fit:?}");
        // Over an hour of 1 s windows: location + scale·ln 3600 − scale·ln ln 2.
        let hour = &fit.estimates[0];
        let want = mu + beta * 3600f64.ln() - beta * 2f64.ln().ln();
        assert!(
            (hour.median_ns - want).abs() / want < 0.03,
            "{hour:?} vs {want}"
        );
        assert!(hour.p99_ns > hour.median_ns);
        assert!(fit.estimates[1].median_ns > hour.median_ns);
    }

    #[test]
    fn gumbel_fit_flags_a_bad_shape_and_refuses_too_few() {
        // Two clusters: nothing like a Gumbel law.
        let mut m = vec![10_000u64; 50];
        m.extend(std::iter::repeat_n(1_000_000u64, 50));
        let fit = fit_gumbel("1s", 1.0, &m).unwrap();
        assert!(fit.ks_distance > 0.2, "{fit:?}");
        assert!(fit_gumbel("1s", 1.0, &[1, 2, 3]).is_err());
        assert!(fit_gumbel("1s", 1.0, &[5; 20]).is_err());
    }
}
