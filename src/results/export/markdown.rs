//! Tables ready to paste into a review: the system in a line, then one table per probe group.

use super::{ExportOptions, Exporter};
use crate::results::model::{Run, Status};
use crate::results::table::human;
use std::io::{self, Write};

pub struct Markdown;

/// Escapes the characters that would break a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn fp<'a>(run: &'a Run, key: &str) -> &'a str {
    run.fingerprint
        .get(key)
        .and_then(|v| v.as_str())
        .unwrap_or("?")
}

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }
    fn write(&self, run: &Run, _: &ExportOptions, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "### osmeter run `{}`\n", run.id)?;
        writeln!(
            out,
            "{} on {} ({}, kernel {}), suite {}, osmeter {}\n",
            run.started_at,
            fp(run, "hostname"),
            fp(run, "cpu_model"),
            fp(run, "kernel_release"),
            run.suite.as_deref().unwrap_or("-"),
            run.tool_version
        )?;
        let mut group = "";
        for m in &run.measurements {
            let g = m.probe.split('.').next().unwrap_or("");
            if g != group {
                group = g;
                writeln!(out, "\n| {g} | median | 95 % CI | CV |")?;
                writeln!(out, "|---|---:|---:|---:|")?;
            }
            let label = cell(&m.label());
            match (&m.summary, m.status) {
                (Some(s), Status::Ok) => {
                    let (v, unit) = human(s.median, m.unit);
                    let k = if s.median != 0.0 { v / s.median } else { 1.0 };
                    writeln!(
                        out,
                        "| {label} | {v:.3} {unit} | {:.3} – {:.3} | {:.1} % |",
                        s.ci95[0] * k,
                        s.ci95[1] * k,
                        s.cv * 100.0
                    )?;
                }
                _ => {
                    let status = serde_json::to_value(m.status).ok();
                    let status = status.as_ref().and_then(|v| v.as_str()).unwrap_or("?");
                    let reason = cell(m.reason.as_deref().unwrap_or(""));
                    writeln!(out, "| {label} | {status}: {reason} | | |")?
                }
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
