//! The figures of a latency run, per stream (class/path/CPU): the lateness percentiles, the worst
//! wake per 1 s window (whose windows are its repetitions), the share of periods missed, and per
//! pipeline of the buffer model the share of periods that would underrun and, where underruns
//! were seen, the mean time between them.

use super::{Direction, Evidence, Figure, Role};
use crate::latency::document::{LatencyDoc, StreamDoc};
use crate::units::Unit;

fn single(key: String, unit: Unit, direction: Direction, value: f64) -> Figure {
    Figure {
        evidence: Evidence::Rounds(vec![vec![value]]),
        role: Role::Other,
        ..Figure::exact(key, "latency", unit, direction, value)
    }
}

fn stream_figures(s: &StreamDoc, out: &mut Vec<Figure>) {
    let name = s.label();
    for (p, ns) in s.corrected.percentiles() {
        out.push(single(
            format!("{name} {p}"),
            Unit::Nanoseconds,
            Direction::Lower,
            ns as f64,
        ));
    }
    if let Some(w) = s.windows.iter().find(|w| w.window == "1s") {
        if !w.maxima_ns.is_empty() {
            out.push(Figure {
                evidence: Evidence::Rounds(w.maxima_ns.iter().map(|&m| vec![m as f64]).collect()),
                ..single(
                    format!("{name} worst-per-1s"),
                    Unit::Nanoseconds,
                    Direction::Lower,
                    w.p50_ns as f64,
                )
            });
        }
    }
    if s.periods > 0 {
        out.push(single(
            format!("{name} missed"),
            Unit::Ratio,
            Direction::Lower,
            s.missed as f64 / s.periods as f64,
        ));
    }
    for b in &s.buffers {
        let pipeline = format!("t={}ms n={} c={}ms", b.period_ms, b.buffers, b.compute_ms);
        out.push(single(
            format!("{name} underrun {pipeline}"),
            Unit::Ratio,
            Direction::Lower,
            b.p_underrun,
        ));
        if let Some(mttf) = b.mttf_s {
            out.push(single(
                format!("{name} mttf {pipeline}"),
                Unit::Seconds,
                Direction::Higher,
                mttf,
            ));
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
