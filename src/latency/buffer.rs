//! The buffer model: a pipeline that processes one buffer of length t per period, needs c of compute
//! per buffer and keeps n buffers queued survives a wake that is up to (n-1)t - c late. From the
//! measured per-period lateness it gets the chance of an underrun per period and the mean time
//! between failures, a run of consecutive overruns counting as one failure (the listener hears one
//! glitch, not ten).

use crate::units::parse_duration_ns;
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// Period lengths of the default table, milliseconds.
pub const DEFAULT_PERIODS_MS: [u64; 5] = [1, 2, 5, 10, 20];
pub const DEFAULT_BUFFERS: [u32; 3] = [2, 3, 4];
pub const DEFAULT_COMPUTE_FRACTION: f64 = 0.5;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct BufferConfig {
    pub period_ns: u64,
    pub buffers: u32,
    pub compute_ns: u64,
}

impl BufferConfig {
    /// Lateness the pipeline absorbs before it runs dry; positive for every accepted configuration.
    pub fn tolerance_ns(&self) -> u64 {
        (u64::from(self.buffers - 1) * self.period_ns).saturating_sub(self.compute_ns)
    }

    /// `t,n,c`: t a time (`5ms`), n the buffer count (2 or more), c a time (`2ms`) or, without a
    /// unit, a fraction of t (`0.5`).
    pub fn parse(text: &str) -> Result<BufferConfig> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        if parts.len() != 3 {
            return Err(crate::usage!(
                "--buffer {text:?}: expected t,n,c, e.g. 5ms,3,2ms or 5ms,3,0.5"
            ));
        }
        let period_ns = parse_duration_ns(parts[0])?;
        let buffers: u32 = parts[1].parse().ok().filter(|&n| n >= 2).ok_or_else(|| {
            crate::usage!("--buffer {text:?}: n must be a whole number of 2 or more")
        })?;
        let compute_ns = if parts[2].chars().any(|c| c.is_ascii_alphabetic()) {
            parse_duration_ns(parts[2])?
        } else {
            let f: f64 = parts[2].parse().map_err(|_| {
                crate::usage!("--buffer {text:?}: c must be a time (2ms) or a fraction of t (0.5)")
            })?;
            if !(0.0..1.0).contains(&f) {
                return Err(crate::usage!(
                    "--buffer {text:?}: a fraction c must be at least 0 and below 1"
                ));
            }
            (period_ns as f64 * f) as u64
        };
        let cfg = BufferConfig {
            period_ns,
            buffers,
            compute_ns,
        };
        if compute_ns >= u64::from(buffers - 1) * period_ns {
            return Err(crate::usage!(
                "--buffer {text:?}: c must be below (n-1)t, or the pipeline can never keep up"
            ));
        }
        Ok(cfg)
    }

    /// t in {1,2,5,10,20} ms by n in {2,3,4}, c = fraction * t.
    pub fn default_table(fraction: f64) -> Vec<BufferConfig> {
        let mut out = Vec::new();
        for ms in DEFAULT_PERIODS_MS {
            for n in DEFAULT_BUFFERS {
                let period_ns = ms * 1_000_000;
                out.push(BufferConfig {
                    period_ns,
                    buffers: n,
                    compute_ns: (period_ns as f64 * fraction) as u64,
                });
            }
        }
        out
    }
}

/// Counts overruns and failures online, in period order; no allocation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BufferTracker {
    pub tolerance_ns: u64,
    pub periods: u64,
    pub overruns: u64,
    pub failures: u64,
    in_run: bool,
}

impl BufferTracker {
    pub fn new(cfg: &BufferConfig) -> BufferTracker {
        BufferTracker {
            tolerance_ns: cfg.tolerance_ns(),
            ..BufferTracker::default()
        }
    }

    #[inline]
    pub fn observe(&mut self, lateness_ns: u64) {
        self.periods += 1;
        if lateness_ns > self.tolerance_ns {
            self.overruns += 1;
            if !self.in_run {
                self.failures += 1;
            }
            self.in_run = true;
        } else {
            self.in_run = false;
        }
    }
}

/// What the model says for one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BufferResult {
    pub period_ms: f64,
    pub buffers: u32,
    pub compute_ms: f64,
    pub tolerance_ms: f64,
    pub periods: u64,
    pub overruns: u64,
    pub failures: u64,
    /// Overruns per period.
    pub p_underrun: f64,
    /// Mean time between failures in seconds, when at least one failure was seen.
    pub mttf_s: Option<f64>,
    /// With no failure: the measured duration, a lower bound on the MTTF.
    pub mttf_more_than_s: Option<f64>,
    /// Human-readable MTTF, never "infinity".
    pub mttf: String,
}

impl BufferResult {
    /// The MTTF as the tables show it, derived once for text and HTML: the time between failures
    /// and the underrun probability per period beside it, or "> the measured duration" with no
    /// failure seen.
    pub fn mttf_shown(&self) -> (String, Option<String>) {
        let seconds = |v: f64| crate::units::format(v, crate::units::Unit::Seconds);
        match self.mttf_s {
            Some(v) => (seconds(v), Some(format!("p {:.1e}", self.p_underrun))),
            None => (
                format!("> {}", seconds(self.mttf_more_than_s.unwrap_or(0.0))),
                None,
            ),
        }
    }
}

/// The mean time to failure of `failures` over `measured_s` seconds: the time, or, with no
/// failure, the measured duration as a lower bound; with the text that says which.
pub fn mttf(failures: u64, measured_s: f64) -> (Option<f64>, Option<f64>, String) {
    let seconds = |s: f64| crate::units::format(s, crate::units::Unit::Seconds);
    if failures > 0 {
        let s = measured_s / failures as f64;
        (Some(s), None, seconds(s))
    } else {
        (
            None,
            Some(measured_s),
            format!("more than {} (measured)", seconds(measured_s)),
        )
    }
}

/// Failures are counted on the measured wake sequence and spread over the measured time: the MTTF
/// is the measured duration divided by the failures. For a pipeline whose period t is longer than
/// the measuring period this is conservative (a stall long enough to underrun it hits every
/// periodic thread, but short spikes between its wakes would not); it never claims more than was
/// observed. With no failure the MTTF is "more than the measured duration".
pub fn evaluate(cfg: &BufferConfig, t: &BufferTracker, measured_ns: u64) -> BufferResult {
    let (mttf_s, more_than, text) = mttf(t.failures, measured_ns as f64 / 1e9);
    BufferResult {
        period_ms: cfg.period_ns as f64 / 1e6,
        buffers: cfg.buffers,
        compute_ms: cfg.compute_ns as f64 / 1e6,
        tolerance_ms: cfg.tolerance_ns() as f64 / 1e6,
        periods: t.periods,
        overruns: t.overruns,
        failures: t.failures,
        p_underrun: if t.periods == 0 {
            0.0
        } else {
            t.overruns as f64 / t.periods as f64
        },
        mttf_s,
        mttf_more_than_s: more_than,
        mttf: text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn run(cfg: &BufferConfig, seq: &[u64]) -> BufferTracker {
        let mut t = BufferTracker::new(cfg);
        for &v in seq {
            t.observe(v);
        }
        t
    }

    #[test]
    fn tolerance_is_n_minus_one_periods_less_compute() {
        let c = BufferConfig::parse("5ms,3,2ms").unwrap();
        assert_eq!(c.tolerance_ns(), 8 * MS);
        let c = BufferConfig::parse("10ms,2,0.5").unwrap();
        assert_eq!(c.compute_ns, 5 * MS);
        assert_eq!(c.tolerance_ns(), 5 * MS);
    }

    #[test]
    fn bad_configurations_are_usage_errors() {
        for bad in [
            "5ms,1,1ms",
            "5ms,2,5ms",
            "5ms,2,1.0",
            "5ms,3",
            "x,3,1ms",
            "5ms,two,1ms",
        ] {
            let e = BufferConfig::parse(bad).unwrap_err();
            assert_eq!(
                crate::error::exit_code(&e),
                crate::error::EXIT_USAGE,
                "{bad}"
            );
        }
    }

    #[test]
    fn default_table_has_fifteen_rows() {
        let t = BufferConfig::default_table(0.5);
        assert_eq!(t.len(), 15);
        assert_eq!(t[0].tolerance_ns(), MS / 2);
        assert_eq!(t[14].tolerance_ns(), 60 * MS - 10 * MS);
    }

    #[test]
    fn a_run_of_overruns_is_one_failure() {
        // t = 1 ms, n = 2, c = 0.5 ms: tolerance 0.5 ms.
        let cfg = BufferConfig::parse("1ms,2,0.5").unwrap();
        let seq = [
            0, 100_000, 600_000, 700_000, 900_000, 0, 500_000, 500_001, 0, 0,
        ];
        let t = run(&cfg, &seq);
        assert_eq!(t.periods, 10);
        assert_eq!(t.overruns, 4);
        assert_eq!(t.failures, 2);
        let r = evaluate(&cfg, &t, 10 * MS);
        assert!((r.p_underrun - 0.4).abs() < 1e-12);
        // 10 periods of 1 ms, two failures: one every 5 ms.
        assert!((r.mttf_s.unwrap() - 0.005).abs() < 1e-12);
        assert!(r.mttf_more_than_s.is_none());
    }

    #[test]
    fn no_failure_says_more_than_the_measured_duration() {
        let cfg = BufferConfig::parse("20ms,4,0.5").unwrap();
        let t = run(&cfg, &[1_000_000; 3000]);
        assert_eq!(t.failures, 0);
        let r = evaluate(&cfg, &t, 3_000 * MS);
        assert!(r.mttf_s.is_none());
        assert_eq!(r.mttf_more_than_s, Some(3.0));
        assert_eq!(r.mttf, "more than 3.00 s (measured)");
        assert!(!r.mttf.contains("inf"));
    }

    #[test]
    fn a_longer_pipeline_period_does_not_stretch_the_mttf_past_what_was_seen() {
        // Measured at 1 ms for 30 s; one 30 ms stall. A 10 ms x 4 pipeline (tolerance 25 ms)
        // fails once: once in 30 s, as observed, not once in 30000 x 10 ms.
        let cfg = BufferConfig::parse("10ms,4,0.5").unwrap();
        let mut seq = vec![10_000u64; 30_000];
        seq[12_345] = 30 * MS;
        let t = run(&cfg, &seq);
        let r = evaluate(&cfg, &t, 30_000 * MS);
        assert_eq!(r.failures, 1);
        assert!((r.mttf_s.unwrap() - 30.0).abs() < 1e-9);
        assert!((r.p_underrun - 1.0 / 30_000.0).abs() < 1e-12);
    }
}
