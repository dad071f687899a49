//! The latency section's optional parts, each present only when the run asked for it: the stages
//! of the timer wakes (`--stages`), the functions that ran instead of late threads (`--trace`
//! with stacks) and the pipeline run for real beside the buffer model (`--compute`).

use super::{bins, histogram_plot, Bin};
use crate::latency::compute::ComputeResult;
use crate::latency::document::LatencyDoc;
use crate::latency::stacks::Cause;
use crate::latency::stages::{StageStats, Stages};
use crate::results::report::html::{esc, figure, note, num, table, Cell, Row};
use crate::results::report::Context;
use anyhow::Result;

/// Causes listed per run.
const TOP_CAUSES: usize = 10;

/// "R2: " when several runs share the section.
fn prefix(ctx: &Context, docs: &[(usize, &LatencyDoc)], run: usize) -> String {
    if docs.len() > 1 {
        format!("{}: ", ctx.run_label(run))
    } else {
        String::new()
    }
}

/// All three parts, in the order the text report prints them.
pub fn render(ctx: &Context, docs: &[(usize, &LatencyDoc)]) -> Result<String> {
    let mut out = String::new();
    for &(r, d) in docs {
        let p = esc(&prefix(ctx, docs, r));
        out.push_str(&stages(&p, d)?);
        out.push_str(&causes(&p, d));
        out.push_str(&compute(&p, d));
    }
    Ok(out)
}

/// The stages of one stream by name, in pipeline order, the total last.
fn named(x: &Stages) -> Vec<(&'static str, &StageStats)> {
    let mut v = vec![("interrupt", &x.interrupt)];
    v.extend(x.softirq.as_ref().map(|s| ("softirq", s)));
    v.extend([
        ("handler", &x.handler),
        ("thread", &x.thread),
        ("to_user", &x.to_user),
        ("total", &x.total),
    ]);
    v
}

/// One stream's stage histograms on the log-log axes of the whole wake's, one line a stage;
/// empty when the document stored no stage histogram.
fn stage_plot(label: &str, x: &Stages) -> Result<String> {
    let series: Vec<(String, Vec<Bin>)> = named(x)
        .into_iter()
        .map(|(name, s)| (name.to_string(), bins(&s.histogram.buckets)))
        .filter(|(_, b)| !b.is_empty())
        .collect();
    if series.is_empty() {
        return Ok(String::new());
    }
    let svg = histogram_plot(&series, "time in the stage (logarithmic)")?;
    Ok(figure(
        &svg,
        &format!(
            "<b>{}: where the time of each wake went.</b> One line per stage and the total: each \
             dot is the share of the split wakes whose time in that stage fell in a \
             quarter-octave bin (both axes logarithmic).",
            esc(label)
        ),
    ))
}

fn stage_row(stream: &str, name: &str, s: &StageStats, share: bool) -> Row {
    Row {
        class: "",
        cells: vec![
            Cell::from(esc(stream)),
            Cell::from(name.to_string()),
            Cell::num(crate::units::number(s.dist.p50_ns as f64 / 1e3)),
            Cell::num(crate::units::number(s.dist.p90_ns as f64 / 1e3)),
            Cell::num(crate::units::number(s.dist.p99_ns as f64 / 1e3)),
            Cell::num(crate::units::number(s.dist.p99_9_ns as f64 / 1e3)),
            Cell::num(crate::units::number(s.dist.max_ns as f64 / 1e3)),
            Cell::num(if share {
                format!("{:.0} %", s.mean_share * 100.0)
            } else {
                String::new()
            }),
        ],
    }
}

fn stages(prefix: &str, d: &LatencyDoc) -> Result<String> {
    let Some(info) = &d.stage_capture else {
        return Ok(String::new());
    };
    let mut out = format!("<h3>{prefix}Stages of the timer wakes</h3>\n");
    out.push_str(&note(&format!(
        "Each traced wake of the timer path split by the kernel's own timestamps: interrupt (from \
         the deadline to the timer's expiry in the interrupt), softirq (where the timer expires \
         in deferred work), handler (expiry to wake-up), thread (wake-up to running) and to_user \
         (running to back in the program); they add up to the total. Microseconds; share of the \
         mean lateness. Read by {} from {} event kinds{}{}.",
        info.method,
        info.events.len(),
        match info.phase_ms {
            Some(ms) => format!("; traced and untraced phases of {ms} ms alternate"),
            None => String::new(),
        },
        if info.lost_events > 0 {
            format!("; {} events lost", info.lost_events)
        } else {
            String::new()
        }
    )));
    let mut rows = Vec::new();
    let mut overheads = Vec::new();
    let mut plots = String::new();
    for s in &d.streams {
        let Some(st) = &s.stages else { continue };
        let label = s.label();
        if let Some(x) = &st.stages {
            for (name, stats) in named(x) {
                rows.push(stage_row(&label, name, stats, name != "total"));
            }
            plots.push_str(&stage_plot(&label, x)?);
        }
        let mut line = format!(
            "{label}: {} of {} traced wakes split",
            st.with_stages, st.traced_wakes
        );
        if st.incomplete > 0 {
            line.push_str(&format!(" ({} with events missing)", st.incomplete));
        }
        if let Some(o) = st.overhead.as_ref().filter(|o| !o.measured()) {
            line.push_str(&format!(
                "; overhead not measured ({} traced and {} untraced wakes)",
                o.traced_wakes, o.untraced_wakes
            ));
        } else if let Some(o) = &st.overhead {
            line.push_str(&format!(
                "; median wake {} us traced against {} us untraced ({:+.1} us per wake), {:.1} \
                 events per wake",
                crate::units::number(o.traced_p50_ns as f64 / 1e3),
                crate::units::number(o.untraced_p50_ns as f64 / 1e3),
                o.added_p50_ns as f64 / 1e3,
                o.events_per_wake
            ));
        }
        for (stage, why) in &st.not_applicable {
            line.push_str(&format!("; no {stage} stage: {why}"));
        }
        overheads.push(line + ".");
    }
    out.push_str(&table(
        "stages",
        &[
            "class/path",
            "stage",
            "p50",
            "p90",
            "p99",
            "p99.9",
            "max",
            "share of mean",
        ],
        &rows,
    ));
    for line in overheads {
        out.push_str(&note(&line));
    }
    out.push_str(&plots);
    Ok(out)
}

fn cause_row(c: &Cause) -> Row {
    let kernel: Vec<String> = c.example.iter().skip(1).take(4).map(|f| esc(f)).collect();
    let mut called_from = kernel.join(" &larr; ");
    if !c.user_example.is_empty() {
        let user: Vec<String> = c.user_example.iter().take(4).map(|f| esc(f)).collect();
        if !called_from.is_empty() {
            called_from.push_str("<br>");
        }
        called_from.push_str(&format!("user stack: {}", user.join(" &larr; ")));
    }
    Row {
        class: "",
        cells: vec![
            Cell::from(format!("<code>{}</code>", esc(&c.function))),
            Cell::num(c.samples.to_string()),
            Cell::num(format!("{:.1} %", c.share * 100.0)),
            Cell::num(c.episodes.to_string()),
            Cell::from(esc(&c.tasks.join(", "))),
            Cell::from(called_from),
        ],
    }
}

fn causes(prefix: &str, d: &LatencyDoc) -> String {
    let (Some(causes), Some(episodes)) = (&d.causes, &d.episodes) else {
        return String::new();
    };
    let mut out = format!("<h3>{prefix}What ran instead: causes by function</h3>\n");
    let total: u64 = causes.iter().map(|c| c.samples).sum();
    if total == 0 {
        out.push_str(&note(&format!(
            "No stack was sampled in the {} episode(s) over the threshold: nothing interrupted \
             or was switched out on the CPU while the thread was late.",
            episodes.len()
        )));
        return out;
    }
    out.push_str(&note(&format!(
        "Kernel stacks sampled on the measured CPU between each late wake's deadline and the wake \
         (at the tick, device interrupts, softirqs and the switch back to the thread), {total} \
         samples in {} episode(s), counted by the function that was running; \"[user] function (object)\" is \
         time in a program's function, named from the object's symbol table (\"[user] task \
         (object)\" where it has none). The {} with the most samples.",
        episodes.len(),
        TOP_CAUSES.min(causes.len())
    )));
    let rows: Vec<Row> = causes.iter().take(TOP_CAUSES).map(cause_row).collect();
    out.push_str(&table(
        "causes",
        &[
            "function",
            "samples",
            "share",
            "episodes",
            "tasks",
            "called from",
        ],
        &rows,
    ));
    out
}

fn compute_rows(label: &str, c: &ComputeResult) -> Vec<Row> {
    c.depths
        .iter()
        .map(|d| Row {
            class: "",
            cells: vec![
                Cell::from(esc(label)),
                Cell::num(d.buffers.to_string()),
                Cell::num(num(d.tolerance_ms)),
                Cell::num(d.real.underruns.to_string()),
                Cell::num(d.real.failures.to_string()),
                Cell::from(esc(&d.real.mttf)),
                Cell::num(format!("{:.1e}", d.model.p_underrun)),
                Cell::num(d.model.failures.to_string()),
                Cell::from(esc(&d.model.mttf)),
            ],
        })
        .collect()
}

fn compute(prefix: &str, d: &LatencyDoc) -> String {
    let runs: Vec<(String, &ComputeResult)> = d
        .streams
        .iter()
        .filter_map(|s| s.compute.as_ref().map(|c| (s.label(), c)))
        .collect();
    let Some((_, first)) = runs.first() else {
        return String::new();
    };
    let mut out = format!("<h3>{prefix}The buffer model run for real</h3>\n");
    out.push_str(&note(&format!(
        "Each timer thread computed for c = {} us after every wake, making one buffer of a \
         pipeline of n buffers per period of {} us; a buffer not finished (n-1) periods after \
         its deadline is a real underrun, and a run of them one failure. Beside it, the model's \
         prediction from the same thread's wake latencies alone (an underrun whenever a wake is \
         later than the tolerance (n-1)t - c).",
        crate::units::number(first.compute_ns as f64 / 1e3),
        crate::units::number(d.period_ns as f64 / 1e3)
    )));
    for (label, c) in &runs {
        out.push_str(&note(&format!(
            "{label}: a buffer's computation took p50 {} / p99 {} / max {} us{}.",
            crate::units::number(c.compute_p50_ns as f64 / 1e3),
            crate::units::number(c.compute_p99_ns as f64 / 1e3),
            crate::units::number(c.compute_max_ns as f64 / 1e3),
            if c.dropped > 0 {
                format!(
                    "; {} buffers were dropped, too late for every depth",
                    c.dropped
                )
            } else {
                String::new()
            }
        )));
    }
    let rows: Vec<Row> = runs
        .iter()
        .flat_map(|(label, c)| compute_rows(label, c))
        .collect();
    out.push_str(&table(
        "compute",
        &[
            "class/path",
            "n",
            "tolerance (ms)",
            "real underruns",
            "real failures",
            "real MTTF",
            "model p",
            "model failures",
            "model MTTF",
        ],
        &rows,
    ));
    out
}

#[cfg(test)]
mod tests;
