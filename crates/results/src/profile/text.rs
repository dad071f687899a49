//! The compact text of a run's profiles for `show` and `run`: per figure one line of totals, the
//! kernel components, and the functions that took the most time, within the terminal's width.

use super::{ProbeProfile, Profiles};
use crate::text::escape_controls;
use std::fmt::Write;

/// Functions listed per figure.
const SHOWN_FUNCTIONS: usize = 6;

pub fn render(profiles: &Profiles) -> String {
    let mut out = String::from("\nWhere the time goes (run --profile), ns of CPU per operation\n");
    if let Some(reason) = &profiles.refused {
        let _ = writeln!(out, "  no profiles: {}", escape_controls(reason));
        return out;
    }
    if let Some(note) = &profiles.kernel_symbols {
        let _ = writeln!(out, "  {}", escape_controls(note));
    }
    for p in &profiles.probes {
        figure(&mut out, p);
    }
    out
}

fn figure(out: &mut String, p: &ProbeProfile) {
    let label = escape_controls(&p.label);
    match p.source {
        Some(source) => {
            let _ = write!(
                out,
                "{label}: {:.1} = user {:.1} + kernel {:.1} ({:.0} %), {} samples on {}",
                p.ns_per_op,
                p.user_ns_per_op,
                p.kernel_ns_per_op,
                100.0 * p.kernel_share(),
                p.samples,
                source.name()
            );
            if p.processes > 1 {
                let _ = write!(out, ", {} processes", p.processes);
            }
            out.push('\n');
        }
        None => {
            let _ = writeln!(out, "{label}:");
        }
    }
    let parts: Vec<String> = p
        .components
        .iter()
        .filter(|c| c.ns_per_op >= 0.05)
        .map(|c| format!("{} {:.1}", c.component.name(), c.ns_per_op))
        .collect();
    wrapped(out, "  kernel: ", &parts);
    for f in p.functions.iter().take(SHOWN_FUNCTIONS) {
        let place = match (f.kernel, f.component) {
            (true, Some(c)) => c.name(),
            (true, None) => "kernel",
            (false, _) => "user",
        };
        // The end of a long (Rust, C++) name is the function; its start is the path to it.
        let full: Vec<char> = escape_controls(&f.name).chars().collect();
        let name: String = match full
            .len()
            .checked_sub(crate::columns::prose_width().saturating_sub(33))
        {
            Some(cut) if cut > 0 => "...".chars().chain(full[cut..].iter().copied()).collect(),
            _ => full.into_iter().collect(),
        };
        let _ = writeln!(out, "  {:>9.1}  {name}  ({place})", f.ns_per_op);
    }
    for note in &p.notes {
        let _ = writeln!(out, "  note: {}", escape_controls(note));
    }
}

/// `items` after `lead`, two spaces apart, on as many lines as the width needs.
fn wrapped(out: &mut String, lead: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    let mut line = lead.to_string();
    let indent = " ".repeat(lead.len());
    for item in items {
        if line.len() > lead.len() && line.len() + 2 + item.len() > crate::columns::prose_width() {
            out.push_str(line.trim_end());
            out.push('\n');
            line = indent.clone();
        } else if line.len() > lead.len() {
            line.push_str("  ");
        }
        line.push_str(item);
    }
    out.push_str(&line);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_parts::Component;
    use crate::meter::perf::sampling::SamplingSource;
    use crate::results::profile::{ComponentShare, FunctionShare};

    #[test]
    fn every_line_fits_and_says_what_was_sampled() {
        let p = ProbeProfile {
            label: "syscall.null".into(),
            source: Some(SamplingSource::CpuClock),
            samples: 4000,
            operations: 100,
            ns_per_op: 200.0,
            user_ns_per_op: 50.0,
            kernel_ns_per_op: 150.0,
            components: Component::ALL
                .iter()
                .map(|&component| ComponentShare {
                    component,
                    ns_per_op: 10.0,
                    samples: 1,
                })
                .collect(),
            functions: vec![FunctionShare {
                name: "x".repeat(300),
                kernel: true,
                component: Some(Component::Security),
                ns_per_op: 100.0,
                samples: 2000,
            }],
            ..ProbeProfile::default()
        };
        let text = render(&Profiles {
            probes: vec![p],
            ..Profiles::default()
        });
        assert!(
            text.lines()
                .all(|l| l.len() <= crate::columns::DEFAULT_WIDTH),
            "{text}"
        );
        assert!(text.contains("user 50.0 + kernel 150.0 (75 %), 4000 samples on cpu-clock"));
        assert!(
            text.contains("security 10.0") && text.contains("(security)"),
            "{text}"
        );
        let refused = render(&Profiles::refused("paranoid".into()));
        assert!(refused.contains("no profiles: paranoid"));
    }
}
