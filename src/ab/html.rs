//! The report's A/B section: every `ab` run of the page side by side, one row per run and figure
//! (its mode, pairs and time, B/A with its interval and the verdict), so interleaved, duet and
//! sequential comparisons of one change read in one table.

use super::document::AbDoc;
use crate::results::compare::Verdict;
use crate::results::model::RunKind;
use crate::results::report::html::{esc, note, table, Cell, Row};
use crate::results::report::{Context, Section};
use anyhow::Result;
use std::time::Duration;

pub struct Ab;

impl Section for Ab {
    fn id(&self) -> &'static str {
        "ab"
    }
    fn title(&self) -> &'static str {
        "A/B in the same minutes"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        if !ctx.has_kind(RunKind::Ab) {
            return Ok(None);
        }
        let mut out = note(
            "A and B measured in pairs (one round of each within seconds, alternating A B, B A; \
             at once on two CPUs in a duet; or on one CPU, samples in turn, in lockstep). B/A is \
             the Hodges-Lehmann estimate of the pairs' ratios with its 95 % interval (signed \
             ranks on the log scale); a figure changed when the interval excludes 1, the false \
             discovery rate holds and the change reaches the minimum effect.",
        );
        let mut rows = Vec::new();
        for (i, run) in ctx.runs.iter().enumerate() {
            let Some(doc) = run.sections.get::<AbDoc>() else {
                continue;
            };
            rows.extend(rows_of(&ctx.run_label(i), doc));
        }
        out.push_str(&table(
            "ab",
            &[
                "run",
                "mode",
                "pairs",
                "time",
                "figure",
                "B/A",
                "95 % interval",
                "verdict",
            ],
            &rows,
        ));
        Ok(Some(out))
    }
}

fn rows_of(label: &str, doc: &AbDoc) -> Vec<Row> {
    let time = crate::progress::duration(Duration::from_secs_f64(doc.elapsed_s));
    doc.figures
        .iter()
        .map(|f| {
            let (ratio, interval) = match f.paired {
                Some(p) => (
                    format!("{:.3}", p.ratio),
                    format!("{:.3} – {:.3}", p.ci95[0], p.ci95[1]),
                ),
                None => ("-".into(), "-".into()),
            };
            let (class, verdict) = match f.verdict {
                Verdict::Faster => ("faster", "faster"),
                Verdict::Slower => ("slower", "slower"),
                Verdict::NoChange => ("", "no change"),
                Verdict::Untested => ("", "untested"),
            };
            Row {
                class,
                cells: vec![
                    Cell::from(esc(label)),
                    Cell::from(doc.mode.as_str().to_string()),
                    Cell::num(doc.pairs.to_string()),
                    Cell::num(time.clone()),
                    Cell::from(esc(&f.key)),
                    Cell::num(ratio),
                    Cell::num(interval),
                    Cell::from(verdict.to_string()),
                ],
            }
        })
        .collect()
}
