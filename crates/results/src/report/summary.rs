//! One table per run: every figure with its median, 95 % interval, unit and spread, and what the
//! reader should know about it.

use super::html::{esc, note, num, table, Cell, Row};
use super::{has_own_section, Context, Section};
use crate::results::model::{Measurement, Run, RunKind, Status};
use crate::results::table::human;
use anyhow::Result;
use std::fmt::Write as _;

pub struct SummaryTables;

fn row(m: &Measurement, with_reference: bool) -> Row {
    let mut cells = vec![Cell::from(format!("<code>{}</code>", esc(&m.label())))];
    match (m.status, &m.summary) {
        (Status::Ok, Some(s)) => {
            let (med, unit) = human(s.median, m.unit);
            let scale = if s.median != 0.0 { med / s.median } else { 1.0 };
            let mut ci = format!("{} – {}", num(s.ci95[0] * scale), num(s.ci95[1] * scale));
            if s.ci_level > 0.0 && s.ci_level < 0.949 {
                let _ = write!(ci, " ({:.1} %)", s.ci_level * 100.0);
            }
            cells.push(Cell::num(num(med)));
            cells.push(Cell::num(ci));
            cells.push(Cell::from(esc(unit)));
            cells.push(Cell::num(
                crate::results::figure::bench::cv(m)
                    .map(|cv| format!("{:.1} %", cv * 100.0))
                    .unwrap_or_else(|| "-".into()),
            ));
            cells.push(Cell::num(m.samples.len().to_string()));
            if with_reference {
                cells.push(Cell::num(
                    m.derived
                        .get("reference_units")
                        .map(|r| num(*r))
                        .unwrap_or_default(),
                ));
            }
        }
        (status, _) => {
            cells.push(Cell::from(
                match status {
                    Status::Skipped => "skipped",
                    Status::Failed => "<span class=\"bad\">failed</span>",
                    Status::Ok => "no summary",
                }
                .to_string(),
            ));
            let blanks = if with_reference { 5 } else { 4 };
            cells.extend(std::iter::repeat_n(Cell::default(), blanks));
        }
    }
    let mut notes: Vec<String> = m.warnings.iter().map(|w| esc(w)).collect();
    if let Some(r) = &m.reason {
        notes.insert(0, esc(r));
    }
    cells.push(Cell::with_class("warn", notes.join("<br>")));
    let warned = !m.warnings.is_empty() || m.status == Status::Failed;
    Row {
        class: if warned { "warned" } else { "" },
        cells,
    }
}

fn run_table(run: &Run) -> String {
    let with_reference = run
        .measurements
        .iter()
        .any(|m| m.derived.contains_key("reference_units"));
    let mut header = vec!["figure", "median", "95 % CI", "unit", "CV", "n"];
    if with_reference {
        header.push("× cpu.reference");
    }
    header.push("warnings and reasons");
    let rows: Vec<Row> = run
        .measurements
        .iter()
        .filter(|m| !has_own_section(&m.probe))
        .map(|m| row(m, with_reference))
        .collect();
    let mut out = table("summary", &header, &rows);
    // Swept figures (a point per size) are tabulated beside their plot instead.
    let mut swept: Vec<(&str, usize)> = Vec::new();
    for m in run
        .measurements
        .iter()
        .filter(|m| has_own_section(&m.probe))
    {
        match swept.iter_mut().find(|(p, _)| *p == m.probe) {
            Some((_, n)) => *n += 1,
            None => swept.push((&m.probe, 1)),
        }
    }
    for (probe, n) in swept {
        out.push_str(&note(&format!(
            "{probe}: {n} points, drawn and tabulated in their own section below."
        )));
    }
    out
}

impl Section for SummaryTables {
    fn id(&self) -> &'static str {
        "summary"
    }
    fn title(&self) -> &'static str {
        "Summary"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        if !ctx.has_kind(RunKind::Run) {
            return Ok(None);
        }
        let mut out = String::from(
            "<p class=\"note\">Median of the samples after subtracting the measurement's own cost; \
             the 95&nbsp;% confidence interval of the median from order statistics (with its true \
             level when there are too few samples for 95&nbsp;%); CV is the coefficient of \
             variation of the samples. Rows marked &#9888;&#xFE0E; carry warnings.</p>\n",
        );
        for (i, run) in ctx.runs.iter().enumerate() {
            if run.kind() != RunKind::Run {
                continue;
            }
            if ctx.runs.len() > 1 {
                let _ = writeln!(
                    out,
                    "<h3>{} <code>{}</code></h3>",
                    esc(&ctx.run_label(i)),
                    esc(&run.id)
                );
            }
            out.push_str(&run_table(run));
        }
        Ok(Some(out))
    }
}
