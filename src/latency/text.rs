//! The latency document as a table for people.

use super::document::{Estimate, LatencyDoc, StreamDoc};
use super::{compute, stacks, stage_capture};
use crate::columns::{Align, Table};

/// The human-readable report of a latency document.
pub fn render(doc: &LatencyDoc) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "Wakeup latency, period {} us, {} s{}; microseconds, missed periods included (corrected)\n\n",
        doc.period_ns / 1000,
        doc.measured_s,
        if doc.interrupted { " (interrupted)" } else { "" }
    ));
    out.push_str(&percentile_table(doc));
    if !doc.loads.is_empty() {
        out.push_str("\nLoad (normal priority):\n");
        for l in &doc.loads {
            match (&l.error, l.unit.as_str()) {
                (Some(e), _) => out.push_str(&format!("  {}: {e}\n", l.load)),
                (None, "") => out.push_str(&format!("  {}\n", l.load)),
                (None, unit) => out.push_str(&format!(
                    "  {:<8} {} ({} thread{})\n",
                    l.load,
                    load_rate(l.rate, unit),
                    l.threads,
                    if l.threads == 1 { "" } else { "s" }
                )),
            }
        }
    }
    if !doc.skipped.is_empty() {
        out.push('\n');
        for k in &doc.skipped {
            let reason = crate::text::escape_controls(&k.reason);
            out.push_str(&format!("skipped {}: {reason}\n", k.class.as_str()));
        }
    }
    if let Some(info) = &doc.stage_capture {
        out.push_str(&stage_capture::render_header(info));
        for s in &doc.streams {
            if let Some(st) = &s.stages {
                out.push_str(&stage_capture::render(&s.label(), st));
            }
        }
    }
    if let Some(eps) = &doc.episodes {
        out.push_str(&format!(
            "\nCause capture: {} episode(s) over the threshold\n",
            eps.len()
        ));
        for e in eps {
            out.push_str(&e.summary);
        }
        if let Some(causes) = &doc.causes {
            out.push_str(&stacks::render(causes, eps.len(), 10));
        }
    }
    if doc.streams.iter().any(|s| s.compute.is_some()) {
        out.push_str(
            "\nThe pipeline, run for real (--compute): underruns counted against the model\n",
        );
        for s in &doc.streams {
            if let Some(c) = &s.compute {
                out.push_str(&compute::render(&s.label(), c, doc.period_ns));
            }
        }
    }
    out.push_str("\nWorst case per window (us): min / median / p90 / max of the window maxima\n");
    for s in &doc.streams {
        for w in &s.windows {
            out.push_str(&format!(
                "  {:<24} {:>5} x{:<6} {} / {} / {} / {}\n",
                s.label(),
                w.window,
                w.windows,
                crate::units::number(w.min_ns as f64 / 1e3),
                crate::units::number(w.p50_ns as f64 / 1e3),
                crate::units::number(w.p90_ns as f64 / 1e3),
                crate::units::number(w.max_ns as f64 / 1e3),
            ));
        }
    }
    out.push_str(
        "\nEstimated worst case (Gumbel fit of 1 s maxima; an estimate, not a measurement)\n",
    );
    for s in &doc.streams {
        match &s.estimate {
            Estimate::Unavailable { unavailable } => {
                out.push_str(&format!(
                    "  {:<24} not estimated: {unavailable}\n",
                    s.label()
                ));
            }
            Estimate::Fitted { fit, .. } => {
                let parts: Vec<String> = fit
                    .estimates
                    .iter()
                    .map(|h| {
                        format!(
                            "{} {} (1% above {})",
                            h.horizon,
                            crate::units::number(h.median_ns as u64 as f64 / 1e3),
                            crate::units::number(h.p99_ns as u64 as f64 / 1e3)
                        )
                    })
                    .collect();
                out.push_str(&format!(
                    "  {:<24} {}; fit KS distance {:.2}\n",
                    s.label(),
                    parts.join(", "),
                    fit.ks_distance
                ));
            }
        }
    }
    out.push_str(
        "\nBuffer model: mean time to underrun (t period, n buffers, c compute; tolerates (n-1)t-c)\n",
    );
    out.push_str(&buffer_table(doc));
    out
}

/// One row per stream: wakes, missed periods and the percentiles of lateness (us).
fn percentile_table(doc: &LatencyDoc) -> String {
    let number = |ns: u64| crate::units::number(ns as f64 / 1e3);
    let mut table = Table::new(
        &[
            ["class/path", "woken", "missed"].as_slice(),
            &crate::latency::document::PERCENTILE_NAMES,
            &["raw max"],
        ]
        .concat(),
        &[[Align::Left].as_slice(), &[Align::Right; 9]].concat(),
        1,
    );
    let mut failed = String::new();
    for s in &doc.streams {
        if let Some(e) = &s.error {
            failed.push_str(&format!("{:<24} failed: {e}\n", s.label()));
            continue;
        }
        let c = &s.corrected;
        table.push(vec![
            s.label(),
            s.woken.to_string(),
            s.missed.to_string(),
            number(c.p50_ns),
            number(c.p90_ns),
            number(c.p99_ns),
            number(c.p99_9_ns),
            number(c.p99_99_ns),
            number(c.max_ns),
            number(s.raw.max_ns),
        ]);
    }
    table.render(crate::columns::width()) + &failed
}

/// The buffer model: mean time to underrun per pipeline (rows) and stream (columns).
fn buffer_table(doc: &LatencyDoc) -> String {
    let ok: Vec<&StreamDoc> = doc.streams.iter().filter(|s| s.error.is_none()).collect();
    let Some(first) = ok.first() else {
        return String::new();
    };
    let mut header = vec![
        "t ms".to_string(),
        "n".into(),
        "c ms".into(),
        "tol ms".into(),
    ];
    header.extend(ok.iter().map(|s| s.label()));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Table::new(&header, &vec![Align::Right; header.len()], 4);
    for (i, b) in first.buffers.iter().enumerate() {
        let mut row = vec![
            b.period_ms.to_string(),
            b.buffers.to_string(),
            b.compute_ms.to_string(),
            b.tolerance_ms.to_string(),
        ];
        row.extend(ok.iter().map(|s| {
            let Some(r) = s.buffers.get(i) else {
                return "-".to_string();
            };
            match r.mttf_shown() {
                (value, Some(p)) => format!("{value} ({p})"),
                (value, None) => value,
            }
        }));
        table.push(row);
    }
    table.render(crate::columns::width())
        + "(\"> X\": no underrun seen; the MTTF is more than the measured duration)\n"
}

/// A load's rate as people read rates: bytes per second in the unit that suits them ("654 MB/s
/// copied"), other rates as counts ("12.3k fsync/s"), never in exponent notation.
fn load_rate(rate: f64, unit: &str) -> String {
    match unit.strip_prefix("B/s") {
        Some(rest) => format!(
            "{}{rest}",
            crate::units::format(rate, crate::units::Unit::BytesPerSecond)
        ),
        None => format!("{} {unit}", crate::units::count(rate)),
    }
}

#[cfg(test)]
mod tests {
    use super::load_rate;

    #[test]
    fn load_rates_read_without_exponents() {
        let memory = load_rate(6.5435e8, "B/s copied");
        let number = memory.split(' ').next().unwrap();
        assert!(
            memory.ends_with("MB/s copied") && number == "654",
            "{memory}"
        );
        assert_eq!(
            load_rate(12_345.0, "fsync/s (64 KiB writes)"),
            "12.3k fsync/s (64 KiB writes)"
        );
    }
}
