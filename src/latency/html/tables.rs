//! The tables of the latency section: percentiles and worst cases per stream, the buffer model's
//! mean time to underrun, and the worst episodes with their causes.

use super::*;
use crate::latency::document::PERCENTILE_NAMES;

/// Percentiles, missed periods and worst cases: one row per stream.
pub(super) fn summary_table(all: &[Stream]) -> String {
    // Two tables rather than one of thirteen columns: the percentiles, then the worst cases with
    // their long estimate, each narrow enough for the page and for A4 paper.
    let header = [
        ["class/path", "policy", "periods", "missed"].as_slice(),
        &PERCENTILE_NAMES,
    ]
    .concat();
    let worst_header = [
        "class/path",
        "max not counting missed",
        "worst per 1 s window: median / max",
        "estimated worst case",
    ];
    let mut worst_rows: Vec<Row> = Vec::new();
    let rows: Vec<Row> = all
        .iter()
        .map(|s| {
            let d = s.doc;
            if let Some(e) = s.error() {
                return Row {
                    class: "",
                    cells: vec![
                        Cell::from(esc(&s.label)),
                        Cell::with_class("bad", format!("failed: {}", esc(e))),
                    ],
                };
            }
            let window = d
                .windows
                .iter()
                .find(|w| w.window == "1s")
                .map(|w| {
                    format!(
                        "{} / {} us ({} windows)",
                        crate::units::number(w.p50_ns as f64 / 1e3),
                        crate::units::number(w.max_ns as f64 / 1e3),
                        w.windows
                    )
                })
                .unwrap_or_else(|| "no complete window".into());
            let estimate = match &d.estimate {
                Estimate::Unavailable { .. } => {
                    "<span class=\"note\">not estimated (see below)</span>".to_string()
                }
                Estimate::Fitted { fit, .. } => {
                    let parts: Vec<String> = fit
                        .estimates
                        .iter()
                        .map(|h| {
                            format!(
                                "{}: {} (1&nbsp;% above {})",
                                esc(&h.horizon),
                                value(h.median_ns, Unit::Nanoseconds),
                                value(h.p99_ns, Unit::Nanoseconds)
                            )
                        })
                        .collect();
                    format!(
                        "{}; fit KS distance {:.2}",
                        parts.join(", "),
                        fit.ks_distance
                    )
                }
            };
            let mut cells = vec![
                Cell::from(esc(&s.label)),
                Cell::from(esc(&d.policy) + &priority(d)),
                Cell::num(d.periods.to_string()),
                Cell::num(d.missed.to_string()),
            ];
            for (_, ns) in d.corrected.percentiles() {
                cells.push(Cell::num(crate::units::number(ns as f64 / 1e3)));
            }
            worst_rows.push(Row {
                class: "",
                cells: vec![
                    Cell::from(esc(&s.label)),
                    Cell::num(crate::units::number(d.raw.max_ns as f64 / 1e3)),
                    Cell::num(window),
                    Cell::from(estimate),
                ],
            });
            Row { class: "", cells }
        })
        .collect();
    let mut out = note(
        "Lateness in microseconds over all periods, missed ones included; \"max not counting \
         missed\" is the largest lateness of a wake that happened. The estimated worst case fits \
         a Gumbel law to the 1 s window maxima and projects it: an estimate, not a measurement.",
    );
    out.push_str(&table("latency", &header, &rows));
    if !worst_rows.is_empty() {
        out.push_str(&table("worst", &worst_header, &worst_rows));
    }
    for s in all {
        if let Estimate::Unavailable { unavailable: why } = &s.doc.estimate {
            if s.error().is_none() {
                out.push_str(&note(&format!(
                    "{}: worst case not estimated: {why}.",
                    s.label
                )));
            }
        }
    }
    out
}

pub(super) fn priority(d: &StreamDoc) -> String {
    match d.priority {
        Some(p) => format!(" {p}"),
        None => String::new(),
    }
}

/// One cell of the buffer table, as the text report writes it.
pub(super) fn mttf_cell(b: &BufferResult) -> Cell {
    // The probability on a line of its own keeps the column narrow (several streams stand side
    // by side).
    Cell::num(match b.mttf_shown() {
        (value, Some(p)) => format!(
            "{}<br><span class=\"note\">({})</span>",
            esc(&value),
            esc(&p)
        ),
        (value, None) => esc(&value),
    })
}

/// A configuration's key in the buffer table: t, n and c.
pub(super) fn buffer_key(b: &BufferResult) -> (u64, u32, u64) {
    (b.period_ms.to_bits(), b.buffers, b.compute_ms.to_bits())
}

/// Streams side by side in one buffer table: more would not fit the page or A4 paper.
pub(super) const STREAMS_PER_TABLE: usize = 4;

/// Rows: every (t, n, c) configuration any stream was evaluated for, in first-seen order;
/// columns: the MTTF of each stream that ran. More streams than [`STREAMS_PER_TABLE`] make
/// several tables stacked, each repeating the configuration columns (as text tables are cut).
pub(super) fn buffer_table(all: &[Stream]) -> String {
    let ok: Vec<&Stream> = all.iter().filter(|s| s.error().is_none()).collect();
    let mut configs: Vec<&BufferResult> = Vec::new();
    for s in &ok {
        for b in &s.doc.buffers {
            if !configs.iter().any(|c| buffer_key(c) == buffer_key(b)) {
                configs.push(b);
            }
        }
    }
    if configs.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for block in ok.chunks(STREAMS_PER_TABLE) {
        let mut header: Vec<String> = ["t (ms)", "n", "c (ms)", "tolerated lateness (ms)"]
            .map(String::from)
            .to_vec();
        header.extend(block.iter().map(|s| format!("MTTF {}", s.label)));
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let rows: Vec<Row> = configs
            .iter()
            .map(|cfg| {
                let mut cells = vec![
                    Cell::num(num(cfg.period_ms)),
                    Cell::num(cfg.buffers.to_string()),
                    Cell::num(num(cfg.compute_ms)),
                    Cell::num(num(cfg.tolerance_ms)),
                ];
                for s in block {
                    let found = s
                        .doc
                        .buffers
                        .iter()
                        .find(|b| buffer_key(b) == buffer_key(cfg));
                    cells.push(found.map(mttf_cell).unwrap_or_default());
                }
                Row { class: "", cells }
            })
            .collect();
        out.push_str(&table("buffers", &header, &rows));
    }
    out
}

/// Cause capture: what ran, fired or was missing around each wake over the threshold.
pub(super) fn episodes(ctx: &Context, docs: &[(usize, &LatencyDoc)]) -> String {
    let mut out = String::new();
    for &(r, d) in docs {
        let Some(eps) = &d.episodes else { continue };
        let _ = writeln!(
            out,
            "<h3>{}Late wakes and their causes</h3>",
            if docs.len() > 1 {
                format!("{}: ", esc(&ctx.run_label(r)))
            } else {
                String::new()
            }
        );
        if eps.is_empty() {
            out.push_str(&note(
                "Cause capture was on and no wake was later than its threshold.",
            ));
            continue;
        }
        out.push_str(&note(
            "Kernel trace events on the measured CPU from the deadline to the wake of each late \
             wake: the tasks that ran instead (longest first), the interrupts, softirqs, timers \
             and work items, and the longest stretch with no event at all (time the hypervisor \
             probably took).",
        ));
        let rows: Vec<Row> = eps
            .iter()
            .map(|e| {
                let ran: Vec<String> = e
                    .ran
                    .iter()
                    .take(4)
                    .map(|(task, ns)| {
                        format!("{} {}", esc(task), crate::units::number(*ns as f64 / 1e3))
                    })
                    .collect();
                let irqs: Vec<String> = e
                    .irqs
                    .iter()
                    .chain(&e.softirqs)
                    .map(|(name, n, ns)| {
                        format!(
                            "{} ×{n} ({})",
                            esc(name),
                            crate::units::number(*ns as f64 / 1e3)
                        )
                    })
                    .collect();
                Row {
                    class: "",
                    cells: vec![
                        Cell::from(format!("{}/{} cpu{}", esc(&e.class), esc(&e.path), e.cpu)),
                        Cell::num(crate::units::number(e.lateness_ns as f64 / 1e3)),
                        Cell::from(ran.join("<br>")),
                        Cell::from(irqs.join("<br>")),
                        Cell::num(crate::units::number(e.longest_gap_ns as f64 / 1e3)),
                        Cell::from(esc(&e.verdict)),
                    ],
                }
            })
            .collect();
        out.push_str(&table(
            "episodes",
            &[
                "stream",
                "late (us)",
                "ran instead (us)",
                "interrupts and softirqs",
                "longest gap (us)",
                "verdict",
            ],
            &rows,
        ));
        if eps.iter().any(|e| e.deadline_ns.is_some()) {
            out.push_str(&timeline_hint(&ctx.runs[r].id));
        }
    }
    out
}

/// Where to see the same wakes in time: the command that writes them for the trace viewers. The
/// viewer is named, not linked: the page links nowhere outside itself.
fn timeline_hint(run_id: &str) -> String {
    format!(
        "<p class=\"note\">The same late wakes on a timeline, each with what ran, fired and was \
         deferred inside it: <code>osmeter export {} --format trace-event -o wakes.json</code> \
         writes them as trace-event JSON, which Perfetto (ui.perfetto.dev) and \
         chrome://tracing open.</p>\n",
        esc(run_id)
    )
}
