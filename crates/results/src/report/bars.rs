//! Bar charts of the medians with their 95 % intervals: times per operation one chart per probe
//! group, bandwidths and rates in charts of their own (their units do not mix).

use super::hbars::{HBar, HBars};
use super::html::{esc, figure, note, value};
use super::plot::{color, Axis, LegendItem, Scale};
use super::{has_own_section, Context, Section};
use crate::results::model::{Measurement, Status, Unit};
use anyhow::Result;

pub struct Bars {
    unit: Unit,
    id: &'static str,
    title: &'static str,
    /// One chart per probe group rather than one for all figures.
    per_group: bool,
    /// Say so when no figure has this unit (rather than leaving the section out).
    always: bool,
}

impl Bars {
    pub const TIME: Bars = Bars {
        unit: Unit::Nanoseconds,
        id: "time-bars",
        title: "Time per operation",
        per_group: true,
        always: true,
    };
    pub const BANDWIDTH: Bars = Bars {
        unit: Unit::BytesPerSecond,
        id: "bandwidth-bars",
        title: "Bandwidth",
        per_group: false,
        always: true,
    };
    pub const RATE: Bars = Bars {
        unit: Unit::OpsPerSecond,
        id: "rate-bars",
        title: "Operations per second",
        per_group: false,
        always: false,
    };
}

fn measured(m: &Measurement, unit: Unit) -> bool {
    m.status == Status::Ok
        && m.unit == unit
        && !has_own_section(&m.probe)
        && m.summary.as_ref().is_some_and(|s| s.median > 0.0)
}

impl Bars {
    fn chart(&self, ctx: &Context, group: Option<&str>, keys: &[String]) -> Result<String> {
        let several = ctx.runs.len() > 1;
        let mut bars = Vec::new();
        let mut extent = Vec::new();
        for (c, key) in keys.iter().enumerate() {
            for (r, run) in ctx.runs.iter().enumerate() {
                let Some(m) = run
                    .measurements
                    .iter()
                    .find(|m| measured(m, self.unit) && &m.label() == key)
                else {
                    continue;
                };
                let s = m.summary.as_ref().expect("measured() checked");
                extent.extend([s.median, s.ci95[0], s.ci95[1]]);
                bars.push(HBar {
                    category: c,
                    slot: if several { r } else { 0 },
                    value: s.median,
                    interval: Some(s.ci95),
                    color: color(if several { r } else { 0 }),
                    // With many runs the colours repeat: name the run instead of the value.
                    text: Some(if ctx.runs.len() > 4 {
                        format!("R{}", r + 1)
                    } else {
                        value(s.median, self.unit)
                    }),
                });
            }
        }
        let axis = Axis::for_values(extent, 30.0);
        let unit = self.unit;
        let fmt = move |v: f64| axis.tick_label(v, unit);
        let categories = keys
            .iter()
            .map(|k| {
                let short = match group {
                    Some(g) => k.strip_prefix(&format!("{g}.")).unwrap_or(k),
                    None => k,
                };
                super::plot::clip_label(short, 56)
            })
            .collect();
        let svg = HBars {
            categories,
            slots: if several { ctx.runs.len() } else { 1 },
            bars,
            axis,
            origin: axis.origin(),
            x_desc: match unit {
                Unit::Nanoseconds => "time per operation (shorter is faster)".into(),
                Unit::BytesPerSecond => "bytes per second (longer is faster)".into(),
                Unit::OpsPerSecond => "operations per second (longer is faster)".into(),
                other => other.symbol().into(),
            },
            x_fmt: &fmt,
            legend: if several {
                (0..ctx.runs.len())
                    .map(|i| LegendItem::boxed(ctx.run_label(i), color(i)))
                    .collect()
            } else {
                Vec::new()
            },
            reference: None,
            ticks: None,
        }
        .to_svg()?;
        let what = match group {
            Some(g) => format!("<b>{}: {}.</b> ", esc(self.title), esc(g)),
            None => format!("<b>{}.</b> ", esc(self.title)),
        };
        let runs = if several {
            " Bars of one figure are the runs, in legend order; a figure a run lacks has no bar."
        } else {
            ""
        };
        let scale = if axis.scale == Scale::Log10 {
            " The axis is logarithmic because the figures span more than 30 times: equal \
             distances are equal ratios."
        } else {
            " The axis is linear from zero."
        };
        Ok(figure(
            &svg,
            &format!(
                "{what}Each bar is the median of one figure; the whisker spans its 95&nbsp;% \
                 confidence interval, the dot marks the median.{runs}{scale}"
            ),
        ))
    }
}

impl Section for Bars {
    fn id(&self) -> &'static str {
        self.id
    }
    fn title(&self) -> &'static str {
        self.title
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        if !ctx.has_kind(crate::results::model::RunKind::Run) {
            return Ok(None);
        }
        // Figures in first-seen order over all runs, so every run's chart lists them alike.
        let mut keys: Vec<(String, String)> = Vec::new();
        for run in ctx.runs {
            for m in run.measurements.iter().filter(|m| measured(m, self.unit)) {
                let key = m.label();
                if !keys.iter().any(|(_, k)| *k == key) {
                    let group = m.probe.split('.').next().unwrap_or("").to_string();
                    keys.push((group, key));
                }
            }
        }
        if keys.is_empty() {
            return Ok(self.always.then(|| {
                note(&format!(
                    "These runs have no figures in {} (none measured, or all skipped).",
                    self.unit.symbol()
                ))
            }));
        }
        let mut out = String::new();
        if self.per_group {
            let mut groups: Vec<&str> = Vec::new();
            for (g, _) in &keys {
                if !groups.contains(&g.as_str()) {
                    groups.push(g);
                }
            }
            for g in groups {
                let in_group: Vec<String> = keys
                    .iter()
                    .filter(|(kg, _)| kg == g)
                    .map(|(_, k)| k.clone())
                    .collect();
                out.push_str(&self.chart(ctx, Some(g), &in_group)?);
            }
        } else {
            let all: Vec<String> = keys.into_iter().map(|(_, k)| k).collect();
            out.push_str(&self.chart(ctx, None, &all)?);
        }
        Ok(Some(out))
    }
}
