//! Which runs the report shows, what kind each is, and how it was taken.

use super::html::{esc, note, table};
use super::{Context, Section};
use crate::results::model::{Run, RunKind, Status};
use anyhow::Result;

pub struct Runs;

/// How the run was taken, in the terms of its kind.
fn how(r: &Run) -> String {
    match r.kind() {
        RunKind::Run => {
            let o = &r.options;
            let mut how = format!(
                "{} samples of at least {} ms, {} warm-up",
                o.samples, o.min_sample_ms, o.warmup_samples
            );
            if let Some(cpu) = o.cpu {
                how.push_str(&format!(", CPU {cpu}"));
            }
            if let Some(p) = o.fifo_priority {
                how.push_str(&format!(", SCHED_FIFO {p}"));
            }
            how
        }
        kind => r
            .sections
            .of_kind(kind)
            .map(|d| d.how())
            .unwrap_or_default(),
    }
}

impl Section for Runs {
    fn id(&self) -> &'static str {
        "runs"
    }
    fn title(&self) -> &'static str {
        "Runs"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        let rows: Vec<Vec<String>> = ctx
            .runs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let unmeasured = r.unmeasured();
                let count = |s: Status| unmeasured.iter().filter(|u| u.status == s).count();
                let (skipped, failed) = (count(Status::Skipped), count(Status::Failed));
                let mut figures = format!("{} figures", r.figures().len());
                if skipped > 0 {
                    figures.push_str(&format!(", {skipped} skipped"));
                }
                if failed > 0 {
                    figures.push_str(&format!(", <span class=\"bad\">{failed} failed</span>"));
                }
                if r.interrupted {
                    figures.push_str(", <span class=\"bad\">interrupted</span>");
                }
                let tags: Vec<String> = r.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
                vec![
                    format!("<b>R{}</b>", i + 1),
                    format!("<code>{}</code>", esc(&r.id)),
                    esc(r.kind().as_str()),
                    esc(&r.started_at),
                    esc(&r.host().unwrap_or_else(|| "unknown".into())),
                    esc(r.suite.as_deref().unwrap_or("-")),
                    esc(&tags.join(" ")),
                    figures,
                    esc(&how(r)),
                    esc(&r.tool_version),
                ]
            })
            .collect();
        let mut out = table(
            "runs",
            &[
                "", "id", "kind", "started", "host", "suite", "tags", "figures", "how", "osmeter",
            ],
            &rows,
        );
        if ctx.runs.len() > 1 {
            out.push_str(&note(
                "R1 is the baseline: the comparison section sets every other run of its kind \
                 against it. Plots name runs by these labels (with their tags).",
            ));
        }
        Ok(Some(out))
    }
}
