//! Horizontal bars, one row per category and several bars per row, with interval whiskers and a
//! text beyond each bar's free end: the chart the time, bandwidth, counter and comparison sections
//! share.

use super::plot::{legend, legend_height, svg, Axis, LegendItem, Ticked, FONT, WIDTH};
use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One bar: its row (category), its place within the row (slot), the value it reaches, and an
/// optional interval drawn as a whisker.
pub struct HBar {
    pub category: usize,
    pub slot: usize,
    pub value: f64,
    pub interval: Option<[f64; 2]>,
    pub color: RGBColor,
    /// Printed beyond the bar's free end; keep it short when there are many slots per row.
    pub text: Option<String>,
}

/// Horizontal bars, one row per category and `slots` bars per row, first category on top.
pub struct HBars<'a> {
    pub categories: Vec<String>,
    pub slots: usize,
    pub bars: Vec<HBar>,
    pub axis: Axis,
    /// Data value bars grow from (zero, the left end of a log axis, or 1 for ratios).
    pub origin: f64,
    pub x_desc: String,
    pub x_fmt: &'a dyn Fn(f64) -> String,
    pub legend: Vec<LegendItem>,
    /// A vertical reference line, e.g. at ratio 1.
    pub reference: Option<f64>,
    /// Tick values in data units, when the axis's own do not suit.
    pub ticks: Option<Vec<f64>>,
}

impl HBars<'_> {
    pub fn to_svg(&self) -> Result<String> {
        let n = self.categories.len().max(1);
        let slots = self.slots.max(1);
        let row_h = if slots == 1 {
            26
        } else {
            (slots as u32 * 11 + 10).max(28)
        };
        let longest = self
            .categories
            .iter()
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(8);
        let label_w = (longest as u32 * 7 + 16).clamp(90, 400);
        let legend_h = legend_height(&self.legend);
        let height = legend_h + 20 + n as u32 * row_h + 56;
        // Many bars per row leave room only for short texts in a smaller font.
        let text_size = if slots > 4 { 10 } else { 12 };
        svg((WIDTH, height), |root| {
            let (top, body) = root.split_vertically(legend_h);
            legend(&top, &self.legend)?;
            let x_range = self.axis.range();
            let y_range = -0.5..(n as f64 - 0.5);
            let mut chart = ChartBuilder::on(&body)
                .margin_top(12)
                .margin_right(if slots > 4 { 40 } else { 90 })
                .x_label_area_size(44)
                .y_label_area_size(label_w)
                .build_cartesian_2d(
                    Ticked::new(
                        x_range,
                        match &self.ticks {
                            Some(t) => t.iter().map(|v| self.axis.to(*v)).collect(),
                            None => self.axis.ticks(),
                        },
                    ),
                    Ticked::new(y_range, (0..n).map(|i| i as f64).collect()),
                )?;
            let x_fmt = |t: &f64| (self.x_fmt)(self.axis.from(*t));
            let y_fmt = |t: &f64| {
                let i = n as i64 - 1 - t.round() as i64;
                self.categories
                    .get(i.max(0) as usize)
                    .cloned()
                    .unwrap_or_default()
            };
            chart
                .configure_mesh()
                .disable_y_mesh()
                .x_label_formatter(&x_fmt)
                .y_label_formatter(&y_fmt)
                .x_desc(self.x_desc.as_str())
                .axis_desc_style((FONT, 14))
                .label_style((FONT, 13))
                .bold_line_style(RGBColor(225, 228, 232))
                .draw()?;
            let band = 0.8;
            let h = band / slots as f64;
            let origin = self.axis.to(self.origin);
            let text_style = (FONT, text_size)
                .into_font()
                .color(&RGBColor(60, 60, 60))
                .pos(Pos::new(HPos::Left, VPos::Center));
            let text_right = text_style.pos(Pos::new(HPos::Right, VPos::Center));
            for b in &self.bars {
                let center = (n - 1 - b.category) as f64;
                let top = center + band / 2.0 - b.slot as f64 * h;
                let (y0, y1) = (top - h * 0.9, top);
                let x = self.axis.to(b.value);
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(origin, y0), (x, y1)],
                    b.color.mix(0.85).filled(),
                )))?;
                let mid = (y0 + y1) / 2.0;
                let (mut left, mut right) = (x, x);
                if let Some([lo, hi]) = b.interval {
                    let (lo, hi) = (self.axis.to(lo), self.axis.to(hi));
                    left = left.min(lo);
                    right = right.max(hi);
                    chart.draw_series(std::iter::once(ErrorBar::new_horizontal(
                        mid,
                        lo,
                        x,
                        hi,
                        BLACK.stroke_width(1),
                        6,
                    )))?;
                }
                if let Some(t) = &b.text {
                    // Beyond the bar's free end: right of bars that grow right, left of the others.
                    let label = if x < origin {
                        EmptyElement::at((left, mid))
                            + Text::new(t.clone(), (-6, 0), text_right.clone())
                    } else {
                        EmptyElement::at((right, mid))
                            + Text::new(t.clone(), (6, 0), text_style.clone())
                    };
                    chart.draw_series(std::iter::once(label))?;
                }
            }
            if let Some(r) = self.reference {
                let r = self.axis.to(r);
                chart.draw_series(LineSeries::new(
                    [(r, -0.5), (r, n as f64 - 0.5)],
                    BLACK.stroke_width(1),
                ))?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::report::plot::color;

    #[test]
    fn plots_are_svg_with_text_elements() {
        let fmt = |v: f64| format!("{v:.0} ns");
        let chart = HBars {
            categories: vec!["null".into(), "dup <fd>".into()],
            slots: 1,
            bars: vec![HBar {
                category: 0,
                slot: 0,
                value: 100.0,
                interval: Some([90.0, 120.0]),
                color: color(0),
                text: Some("100 ns".into()),
            }],
            axis: Axis::for_values([100.0, 120.0], 30.0),
            origin: 0.0,
            x_desc: "time per operation".into(),
            x_fmt: &fmt,
            legend: vec![LegendItem::boxed("R1".into(), color(0))],
            reference: None,
            ticks: None,
        };
        let svg = chart.to_svg().unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert!(svg.contains("<text"));
        assert!(svg.contains("dup &lt;fd&gt;"), "labels are escaped");
        assert!(svg.contains("time per operation"));
    }
}
