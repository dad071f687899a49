//! The figures of a latency run, per stream (class/path/CPU): the lateness percentiles, the worst
//! wake per 1 s window, the share of periods later than 100 us, 1 ms and 10 ms, the share of
//! periods missed, and per pipeline of the buffer model the share of periods that would underrun
//! and, where underruns were seen, the mean time between them.
//!
//! Every figure carries a 95 % interval from its own run (see `latency::intervals`): order
//! statistics for a percentile, Wilson's interval for a share, the Poisson interval of the failure
//! count for an MTTF. Where the run recorded its seconds, the percentiles up to p99 and the shares
//! over the thresholds have one repetition per second, so `compare` tests two runs second against
//! second; the tail percentiles, the missed share and the buffer model stay one value a side,
//! which `compare` judges by the two sides' intervals.
//! Stages and the really computed pipeline add theirs (`inside`).

use crate::latency::accounting::WindowSummary;
use crate::latency::document::{LatencyDoc, StreamDoc};
use crate::latency::intervals::{mttf, quantile_interval, wilson};
use crate::latency::seconds::{SecondStats, OVER_NS};
use crate::results::figure::{Direction, Evidence, Figure, Role};
use crate::units::Unit;

fn single(key: String, unit: Unit, direction: Direction, value: f64) -> Figure {
    Figure {
        evidence: Evidence::Rounds(vec![vec![value]]),
        role: Role::Other,
        ..Figure::exact(key, "latency", unit, direction, value)
    }
}

/// One round per second, when the run has whole seconds.
fn per_second(seconds: &[SecondStats], value: impl Fn(&SecondStats) -> f64) -> Option<Evidence> {
    (!seconds.is_empty())
        .then(|| Evidence::Rounds(seconds.iter().map(|s| vec![value(s)]).collect()))
}

/// The quantile a percentile name stands for.
fn quantile(name: &str) -> Option<f64> {
    match name {
        "p50" => Some(0.5),
        "p90" => Some(0.9),
        "p99" => Some(0.99),
        "p99.9" => Some(0.999),
        "p99.99" => Some(0.9999),
        _ => None,
    }
}

/// "100us", "1ms", "10ms".
fn threshold_name(ns: u64) -> String {
    if ns >= 1_000_000 && ns % 1_000_000 == 0 {
        format!("{}ms", ns / 1_000_000)
    } else {
        format!("{}us", ns / 1_000)
    }
}

fn percentile_figures(s: &StreamDoc, name: &str, out: &mut Vec<Figure>) {
    let buckets = &s.histogram_corrected.buckets;
    for (p, ns) in s.corrected.percentiles() {
        let by_second: Option<fn(&SecondStats) -> f64> = match p {
            "p50" => Some(|x| x.p50_ns as f64),
            "p90" => Some(|x| x.p90_ns as f64),
            "p99" => Some(|x| x.p99_ns as f64),
            _ => None,
        };
        let mut f = single(
            format!("{name} {p}"),
            Unit::Nanoseconds,
            Direction::Lower,
            ns as f64,
        );
        f.interval = quantile(p).and_then(|q| quantile_interval(buckets, q));
        if let Some(e) = by_second.and_then(|v| per_second(&s.seconds, v)) {
            f.evidence = e;
        }
        out.push(f);
    }
}

fn over_figures(s: &StreamDoc, name: &str, out: &mut Vec<Figure>) {
    let periods: u64 = s.seconds.iter().map(|x| u64::from(x.periods)).sum();
    if periods == 0 {
        return;
    }
    for (i, &t) in OVER_NS.iter().enumerate() {
        let over: u64 = s.seconds.iter().map(|x| u64::from(x.over[i])).sum();
        let mut f = single(
            format!("{name} over {}", threshold_name(t)),
            Unit::Ratio,
            Direction::Lower,
            over as f64 / periods as f64,
        );
        f.interval = wilson(over, periods);
        if let Some(e) = per_second(&s.seconds, |x| {
            f64::from(x.over[i]) / f64::from(x.periods.max(1))
        }) {
            f.evidence = e;
        }
        out.push(f);
    }
}

/// The median of the worst wake of each second, with one round per second.
fn worst_per_second(windows: &[WindowSummary], key: String) -> Option<Figure> {
    let w = windows
        .iter()
        .find(|w| w.window == "1s" && !w.maxima_ns.is_empty())?;
    Some(Figure {
        evidence: Evidence::Rounds(w.maxima_ns.iter().map(|&m| vec![m as f64]).collect()),
        ..single(key, Unit::Nanoseconds, Direction::Lower, w.p50_ns as f64)
    })
}

fn stream_figures(s: &StreamDoc, out: &mut Vec<Figure>) {
    let name = s.label();
    percentile_figures(s, &name, out);
    out.extend(worst_per_second(&s.windows, format!("{name} worst-per-1s")));
    over_figures(s, &name, out);
    inside::figures(s, &name, out);
    if s.periods > 0 {
        out.push(Figure {
            interval: wilson(s.missed, s.periods),
            ..single(
                format!("{name} missed"),
                Unit::Ratio,
                Direction::Lower,
                s.missed as f64 / s.periods as f64,
            )
        });
    }
    for b in &s.buffers {
        let pipeline = format!("t={}ms n={} c={}ms", b.period_ms, b.buffers, b.compute_ms);
        out.push(Figure {
            interval: wilson(b.overruns, b.periods),
            ..single(
                format!("{name} underrun {pipeline}"),
                Unit::Ratio,
                Direction::Lower,
                b.p_underrun,
            )
        });
        if let Some(m) = b.mttf_s {
            out.push(Figure {
                interval: mttf(b.failures, s.measured_s),
                ..single(
                    format!("{name} mttf {pipeline}"),
                    Unit::Seconds,
                    Direction::Higher,
                    m,
                )
            });
        }
    }
}

pub fn figures(doc: &LatencyDoc) -> Vec<Figure> {
    let mut out = Vec::new();
    for s in doc.streams.iter().filter(|s| s.error.is_none()) {
        stream_figures(s, &mut out);
    }
    out
}

mod inside;
#[cfg(test)]
mod tests;

impl crate::results::document::Document for LatencyDoc {
    const KIND: crate::results::model::RunKind = crate::results::model::RunKind::Latency;

    fn figures(&self) -> Vec<Figure> {
        figures(self)
    }

    /// Classes this machine would not run, and streams that failed.
    fn unmeasured(&self) -> Vec<crate::results::figure::Unmeasured> {
        use crate::results::figure::Unmeasured;
        use crate::results::model::Status;
        let skipped = self.skipped.iter().map(|k| Unmeasured {
            key: k.class.as_str().to_string(),
            status: Status::Skipped,
            reason: k.reason.clone(),
        });
        let failed = self.streams.iter().filter_map(|s| {
            Some(Unmeasured {
                key: s.label(),
                status: Status::Failed,
                reason: s.error.clone()?,
            })
        });
        skipped.chain(failed).collect()
    }

    fn how(&self) -> String {
        let loads: Vec<&str> = self.loads.iter().map(|l| l.load.as_str()).collect();
        format!(
            "period {}, {} s, {} streams, load {}",
            crate::units::format(self.period_ns as f64, Unit::Nanoseconds),
            crate::units::number(self.measured_s),
            self.streams.len(),
            if loads.is_empty() {
                "none".to_string()
            } else {
                loads.join(", ")
            }
        )
    }

    fn text(&self) -> String {
        crate::latency::text::render(self)
    }

    fn timeline(&self) -> Result<crate::results::timeline::Timeline, String> {
        crate::latency::timeline::timeline(self)
    }
}
