//! The lateness histograms: stored buckets summed into quarter-octave bins, one plot of every
//! stream and small panels per class.

use super::*;

/// A plotted bin: its edges in ns and the share of all periods that fell in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Bin {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) share: f64,
    /// Bin number on the quarter-octave scale: consecutive bins are joined by a line.
    pub(super) index: u64,
}

/// Sums the stored buckets `[low_ns, high_ns, count]` into quarter-octave bins.
pub(super) fn bins(buckets: &[[u64; 3]]) -> Vec<Bin> {
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
pub(super) fn decades(min: f64, max: f64) -> Axis {
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
pub(super) fn histogram_plot(series: &[(String, Vec<Bin>)], x_desc: &str) -> Result<String> {
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
            draw_bins(chart, bins, (&x, &y), i, 3)?;
        }
        Ok(())
    })
}

/// One histogram in its run's colour: a line over each stretch of neighbouring bins and a dot of
/// `radius` pixels on every bin.
fn draw_bins(
    chart: &mut Chart,
    bins: &[Bin],
    (x, y): (&Axis, &Axis),
    run: usize,
    radius: u32,
) -> Result<()> {
    let c = color(run);
    let at = |b: &Bin| (x.to((b.lo * b.hi).sqrt()), y.to(b.share));
    for line in neighbouring_runs(bins, at) {
        chart.draw_series(LineSeries::new(line, c.stroke_width(2)))?;
    }
    chart.draw_series(bins.iter().map(|b| Circle::new(at(b), radius, c.filled())))?;
    Ok(())
}

/// The points of each stretch of neighbouring bins, two or more long: a line joins neighbouring
/// bins only, so an empty bin breaks it and a lone outlier stays a lone dot instead of a slope
/// that suggests values in between.
pub(super) fn neighbouring_runs(
    bins: &[Bin],
    at: impl Fn(&Bin) -> (f64, f64),
) -> Vec<Vec<(f64, f64)>> {
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
pub(super) const PANEL: (u32, u32) = (300, 220);

/// One small log-log histogram: a line per run in that run's colour. Every panel is drawn on the
/// same axes (`x`, `y`), so panels compare by position as well as within themselves.
pub(super) fn panel_plot(lines: &[(usize, &[Bin])], x: Axis, y: Axis) -> Result<String> {
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
            draw_bins(&mut chart, bins, (&x, &y), run, 2)?;
        }
        Ok(())
    })
}

/// One stream of one run, ready to plot.
pub(super) struct Series<'a> {
    pub(super) run: usize,
    /// "normal/timer": the panel it is drawn in (the CPU may differ between runs).
    pub(super) panel: String,
    pub(super) bins: Vec<Bin>,
    pub(super) doc: &'a LatencyDoc,
}

/// Small multiples: a panel per class/path stream instead of a dozen lines in one plot, each
/// panel with a line per run in a colour of its own (Okabe-Ito first: told apart with the common
/// colour-vision deficiencies), a legend naming the runs and their loads above the panels when
/// there are several.
pub(super) fn histogram_panels(ctx: &Context, series: &[Series]) -> Result<String> {
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
