//! Tables ready to paste into a review: the system in a line, then one table per group of figures.

use super::{ExportOptions, Exporter};
use crate::results::model::{Run, Status};
use crate::units;
use std::io::{self, Write};

pub struct Markdown;

/// Escapes the characters that would break a table cell, and makes it safe from a spreadsheet
/// it may be pasted into.
fn cell(s: &str) -> String {
    crate::text::spreadsheet_safe(s)
        .replace('|', "\\|")
        .replace('\n', " ")
}

fn fp(
    run: &Run,
    field: impl Fn(&crate::results::fingerprint::Fingerprint) -> Option<&String>,
) -> &str {
    run.fingerprint
        .as_ref()
        .and_then(field)
        .map_or("?", String::as_str)
}

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }
    fn write(&self, run: &Run, _: &ExportOptions, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "### osmeter {} `{}`\n", run.kind(), run.id)?;
        writeln!(
            out,
            "{} on {} ({}, kernel {}), suite {}, osmeter {}",
            run.started_at,
            fp(run, |f| f.hostname.as_ref()),
            fp(run, |f| f.cpu_model.as_ref()),
            fp(run, |f| f.kernel_release.as_ref()),
            run.suite.as_deref().unwrap_or("-"),
            run.tool_version
        )?;
        let mut group = String::new();
        for f in run.figures() {
            if f.group != group {
                group = f.group.clone();
                writeln!(out, "\n| {} | value | 95 % CI | CV |", cell(&group))?;
                writeln!(out, "|---|---:|---:|---:|")?;
            }
            let scale = f.unit.scale_for(f.value);
            let ci = f
                .interval
                .map(|[lo, hi]| {
                    format!(
                        "{} – {}",
                        units::in_scale(lo, scale),
                        units::in_scale(hi, scale)
                    )
                })
                .unwrap_or_default();
            let cv = f
                .cv()
                .map(|c| format!("{:.1} %", c * 100.0))
                .unwrap_or_default();
            writeln!(
                out,
                "| {} | {} | {ci} | {cv} |",
                cell(&f.key),
                units::in_scale(f.value, scale)
            )?;
        }
        let unmeasured = run.unmeasured();
        if !unmeasured.is_empty() {
            writeln!(out, "\n| not measured | why | | |")?;
            writeln!(out, "|---|---|---|---|")?;
            for u in unmeasured {
                let status = if u.status == Status::Skipped {
                    "skipped"
                } else {
                    "failed"
                };
                writeln!(
                    out,
                    "| {} | {status}: {} | | |",
                    cell(&u.key),
                    cell(&u.reason)
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;

    #[test]
    fn tables_match_snapshot() {
        let text = render(&markdown::Markdown, &sample_run(), ExportOptions::default());
        // Every table row has the header's four cells (escaped pipes do not split cells).
        for line in text.lines().filter(|l| l.starts_with('|')) {
            let cells = line.replace("\\|", "").matches('|').count() - 1;
            assert_eq!(cells, 4, "{line}");
        }
        check_snapshot("run.md", &text);
    }
}
