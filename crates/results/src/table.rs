//! The terminal table of a run: grouped by subsystem, median with its confidence interval, and the
//! counter columns that this machine could fill.

use super::model::{Measurement, Run, Status};
use crate::columns::{Align, Table};
use crate::units::{count, duration, number};
use std::fmt::Write;

/// Scales a value into a readable unit: ns -> us/ms/s, B/s -> KB/s ... GB/s.
pub use crate::units::scaled as human;

/// Counter columns: (scope, event, header). Shown only where some figure has a value.
const COUNTER_COLUMNS: &[(&str, &str, &str)] = &[
    ("user", "instructions", "u-instr"),
    ("kernel", "instructions", "k-instr"),
    ("kernel", "cycles", "k-cycles"),
    ("software", "page-faults", "faults"),
    ("software", "context-switches", "csw"),
];

fn counter(m: &Measurement, scope: &str, event: &str) -> Option<f64> {
    let map = match scope {
        "user" => &m.counters.user,
        "kernel" => &m.counters.kernel,
        _ => &m.counters.software,
    };
    map.get(event).copied()
}

pub fn render(run: &Run) -> String {
    let columns: Vec<_> = COUNTER_COLUMNS
        .iter()
        .filter(|(s, e, _)| run.measurements.iter().any(|m| counter(m, s, e).is_some()))
        .collect();
    let mut header = vec!["probe", "median", "95% CI", "unit", "cv%", ""];
    header.extend(columns.iter().map(|(_, _, h)| *h));
    let mut align = vec![
        Align::Left,
        Align::Right,
        Align::Right,
        Align::Left,
        Align::Right,
    ];
    align.push(Align::Left);
    align.extend(columns.iter().map(|_| Align::Right));
    let width = crate::columns::width();
    let busy = run.busy();
    let mut out = String::new();
    let mut groups: Vec<(String, Vec<&Measurement>)> = Vec::new();
    for m in &run.measurements {
        let g = m.probe.split('.').next().unwrap_or("").to_string();
        match groups.last_mut() {
            Some((name, ms)) if *name == g => ms.push(m),
            _ => groups.push((g, vec![m])),
        }
    }
    for (i, (_, ms)) in groups.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut table = Table::new(&header, &align, 1);
        let mut not_measured = String::new();
        for m in ms {
            match (m.status, &m.summary) {
                (Status::Ok, Some(s)) => {
                    let (med, unit) = human(s.median, m.unit);
                    let scale = if s.median != 0.0 { med / s.median } else { 1.0 };
                    let ci = format!(
                        "{}-{}",
                        number(s.ci95[0] * scale),
                        number(s.ci95[1] * scale)
                    );
                    // The one definition of cv% that exports and reports use too: the spread
                    // between rounds, or between the samples of a single round.
                    let cv = crate::results::figure::bench::cv(m)
                        .map(|cv| format!("{:.1}", cv * 100.0))
                        .unwrap_or_else(|| "-".into());
                    // A busy run says so once, below, rather than at every figure it disturbed.
                    let mark = if m.warnings.is_empty() || busy {
                        ""
                    } else {
                        "!"
                    };
                    let mut row = vec![
                        m.label(),
                        number(med),
                        ci,
                        unit.to_string(),
                        cv,
                        mark.to_string(),
                    ];
                    row.extend(columns.iter().map(|(scope, event, _)| {
                        counter(m, scope, event)
                            .map(count)
                            .unwrap_or_else(|| "-".into())
                    }));
                    table.push(row);
                }
                (status, _) => {
                    let word = if status == Status::Skipped {
                        "skipped"
                    } else {
                        "FAILED"
                    };
                    let reason = crate::text::escape_controls(
                        m.reason.as_deref().unwrap_or("no reason recorded"),
                    );
                    let text = format!("{}  {word}: {reason}", m.label());
                    not_measured.push_str(&crate::columns::wrap(&text, width, "    "));
                }
            }
        }
        if !table.rows.is_empty() {
            out.push_str(&table.render(width));
        }
        out.push_str(&not_measured);
    }
    if let Some(oh) = &run.overhead {
        let _ = writeln!(
            out,
            "\nHarness overhead subtracted: {} per sample, {} per iteration.",
            duration(oh.per_sample_ns),
            duration(oh.per_iteration_ns)
        );
    }
    let whole = if run.measurements.iter().any(|m| m.probe.starts_with("app.")) {
        " (app figures: every process of the workload, below)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "Counters are per operation, for the measuring thread only{whole}."
    );
    if !run.counters_unavailable.is_empty() {
        let hw = run.counters_unavailable.len();
        let first = run
            .counters_unavailable
            .values()
            .next()
            .map(String::as_str)
            .unwrap_or("");
        let _ = writeln!(
            out,
            "{hw} counter events unavailable here (e.g. {first}); `osmeter info` lists them."
        );
    }
    let flagged: Vec<&Measurement> = run
        .measurements
        .iter()
        .filter(|m| !m.warnings.is_empty())
        .collect();
    if let Some(line) = pages_line(run) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(machine) = &run.machine {
        let _ = write!(out, "\n{}", machine.text());
    }
    if !flagged.is_empty() && !busy {
        let _ = writeln!(out, "\n! marks figures to read with care:");
        for m in &flagged {
            let warnings = crate::text::escape_controls(&m.warnings.join("; ")).into_owned();
            let _ = writeln!(out, "  {}: {warnings}", m.label());
        }
        if flagged.iter().any(|m| {
            m.summary
                .as_ref()
                .is_some_and(|s| !s.outliers.is_empty() || s.cv > 0.05)
        }) {
            let _ = writeln!(out, "{}", advice(run));
        }
    }
    if run.interrupted {
        let _ = writeln!(
            out,
            "\nInterrupted: the figures above are all that was measured."
        );
    }
    out
}

/// Which pages the placement-sensitive figures had, once for the run.
fn pages_line(run: &Run) -> Option<String> {
    let kinds: Vec<_> = run.measurements.iter().filter_map(|m| m.pages).collect();
    let first = *kinds.first()?;
    let all = kinds.iter().fold(first, |a, b| a.with(*b));
    Some(format!(
        "Buffers of the {} figures that depend on physical placement: {} (compared only with \
         runs that had the same).",
        kinds.len(),
        all.describe()
    ))
}

/// Samples a run of figures to read with care is advised to take, when it took fewer.
const ADVISED_SAMPLES: usize = 21;

/// What to do for tighter figures: rerun on an idle machine, and only the steps this run did not
/// already take (more samples, real-time priority).
fn advice(run: &Run) -> String {
    let mut steps = Vec::new();
    if run.options.samples < ADVISED_SAMPLES {
        steps.push(format!("with more samples (--repeat {ADVISED_SAMPLES})"));
    }
    if run.options.fifo_priority.is_none() {
        steps.push("at real-time priority (--fifo 50)".to_string());
    }
    let how = if steps.is_empty() {
        String::new()
    } else {
        format!(", {}", steps.join(" or "))
    };
    format!(
        "  The median and its interval resist outliers; for tighter figures rerun on an idle \
         machine{how}."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Unit;

    #[test]
    fn human_units() {
        assert_eq!(human(250.0, Unit::Nanoseconds), (250.0, "ns"));
        assert_eq!(human(25_000.0, Unit::Nanoseconds), (25.0, "us"));
        assert_eq!(human(2.5e6, Unit::Nanoseconds), (2.5, "ms"));
        assert_eq!(human(3e9, Unit::BytesPerSecond), (3.0, "GB/s"));
    }

    /// A run with one noisy figure, measured with `samples` samples and maybe at FIFO priority.
    fn noisy(samples: usize, fifo: Option<i32>) -> Run {
        let mut run = crate::results::export::sample_run();
        run.options.samples = samples;
        run.options.fifo_priority = fifo;
        let m = &mut run.measurements[0];
        m.warnings.push("large spread".into());
        m.summary.as_mut().unwrap().cv = 0.2;
        run
    }

    #[test]
    fn the_table_and_the_csv_export_show_one_cv() {
        let mut run = crate::results::export::sample_run();
        let m = &mut run.measurements[0];
        m.rounds = vec![vec![100.0, 101.0], vec![110.0, 111.0], vec![90.0, 91.0]];
        m.samples = m.rounds.iter().flatten().copied().collect();
        m.summary.as_mut().unwrap().cv = 0.001; // a stale per-sample figure must not be shown
        let cv = crate::results::figure::bench::cv(&run.measurements[0]).unwrap();
        let text = render(&run);
        assert!(text.contains(&format!(" {:.1} ", cv * 100.0)), "{text}");
        let mut csv = Vec::new();
        let options = crate::results::export::ExportOptions::default();
        crate::results::export::Exporter::write(
            &crate::results::export::csv::Csv,
            &run,
            &options,
            &mut csv,
        )
        .unwrap();
        let csv = String::from_utf8(csv).unwrap();
        assert!(csv.contains(&format!(",{cv},")), "{csv}");
    }

    #[test]
    fn the_overhead_is_written_as_every_other_time() {
        let mut run = crate::results::export::sample_run();
        run.overhead = Some(crate::results::model::Overhead {
            per_sample_ns: 30.4,
            per_iteration_ns: 0.27,
            per_sample_counters: Default::default(),
        });
        let text = render(&run);
        assert!(
            text.contains(
                "Harness overhead subtracted: 30.4 ns per sample, 0.270 ns per iteration."
            ),
            "{text}"
        );
    }

    #[test]
    fn advice_names_only_what_the_run_did_not_do() {
        let plain = render(&noisy(5, None));
        assert!(
            plain.contains("(--repeat 21)") && plain.contains("(--fifo 50)"),
            "{plain}"
        );
        let fifo = render(&noisy(5, Some(50)));
        assert!(
            fifo.contains("(--repeat 21)") && !fifo.contains("--fifo"),
            "{fifo}"
        );
        let many = render(&noisy(31, None));
        assert!(
            !many.contains("--repeat") && many.contains("(--fifo 50)"),
            "{many}"
        );
        let both = render(&noisy(31, Some(90)));
        assert!(
            !both.contains("--repeat")
                && !both.contains("--fifo")
                && both.contains("idle machine."),
            "{both}"
        );
    }
}
