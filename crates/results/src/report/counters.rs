//! Where the work happens: hardware events per operation, user and kernel side by side; where the
//! machine has no hardware counters (most VMs), the software events per operation and why the
//! hardware ones are missing.

use super::hbars::{HBar, HBars};
use super::html::{esc, figure, note};
use super::plot::{clip_label, color, count_label, Axis, LegendItem, Scale};
use super::{has_own_section, Context, Section};
use crate::results::model::{Measurement, Run, Status};
use anyhow::Result;
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub struct Counters;

const SOFTWARE_EVENTS: &[&str] = &["page-faults", "context-switches", "cpu-migrations"];

fn counted(run: &Run) -> impl Iterator<Item = &Measurement> {
    run.measurements
        .iter()
        .filter(|m| m.status == Status::Ok && !m.counters.is_empty() && !has_own_section(&m.probe))
}

/// The hardware event to split user/kernel by: instructions when any figure has it, else cycles.
fn hardware_event(run: &Run) -> Option<&'static str> {
    ["instructions", "cycles"].into_iter().find(|e| {
        counted(run).any(|m| m.counters.user.contains_key(*e) || m.counters.kernel.contains_key(*e))
    })
}

fn hardware_chart(run: &Run, event: &str) -> Result<String> {
    let figures: Vec<&Measurement> = counted(run)
        .filter(|m| m.counters.user.contains_key(event) || m.counters.kernel.contains_key(event))
        .collect();
    let mut bars = Vec::new();
    let mut extent = Vec::new();
    let mut scaled = false;
    for (c, m) in figures.iter().enumerate() {
        scaled |= m.counters.scaled;
        let u = m.counters.user.get(event).copied().unwrap_or(0.0);
        let k = m.counters.kernel.get(event).copied().unwrap_or(0.0);
        extent.extend([u, k]);
        let share = if u + k > 0.0 {
            format!(" ({:.0} % kernel)", 100.0 * k / (u + k))
        } else {
            String::new()
        };
        for (slot, v, text) in [
            (0, u, count_label(u)),
            (1, k, format!("{}{share}", count_label(k))),
        ] {
            bars.push(HBar {
                category: c,
                slot,
                value: v,
                interval: None,
                color: color(if slot == 0 { 0 } else { 3 }),
                text: Some(text),
            });
        }
    }
    let axis = Axis::for_values(extent, 30.0);
    let svg = HBars {
        categories: figures
            .iter()
            .map(|m| {
                let star = if m.counters.scaled { " *" } else { "" };
                clip_label(&format!("{}{star}", m.label()), 60)
            })
            .collect(),
        slots: 2,
        bars,
        axis,
        origin: axis.origin(),
        x_desc: format!("{event} per operation"),
        x_fmt: &count_label,
        legend: vec![
            LegendItem::boxed(format!("user-mode {event}"), color(0)),
            LegendItem::boxed(format!("kernel-mode {event}"), color(3)),
        ],
        reference: None,
        ticks: None,
    }
    .to_svg()?;
    let log = if axis.scale == Scale::Log10 {
        " The axis is logarithmic (the counts span more than 30 times)."
    } else {
        ""
    };
    let star = if scaled {
        " A * marks figures whose counts were extrapolated because the counters were multiplexed."
    } else {
        ""
    };
    Ok(figure(
        &svg,
        &format!(
            "<b>User against kernel {event} per operation.</b> For each figure the upper bar counts \
             {event} retired in user mode, the lower one in the kernel, both per operation with the \
             empty loop's own count subtracted; the share printed is the kernel's part. A system call \
             or I/O figure dominated by the kernel bar spends its time in the OS, not in the program.\
             {log}{star}"
        ),
    ))
}

fn software_chart(run: &Run) -> Result<Option<String>> {
    let events: Vec<&str> = SOFTWARE_EVENTS
        .iter()
        .copied()
        .filter(|e| counted(run).any(|m| m.counters.software.contains_key(*e)))
        .collect();
    if events.is_empty() {
        return Ok(None);
    }
    let figures: Vec<&Measurement> = counted(run)
        .filter(|m| events.iter().any(|e| m.counters.software.contains_key(*e)))
        .collect();
    let mut bars = Vec::new();
    let mut extent = Vec::new();
    for (c, m) in figures.iter().enumerate() {
        for (slot, e) in events.iter().enumerate() {
            let v = m.counters.software.get(*e).copied().unwrap_or(0.0);
            extent.push(v);
            bars.push(HBar {
                category: c,
                slot,
                value: v,
                interval: None,
                color: color(slot + 1),
                text: Some(count_label(v)),
            });
        }
    }
    let axis = Axis::for_values(extent, 100.0);
    let svg = HBars {
        categories: figures.iter().map(|m| clip_label(&m.label(), 60)).collect(),
        slots: events.len(),
        bars,
        axis,
        origin: axis.origin(),
        x_desc: "events per operation".into(),
        x_fmt: &count_label,
        legend: events
            .iter()
            .enumerate()
            .map(|(i, e)| LegendItem::boxed(e.to_string(), color(i + 1)))
            .collect(),
        reference: None,
        ticks: None,
    }
    .to_svg()?;
    let log = if axis.scale == Scale::Log10 {
        " The axis is logarithmic; a figure with no bar for an event had none."
    } else {
        ""
    };
    Ok(Some(figure(
        &svg,
        &format!(
            "<b>Software events per operation.</b> Counted by the kernel itself, so available \
             without hardware counters, covering user and kernel mode together: page faults and \
             context switches that one operation causes on average.{log}"
        ),
    )))
}

/// Why hardware counters are missing, one line per distinct reason.
fn unavailable(run: &Run) -> String {
    if run.counters_unavailable.is_empty() {
        return note(
            "This run holds no hardware counter values and records no reason (counters were \
             turned off, or this osmeter did not count them).",
        );
    }
    let mut by_reason: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (event, reason) in &run.counters_unavailable {
        by_reason.entry(reason).or_default().push(event);
    }
    let mut out = String::from(
        "<p class=\"note\">Hardware counters are missing from this run:</p>\n<ul class=\"note\">\n",
    );
    for (reason, events) in by_reason {
        let _ = writeln!(
            out,
            "<li><code>{}</code>: {}</li>",
            esc(&events.join(", ")),
            esc(reason)
        );
    }
    out.push_str("</ul>\n");
    out
}

impl Section for Counters {
    fn id(&self) -> &'static str {
        "counters"
    }
    fn title(&self) -> &'static str {
        "User and kernel counters"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        if !ctx.has_kind(crate::results::model::RunKind::Run) {
            return Ok(None);
        }
        let mut out = String::new();
        for (i, run) in ctx.runs.iter().enumerate() {
            if run.kind() != crate::results::model::RunKind::Run {
                continue;
            }
            if ctx.runs.len() > 1 {
                let _ = writeln!(out, "<h3>{}</h3>", esc(&ctx.run_label(i)));
            }
            match hardware_event(run) {
                Some(event) => out.push_str(&hardware_chart(run, event)?),
                None => match software_chart(run)? {
                    Some(chart) => {
                        out.push_str(&chart);
                        out.push_str(&unavailable(run));
                    }
                    None if run.counters_unavailable.is_empty() => out.push_str(&note(
                        "This run holds no counter values, hardware or software, and records no \
                         reason: counting was turned off, or this osmeter did not count.",
                    )),
                    None => {
                        out.push_str(&note("This run holds no counter values."));
                        out.push_str(&unavailable(run));
                    }
                },
            }
        }
        Ok(Some(out))
    }
}
