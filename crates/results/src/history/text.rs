//! A figure's history as a table for people: one line per run, a rule where the figure changed,
//! then each stretch's level with its interval. Every value of a table is in one scale, chosen from
//! the median run, so the column reads down.

use super::{FigureHistory, Move};
use crate::results::figure::Direction;
use crate::text::escape_controls;
use crate::units::{self, in_scale};
use std::fmt::Write;

/// The host of a point as one cell: another host's name may hold anything (see [`crate::text`]).
fn host_shown(p: &super::Point) -> std::borrow::Cow<'_, str> {
    escape_controls(p.host.as_deref().unwrap_or("-"))
}

pub fn render(h: &FigureHistory) -> String {
    let mut out = String::new();
    let better = match h.direction {
        Direction::Lower => "lower is better",
        Direction::Higher => "higher is better",
    };
    let _ = writeln!(
        out,
        "{} over {} run{} ({}, {better}) in {}",
        h.figure,
        h.points.len(),
        if h.points.len() == 1 { "" } else { "s" },
        h.unit,
        h.store
    );
    let mut sorted: Vec<f64> = h.points.iter().map(|p| p.value).collect();
    sorted.sort_by(f64::total_cmp);
    let scale = h
        .unit
        .scale_for(sorted.get(sorted.len() / 2).copied().unwrap_or(0.0));
    let v = |x: f64| in_scale(x, scale);
    let id_width = h
        .points
        .iter()
        .map(|p| p.run.len())
        .max()
        .unwrap_or(3)
        .max(3);
    let host_width = h
        .points
        .iter()
        .map(|p| host_shown(p).chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    // As wide as the values shown, so that a row fits 80 columns.
    let value_width = h
        .points
        .iter()
        .map(|p| v(p.value).chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    let _ = writeln!(
        out,
        "\n{:>4}  {:<id_width$}  {:<20}  {:<host_width$}  {:>value_width$}  95 % interval",
        "#", "run", "started", "host", "value"
    );
    for (i, p) in h.points.iter().enumerate() {
        if let Some(c) = h.changes.iter().find(|c| c.index == i) {
            let word = match c.moved {
                Move::Slower => "slower",
                Move::Faster => "faster",
            };
            let _ = writeln!(
                out,
                "{:>4}  ---- changed: {} -> {} ({:+.1} %, {word}; p {}) ----",
                "",
                v(c.before),
                v(c.after),
                (c.after / c.before - 1.0) * 100.0,
                units::compact(c.p_value)
            );
        }
        let interval = p
            .interval
            .map(|[lo, hi]| format!("{} .. {}", v(lo), v(hi)))
            .unwrap_or_else(|| "-".to_string());
        let _ = writeln!(
            out,
            "{:>4}  {:<id_width$}  {:<20}  {:<host_width$}  {:>value_width$}  {interval}",
            i + 1,
            p.run,
            escape_controls(&p.started_at),
            host_shown(p),
            v(p.value),
        );
    }
    let _ = writeln!(
        out,
        "\nStretches between changes (level: median of the runs):"
    );
    for s in &h.segments {
        let _ = writeln!(
            out,
            "  runs {:>3}-{:<3}  {:>12}  interval {} .. {} ({} coverage{})",
            s.start + 1,
            s.end,
            v(s.level),
            v(s.interval[0]),
            v(s.interval[1]),
            units::percent(s.coverage),
            if s.coverage < 0.95 {
                ", too few runs for 95 %"
            } else {
                ""
            }
        );
    }
    let m = &h.method;
    let _ = writeln!(
        out,
        "\n{} change point{} found by {}{} (permutation p < {} over {} shuffles, at least {} runs \
         a side).",
        h.changes.len(),
        if h.changes.len() == 1 { "" } else { "s" },
        m.name,
        if m.ranks {
            " on the ranks of the values"
        } else {
            ""
        },
        m.significance,
        m.permutations,
        m.min_runs
    );
    if h.points.len() < 2 * m.min_runs {
        let _ = writeln!(
            out,
            "Too few runs to find a change: it takes {} ({} on either side).",
            2 * m.min_runs,
            m.min_runs
        );
    }
    if h.runs_without_figure > 0 {
        let _ = writeln!(
            out,
            "{} matching run{} do{} not state this figure.",
            h.runs_without_figure,
            if h.runs_without_figure == 1 { "" } else { "s" },
            if h.runs_without_figure == 1 { "es" } else { "" }
        );
    }
    for l in &h.left_out {
        let _ = writeln!(
            out,
            "Left out: run {}: {}.",
            escape_controls(&l.run),
            escape_controls(&l.reason)
        );
    }
    out
}
