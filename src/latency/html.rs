//! Wakeup latency (`osmeter latency`, the run's "latency" section): the lateness histogram of every
//! class/path stream on log-log axes, a table of its percentiles and worst cases, and the buffer
//! model's mean time to underrun for each pipeline configuration.
//!
//! The stored histogram has 128 buckets per octave, far finer than a plot can show: the buckets are
//! summed into quarter-octave bins (their edges fall on stored bucket edges, so no count is split),
//! and each bin's height is its share of all periods, which on a logarithmic x axis is a density.

use crate::latency::buffer::BufferResult;
use crate::latency::document::{Estimate, LatencyDoc, StreamDoc, LATENCY_SCHEMA};
use crate::results::model::Unit;
use crate::results::report::html::{esc, figure, note, num, table, value, Cell, Row};
use crate::results::report::plot::{
    color, legend, legend_height, svg, Axis, LegendItem, Scale, Swatch, Ticked,
};
use crate::results::report::plot::{compact, FONT, WIDTH};
use crate::results::report::plot::{line_chart, AxisText};
use crate::results::report::{Context, Section};
use anyhow::Result;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;

mod detail;

pub struct Latency;

/// Bins per octave of the plotted histogram.
const BINS_PER_OCTAVE: u64 = 4;

/// One class/path stream of one run's latency document.
struct Stream<'a> {
    /// "normal/timer cpu1", prefixed with the run ("R2 ...") when several runs have latency data.
    label: String,
    doc: &'a StreamDoc,
}

impl Stream<'_> {
    fn error(&self) -> Option<&str> {
        self.doc.error.as_deref()
    }
}

/// The latency documents of the runs, with the index of their run.
fn documents<'a>(ctx: &Context<'a>) -> Vec<(usize, &'a LatencyDoc)> {
    ctx.runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            r.sections
                .get::<crate::latency::document::LatencyDoc>()
                .map(|d| (i, d))
        })
        .filter(|(_, d)| d.schema == LATENCY_SCHEMA)
        .collect()
}

fn streams<'a>(docs: &[(usize, &'a LatencyDoc)]) -> Vec<Stream<'a>> {
    let several = docs.len() > 1;
    let mut out = Vec::new();
    for &(run, doc) in docs {
        for s in &doc.streams {
            let label = if several {
                format!("R{} {}", run + 1, s.label())
            } else {
                s.label()
            };
            out.push(Stream { label, doc: s });
        }
    }
    out
}

/// A plotted bin: its edges in ns and the share of all periods that fell in it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bin {
    lo: f64,
    hi: f64,
    share: f64,
    /// Bin number on the quarter-octave scale: consecutive bins are joined by a line.
    index: u64,
}

/// Sums the stored buckets `[low_ns, high_ns, count]` into quarter-octave bins.
fn bins(buckets: &[[u64; 3]]) -> Vec<Bin> {
    let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
    let mut total = 0u64;
    for &[low, _, count] in buckets {
        if count == 0 {
            continue;
        }
        let v = low.max(1);
        let octave = u64::from(63 - v.leading_zeros());
        let quarter = ((v - (1 << octave)) * BINS_PER_OCTAVE) >> octave;
        *counts
            .entry(octave * BINS_PER_OCTAVE + quarter)
            .or_default() += count;
        total += count;
    }
    counts
        .into_iter()
        .map(|(index, count)| {
            let edge = |i: u64| {
                let base = 2f64.powi((i / BINS_PER_OCTAVE) as i32);
                base * (1.0 + (i % BINS_PER_OCTAVE) as f64 / BINS_PER_OCTAVE as f64)
            };
            Bin {
                lo: edge(index),
                hi: edge(index + 1),
                share: count as f64 / total as f64,
                index,
            }
        })
        .collect()
}

/// A logarithmic axis from the power of ten at or below `min` to the one at or above `max`.
fn decades(min: f64, max: f64) -> Axis {
    let lo = 10f64.powf(min.log10().floor());
    let mut hi = 10f64.powf(max.log10().ceil());
    if hi <= lo {
        hi = lo * 10.0;
    }
    Axis {
        scale: Scale::Log10,
        lo,
        hi,
    }
}

/// Log-log histograms, one line per named series in one plot (a stream's few stages); `x_desc`
/// says what the x axis measures.
fn histogram_plot(series: &[(String, Vec<Bin>)], x_desc: &str) -> Result<String> {
    let all = || series.iter().flat_map(|(_, b)| b.iter());
    let x = decades(
        all().map(|b| b.lo).fold(f64::INFINITY, f64::min),
        all().map(|b| b.hi).fold(0.0, f64::max),
    );
    let y = decades(
        all().map(|b| b.share).fold(f64::INFINITY, f64::min),
        all().map(|b| b.share).fold(0.0, f64::max),
    );
    let items: Vec<LegendItem> = series
        .iter()
        .enumerate()
        .map(|(i, (name, _))| LegendItem {
            name: name.clone(),
            color: color(i),
            swatch: Swatch::Line,
        })
        .collect();
    let x_label = |v: f64| x.tick_label(v, Unit::Nanoseconds);
    let y_label = |v: f64| format!("{} %", compact(v * 100.0));
    let text = AxisText {
        x_label: &x_label,
        y_label: &y_label,
        x_desc,
        y_desc: "share of periods per bin (logarithmic)",
    };
    line_chart(440, &items, (&x, &y), 78, &text, |chart| {
        for (i, (_, bins)) in series.iter().enumerate() {
            let c = color(i);
            let at = |b: &Bin| (x.to((b.lo * b.hi).sqrt()), y.to(b.share));
            for line in neighbouring_runs(bins, at) {
                chart.draw_series(LineSeries::new(line, c.stroke_width(2)))?;
            }
            chart.draw_series(bins.iter().map(|b| Circle::new(at(b), 3, c.filled())))?;
        }
        Ok(())
    })
}

/// The points of each stretch of neighbouring bins, two or more long: a line joins neighbouring
/// bins only, so an empty bin breaks it and a lone outlier stays a lone dot instead of a slope
/// that suggests values in between.
fn neighbouring_runs(bins: &[Bin], at: impl Fn(&Bin) -> (f64, f64)) -> Vec<Vec<(f64, f64)>> {
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut last: Option<u64> = None;
    for b in bins {
        if last.is_none_or(|l| l + 1 != b.index) {
            runs.push(Vec::new());
        }
        runs.last_mut().expect("pushed above").push(at(b));
        last = Some(b.index);
    }
    runs.retain(|r| r.len() > 1);
    runs
}

/// Pixel size a panel is drawn at; CSS scales it to its grid cell (three or four to a row).
const PANEL: (u32, u32) = (300, 220);

/// One small log-log histogram: a line per run in that run's colour. Every panel is drawn on the
/// same axes (`x`, `y`), so panels compare by position as well as within themselves.
fn panel_plot(lines: &[(usize, &[Bin])], x: Axis, y: Axis) -> Result<String> {
    svg(PANEL, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(8)
            .margin_right(16)
            .x_label_area_size(30)
            .y_label_area_size(52)
            .build_cartesian_2d(
                Ticked::new(x.range(), x.ticks()),
                Ticked::new(y.range(), y.ticks()),
            )?;
        let x_fmt = |t: &f64| x.tick_label(x.from(*t), Unit::Nanoseconds);
        let y_fmt = |t: &f64| format!("{} %", compact(y.from(*t) * 100.0));
        chart
            .configure_mesh()
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .x_labels(4)
            .label_style((FONT, 13))
            .bold_line_style(RGBColor(225, 228, 232))
            .light_line_style(WHITE)
            .draw()?;
        for &(run, bins) in lines {
            let c = color(run);
            let at = |b: &Bin| (x.to((b.lo * b.hi).sqrt()), y.to(b.share));
            for line in neighbouring_runs(bins, at) {
                chart.draw_series(LineSeries::new(line, c.stroke_width(2)))?;
            }
            chart.draw_series(bins.iter().map(|b| Circle::new(at(b), 2, c.filled())))?;
        }
        Ok(())
    })
}

/// One stream of one run, ready to plot.
struct Series<'a> {
    run: usize,
    /// "normal/timer": the panel it is drawn in (the CPU may differ between runs).
    panel: String,
    bins: Vec<Bin>,
    doc: &'a LatencyDoc,
}

/// Small multiples: a panel per class/path stream instead of a dozen lines in one plot, each
/// panel with a line per run in a colour of its own (Okabe-Ito first: told apart with the common
/// colour-vision deficiencies), a legend naming the runs and their loads above the panels when
/// there are several.
fn histogram_panels(ctx: &Context, series: &[Series]) -> Result<String> {
    let all = || series.iter().flat_map(|s| s.bins.iter());
    let x = decades(
        all().map(|b| b.lo).fold(f64::INFINITY, f64::min),
        all().map(|b| b.hi).fold(0.0, f64::max),
    );
    let y = decades(
        all().map(|b| b.share).fold(f64::INFINITY, f64::min),
        all().map(|b| b.share).fold(0.0, f64::max),
    );
    let mut runs: Vec<(usize, &LatencyDoc)> = Vec::new();
    let mut panels: Vec<&str> = Vec::new();
    for s in series {
        if !runs.iter().any(|(r, _)| *r == s.run) {
            runs.push((s.run, s.doc));
        }
        if !panels.contains(&s.panel.as_str()) {
            panels.push(&s.panel);
        }
    }
    let mut out = String::new();
    if runs.len() > 1 {
        let items: Vec<LegendItem> = runs
            .iter()
            .map(|&(r, d)| LegendItem {
                name: format!("{}, load: {}", ctx.run_label(r), load_names(d)),
                color: color(r),
                swatch: Swatch::Line,
            })
            .collect();
        let h = legend_height(&items);
        out.push_str(&svg((WIDTH, h), |root| legend(root, &items))?);
        out.push('\n');
    }
    out.push_str("<div class=\"panels\">\n");
    for name in panels {
        let lines: Vec<(usize, &[Bin])> = series
            .iter()
            .filter(|s| s.panel == name)
            .map(|s| (s.run, s.bins.as_slice()))
            .collect();
        let _ = writeln!(
            out,
            "<div class=\"panel\"><div class=\"panel-title\">{}</div>\n{}</div>",
            esc(name),
            panel_plot(&lines, x, y)?
        );
    }
    out.push_str("</div>");
    Ok(out)
}

/// The loads of a latency run, as the legend names them.
fn load_names(d: &LatencyDoc) -> String {
    if d.loads.is_empty() {
        "none".into()
    } else {
        let names: Vec<&str> = d.loads.iter().map(|l| l.load.as_str()).collect();
        names.join(", ")
    }
}

/// Percentiles, missed periods and worst cases: one row per stream.
fn summary_table(all: &[Stream]) -> String {
    // Two tables rather than one of thirteen columns: the percentiles, then the worst cases with
    // their long estimate, each narrow enough for the page and for A4 paper.
    let header = [
        "class/path",
        "policy",
        "periods",
        "missed",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "p99.99",
        "max",
    ];
    let worst_header = [
        "class/path",
        "max not counting missed",
        "worst per 1 s window: median / max",
        "estimated worst case",
    ];
    let mut worst_rows: Vec<Row> = Vec::new();
    let rows: Vec<Row> = all
        .iter()
        .map(|s| {
            let d = s.doc;
            if let Some(e) = s.error() {
                return Row {
                    class: "",
                    cells: vec![
                        Cell::from(esc(&s.label)),
                        Cell::with_class("bad", format!("failed: {}", esc(e))),
                    ],
                };
            }
            let window = d
                .windows
                .iter()
                .find(|w| w.window == "1s")
                .map(|w| {
                    format!(
                        "{} / {} us ({} windows)",
                        crate::units::number(w.p50_ns as f64 / 1e3),
                        crate::units::number(w.max_ns as f64 / 1e3),
                        w.windows
                    )
                })
                .unwrap_or_else(|| "no complete window".into());
            let estimate = match &d.estimate {
                Estimate::Unavailable { .. } => {
                    "<span class=\"note\">not estimated (see below)</span>".to_string()
                }
                Estimate::Fitted { fit, .. } => {
                    let parts: Vec<String> = fit
                        .estimates
                        .iter()
                        .map(|h| {
                            format!(
                                "{}: {} (1&nbsp;% above {})",
                                esc(&h.horizon),
                                value(h.median_ns, Unit::Nanoseconds),
                                value(h.p99_ns, Unit::Nanoseconds)
                            )
                        })
                        .collect();
                    format!(
                        "{}; fit KS distance {:.2}",
                        parts.join(", "),
                        fit.ks_distance
                    )
                }
            };
            let mut cells = vec![
                Cell::from(esc(&s.label)),
                Cell::from(esc(&d.policy) + &priority(d)),
                Cell::num(d.periods.to_string()),
                Cell::num(d.missed.to_string()),
            ];
            for (_, ns) in d.corrected.percentiles() {
                cells.push(Cell::num(crate::units::number(ns as f64 / 1e3)));
            }
            worst_rows.push(Row {
                class: "",
                cells: vec![
                    Cell::from(esc(&s.label)),
                    Cell::num(crate::units::number(d.raw.max_ns as f64 / 1e3)),
                    Cell::num(window),
                    Cell::from(estimate),
                ],
            });
            Row { class: "", cells }
        })
        .collect();
    let mut out = note(
        "Lateness in microseconds over all periods, missed ones included; \"max not counting \
         missed\" is the largest lateness of a wake that happened. The estimated worst case fits \
         a Gumbel law to the 1 s window maxima and projects it: an estimate, not a measurement.",
    );
    out.push_str(&table("latency", &header, &rows));
    if !worst_rows.is_empty() {
        out.push_str(&table("worst", &worst_header, &worst_rows));
    }
    for s in all {
        if let Estimate::Unavailable { unavailable: why } = &s.doc.estimate {
            if s.error().is_none() {
                out.push_str(&note(&format!(
                    "{}: worst case not estimated: {why}.",
                    s.label
                )));
            }
        }
    }
    out
}

fn priority(d: &StreamDoc) -> String {
    match d.priority {
        Some(p) => format!(" {p}"),
        None => String::new(),
    }
}

/// One cell of the buffer table, as the text report writes it.
fn mttf_cell(b: &BufferResult) -> Cell {
    // The probability on a line of its own keeps the column narrow (several streams stand side
    // by side).
    Cell::num(match b.mttf_shown() {
        (value, Some(p)) => format!(
            "{}<br><span class=\"note\">({})</span>",
            esc(&value),
            esc(&p)
        ),
        (value, None) => esc(&value),
    })
}

/// A configuration's key in the buffer table: t, n and c.
fn buffer_key(b: &BufferResult) -> (u64, u32, u64) {
    (b.period_ms.to_bits(), b.buffers, b.compute_ms.to_bits())
}

/// Streams side by side in one buffer table: more would not fit the page or A4 paper.
const STREAMS_PER_TABLE: usize = 4;

/// Rows: every (t, n, c) configuration any stream was evaluated for, in first-seen order;
/// columns: the MTTF of each stream that ran. More streams than [`STREAMS_PER_TABLE`] make
/// several tables stacked, each repeating the configuration columns (as text tables are cut).
fn buffer_table(all: &[Stream]) -> String {
    let ok: Vec<&Stream> = all.iter().filter(|s| s.error().is_none()).collect();
    let mut configs: Vec<&BufferResult> = Vec::new();
    for s in &ok {
        for b in &s.doc.buffers {
            if !configs.iter().any(|c| buffer_key(c) == buffer_key(b)) {
                configs.push(b);
            }
        }
    }
    if configs.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for block in ok.chunks(STREAMS_PER_TABLE) {
        let mut header: Vec<String> = ["t (ms)", "n", "c (ms)", "tolerated lateness (ms)"]
            .map(String::from)
            .to_vec();
        header.extend(block.iter().map(|s| format!("MTTF {}", s.label)));
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let rows: Vec<Row> = configs
            .iter()
            .map(|cfg| {
                let mut cells = vec![
                    Cell::num(num(cfg.period_ms)),
                    Cell::num(cfg.buffers.to_string()),
                    Cell::num(num(cfg.compute_ms)),
                    Cell::num(num(cfg.tolerance_ms)),
                ];
                for s in block {
                    let found = s
                        .doc
                        .buffers
                        .iter()
                        .find(|b| buffer_key(b) == buffer_key(cfg));
                    cells.push(found.map(mttf_cell).unwrap_or_default());
                }
                Row { class: "", cells }
            })
            .collect();
        out.push_str(&table("buffers", &header, &rows));
    }
    out
}

/// Cause capture: what ran, fired or was missing around each wake over the threshold.
fn episodes(ctx: &Context, docs: &[(usize, &LatencyDoc)]) -> String {
    let mut out = String::new();
    for &(r, d) in docs {
        let Some(eps) = &d.episodes else { continue };
        let _ = writeln!(
            out,
            "<h3>{}Late wakes and their causes</h3>",
            if docs.len() > 1 {
                format!("{}: ", esc(&ctx.run_label(r)))
            } else {
                String::new()
            }
        );
        if eps.is_empty() {
            out.push_str(&note(
                "Cause capture was on and no wake was later than its threshold.",
            ));
            continue;
        }
        out.push_str(&note(
            "Kernel trace events on the measured CPU from the deadline to the wake of each late \
             wake: the tasks that ran instead (longest first), the interrupts, softirqs, timers \
             and work items, and the longest stretch with no event at all (time the hypervisor \
             probably took).",
        ));
        let rows: Vec<Row> = eps
            .iter()
            .map(|e| {
                let ran: Vec<String> = e
                    .ran
                    .iter()
                    .take(4)
                    .map(|(task, ns)| {
                        format!("{} {}", esc(task), crate::units::number(*ns as f64 / 1e3))
                    })
                    .collect();
                let irqs: Vec<String> = e
                    .irqs
                    .iter()
                    .chain(&e.softirqs)
                    .map(|(name, n, ns)| {
                        format!(
                            "{} ×{n} ({})",
                            esc(name),
                            crate::units::number(*ns as f64 / 1e3)
                        )
                    })
                    .collect();
                Row {
                    class: "",
                    cells: vec![
                        Cell::from(format!("{}/{} cpu{}", esc(&e.class), esc(&e.path), e.cpu)),
                        Cell::num(crate::units::number(e.lateness_ns as f64 / 1e3)),
                        Cell::from(ran.join("<br>")),
                        Cell::from(irqs.join("<br>")),
                        Cell::num(crate::units::number(e.longest_gap_ns as f64 / 1e3)),
                        Cell::from(esc(&e.verdict)),
                    ],
                }
            })
            .collect();
        out.push_str(&table(
            "episodes",
            &[
                "stream",
                "late (us)",
                "ran instead (us)",
                "interrupts and softirqs",
                "longest gap (us)",
                "verdict",
            ],
            &rows,
        ));
    }
    out
}

/// What each run measured: period, duration, loads, skipped classes.
fn setup(ctx: &Context, docs: &[(usize, &LatencyDoc)]) -> String {
    let mut out = String::new();
    for &(r, d) in docs {
        let loads: Vec<&str> = d.loads.iter().map(|l| l.load.as_str()).collect();
        let mut text = format!(
            "{}: period {} us, {} s measured, load: {}{}.",
            ctx.run_label(r),
            num(d.period_ns as f64 / 1e3),
            num(d.measured_s),
            if loads.is_empty() {
                "none".to_string()
            } else {
                loads.join(", ")
            },
            if d.interrupted { " (interrupted)" } else { "" }
        );
        for k in &d.skipped {
            text.push_str(&format!(
                " Class {} skipped: {}",
                k.class.as_str(),
                k.reason
            ));
        }
        out.push_str(&note(&text));
    }
    out
}

impl Section for Latency {
    fn id(&self) -> &'static str {
        "latency"
    }
    fn title(&self) -> &'static str {
        "Wake-up latency"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        let docs = documents(ctx);
        if docs.is_empty() {
            return Ok(None);
        }
        let all = streams(&docs);
        let series: Vec<Series> = docs
            .iter()
            .flat_map(|&(run, doc)| {
                doc.streams
                    .iter()
                    .filter(|s| s.error.is_none())
                    .map(move |s| Series {
                        run,
                        panel: format!("{}/{}", s.class.as_str(), s.path.name()),
                        bins: bins(&s.histogram_corrected.buckets),
                        doc,
                    })
            })
            .filter(|s| !s.bins.is_empty())
            .collect();
        let mut out = setup(ctx, &docs);
        if series.is_empty() {
            out.push_str(&note("No stream recorded a wake-up."));
        } else {
            out.push_str(&figure(
                &histogram_panels(ctx, &series)?,
                "<b>How late the periodic threads woke.</b> A panel per class/path stream, all on \
                 the same axes: wake-up lateness across (missed periods included, with the \
                 lateness they would have had), and up the share of all periods whose lateness \
                 fell in each quarter-octave bin, both logarithmic so a long tail stays visible \
                 next to the common case. Each run is a line of its own colour; lines join \
                 neighbouring bins only, so a lone dot is a bin with empty neighbours.",
            ));
        }
        out.push_str("<h3>Percentiles and worst cases</h3>\n");
        out.push_str(&summary_table(&all));
        out.push_str(&episodes(ctx, &docs));
        out.push_str(&detail::render(ctx, &docs)?);
        let buffers = buffer_table(&all);
        if !buffers.is_empty() {
            out.push_str("<h3>Buffer model: mean time to underrun</h3>\n");
            out.push_str(&note(
                "A pipeline that plays one buffer of length t per period, keeps n buffers queued \
                 and needs c of computing per buffer survives a wake up to (n-1)t - c late. Each \
                 cell is the mean time between underruns if it were driven by these wakes (p: \
                 share of periods over the tolerance); \"> X\" means no underrun in the X \
                 measured.",
            ));
            out.push_str(&buffers);
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_join_neighbouring_bins_only() {
        let bin = |index: u64| Bin {
            lo: 1.0,
            hi: 1.0,
            share: index as f64,
            index,
        };
        let bins: Vec<Bin> = [1, 2, 3, 5, 7, 8].into_iter().map(bin).collect();
        let runs = neighbouring_runs(&bins, |b| (b.index as f64, b.share));
        // 5 stands alone: a dot, no line.
        assert_eq!(
            runs,
            vec![
                vec![(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)],
                vec![(7.0, 7.0), (8.0, 8.0)]
            ]
        );
        assert!(neighbouring_runs(&[], |b| (b.lo, b.hi)).is_empty());
    }
    use crate::latency::accounting::WindowSummary;
    use crate::latency::document::{Distribution, StoredHistogram};
    use crate::latency::threads::{ClassName, Path};
    use crate::results::model::tests::empty_run;

    fn buffer(period_ms: f64, n: u32, c: f64, p: f64, mttf: Option<f64>) -> BufferResult {
        BufferResult {
            period_ms,
            buffers: n,
            compute_ms: c,
            tolerance_ms: (n - 1) as f64 * period_ms - c,
            periods: 1000,
            overruns: (p * 1000.0) as u64,
            failures: u64::from(mttf.is_some()),
            p_underrun: p,
            mttf_s: mttf,
            mttf_more_than_s: mttf.is_none().then_some(1.0),
            mttf: String::new(),
        }
    }

    pub fn stream(class: ClassName, buckets: Vec<[u64; 3]>, error: Option<&str>) -> StreamDoc {
        StreamDoc {
            class,
            policy: "SCHED_OTHER".into(),
            priority: None,
            path: Path::Timer,
            cpu: 1,
            error: error.map(String::from),
            periods_planned: 1000,
            periods: 1000,
            woken: 990,
            missed: 10,
            measured_s: 1.0,
            cpu_time_ms: 1.0,
            raw: Distribution {
                max_ns: 900_000,
                ..Default::default()
            },
            corrected: Distribution {
                count: 1000,
                mean_ns: 30_000.0,
                p50_ns: 20_000,
                p90_ns: 30_000,
                p99_ns: 400_000,
                p99_9_ns: 900_000,
                p99_99_ns: 1_200_000,
                max_ns: 1_200_000,
            },
            histogram_corrected: StoredHistogram {
                columns: vec!["low_ns".into(), "high_ns".into(), "count".into()],
                buckets,
            },
            windows: vec![WindowSummary {
                window: "1s".into(),
                windows: 1,
                min_ns: 1_200_000,
                p50_ns: 1_200_000,
                p90_ns: 1_200_000,
                max_ns: 1_200_000,
                maxima_ns: vec![1_200_000],
            }],
            estimate: Estimate::Unavailable {
                unavailable: "1 complete 1s windows; the fit needs at least 10".into(),
            },
            buffers: vec![
                buffer(1.0, 2, 0.5, 0.01, Some(0.1)),
                buffer(5.0, 3, 2.5, 0.0, None),
            ],
            seconds: Vec::new(),
            stages: None,
            compute: None,
        }
    }

    pub fn doc(streams: Vec<StreamDoc>) -> LatencyDoc {
        LatencyDoc {
            measured_s: 1.0,
            duration_s: 1.0,
            worst_ns: 1_200_000,
            ..LatencyDoc::for_tests(streams)
        }
    }

    #[test]
    fn buckets_sum_into_quarter_octaves() {
        // The octave 16384..32768 has quarters 16384..20480, 20480..24576, ...: the buckets at
        // 20480 and 24000 share the second one.
        let b = bins(&[
            [16384, 16511, 3],
            [20480, 20607, 1],
            [24000, 24063, 4],
            [1_048_576, 1_056_767, 2],
        ]);
        assert_eq!(b.len(), 3, "{b:?}");
        assert_eq!((b[0].lo, b[0].hi), (16384.0, 20480.0));
        assert_eq!((b[1].lo, b[1].hi), (20480.0, 24576.0));
        assert_eq!(b[1].index, b[0].index + 1);
        assert!((b[1].share - 0.5).abs() < 1e-12, "1 + 4 of 10");
        assert_eq!((b[2].lo, b[2].hi), (1_048_576.0, 1_310_720.0));
        assert!((b.iter().map(|x| x.share).sum::<f64>() - 1.0).abs() < 1e-12);
        let tiny = bins(&[[0, 0, 1], [3, 3, 1]]);
        assert_eq!(tiny.len(), 2);
    }

    #[test]
    fn section_shows_histogram_percentiles_and_buffer_table() {
        let buckets = vec![
            [16384, 16511, 800],
            [20480, 20607, 190],
            [1_048_576, 1_056_767, 10],
        ];
        let mut run = empty_run();
        run.sections.put(doc(vec![
            stream(ClassName::Normal, buckets, None),
            stream(ClassName::High, vec![], Some("cannot set SCHED_FIFO")),
        ]));
        let runs = [run];
        let ctx = Context::new(&runs);
        let html = Latency.render(&ctx).unwrap().unwrap();
        assert_eq!(html.matches("<svg").count(), 1);
        assert!(html.contains("normal/timer cpu1"));
        assert!(html.contains("failed: cannot set SCHED_FIFO"));
        assert!(
            html.contains("100 ms<br><span class=\"note\">(p 1.0e-2)</span>"),
            "MTTF as the text report"
        );
        assert!(html.contains("&gt; 1.00 s"));
        assert!(html.contains("tolerated lateness"));
        assert!(html.contains("not estimated"));
        // Percentiles in microseconds.
        assert!(html.contains(">400<") && html.contains(">1200<"));
    }

    /// Three runs under three loads, each with a timer and a futex stream: a panel per stream,
    /// each with a line per run in the run's own colour, and a legend naming the loads.
    #[test]
    fn streams_are_small_multiples_with_a_line_per_load() {
        use crate::latency::load::LoadReport;
        let buckets = || {
            vec![
                [16384, 16511, 800],
                [20480, 20607, 190],
                [1_048_576, 1_056_767, 10],
            ]
        };
        let runs: Vec<_> = [Some("cpu"), Some("memory"), None]
            .into_iter()
            .map(|load| {
                let mut futex = stream(ClassName::Normal, buckets(), None);
                futex.path = Path::Futex;
                let mut d = doc(vec![stream(ClassName::Normal, buckets(), None), futex]);
                d.loads = load
                    .map(|l| LoadReport {
                        load: l.into(),
                        threads: 1,
                        ops: 1,
                        rate: 1.0,
                        unit: "ops/s".into(),
                        error: None,
                    })
                    .into_iter()
                    .collect();
                let mut run = empty_run();
                run.sections.put(d);
                run
            })
            .collect();
        let ctx = Context::new(&runs);
        let html = Latency.render(&ctx).unwrap().unwrap();
        let panels: Vec<&str> = html.split("<div class=\"panel\">").skip(1).collect();
        assert_eq!(panels.len(), 2, "a panel per stream");
        assert!(panels[0].contains("normal/timer") && panels[1].contains("normal/futex"));
        let hex = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
        for panel in &panels {
            let panel = &panel[..panel.find("</svg>").unwrap()];
            for run in 0..3 {
                assert!(
                    panel.contains(&hex(color(run))),
                    "run {run}'s colour in {panel}"
                );
            }
        }
        for load in ["load: cpu", "load: memory", "load: none"] {
            assert!(html.contains(load), "legend names {load}");
        }
        // Three panels' worth of colours that a person tells apart: no two alike.
        let (a, b, c) = (color(0), color(1), color(2));
        assert!(a != b && b != c && a != c);
    }

    #[test]
    fn nothing_without_a_latency_section() {
        let runs = [empty_run()];
        assert!(Latency.render(&Context::new(&runs)).unwrap().is_none());
        let mut other = empty_run();
        let mut future = doc(vec![]);
        future.schema = "osmeter.latency/99".into();
        other.sections.put(future);
        let runs = [other];
        assert!(Latency.render(&Context::new(&runs)).unwrap().is_none());
    }
}
