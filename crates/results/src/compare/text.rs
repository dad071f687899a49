//! A comparison as a table for people: both sides of a row in the same unit, the ratio with its
//! interval, the p-value, the verdict, and the counters that moved.

use super::{Comparison, Verdict, NOISE_MULTIPLE, NOT_COMPARED};
use crate::text::escape_controls;
use crate::units;
use std::fmt::Write;

/// The columns a row's values usually take (both sides, ratio, interval, q, CPU-relative, verdict).
const VALUES_WIDTH: usize = 70;

/// One side's value, both sides in the unit that suits the larger so they read side by side.
fn side(f: &super::FigureComparison, value: f64) -> String {
    let scale = f.unit.scale_for(f.value_a.abs().max(f.value_b.abs()));
    units::in_scale(value, scale)
}

fn interval(f: &super::FigureComparison) -> String {
    f.ratio_ci95
        .map(|ci| format!("[{:.3}, {:.3}]", ci[0], ci[1]))
        .unwrap_or_else(|| "-".into())
}

pub fn render(c: &Comparison, all: bool) -> String {
    let mut out = String::new();
    write_sides(&mut out, c);
    let quiet = !all
        && c.figures
            .iter()
            .all(|f| f.verdict == Verdict::NoChange && f.caveats.is_empty());
    if quiet {
        // Nothing to show: the answer is one line, and how it was judged is one flag away.
        let _ = writeln!(
            out,
            "\nNo figure changed beyond noise: {} compared (`--all` shows them and how each was \
             judged).",
            c.figures.len()
        );
    } else {
        write_counts(&mut out, c);
        write_table(&mut out, c, all);
    }
    write_totals(&mut out, c, all);
    out
}

/// The runs of each side, and what the reader must know before the figures: a busy machine, the
/// machine's own speed moving, the systems differing.
fn write_sides(out: &mut String, c: &Comparison) {
    // Before anything else: every figure below is read in its light.
    if let Some(m) = &c.machine_speed {
        let _ = writeln!(out, "{}\n", machine_moved(m));
    }
    // The kind is said where it is not the usual one (a run of probes).
    let kind = match c.kind {
        crate::results::model::RunKind::Run => String::new(),
        other => format!("  ({other} runs)"),
    };
    let _ = writeln!(
        out,
        "A: {}\nB: {}{kind}",
        escape_controls(&c.runs_a.join(" ")),
        escape_controls(&c.runs_b.join(" ")),
    );
    if !c.busy.is_empty() {
        let _ = writeln!(
            out,
            "\nBUSY: shown because of --force. These runs were measured on a busy machine, so \
             a change below may be the other work rather than the system:"
        );
        for r in &c.busy {
            let why = escape_controls(&r.reasons.join("; ")).into_owned();
            let _ = writeln!(out, "  {} {}: {why}", r.side, r.run);
        }
    }
    if !c.fingerprint_differences.is_empty() {
        let _ = writeln!(out, "\nSystem differences (kernel settings first):");
        for (k, a, b) in &c.fingerprint_differences {
            let blind = k
                .strip_prefix("settings.")
                .and_then(|name| c.setting_blind_spots.iter().find(|(n, _)| n == name));
            let (k, a, b) = (escape_controls(k), escape_controls(a), escape_controls(b));
            let _ = writeln!(out, "  {k}: {a} -> {b}");
            if let Some((_, why)) = blind {
                let note = format!("    this comparison cannot see it whole: {why}");
                let _ = writeln!(
                    out,
                    "{}",
                    crate::columns::wrap(&note, crate::columns::width(), "      ").trim_end()
                );
            }
        }
    }
}

/// How many figures changed, how they were judged, and which could not be.
fn write_counts(out: &mut String, c: &Comparison) {
    let changed = c
        .figures
        .iter()
        .filter(|f| matches!(f.verdict, Verdict::Faster | Verdict::Slower))
        .count();
    let untested = c
        .figures
        .iter()
        .filter(|f| f.verdict == Verdict::Untested && !f.reason.starts_with(NOT_COMPARED))
        .count();
    let other_pages = c
        .figures
        .iter()
        .filter(|f| f.reason.starts_with(NOT_COMPARED))
        .count();
    let _ = writeln!(
        out,
        "\n{changed} of {} figures changed beyond noise (false discovery rate {} over the figures \
         tested, Benjamini-Hochberg, on the spread between rounds or, one value a side, on the \
         interval each side carries; change >= {} % or {} x the \
         run-to-run spread stored history shows; interval excluding 1; exact figures: change >= {} %).",
        c.figures.len(),
        c.alpha,
        c.min_effect * 100.0,
        NOISE_MULTIPLE,
        c.min_effect * 100.0,
    );
    if other_pages > 0 {
        let _ = writeln!(
            out,
            "{other_pages} figure(s) not compared: their runs had different kinds of pages (2 MiB \
             or 4 KiB) under buffers whose placement they depend on (\"?\")."
        );
    }
    if untested > 0 {
        let _ = writeln!(
            out,
            "{untested} figure(s) have one value per side and no interval of their own to judge it \
             by: their ratio is shown, untested (\"?\")."
        );
    }
    let _ = writeln!(
        out,
        "{}",
        if c.history_runs >= 3 {
            format!(
                "Run-to-run spread learned from {} earlier runs of this host.",
                c.history_runs
            )
        } else {
            "Run-to-run spread from the runs' own rounds; no history of this host (fewer than 3 \
             earlier runs)."
                .to_string()
        }
    );
}

/// One row per figure shown (every figure with `all`), with why it was judged so, its caveats
/// and the counters that moved.
fn write_table(out: &mut String, c: &Comparison, all: bool) {
    let width = c
        .figures
        .iter()
        .map(|f| escape_controls(&f.key).chars().count())
        .max()
        .unwrap_or(6)
        .max(6);
    let cpu_relative = |f: &super::FigureComparison| {
        f.speedup_relative_to_cpu
            .map_or_else(|| "-".into(), |r| format!("{r:.3}"))
    };
    let shown: Vec<&super::FigureComparison> = c
        .figures
        .iter()
        .filter(|f| all || f.verdict != Verdict::NoChange || !f.caveats.is_empty())
        .collect();
    // Value columns as wide as their widest cell; a table still wider than the terminal puts
    // each figure's name on a line of its own above its values.
    let cell_width = |cell: &dyn Fn(&super::FigureComparison) -> String, header: &str| {
        shown
            .iter()
            .map(|f| cell(f).chars().count())
            .chain(std::iter::once(header.chars().count()))
            .max()
            .unwrap_or(0)
    };
    let (wa, wb) = (
        cell_width(&|f| side(f, f.value_a), "A"),
        cell_width(&|f| side(f, f.value_b), "B"),
    );
    let wci = cell_width(&|f| interval(f), "95% CI of B/A");
    // Whether names stand on lines of their own depends on the names alone (not on how wide this
    // run's numbers happen to be), so the same figures always read the same way.
    let stacked = crate::columns::width().is_some_and(|w| width + 2 + VALUES_WIDTH > w);
    let (width, lead) = if stacked {
        (0, "\n    ")
    } else {
        (width, "  ")
    };
    let _ = writeln!(
        out,
        "{:<width$}{lead}{:>wa$} {:>wb$} {:>7} {:>wci$} {:>8}  {}verdict",
        "figure",
        "A",
        "B",
        "B/A",
        "95% CI of B/A",
        "q",
        if c.cpu_speedup.is_some() {
            "   ÷CPU  "
        } else {
            ""
        }
    );
    for f in shown {
        let verdict = match f.verdict {
            Verdict::Faster => "faster",
            Verdict::Slower => "SLOWER",
            Verdict::NoChange => "~",
            Verdict::Untested => "?",
        };
        let p = f
            .q_value
            .or(f.p_value)
            .map(|p| format!("{p:.4}"))
            .unwrap_or_else(|| "-".into());
        let relative = match c.cpu_speedup {
            Some(_) => format!("{:>7}  ", cpu_relative(f)),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "{:<width$}{lead}{:>wa$} {:>wb$} {:>7.3} {:>wci$} {:>8}  {relative}{verdict}",
            escape_controls(&f.key),
            side(f, f.value_a),
            side(f, f.value_b),
            f.ratio,
            interval(f),
            p
        );
        let _ = writeln!(out, "{:<width$}    why: {}", "", escape_controls(&f.reason));
        for c in &f.caveats {
            let _ = writeln!(out, "{:<width$}    caveat: {c}", "");
        }
        for (event, va, vb) in &f.counter_deltas {
            let _ = writeln!(
                out,
                "{:<width$}    {event}: {} -> {} per op",
                "",
                units::significant(*va),
                units::significant(*vb)
            );
        }
    }
}

/// The geometric means, the CPU-relative speed-ups, and the figures only one side has.
fn write_totals(out: &mut String, c: &Comparison, all: bool) {
    if let Some(g) = c.geomean {
        let groups: Vec<String> = c
            .geomean_by_group
            .iter()
            .map(|(k, v)| format!("{k} {v:.3}"))
            .collect();
        let interval = c.geomean_ci95.map_or(String::new(), |[lo, hi]| {
            format!(", 95 % interval {lo:.3}-{hi:.3}")
        });
        let _ = writeln!(
            out,
            "\nGeometric mean speed-up of B over A: {g:.3}{interval} ({})",
            groups.join(", ")
        );
        if let Some((g, [lo, hi])) = c
            .machine_speed
            .as_ref()
            .and_then(|m| m.geomean_relative.zip(m.geomean_relative_ci95))
        {
            let _ = writeln!(
                out,
                "Relative to the machine's own speed ({}): {g:.3}, 95 % interval {lo:.3}-{hi:.3}",
                c.machine_speed.as_ref().map_or("", |m| m.source.as_str())
            );
        }
    }
    if let (Some(cpu), Some(os), Some(rel)) =
        (c.cpu_speedup, c.os_speedup, c.os_speedup_relative_to_cpu)
    {
        let _ = writeln!(
            out,
            "CPU reference speed-up: {cpu:.3}; OS primitives {os:.3} (hardware figures left out); \
             relative to the CPU: {rel:.3} (below 1: the OS gained less than the CPU; ÷CPU: each \
             figure's speed-up over the CPU's)"
        );
    }
    for (side, keys) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
        if !keys.is_empty() {
            let _ = writeln!(out, "Only in {side}: {}", unmatched(keys, all));
        }
    }
}

/// Says why nothing is compared: a busy run's figures hold the other work, and a change between
/// them would be presented as a finding. One line per run and per reason, each wrapped, so that a
/// long list of the processes that took the CPU never makes a line of hundreds of columns.
pub fn busy_refusal(busy: &[super::BusyRun]) -> String {
    let width = crate::columns::width();
    let mut out = String::from(
        "osmeter: not compared: measured on a busy machine, so no figure is called changed:\n",
    );
    for r in busy {
        out.push_str(&format!("  {} {}:\n", r.side, r.run));
        for reason in &r.reasons {
            let reason = crate::text::escape_controls(reason);
            out.push_str(&crate::columns::wrap(
                &format!("    {reason}"),
                width,
                "      ",
            ));
        }
    }
    out.push_str(&crate::columns::wrap(
        "  Its figures hold the other work as much as the system. Measure again on a quiet \
         machine, or give --force to see the comparison with every figure marked.",
        width,
        "  ",
    ));
    out.trim_end().to_string()
}

/// The paragraph that says the machine itself changed speed between the runs.
pub fn machine_moved(m: &super::MachineSpeed) -> String {
    let interval = m.ratio_ci95.map_or(String::new(), |[lo, hi]| {
        format!(
            " (its B/A time {:.3}, 95 % interval {lo:.3}-{hi:.3})",
            1.0 / m.speedup
        )
    });
    if m.source == "yardstick" {
        let percent = (1.0 / m.speedup - 1.0).abs() * 100.0;
        let way = if m.speedup < 1.0 { "slower" } else { "faster" };
        let memory = match m.memory_speedup {
            Some(s) if m.memory_moved => format!("; memory-bound yardstick {:.2}x", 1.0 / s),
            Some(s) => format!("; memory-bound yardstick {:.2}x, within its noise", 1.0 / s),
            None => String::new(),
        };
        return format!(
            "MACHINE SPEED: the whole machine was {percent:.0} % {way} in B: CPU-bound yardstick \
             {:.2}x{interval}{memory}. The yardsticks, read between every run's rounds, never \
             enter the kernel, so the machine itself changed speed between the runs (a host \
             sharing its cores, a clock frequency, a neighbour). A figure that follows the \
             machine's speed is called changed only when it changed both as measured and \
             relative to the yardstick; to compare a setting on a drifting machine, measure A \
             and B interleaved with `osmeter ab`.",
            1.0 / m.speedup
        );
    }
    format!(
        "MACHINE SPEED: cpu.reference, which only computes and never enters the kernel, ran \
         {:.3}x as fast in B{interval} on the same CPU model: the machine itself changed speed \
         between the runs (a host sharing its cores, a clock frequency, a neighbour on the same \
         core). A figure that follows the machine's speed is called changed only when it changed \
         both as measured and relative to cpu.reference.",
        m.speedup
    )
}

/// Figures without a partner, listed whole with `--all`, else the first few and a count (a
/// memsim machine present on one side only would otherwise fill the screen).
fn unmatched(keys: &[String], all: bool) -> String {
    const SHOWN: usize = 6;
    if all || keys.len() <= SHOWN {
        return keys.join(", ");
    }
    format!(
        "{}, and {} more (--all lists them)",
        keys[..SHOWN].join(", "),
        keys.len() - SHOWN
    )
}

#[cfg(test)]
mod tests {
    use super::unmatched;

    #[test]
    fn long_lists_of_unmatched_figures_are_cut_unless_all() {
        let keys: Vec<String> = (0..9).map(|i| format!("f{i}")).collect();
        assert_eq!(unmatched(&keys[..3], false), "f0, f1, f2");
        assert_eq!(
            unmatched(&keys, false),
            "f0, f1, f2, f3, f4, f5, and 3 more (--all lists them)"
        );
        assert_eq!(unmatched(&keys, true).matches(", ").count(), 8);
    }
}
