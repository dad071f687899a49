//! The first thing the page says: what was measured, what changed, and what to read with care, in
//! a few lines; the sections below hold the detail.

use super::html::esc;
use super::{Context, Section};
use crate::results::compare::Verdict;
use crate::results::model::Status;
use anyhow::Result;
use std::fmt::Write as _;

pub struct Overview;

/// At most this many changed figures are named per comparison; the comparison section has all.
const NAMED: usize = 5;

fn measured(ctx: &Context) -> String {
    // Counted per kind: "4 runs of kind latency, run" read as if all four were latency runs.
    let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
    for r in ctx.runs {
        *kinds.entry(r.kind().to_string()).or_default() += 1;
    }
    let hosts: std::collections::BTreeSet<String> =
        ctx.runs.iter().filter_map(|r| r.host()).collect();
    let figures: usize = ctx.runs.iter().map(|r| r.figures().len()).sum();
    let kinds: Vec<String> = kinds
        .into_iter()
        .map(|(kind, n)| format!("{n} of kind {kind}"))
        .collect();
    format!(
        "{} run(s) ({}) on {} host(s), {figures} figures in all.",
        ctx.runs.len(),
        kinds.join(", "),
        hosts.len().max(1)
    )
}

fn changed(ctx: &Context) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, c) in ctx.comparisons.iter().enumerate() {
        let (a, b) = (esc(&ctx.run_label(0)), esc(&ctx.run_label(i + 1)));
        let Some(c) = c else {
            lines.push(format!(
                "{b} against {a}: runs of different kinds, not compared."
            ));
            continue;
        };
        let mut moved: Vec<_> = c
            .figures
            .iter()
            .filter(|f| matches!(f.verdict, Verdict::Faster | Verdict::Slower))
            .collect();
        moved.sort_by(|x, y| {
            (x.speedup.ln().abs())
                .total_cmp(&y.speedup.ln().abs())
                .reverse()
        });
        if moved.is_empty() {
            lines.push(format!(
                "{b} against {a}: none of {} figures changed beyond noise.",
                c.figures.len()
            ));
            continue;
        }
        let named: Vec<String> = moved
            .iter()
            .take(NAMED)
            .map(|f| {
                let how = if f.verdict == Verdict::Faster {
                    "faster"
                } else {
                    "slower"
                };
                let factor = if f.speedup >= 1.0 {
                    f.speedup
                } else {
                    1.0 / f.speedup
                };
                format!("{} {factor:.2}x {how}", esc(&f.key))
            })
            .collect();
        let more = moved.len().saturating_sub(NAMED);
        lines.push(format!(
            "{b} against {a}: {} of {} figures changed: {}{}.",
            moved.len(),
            c.figures.len(),
            named.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        ));
    }
    lines
}

fn with_care(ctx: &Context) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, run) in ctx.runs.iter().enumerate() {
        let flagged = run
            .measurements
            .iter()
            .filter(|m| !m.warnings.is_empty())
            .count();
        let failed = run
            .measurements
            .iter()
            .filter(|m| m.status != Status::Ok)
            .count();
        let mut parts = Vec::new();
        if flagged > 0 {
            parts.push(format!("{flagged} figure(s) marked to read with care"));
        }
        if failed > 0 {
            parts.push(format!("{failed} not measured"));
        }
        if run.interrupted {
            parts.push("stopped early".to_string());
        }
        if !parts.is_empty() {
            lines.push(format!("{}: {}.", esc(&ctx.run_label(i)), parts.join(", ")));
        }
    }
    lines
}

impl Section for Overview {
    fn id(&self) -> &'static str {
        "overview"
    }
    fn title(&self) -> &'static str {
        "At a glance"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        let mut out = String::new();
        let _ = writeln!(out, "<p>{}</p>", esc(&measured(ctx)));
        let changed = changed(ctx);
        if !changed.is_empty() {
            out.push_str("<h3>What changed</h3>\n<ul>\n");
            for l in changed {
                // Figure names were escaped where they were put in.
                let _ = writeln!(out, "<li>{l}</li>");
            }
            out.push_str("</ul>\n");
        }
        let care = with_care(ctx);
        if !care.is_empty() {
            out.push_str("<h3>Read with care</h3>\n<ul>\n");
            for l in care {
                let _ = writeln!(out, "<li>{l}</li>");
            }
            out.push_str("</ul>\n");
        }
        Ok(Some(out))
    }
}
