//! The memory-hierarchy curve: load latency against the footprint walked, on a base-2 axis, one line
//! per access pattern and run, with the cache sizes of the fingerprint marked so the steps can be
//! read against them.

use super::html::{esc, figure, note, num, table, Cell, Row};
use super::plot::{color, line_chart, Axis, AxisText, LegendItem, Scale, Swatch, FONT};
use super::{Context, Section};
use crate::results::fingerprint::text::bytes;
use crate::results::model::{Measurement, Status, Unit};
use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub const PROBE: &str = "memory.latency";

pub struct MemoryCurve;

/// One point of the curve: footprint in bytes, median and interval in ns.
#[derive(Debug, Clone, Copy)]
struct Point {
    size: f64,
    median: f64,
    ci: [f64; 2],
}

struct Series {
    run: usize,
    run_label: String,
    pattern: String,
    dashed: bool,
    /// Colour: by run when several runs share the plot, else by pattern.
    color: RGBColor,
    points: Vec<Point>,
}

/// The curve a figure belongs to and its point, or why it cannot be placed (a parameter the probe
/// always writes is missing or of another type, or the footprint is zero).
fn point_of(m: &Measurement, median: f64, ci: [f64; 2]) -> Result<(String, Point)> {
    let size = m.u64_param("size")?;
    if size == 0 {
        anyhow::bail!(
            "{}: a footprint of 0 bytes has no place on the axis",
            m.label()
        );
    }
    let mut pattern = m.str_param("pattern")?.to_string();
    // A walk on base pages is another curve than the same walk on 2 MiB pages.
    if m.params.get("pages").and_then(|v| v.as_str()) == Some("base") {
        pattern.push_str(", base pages");
    }
    let point = Point {
        size: size as f64,
        median,
        ci,
    };
    Ok((pattern, point))
}

/// The curves of every run, and the figures left out of them with the reason.
fn series(ctx: &Context) -> (Vec<Series>, Vec<String>) {
    let mut out = Vec::new();
    let mut left_out = Vec::new();
    for (r, run) in ctx.runs.iter().enumerate() {
        let mut patterns: Vec<String> = Vec::new();
        let mut points: Vec<(String, Point)> = Vec::new();
        let measured = run
            .measurements
            .iter()
            .filter(|m| m.probe == PROBE && m.status == Status::Ok);
        for m in measured {
            let Some(s) = m.summary.as_ref().filter(|s| s.median > 0.0) else {
                continue;
            };
            match point_of(m, s.median, s.ci95) {
                Ok(point) => points.push(point),
                Err(why) => left_out.push(format!("{}: {why:#}", ctx.run_label(r))),
            }
        }
        for (pat, _) in &points {
            if !patterns.contains(pat) {
                patterns.push(pat.clone());
            }
        }
        for (pi, pat) in patterns.into_iter().enumerate() {
            let mut pts: Vec<Point> = points
                .iter()
                .filter(|(p, _)| *p == pat)
                .map(|(_, pt)| *pt)
                .collect();
            pts.sort_by(|a, b| a.size.total_cmp(&b.size));
            out.push(Series {
                run: r,
                run_label: ctx.run_label(r),
                dashed: pat.contains("random"),
                color: color(if ctx.runs.len() > 1 { r } else { pi }),
                pattern: pat,
                points: pts,
            });
        }
    }
    (out, left_out)
}

/// Cache sizes to mark: (label, bytes), one per distinct value over the runs.
fn caches(ctx: &Context) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for name in ["L1d", "L2", "L3"] {
        let mut seen: Vec<(u64, Vec<usize>)> = Vec::new();
        for (r, run) in ctx.runs.iter().enumerate() {
            let size = run.fingerprint.as_ref().and_then(|f| {
                f.cache_sizes()
                    .into_iter()
                    .find(|(label, _)| *label == name)
                    .map(|(_, bytes)| bytes)
            });
            if let Some(b) = size {
                match seen.iter_mut().find(|(v, _)| *v == b) {
                    Some((_, runs)) => runs.push(r),
                    None => seen.push((b, vec![r])),
                }
            }
        }
        let differ = seen.len() > 1;
        for (b, runs) in seen {
            let mut label = format!("{name} {}", bytes(b));
            if differ {
                let who: Vec<String> = runs.iter().map(|r| format!("R{}", r + 1)).collect();
                label.push_str(&format!(" ({})", who.join(",")));
            }
            out.push((label, b as f64));
        }
    }
    out
}

/// One run: an entry per pattern in its own colour and line. Several runs: an entry per run (its
/// colour) and one per pattern (its line style), rather than every combination.
fn legend_items(all: &[Series]) -> Vec<LegendItem> {
    let swatch = |s: &Series| {
        if s.dashed {
            Swatch::Dashed
        } else {
            Swatch::Line
        }
    };
    let several = all.iter().any(|s| s.run != all[0].run);
    if !several {
        return all
            .iter()
            .map(|s| LegendItem {
                name: s.pattern.clone(),
                color: s.color,
                swatch: swatch(s),
            })
            .collect();
    }
    let mut items: Vec<LegendItem> = Vec::new();
    let mut runs_seen: Vec<usize> = Vec::new();
    for s in all {
        if !runs_seen.contains(&s.run) {
            runs_seen.push(s.run);
            items.push(LegendItem::boxed(s.run_label.clone(), s.color));
        }
    }
    let mut patterns_seen: Vec<&str> = Vec::new();
    for s in all {
        if !patterns_seen.contains(&s.pattern.as_str()) {
            patterns_seen.push(&s.pattern);
            items.push(LegendItem {
                name: s.pattern.clone(),
                color: RGBColor(90, 90, 90),
                swatch: swatch(s),
            });
        }
    }
    items
}

fn plot(all: &[Series], marks: &[(String, f64)]) -> Result<(String, Axis)> {
    let pts = || all.iter().flat_map(|s| s.points.iter());
    let min = pts().map(|p| p.size).fold(f64::INFINITY, f64::min);
    let max = pts().map(|p| p.size).fold(0.0, f64::max);
    let x = Axis::log2(min, max);
    let y = Axis::for_values(pts().flat_map(|p| [p.median, p.ci[0], p.ci[1]]), 10.0);
    let items = legend_items(all);
    let x_label = |v: f64| bytes(v.round() as u64).replace(' ', "\u{a0}");
    let y_label = |v: f64| y.tick_label(v, Unit::Nanoseconds);
    let axes = AxisText {
        x_label: &x_label,
        y_label: &y_label,
        x_desc: "footprint walked (bytes, base-2 logarithmic axis)",
        y_desc: if y.scale == Scale::Log10 {
            "time per load (logarithmic)"
        } else {
            "time per load"
        },
    };
    let text = line_chart(500, &items, (&x, &y), 72, &axes, |chart| {
        let y_top = y.range().end;
        let mark_style = (FONT, 12)
            .into_font()
            .color(&RGBColor(90, 90, 90))
            .pos(Pos::new(HPos::Left, VPos::Top));
        for (label, b) in marks.iter().filter(|(_, b)| *b >= x.lo && *b <= x.hi) {
            let t = x.to(*b);
            chart.draw_series(DashedLineSeries::new(
                [(t, y.range().start), (t, y_top)],
                6,
                4,
                RGBColor(120, 120, 120).stroke_width(1),
            ))?;
            chart.draw_series(std::iter::once(
                EmptyElement::at((t, y_top)) + Text::new(label.clone(), (4, 4), mark_style.clone()),
            ))?;
        }
        for s in all {
            let c = s.color;
            let line: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|p| (x.to(p.size), y.to(p.median)))
                .collect();
            if s.dashed {
                chart.draw_series(DashedLineSeries::new(line.clone(), 8, 5, c.stroke_width(2)))?;
            } else {
                chart.draw_series(LineSeries::new(line.clone(), c.stroke_width(2)))?;
            }
            chart.draw_series(s.points.iter().map(|p| {
                ErrorBar::new_vertical(
                    x.to(p.size),
                    y.to(p.ci[0]),
                    y.to(p.median),
                    y.to(p.ci[1]),
                    c.filled().stroke_width(1),
                    7,
                )
            }))?;
        }
        Ok(())
    })?;
    Ok((text, y))
}

/// The points under the plot: one table per run, a row per footprint, a column per pattern.
fn points_table(ctx: &Context, all: &[Series]) -> String {
    let mut out = String::from("<div class=\"grid\">\n");
    for r in 0..ctx.runs.len() {
        let mine: Vec<&Series> = all.iter().filter(|s| s.run == r).collect();
        if mine.is_empty() {
            continue;
        }
        let mut sizes: Vec<f64> = mine
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.size))
            .collect();
        sizes.sort_by(f64::total_cmp);
        sizes.dedup();
        let header: Vec<String> = std::iter::once("footprint".to_string())
            .chain(mine.iter().map(|s| format!("{} (ns, 95 % CI)", s.pattern)))
            .collect();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let rows: Vec<Row> = sizes
            .iter()
            .map(|size| Row {
                class: "",
                cells: std::iter::once(Cell::num(bytes(*size as u64)))
                    .chain(mine.iter().map(|s| {
                        Cell::num(
                            s.points
                                .iter()
                                .find(|p| p.size == *size)
                                .map(|p| {
                                    format!(
                                        "{} ({} – {})",
                                        num(p.median),
                                        num(p.ci[0]),
                                        num(p.ci[1])
                                    )
                                })
                                .unwrap_or_default(),
                        )
                    }))
                    .collect(),
            })
            .collect();
        out.push_str("<div>\n");
        if ctx.runs.len() > 1 {
            out.push_str(&format!("<h3>Points of {}</h3>\n", esc(&ctx.run_label(r))));
        } else {
            out.push_str("<h3>Points</h3>\n");
        }
        out.push_str(&table("points", &header, &rows));
        out.push_str("</div>\n");
    }
    out.push_str("</div>\n");
    out
}

/// Above this many runs the point tables would bury the page; the plot and the exports have them.
const MAX_POINT_TABLES: usize = 4;

impl Section for MemoryCurve {
    fn id(&self) -> &'static str {
        "memory-latency"
    }
    fn title(&self) -> &'static str {
        "Memory hierarchy: load latency by footprint"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        if !ctx.has_kind(crate::results::model::RunKind::Run) {
            return Ok(None);
        }
        let (all, left_out) = series(ctx);
        let left_out = if left_out.is_empty() {
            String::new()
        } else {
            note(&format!("Left out of the curve: {}.", left_out.join("; ")))
        };
        if all.iter().all(|s| s.points.is_empty()) {
            return Ok(Some(
                note(&format!(
                    "These runs have no {PROBE} figures; `osmeter run {PROBE}` measures them."
                )) + &left_out,
            ));
        }
        let marks = caches(ctx);
        let (svg, y) = plot(&all, &marks)?;
        let y_scale = if y.scale == Scale::Log10 {
            "logarithmic, since the latencies span more than ten times"
        } else {
            "linear from zero"
        };
        let marks_text = if marks.is_empty() {
            " The fingerprint gives no cache sizes, so none are marked.".to_string()
        } else {
            " Dashed grey verticals mark the cache sizes from the fingerprint: latency should \
             step up just past each one, once the footprint no longer fits."
                .to_string()
        };
        let tables = if ctx.runs.len() <= MAX_POINT_TABLES {
            points_table(ctx, &all)
        } else {
            note(&format!(
                "With {} runs the points are not tabulated here; `osmeter show RUN --json` \
                 lists them.",
                ctx.runs.len()
            ))
        };
        Ok(Some(
            figure(
                &svg,
                &format!(
                    "<b>Load latency against footprint.</b> Each point is the median time of one \
                 dependent load while walking a buffer of that size; the whisker is its 95&nbsp;% \
                 confidence interval. The x axis doubles at each step; the y axis is {y_scale}. \
                 The 128-byte stride is lmbench's walk, in address order: the prefetchers run \
                 ahead of it, so its curve stays lower than the random walk, which shows the full \
                 latency of each level.{marks_text}"
                ),
            ) + &tables
                + &left_out,
        ))
    }
}
