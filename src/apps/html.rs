//! Application workloads counted whole (group `app`): per figure of every run, the workload's user
//! and kernel time per operation, its context switches, the shares of the whole machine's CPU time
//! in the kernel, in interrupts and idle, and the interrupts that fired, by device (the same view
//! `run` and `show` print, from [`crate::apps::summary`]).

use crate::apps::summary::{shares, top_interrupts};
use crate::results::model::{RunKind, Status};
use crate::results::report::html::{esc, note, table};
use crate::results::report::{Context, Section};
use crate::units::{format, Unit};
use anyhow::Result;

pub struct Apps;

impl Section for Apps {
    fn id(&self) -> &'static str {
        "apps"
    }
    fn title(&self) -> &'static str {
        "Application workloads counted whole"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        if !ctx.has_kind(RunKind::Run) {
            return Ok(None);
        }
        let mut rows: Vec<Vec<String>> = Vec::new();
        for (i, run) in ctx.runs.iter().enumerate() {
            for m in run.measurements.iter().filter(|m| {
                m.probe.starts_with("app.")
                    && m.status == Status::Ok
                    && m.counters.software.contains_key("workload-user-ns")
            }) {
                let sw = |k: &str| m.counters.software.get(k).copied().unwrap_or(0.0);
                let (user, kernel) = (sw("workload-user-ns"), sw("workload-kernel-ns"));
                let time = |ns: f64| format(ns, Unit::Nanoseconds);
                let pct = |x: f64| format!("{:.1}%", 100.0 * x);
                let (mk, mi, md) = match shares(m) {
                    Some((k, i, d)) => (pct(k), pct(i), pct(d)),
                    None => ("-".into(), "-".into(), "-".into()),
                };
                rows.push(
                    [
                        ctx.run_label(i),
                        m.label(),
                        time(user),
                        time(kernel),
                        if user + kernel > 0.0 {
                            pct(kernel / (user + kernel))
                        } else {
                            "-".into()
                        },
                        format!("{:.1}", sw("context-switches")),
                        mk,
                        mi,
                        md,
                        top_interrupts(m, 4),
                    ]
                    .iter()
                    .map(|c| esc(c))
                    .collect(),
                );
            }
        }
        if rows.is_empty() {
            return Ok(None);
        }
        let mut out = note(
            "Per operation of each app figure: the user and kernel time of every process the \
             workload involved (its cgroup: servers, clients, compilers), its context switches, \
             then the shares of the whole machine's CPU time spent in the kernel, in interrupts \
             (hard and soft) and idle during the samples, and the busiest interrupt sources.",
        );
        out.push_str(&table(
            "",
            &[
                "run",
                "figure",
                "user",
                "kernel",
                "kernel share",
                "switches",
                "machine kernel",
                "machine irq",
                "machine idle",
                "interrupts by device",
            ],
            &rows,
        ));
        Ok(Some(out))
    }
}
