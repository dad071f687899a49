//! `osmeter fleet` as text: the hosts that are off first (the answer), with whether each is off
//! with its machine or for its system, and the distances too few runs could not decide; then each
//! host in a line, then when the outliers moved. Every line fits 100 columns.

use super::{Cause, FleetReport, HostChange, Noise, SPREAD_HOSTS};
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
        } else if class.figures.iter().any(|f| f.noise == Noise::OwnRuns) {
            let _ = writeln!(
                out,
                "  judged on each host's own runs: {} hosts are too few to measure the spread \
                 between hosts\n  ({SPREAD_HOSTS} are needed); relative to each machine's speed \
                 too where the runs read it",
                class.hosts.len()
            );
        }
    }
    let outliers: Vec<_> = r.outliers().collect();
    let undecided: Vec<_> = r.undecided().collect();
    if outliers.is_empty() && undecided.is_empty() {
        let _ = writeln!(out, "\nno host is off its class on any figure");
    } else if outliers.is_empty() {
        let _ = writeln!(
            out,
            "\nno host is called off its class, but some are undecided (below)"
        );
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
                clip_host(&cell.host, 14),
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
    causes(&mut out, r);
    if !undecided.is_empty() {
        let _ = writeln!(
            out,
            "\nundecided: at least {} % away, too few runs to tell (runs per host that would decide):",
            r.method.min_effect * 100.0
        );
        for (row, cell) in undecided.iter().take(10) {
            let _ = writeln!(
                out,
                "  {:<16} {:<28} {:>6.3}x its class, {} run(s): {} would decide",
                clip_host(&cell.host, 16),
                clip(&row.figure, 28),
                cell.ratio,
                cell.runs,
                cell.runs_to_decide.unwrap_or(0)
            );
        }
        if undecided.len() > 10 {
            let _ = writeln!(out, "  ... and {} more", undecided.len() - 10);
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
            clip_host(&h.host, 16),
            h.runs,
            h.figures
        );
    }
    let skewed: Vec<_> = r.hosts.iter().filter(|h| h.clock_off.is_some()).collect();
    if !skewed.is_empty() {
        let _ = writeln!(
            out,
            "\nclocks off (their runs are placed by the store's clock, not their own):"
        );
        for h in skewed {
            let _ = writeln!(
                out,
                "  {:<16} {}",
                clip_host(&h.host, 16),
                clock_offset_text(h.clock_off.unwrap_or(0.0))
            );
        }
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

/// The hosts called off by cause, where each host's machine speed was read: off relative to it
/// too (the system) or off with it (the machine); and those off relative to it only.
fn causes(out: &mut String, r: &FleetReport) {
    let hosts = |keep: &dyn Fn(&super::Cell) -> bool| -> Vec<String> {
        let mut names: Vec<String> = r
            .classes
            .iter()
            .flat_map(|c| &c.figures)
            .flat_map(|f| &f.cells)
            .filter(|c| keep(c))
            .map(|c| clip_host(&c.host, 16))
            .collect();
        names.sort();
        names.dedup();
        names
    };
    let lines = [
        (
            "off relative to their machine's speed too (the system)",
            hosts(&|c| c.cause == Some(Cause::System)),
        ),
        (
            "off with their machine's speed (its yardstick moved as much)",
            hosts(&|c| c.cause == Some(Cause::Machine)),
        ),
        (
            "off relative to their machine's speed only (not called: a faster machine hides it)",
            hosts(&|c| !c.outlier && c.relative.as_ref().is_some_and(|x| x.off)),
        ),
    ];
    for (what, names) in lines {
        if !names.is_empty() {
            let _ = writeln!(
                out,
                "{}",
                crate::columns::wrap(
                    &format!("  {what}: {}", names.join(", ")),
                    Some(crate::columns::prose_width()),
                    "    "
                )
                .trim_end()
            );
        }
    }
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
        clip_host(&c.host, 16),
        clip(&c.figure, 28),
        format(c.before, unit),
        format(c.after, unit),
        c.run,
        c.started_at
    )
}

/// A host clock's offset from the store's, as people say it: "5 h 02 min ahead".
pub fn clock_offset_text(offset_s: f64) -> String {
    let secs = offset_s.abs().round() as i64;
    let (h, m) = (secs / 3600, secs % 3600 / 60);
    let size = if h > 0 {
        format!("{h} h {m:02} min")
    } else {
        format!("{m} min {:02} s", secs % 60)
    };
    format!(
        "{size} {}",
        if offset_s >= 0.0 { "ahead" } else { "behind" }
    )
}

/// A host's name cut to `width`, keeping the machine id of a name that two machines share
/// (`name [id]`): the id is what tells the two lines apart.
fn clip_host(name: &str, width: usize) -> String {
    match name.rfind(" [").filter(|_| name.ends_with(']')) {
        Some(at) if name.chars().count() > width => {
            let id = &name[at..];
            let room = width.saturating_sub(id.chars().count()).max(2);
            format!("{}{id}", clip(&name[..at], room))
        }
        _ => clip(name, width),
    }
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
