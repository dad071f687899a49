//! `osmeter fleet` as text: the hosts that are off first (the answer), then each host in a line,
//! then when the outliers moved. Every line fits 100 columns.

use super::{FleetReport, HostChange};
use crate::units::format;
use std::fmt::Write;

pub fn render(r: &FleetReport) -> String {
    let mut out = String::new();
    let figures: usize = r.classes.iter().map(|c| c.figures.len()).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "{} host(s) in {} class(es), up to {} figure(s) each",
        r.hosts.len(),
        r.classes.len(),
        figures
    );
    let _ = writeln!(out, "store: {}", r.store);
    let _ = writeln!(
        out,
        "each host against its class's median; off: false-discovery rate {}, {} % or more away",
        r.method.alpha,
        r.method.min_effect * 100.0
    );
    for class in &r.classes {
        let _ = writeln!(
            out,
            "\nclass {} ({} host(s))",
            crate::text::escape_controls(&class.name),
            class.hosts.len()
        );
        if let Some(why) = &class.not_judged {
            let _ = writeln!(out, "  not judged: {why}");
        }
    }
    let outliers: Vec<_> = r.outliers().collect();
    if outliers.is_empty() {
        let _ = writeln!(out, "\nno host is off its class on any figure");
    } else {
        let _ = writeln!(out, "\nhosts off their class:");
        let _ = writeln!(
            out,
            "  {:<14} {:<24} {:>9} {:>9} {:>6} {:>14} {:>7}",
            "host", "figure", "value", "class", "ratio", "interval", "q"
        );
        for (row, cell) in outliers {
            let _ = writeln!(
                out,
                "  {:<14} {:<24} {:>9} {:>9} {:>6.3} {:>14} {:>7.1e} {}",
                clip(&cell.host, 14),
                clip(&row.figure, 24),
                format(cell.value, row.unit),
                format(row.median, row.unit),
                cell.ratio,
                format!(
                    "[{:.3}, {:.3}]",
                    cell.ratio_interval[0], cell.ratio_interval[1]
                ),
                cell.q_value,
                if cell.slower { "slower" } else { "faster" }
            );
        }
    }
    let _ = writeln!(out, "\nhosts:");
    for h in &r.hosts {
        let verdict = match (h.slower, h.faster) {
            (0, 0) => "none off".to_string(),
            (s, 0) => format!("{s} slower"),
            (0, f) => format!("{f} faster"),
            (s, f) => format!("{s} slower, {f} faster"),
        };
        let _ = writeln!(
            out,
            "  {:<16} {:>4} run(s), {:>4} figure(s), {verdict}",
            clip(&h.host, 16),
            h.runs,
            h.figures
        );
    }
    if !r.changes.is_empty() {
        let _ = writeln!(out, "\nsince when:");
        for c in &r.changes {
            let _ = writeln!(out, "  {}", change_line(r, c));
        }
    }
    if !r.left_out.is_empty() {
        let _ = writeln!(out, "\n{} run(s) left out:", r.left_out.len());
        for (run, why) in r.left_out.iter().take(5) {
            let _ = writeln!(out, "  {}: {why}", crate::text::escape_controls(run));
        }
    }
    out
}

fn change_line(r: &FleetReport, c: &HostChange) -> String {
    let unit = r
        .classes
        .iter()
        .flat_map(|cl| &cl.figures)
        .find(|f| f.figure == c.figure)
        .map(|f| f.unit)
        .unwrap_or(crate::units::Unit::Count);
    format!(
        "{} {}: {} -> {} from run {} ({})",
        clip(&c.host, 16),
        clip(&c.figure, 28),
        format(c.before, unit),
        format(c.after, unit),
        c.run,
        c.started_at
    )
}

/// Stored text (host names and figure keys come from every host of the fleet) escaped and cut.
fn clip(text: &str, width: usize) -> String {
    let text = crate::text::escape_controls(text);
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let head: String = text.chars().take(width - 1).collect();
        format!("{head}~")
    }
}
