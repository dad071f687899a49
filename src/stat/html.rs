//! Command statistics (`osmeter stat`, the run's "stat" section): per run of `stat`, every figure
//! of the command with its mean over the runs of the command, the interval and the spread.

use crate::results::model::RunKind;
use crate::results::report::html::{esc, note, table, Cell, Row};
use crate::results::report::{Context, Section};
use crate::units;
use anyhow::Result;
use std::fmt::Write as _;

pub struct Stat;

impl Section for Stat {
    fn id(&self) -> &'static str {
        "stat"
    }
    fn title(&self) -> &'static str {
        "Command statistics"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        if !ctx.has_kind(RunKind::Stat) {
            return Ok(None);
        }
        let mut out = note(
            "Each figure is the mean over the runs of the command, with the 95 % interval of the \
             mean (Student t) and the coefficient of variation between the runs. Times and \
             counters cover the command and the children it waited for; interrupts and stolen \
             time are of the whole machine during the runs.",
        );
        for (i, run) in ctx.runs.iter().enumerate() {
            let Some(doc) = run.sections.get::<crate::stat::StatDoc>() else {
                continue;
            };
            let _ = writeln!(
                out,
                "<h3>{}: <code>{}</code></h3>",
                esc(&ctx.run_label(i)),
                esc(&crate::text::command_line(&doc.command))
            );
            let rows: Vec<Row> = doc
                .figures()
                .into_iter()
                .filter_map(|f| {
                    let s = doc.summary.get(&f.key)?;
                    let (unit, factor) = f.unit.general();
                    let scale = unit.scale_for(s.mean * factor);
                    let shown = |v: f64| units::in_scale(v * factor, scale);
                    Some(Row {
                        class: "",
                        cells: vec![
                            Cell::from(esc(&f.label)),
                            Cell::num(shown(s.mean)),
                            Cell::num(if s.n >= 2 {
                                format!("{} – {}", shown(s.ci95[0]), shown(s.ci95[1]))
                            } else {
                                "-".into()
                            }),
                            Cell::num(if s.n >= 2 {
                                format!("{:.1} %", s.cv * 100.0)
                            } else {
                                "-".into()
                            }),
                            Cell::num(s.n.to_string()),
                        ],
                    })
                })
                .collect();
            out.push_str(&table(
                "stat",
                &["figure", "mean", "95 % CI", "CV", "runs"],
                &rows,
            ));
            if let Some(f) = &doc.failure {
                out.push_str(&note(f));
            }
        }
        Ok(Some(out))
    }
}
