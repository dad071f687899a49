//! Plot helpers on top of plotters' SVG backend: axes that can be logarithmic (the values are mapped
//! to log space and the ticks labelled in data units, so every chart uses one plain f64 coordinate
//! type), a colour palette that survives colour-blindness and grey printing, and a legend strip.
//! The shared bar chart is in [`super::hbars`].

use crate::results::model::Unit;
use anyhow::Result;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::ops::Range;

pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

pub const FONT: &str = "sans-serif";
/// Plots are drawn at this width and scaled by CSS to the page.
pub const WIDTH: u32 = 960;

/// Okabe-Ito colours first (distinguishable with the common colour-vision deficiencies), then a few
/// darker ones for reports with many runs.
const PALETTE: [RGBColor; 12] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(80, 80, 80),
    RGBColor(184, 160, 0),
    RGBColor(51, 34, 136),
    RGBColor(136, 34, 85),
    RGBColor(68, 170, 153),
    RGBColor(153, 153, 51),
];

pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

pub const GREY: RGBColor = RGBColor(150, 150, 150);
pub const FASTER: RGBColor = RGBColor(0, 140, 90);
pub const SLOWER: RGBColor = RGBColor(200, 50, 30);

/// Draws into a fresh SVG document of the given size and returns its text.
pub fn svg(size: (u32, u32), draw: impl FnOnce(&Area) -> Result<()>) -> Result<String> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        root.fill(&WHITE)?;
        draw(&root)?;
        root.present()?;
    }
    Ok(buf)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log10,
    Log2,
}

/// One axis: its scale and its extent in data units.
#[derive(Debug, Clone, Copy)]
pub struct Axis {
    pub scale: Scale,
    pub lo: f64,
    pub hi: f64,
}

/// A 1, 2 or 5 times a power of ten at or above `x`.
fn nice_step(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= x)
        .unwrap_or(10.0 * p)
}

/// The largest 1, 2 or 5 times a power of ten at or below `x` (x > 0).
fn nice_floor(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    [5.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * p)
        .find(|v| *v <= x * (1.0 + 1e-9))
        .unwrap_or(p)
}

/// The smallest 1, 2 or 5 times a power of ten at or above `x` (x > 0).
fn nice_ceil(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|v| *v >= x * (1.0 - 1e-9))
        .unwrap_or(10.0 * p)
}

impl Axis {
    /// An axis for positive values: logarithmic when they span more than `log_above` times,
    /// otherwise linear from zero.
    pub fn for_values(values: impl IntoIterator<Item = f64>, log_above: f64) -> Axis {
        let (mut min, mut max) = (f64::INFINITY, 0f64);
        for v in values.into_iter().filter(|v| v.is_finite() && *v > 0.0) {
            min = min.min(v);
            max = max.max(v);
        }
        if max <= 0.0 {
            return Axis {
                scale: Scale::Linear,
                lo: 0.0,
                hi: 1.0,
            };
        }
        if max / min > log_above {
            Axis {
                scale: Scale::Log10,
                lo: nice_floor(min / 1.15),
                hi: nice_ceil(max * 1.05),
            }
        } else {
            let step = nice_step(max * 1.08 / 6.0);
            Axis {
                scale: Scale::Linear,
                lo: 0.0,
                hi: (max * 1.08 / step).ceil() * step,
            }
        }
    }

    /// A base-2 axis from the power of two at or below `min` to the one at or above `max`.
    pub fn log2(min: f64, max: f64) -> Axis {
        let lo = 2f64.powf(min.max(1.0).log2().floor());
        let hi = 2f64.powf(max.max(lo * 2.0).log2().ceil());
        Axis {
            scale: Scale::Log2,
            lo,
            hi,
        }
    }

    /// Data value to plot coordinate.
    pub fn to(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log10 => v.max(self.lo * 1e-3).log10(),
            Scale::Log2 => v.max(self.lo * 1e-3).log2(),
        }
    }

    /// Plot coordinate to data value.
    pub fn from(&self, t: f64) -> f64 {
        match self.scale {
            Scale::Linear => t,
            Scale::Log10 => 10f64.powf(t),
            Scale::Log2 => 2f64.powf(t),
        }
    }

    pub fn range(&self) -> Range<f64> {
        self.to(self.lo)..self.to(self.hi)
    }

    /// Where bars start: zero on a linear axis, the left end on a logarithmic one.
    pub fn origin(&self) -> f64 {
        match self.scale {
            Scale::Linear => 0.0,
            _ => self.lo,
        }
    }

    /// Tick positions in plot coordinates.
    pub fn ticks(&self) -> Vec<f64> {
        let r = self.range();
        match self.scale {
            Scale::Linear => {
                let step = nice_step((self.hi - self.lo) / 6.0);
                let first = (self.lo / step).ceil() as i64;
                let last = (self.hi / step + 1e-9).floor() as i64;
                (first..=last).map(|i| i as f64 * step).collect()
            }
            Scale::Log10 => {
                let decades = r.end - r.start;
                let (a, b) = (r.start.floor() as i32, r.end.ceil() as i32);
                let inside = |v: f64| v >= self.lo * (1.0 - 1e-9) && v <= self.hi * (1.0 + 1e-9);
                let pick = |mults: &[f64]| -> Vec<f64> {
                    (a..=b)
                        .flat_map(|e| mults.iter().map(move |m| m * 10f64.powi(e)))
                        .filter(|v| inside(*v))
                        .map(f64::log10)
                        .collect()
                };
                let coarse = pick(&[1.0]);
                if decades > 3.5 && coarse.len() >= 3 {
                    coarse
                } else {
                    pick(&[1.0, 2.0, 5.0])
                }
            }
            Scale::Log2 => {
                let (a, b) = (r.start.round() as i64, r.end.round() as i64);
                let every = ((b - a) / 16 + 1).max(1);
                (a..=b)
                    .filter(|e| (e - a) % every == 0)
                    .map(|e| e as f64)
                    .collect()
            }
        }
    }
}

pub use crate::units::{compact, count_label};

impl Axis {
    /// A tick label in the unit that suits it: on a linear axis every tick uses the unit of the
    /// largest one (0, 2, 4 ... 12 us); on a logarithmic axis each its own (100 ns, 1 us, 10 us).
    pub fn tick_label(&self, v: f64, unit: Unit) -> String {
        let scales = unit.scales();
        let reference = match self.scale {
            Scale::Linear => self.hi.abs(),
            _ => v.abs(),
        };
        let scale = scales
            .iter()
            .copied()
            .find(|s| reference >= s.divisor)
            .unwrap_or(scales[scales.len() - 1]);
        let x = v / scale.divisor;
        // Ticks of counts per operation can be 1e-7 or 1e9: written out they overlap.
        let number = if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e6) {
            format!("{x:e}")
        } else {
            compact(x)
        };
        format!("{number} {}", scale.name).trim_end().to_string()
    }
}

/// A linear f64 coordinate with the tick positions given, so each axis labels exactly the values
/// its data wants (decades, powers of two, ratios symmetric about 1).
#[derive(Debug, Clone)]
pub struct Ticked {
    range: Range<f64>,
    ticks: Vec<f64>,
}

impl Ticked {
    pub fn new(range: Range<f64>, ticks: Vec<f64>) -> Ticked {
        Ticked { range, ticks }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        if span == 0.0 {
            return (limit.0 + limit.1) / 2;
        }
        let frac = (v - self.range.start) / span;
        // A value far off the axis (a zero or infinite ratio) lands just outside it, not past i32.
        let offset = (frac * f64::from(limit.1 - limit.0)).round();
        limit.0.saturating_add(offset.clamp(-1e6, 1e6) as i32)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// How a legend entry shows its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swatch {
    Box,
    Line,
    Dashed,
}

pub struct LegendItem {
    pub name: String,
    pub color: RGBColor,
    pub swatch: Swatch,
}

impl LegendItem {
    pub fn boxed(name: String, color: RGBColor) -> LegendItem {
        LegendItem {
            name,
            color,
            swatch: Swatch::Box,
        }
    }
}

/// Top-left corner of each entry, wrapped to the plot width, and the number of rows.
fn legend_layout(items: &[LegendItem]) -> (Vec<(i32, i32)>, u32) {
    let (mut x, mut y, mut rows) = (12i32, 6i32, 1u32);
    let mut at = Vec::with_capacity(items.len());
    for item in items {
        let sample = if item.swatch == Swatch::Box { 20 } else { 36 };
        let w = sample + item.name.chars().count() as i32 * 7 + 22;
        if x + w > WIDTH as i32 && x > 12 {
            x = 12;
            y += 20;
            rows += 1;
        }
        at.push((x, y));
        x += w;
    }
    (at, rows)
}

/// A row of entries (coloured box or line sample, then the name), wrapped to the width.
pub fn legend(area: &Area, items: &[LegendItem]) -> Result<()> {
    let style = (FONT, 13).into_font().color(&BLACK);
    let (at, _) = legend_layout(items);
    for (item, (x, y)) in items.iter().zip(at) {
        let text_x = match item.swatch {
            Swatch::Box => {
                area.draw(&Rectangle::new(
                    [(x, y + 2), (x + 14, y + 16)],
                    item.color.filled(),
                ))?;
                x + 20
            }
            Swatch::Line => {
                area.draw(&PathElement::new(
                    [(x, y + 9), (x + 30, y + 9)],
                    item.color.stroke_width(2),
                ))?;
                x + 36
            }
            Swatch::Dashed => {
                for dash in [0, 12, 24] {
                    area.draw(&PathElement::new(
                        [(x + dash, y + 9), (x + dash + 7, y + 9)],
                        item.color.stroke_width(2),
                    ))?;
                }
                x + 36
            }
        };
        area.draw(&Text::new(
            item.name.clone(),
            (text_x, y + 2),
            style.clone(),
        ))?;
    }
    Ok(())
}

/// Height in pixels the legend strip needs for these items at the plot width.
pub fn legend_height(items: &[LegendItem]) -> u32 {
    if items.is_empty() {
        return 0;
    }
    legend_layout(items).1 * 20 + 8
}

/// The drawing area of a chart on two ticked axes, as every line chart of the page has it.
pub type Chart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, plotters::coord::cartesian::Cartesian2d<Ticked, Ticked>>;

/// What a line chart's axes say: tick labels from the axis's own value, and the descriptions.
pub struct AxisText<'f> {
    pub x_label: &'f dyn Fn(f64) -> String,
    pub y_label: &'f dyn Fn(f64) -> String,
    pub x_desc: &'f str,
    pub y_desc: &'f str,
}

/// A line chart under its legend, `height` pixels tall without it, at the page's width, with the
/// page's margins, fonts and grid: one set-up for the memory curve, memsim's curves and the
/// latency histograms. `draw` adds the series; its points are in axis space (`Axis::to`).
pub fn line_chart(
    height: u32,
    items: &[LegendItem],
    (x, y): (&Axis, &Axis),
    y_label_area: u32,
    text: &AxisText,
    draw: impl FnOnce(&mut Chart) -> Result<()>,
) -> Result<String> {
    let legend_h = legend_height(items);
    svg((WIDTH, height + legend_h), |root| {
        let (top, body) = root.split_vertically(legend_h);
        legend(&top, items)?;
        let mut chart = ChartBuilder::on(&body)
            .margin(14)
            .margin_right(28)
            .x_label_area_size(48)
            .y_label_area_size(y_label_area)
            .build_cartesian_2d(
                Ticked::new(x.range(), x.ticks()),
                Ticked::new(y.range(), y.ticks()),
            )?;
        let x_fmt = |t: &f64| (text.x_label)(x.from(*t));
        let y_fmt = |t: &f64| (text.y_label)(y.from(*t));
        chart
            .configure_mesh()
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .x_desc(text.x_desc)
            .y_desc(text.y_desc)
            .axis_desc_style((FONT, 14))
            .label_style((FONT, 13))
            .bold_line_style(RGBColor(225, 228, 232))
            .light_line_style(WHITE)
            .draw()?;
        draw(&mut chart)
    })
}

/// Shortens a label that would crowd the axis.
pub fn clip_label(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let head: String = s.chars().take(max - 1).collect();
        format!("{head}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_and_huge_ticks_are_written_with_an_exponent() {
        let axis = Axis::for_values([1e-7, 1e3], 10.0);
        assert_eq!(axis.tick_label(1e-7, Unit::Count), "1e-7");
        assert_eq!(axis.tick_label(1e9, Unit::Count), "1e9");
        assert_eq!(axis.tick_label(0.5, Unit::Count), "0.5");
    }

    #[test]
    fn axes_choose_scale_and_ticks() {
        let lin = Axis::for_values([120.0, 180.0, 240.0], 30.0);
        assert_eq!(lin.scale, Scale::Linear);
        assert_eq!(lin.lo, 0.0);
        assert!(lin.hi >= 240.0 && lin.hi <= 300.0, "{lin:?}");
        assert!(lin.ticks().len() >= 4);

        let log = Axis::for_values([2.0, 50.0, 9000.0], 30.0);
        assert_eq!(log.scale, Scale::Log10);
        assert_eq!((log.lo, log.hi), (1.0, 10000.0));
        let ticks: Vec<f64> = log.ticks().iter().map(|t| log.from(*t)).collect();
        assert_eq!(ticks.len(), 5, "one per decade when there are four decades");
        assert!((ticks[4] - 10000.0).abs() < 1e-6);
        let decade = Axis::for_values([1e-4, 2.0], 30.0);
        assert!(decade.lo < 1e-4, "the smallest bar keeps some length");
        // Tight 1-2-5 bounds, with 2 and 5 ticks when there are few decades.
        let lat = Axis::for_values([1.3, 106.0], 10.0);
        assert_eq!((lat.lo, lat.hi), (1.0, 200.0));
        let ticks: Vec<f64> = lat.ticks().iter().map(|t| lat.from(*t)).collect();
        assert_eq!(ticks.len(), 8, "{ticks:?}");

        assert_eq!(lin.tick_label(0.0, Unit::Nanoseconds), "0 ns");
        let wide = Axis::for_values([4000.0, 9800.0], 30.0);
        assert_eq!(wide.tick_label(2000.0, Unit::Nanoseconds), "2 us");
        assert_eq!(log.tick_label(1000.0, Unit::Nanoseconds), "1 us");
        assert_eq!(log.tick_label(20.0, Unit::Nanoseconds), "20 ns");
        assert_eq!(log.tick_label(2.5e9, Unit::BytesPerSecond), "2.5 GB/s");
        assert_eq!(compact(0.0001), "0.0001");
        assert_eq!(compact(1234.0), "1234");
        assert_eq!(compact(1.25), "1.25");
        assert_eq!(count_label(210_000.0), "210k");
        assert_eq!(count_label(1e6), "1M");

        let mem = Axis::log2(4096.0, 64.0 * 1024.0 * 1024.0);
        assert_eq!((mem.lo, mem.hi), (4096.0, 67108864.0));
        assert_eq!(mem.ticks().len(), 15);
        assert!((mem.from(mem.to(32768.0)) - 32768.0).abs() < 1e-6);
    }
}
