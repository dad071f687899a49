//! The memsim section's two line charts: miss-ratio curves (`memsim --curve`: misses of one cache
//! at every power-of-two size, all references and user and kernel apart) and miss rates over the
//! trace (`memsim --interval N`: MCPI of every N references, user and system stacked as in the
//! machine table, and the first-level miss rates of the same intervals, so phases of a workload
//! show).

use crate::memsim::curve::{CurvePoint, CurveResult};
use crate::memsim::document::MemsimDoc;
use crate::memsim::interval::{IntervalPoint, IntervalResult};
use crate::results::fingerprint::text::bytes;
use crate::results::report::html::{esc, figure, note};
use crate::results::report::plot::{color, Axis, LegendItem};
use crate::results::report::plot::{line_chart, AxisText};
use crate::results::report::Context;
use crate::units::Unit;
use anyhow::Result;
use plotters::prelude::*;

/// A chart draws at most this many points per line; longer interval series are averaged in
/// buckets (weighted by instructions), which keeps the page small and the phases visible.
const MAX_POINTS: usize = 600;

struct Line {
    name: String,
    color: RGBColor,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

struct Chart<'a> {
    x: Axis,
    y: Axis,
    x_desc: &'a str,
    y_desc: &'a str,
    x_label: &'a dyn Fn(f64) -> String,
    y_label: &'a dyn Fn(f64) -> String,
}

fn draw(chart: &Chart, lines: &[Line]) -> Result<String> {
    let items: Vec<LegendItem> = lines
        .iter()
        .map(|l| LegendItem::boxed(l.name.clone(), l.color))
        .collect();
    let (x, y) = (&chart.x, &chart.y);
    let x_label = |v: f64| (chart.x_label)(v).replace(' ', "\u{a0}");
    let text = AxisText {
        x_label: &x_label,
        y_label: chart.y_label,
        x_desc: chart.x_desc,
        y_desc: chart.y_desc,
    };
    line_chart(380, &items, (x, y), 72, &text, |c| {
        for l in lines {
            let pts: Vec<(f64, f64)> = l.points.iter().map(|&(a, b)| (x.to(a), y.to(b))).collect();
            if l.dashed {
                c.draw_series(DashedLineSeries::new(
                    pts.clone(),
                    7,
                    4,
                    l.color.stroke_width(2),
                ))?;
            } else {
                c.draw_series(LineSeries::new(pts.clone(), l.color.stroke_width(2)))?;
            }
            if pts.len() <= 40 {
                c.draw_series(pts.iter().map(|&p| Circle::new(p, 3, l.color.filled())))?;
            }
        }
        Ok(())
    })
}

fn percent_label(v: f64) -> String {
    format!("{} %", crate::results::report::plot::compact(v))
}

fn prefix(ctx: &Context, run: usize, several: bool) -> String {
    if several {
        format!("{}: ", ctx.run_label(run))
    } else {
        String::new()
    }
}

fn curve_line(name: String, c: RGBColor, dashed: bool, points: &[CurvePoint]) -> Line {
    Line {
        name,
        color: c,
        dashed,
        points: points
            .iter()
            .map(|p| (p.size as f64, 100.0 * p.miss_rate))
            .collect(),
    }
}

fn curve_chart(curve: &CurveResult) -> Result<String> {
    let lines = [
        curve_line("all references".into(), color(0), false, &curve.points),
        curve_line("user".into(), color(1), true, &curve.user),
        curve_line("kernel".into(), color(3), true, &curve.kernel),
    ];
    let lines: Vec<Line> = lines.into_iter().filter(|l| !l.points.is_empty()).collect();
    let sizes = || lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let x = Axis::log2(
        sizes().fold(f64::INFINITY, f64::min),
        sizes().fold(0.0, f64::max),
    );
    let y = Axis::for_values(
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
        f64::INFINITY,
    );
    let x_label = |v: f64| bytes(v.round() as u64);
    draw(
        &Chart {
            x,
            y,
            x_desc: "cache size (base-2 logarithmic axis)",
            y_desc: "misses per line access",
            x_label: &x_label,
            y_label: &percent_label,
        },
        &lines,
    )
}

/// Consecutive intervals merged into at most MAX_POINTS: MCPI (user, system, total) and the
/// instruction cache's miss rate weighted by instructions, the data cache's miss rate by the other
/// references (the accesses each rate divides by, but for references that cross a line).
fn bucketed(points: &[IntervalPoint]) -> Vec<(f64, [f64; 5])> {
    let per = points.len().div_ceil(MAX_POINTS).max(1);
    points
        .chunks(per)
        .map(|chunk| {
            let instr: f64 = chunk.iter().map(|p| p.instructions as f64).sum();
            let weight = |p: &IntervalPoint| {
                if instr > 0.0 {
                    p.instructions as f64 / instr
                } else {
                    1.0 / chunk.len() as f64
                }
            };
            let data = |p: &IntervalPoint| p.references.saturating_sub(p.instructions) as f64;
            let all_data: f64 = chunk.iter().map(data).sum();
            let mut m = [0.0; 5];
            for p in chunk {
                let w = weight(p);
                m[0] += w * p.mcpi.user;
                m[1] += w * p.mcpi.system;
                m[2] += w * p.mcpi.total;
                m[3] += w * p.l1i_miss_rate;
                m[4] += if all_data > 0.0 {
                    data(p) / all_data
                } else {
                    1.0 / chunk.len() as f64
                } * p.l1d_miss_rate;
            }
            (chunk[0].first as f64, m)
        })
        .collect()
}

/// What an interval chart draws: MCPI or first-level miss rates.
#[derive(Clone, Copy, PartialEq)]
enum IntervalView {
    Mcpi,
    MissRates,
}

fn interval_chart(result: &IntervalResult, view: IntervalView) -> Result<String> {
    let pts = bucketed(&result.intervals);
    let line = |name: &str, c: usize, dashed: bool, i: usize, scale: f64| Line {
        name: name.into(),
        color: color(c),
        dashed,
        points: pts.iter().map(|(x, m)| (*x, scale * m[i])).collect(),
    };
    let lines = match view {
        IntervalView::Mcpi => vec![
            line("total MCPI", 0, false, 2, 1.0),
            line("user part", 1, true, 0, 1.0),
            line("system part", 3, true, 1, 1.0),
        ],
        IntervalView::MissRates => vec![
            line("l1i miss rate", 2, false, 3, 100.0),
            line("l1d miss rate", 4, false, 4, 100.0),
        ],
    };
    let last = result
        .intervals
        .last()
        .map_or(1.0, |p| (p.first + p.references) as f64);
    let x = Axis {
        scale: crate::results::report::plot::Scale::Linear,
        lo: 0.0,
        hi: last.max(1.0),
    };
    let y = Axis::for_values(
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
        f64::INFINITY,
    );
    let x_label = crate::results::report::plot::count_label;
    let mcpi_label = |v: f64| crate::results::report::plot::compact(v);
    let (y_desc, y_label): (_, &dyn Fn(f64) -> String) = match view {
        IntervalView::Mcpi => ("memory cycles per instruction", &mcpi_label),
        IntervalView::MissRates => ("misses per first-level access", &percent_label),
    };
    draw(
        &Chart {
            x,
            y,
            x_desc: "references into the trace",
            y_desc,
            x_label: &x_label,
            y_label,
        },
        &lines,
    )
}

/// Both kinds of chart for every run that asked for them; empty when none did.
pub fn render(ctx: &Context, docs: &[(usize, &MemsimDoc)]) -> Result<String> {
    let several = docs.len() > 1;
    let mut out = String::new();
    for &(r, d) in docs {
        for curve in &d.curves {
            out.push_str(&format!(
                "<h3>{}Miss-ratio curve {}</h3>\n",
                esc(&prefix(ctx, r, several)),
                esc(&curve.spec)
            ));
            if curve.points.is_empty() {
                out.push_str(&note(
                    "The curve has no points: the trace had no accesses this cache sees.",
                ));
                continue;
            }
            let assoc = if curve.assoc == 0 {
                "fully associative".to_string()
            } else {
                format!("{}-way", curve.assoc)
            };
            out.push_str(&figure(
                &curve_chart(curve)?,
                &format!(
                    "<b>Misses against cache size.</b> LRU, {assoc}, {} B lines, {} addresses, \
                     every size from one pass over the trace. The solid line counts all {} line \
                     accesses; the dashed ones count user and kernel accesses apart (each over its \
                     own accesses) in the same shared cache, so a kernel line above the user line \
                     means the kernel needs more cache for the same miss rate.",
                    curve.line,
                    if curve.physical {
                        "physical"
                    } else {
                        "virtual"
                    },
                    curve.accesses.user + curve.accesses.kernel
                ),
            ));
        }
        for result in d.intervals.iter().filter(|i| !i.intervals.is_empty()) {
            out.push_str(&format!(
                "<h3>{}MCPI over the trace: {}</h3>\n",
                esc(&prefix(ctx, r, several)),
                esc(&result.machine)
            ));
            let merged = result.intervals.len().div_ceil(MAX_POINTS);
            let merged = if merged > 1 {
                format!(
                    " Every point merges {merged} consecutive intervals, weighted by instructions."
                )
            } else {
                String::new()
            };
            let every = crate::units::format(result.every as f64, Unit::Count);
            out.push_str(&figure(
                &interval_chart(result, IntervalView::Mcpi)?,
                &format!(
                    "<b>Memory cycles per instruction every {every} references.</b> User and \
                     system parts divide by all instructions of the interval, so they add up to \
                     the total; a rise of one of them marks a phase of the workload.{merged}"
                ),
            ));
            out.push_str(&format!(
                "<h3>{}Miss rates over the trace: {}</h3>\n",
                esc(&prefix(ctx, r, several)),
                esc(&result.machine)
            ));
            out.push_str(&figure(
                &interval_chart(result, IntervalView::MissRates)?,
                &format!(
                    "<b>First-level miss rates every {every} references.</b> Misses of the \
                     instruction and data caches over their own accesses in the interval, user \
                     and system together; the phases that raise the MCPI above show here as the \
                     cache that causes them.{merged}"
                ),
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsim::interval::IntervalMcpi;

    fn interval(first: u64, instructions: u64, user: f64, system: f64) -> IntervalPoint {
        let odd = (first / 100) % 2 == 1;
        IntervalPoint {
            first,
            references: 100,
            instructions,
            system_instructions: 0,
            mcpi: IntervalMcpi {
                user,
                system,
                total: user + system,
            },
            l1i_miss_rate: if odd { 0.3 } else { 0.1 },
            l1d_miss_rate: if odd { 0.4 } else { 0.2 },
        }
    }

    #[test]
    fn buckets_weigh_by_instructions_and_keep_short_series() {
        let short: Vec<_> = (0..10).map(|i| interval(i * 100, 50, 0.1, 0.2)).collect();
        assert_eq!(bucketed(&short).len(), 10);
        let long: Vec<_> = (0..(MAX_POINTS as u64 * 2))
            .map(|i| {
                if i % 2 == 0 {
                    interval(i * 100, 30, 1.0, 0.0)
                } else {
                    interval(i * 100, 10, 0.0, 1.0)
                }
            })
            .collect();
        let b = bucketed(&long);
        assert_eq!(b.len(), MAX_POINTS);
        assert_eq!(
            b[1].0, 200.0,
            "a bucket starts where its first interval does"
        );
        let [user, system, total, l1i, l1d] = b[0].1;
        assert!((user - 0.75).abs() < 1e-12 && (system - 0.25).abs() < 1e-12);
        assert!((total - 1.0).abs() < 1e-12);
        // Interval 0: 30 instructions, 70 data references, rates 0.1 and 0.2; interval 1: 10
        // and 90, rates 0.3 and 0.4.
        assert!((l1i - (0.75 * 0.1 + 0.25 * 0.3)).abs() < 1e-12, "{l1i}");
        assert!(
            (l1d - (70.0 * 0.2 + 90.0 * 0.4) / 160.0).abs() < 1e-12,
            "{l1d}"
        );
    }
}
