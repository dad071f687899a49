//! The short form of a run's profiles, printed by `run --profile` and `show`: one row per figure
//! (its time split into user and kernel, and the kernel components that took most of it), and
//! each kind of note once with the number of figures it concerns. The functions, and the notes
//! figure by figure, are in `show ID --profile`, the report and the exports: a run of the full
//! suite with every function listed ran to more than a thousand lines.

use super::{ProbeProfile, Profiles};
use crate::columns::{Align, Table};
use crate::text::escape_controls;
use crate::units::duration;
use std::fmt::Write;

/// Kernel components named per figure.
const SHOWN_COMPONENTS: usize = 2;

/// The profiles in brief; `id` is the run's, named in the pointer to the full form (None when
/// the run was not kept).
pub fn render_brief(profiles: &Profiles, id: Option<&str>) -> String {
    let mut out = String::from("\nWhere the time goes (run --profile): CPU time per operation\n");
    if let Some(reason) = &profiles.refused {
        let _ = writeln!(out, "  no profiles: {}", escape_controls(reason));
        return out;
    }
    let mut table = Table::new(
        &[
            "figure",
            "total",
            "user",
            "kernel",
            "",
            "most kernel time in",
        ],
        &[
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Left,
        ],
        1,
    )
    .indented("  ");
    for p in &profiles.probes {
        table.push(row(p));
    }
    out.push_str(&table.render(crate::columns::width()));
    if let Some(source) = profiles.probes.iter().find_map(|p| p.source) {
        let _ = writeln!(out, "  sampled on {}", source.name());
    }
    let notes = notes_once(profiles);
    if profiles.kernel_symbols.is_some() || !notes.is_empty() {
        out.push_str("  notes:\n");
    }
    if let Some(note) = &profiles.kernel_symbols {
        let _ = writeln!(out, "    {}", escape_controls(note));
    }
    for (note, figures) in notes {
        let also = match figures {
            1 => String::new(),
            n => format!(" (in {n} figures; the first shown)"),
        };
        let _ = writeln!(out, "    {}{also}", escape_controls(&note));
    }
    let show = match id {
        Some(id) => format!("osmeter show {id} --profile"),
        None => "a kept run's `show ID --profile`".to_string(),
    };
    let _ = writeln!(
        out,
        "  Functions and each figure's notes: {show}, the report, or export --format folded."
    );
    out
}

fn row(p: &ProbeProfile) -> Vec<String> {
    let label = escape_controls(&p.label).into_owned();
    if p.source.is_none() {
        return vec![
            label,
            "-".into(),
            "-".into(),
            "-".into(),
            String::new(),
            String::new(),
        ];
    }
    let components: Vec<String> = p
        .components
        .iter()
        .filter(|c| c.ns_per_op >= 0.05)
        .take(SHOWN_COMPONENTS)
        .map(|c| format!("{} {}", c.component.name(), duration(c.ns_per_op)))
        .collect();
    vec![
        label,
        duration(p.ns_per_op),
        duration(p.user_ns_per_op),
        duration(p.kernel_ns_per_op),
        format!("{:.0} %", 100.0 * p.kernel_share()),
        components.join(", "),
    ]
}

/// Each kind of note once, in the order first met, with how many figures carry it. Two notes
/// are of one kind when they differ only in their numbers ("2 samples left out ..." and "5
/// samples left out ..."); the first is shown.
fn notes_once(profiles: &Profiles) -> Vec<(String, usize)> {
    let mut kinds: Vec<(String, String, usize)> = Vec::new();
    for note in profiles.probes.iter().flat_map(|p| &p.notes) {
        let kind = shape(note);
        match kinds.iter_mut().find(|(k, _, _)| *k == kind) {
            Some((_, _, n)) => *n += 1,
            None => kinds.push((kind, note.clone(), 1)),
        }
    }
    kinds.into_iter().map(|(_, note, n)| (note, n)).collect()
}

/// What a note says without its numbers: its words before any parenthesis, the words with a
/// digit in them left out and plural endings dropped, so that "2 samples left out" and "1 sample
/// left out", or "slowed the workload 2.05x (1885 ns ...)" and "... 1.74x (13.7 us ...)", are
/// one kind.
fn shape(note: &str) -> String {
    let head = note.split('(').next().unwrap_or(note);
    head.split_whitespace()
        .filter(|w| !w.chars().any(|c| c.is_ascii_digit()))
        .map(|w| {
            let w = w.to_lowercase();
            w.strip_suffix('s').map(str::to_string).unwrap_or(w)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_parts::Component;
    use crate::results::profile::{ComponentShare, SamplingSource};

    fn share(component: Component, ns_per_op: f64) -> ComponentShare {
        ComponentShare {
            component,
            ns_per_op,
            samples: 100,
        }
    }

    fn probe(label: &str, notes: &[&str]) -> ProbeProfile {
        ProbeProfile {
            label: label.into(),
            source: Some(SamplingSource::CpuClock),
            samples: 1000,
            operations: 100,
            ns_per_op: 261.5,
            user_ns_per_op: 68.0,
            kernel_ns_per_op: 193.5,
            notes: notes.iter().map(|n| n.to_string()).collect(),
            ..ProbeProfile::default()
        }
    }

    #[test]
    fn one_row_per_figure_and_each_kind_of_note_once() {
        let mut a = probe(
            "syscall.null",
            &["2 samples left out: taken while the sampler was being switched on or off"],
        );
        a.components = vec![
            share(Component::EntryExit, 128.7),
            share(Component::Process, 38.9),
            share(Component::Locking, 24.0),
        ];
        let b = probe(
            "syscall.dup",
            &[
                "sampling slowed the workload 2.05x (1885 ns per operation sampled)",
                "5 samples left out: taken while the sampler was being switched on or off",
            ],
        );
        let profiles = Profiles {
            probes: vec![a, b],
            ..Profiles::default()
        };
        let text = render_brief(&profiles, Some("6b17"));
        let rows: Vec<&str> = text.lines().filter(|l| l.contains("syscall.")).collect();
        assert_eq!(rows.len(), 2, "{text}");
        assert!(
            rows[0].contains("262 ns") && rows[0].contains("74 %"),
            "{text}"
        );
        assert!(
            rows[0].ends_with("entry-exit 129 ns, process 38.9 ns"),
            "{text}"
        );
        assert_eq!(text.matches("left out").count(), 1, "{text}");
        assert!(
            text.contains("switched on or off (in 2 figures; the first shown)"),
            "{text}"
        );
        assert!(
            text.contains("sampling slowed the workload 2.05x"),
            "{text}"
        );
        assert!(text.contains("osmeter show 6b17 --profile"), "{text}");
        assert!(text.contains("sampled on cpu-clock"), "{text}");
    }

    #[test]
    fn numbers_make_no_kind_of_their_own() {
        assert_eq!(shape("2 samples left out"), shape("1 sample left out"));
        assert_eq!(
            shape("sampling slowed the workload 2.05x (1885 ns per operation)"),
            shape("sampling slowed the workload 1.17x (7.20 ms per operation)")
        );
        assert_ne!(shape("2 samples left out"), shape("2 samples kept"));
    }
}
