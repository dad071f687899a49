//! `compare --explain`: for the figures that changed, the difference of their profiles per
//! operation, by kernel component and by function. Each side's figure is the mean over the runs of
//! that side that profiled it.

use super::{ProbeProfile, Profiles};
use crate::kernel_parts::Component;
use crate::results::model::Run;
use crate::text::escape_controls;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Functions listed per figure, by the size of their change.
const SHOWN_FUNCTIONS: usize = 8;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Explanation {
    pub figures: Vec<FigureExplanation>,
    /// Why nothing is explained (neither side has profiles), and how to take them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FigureExplanation {
    pub label: String,
    pub ns_per_op: Delta,
    pub user_ns_per_op: Delta,
    pub kernel_ns_per_op: Delta,
    /// Largest change first.
    pub components: Vec<(Component, Delta)>,
    pub functions: Vec<(String, Delta)>,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Delta {
    pub a: f64,
    pub b: f64,
    pub delta: f64,
}

impl Delta {
    fn new(a: f64, b: f64) -> Delta {
        // A sum over nothing is -0.0: shown as 0.
        let (a, b) = (a + 0.0, b + 0.0);
        Delta { a, b, delta: b - a }
    }
}

/// Mean over the side's runs of what `pick` reads from `label`'s profile; None if no run of the
/// side profiled the figure.
fn mean_of(side: &[&Run], label: &str, pick: &dyn Fn(&ProbeProfile) -> f64) -> Option<f64> {
    let values: Vec<f64> = side
        .iter()
        .filter_map(|r| r.profiles.as_ref())
        .filter_map(|p: &Profiles| {
            p.probes
                .iter()
                .find(|q| q.label == label && q.source.is_some())
        })
        .map(pick)
        .collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

pub fn explain(a: &[&Run], b: &[&Run], labels: &[String]) -> Explanation {
    let has = |side: &[&Run]| {
        side.iter()
            .any(|r| r.profiles.as_ref().is_some_and(|p| !p.probes.is_empty()))
    };
    let missing = match (has(a), has(b)) {
        (true, true) => None,
        (false, false) => Some(
            "neither side has profiles: measure both with `osmeter run --profile ...`".to_string(),
        ),
        (false, true) => Some(
            "the baseline (A) has no profiles: measure it again with `osmeter run --profile ...`"
                .to_string(),
        ),
        (true, false) => Some(
            "the candidate (B) has no profiles: measure it again with `osmeter run --profile ...`"
                .to_string(),
        ),
    };
    let figures = if missing.is_some() {
        Vec::new()
    } else {
        labels.iter().filter_map(|l| figure(a, b, l)).collect()
    };
    Explanation { figures, missing }
}

fn figure(a: &[&Run], b: &[&Run], label: &str) -> Option<FigureExplanation> {
    let both = |pick: &dyn Fn(&ProbeProfile) -> f64| -> Option<Delta> {
        Some(Delta::new(
            mean_of(a, label, pick)?,
            mean_of(b, label, pick)?,
        ))
    };
    let ns_per_op = both(&|p| p.ns_per_op)?;
    let mut components: Vec<(Component, Delta)> = Component::ALL
        .iter()
        .filter_map(|&c| {
            let of = move |p: &ProbeProfile| {
                p.components
                    .iter()
                    .filter(|s| s.component == c)
                    .map(|s| s.ns_per_op)
                    .sum()
            };
            Some((c, both(&of)?)).filter(|(_, d)| d.a > 0.0 || d.b > 0.0)
        })
        .collect();
    components.sort_by(|x, y| y.1.delta.abs().total_cmp(&x.1.delta.abs()));
    let mut names: BTreeMap<String, ()> = BTreeMap::new();
    for side in [a, b] {
        for r in side {
            for q in r
                .profiles
                .iter()
                .flat_map(|p| &p.probes)
                .filter(|q| q.label == label)
            {
                names.extend(q.functions.iter().map(|f| (f.name.clone(), ())));
            }
        }
    }
    let mut functions: Vec<(String, Delta)> = names
        .into_keys()
        .filter_map(|name| {
            let of = |p: &ProbeProfile| {
                p.functions
                    .iter()
                    .filter(|f| f.name == name)
                    .map(|f| f.ns_per_op)
                    .sum()
            };
            let d = both(&of)?;
            Some((name, d))
        })
        .collect();
    functions.sort_by(|x, y| y.1.delta.abs().total_cmp(&x.1.delta.abs()));
    functions.truncate(SHOWN_FUNCTIONS);
    Some(FigureExplanation {
        label: label.to_string(),
        ns_per_op,
        user_ns_per_op: both(&|p| p.user_ns_per_op)?,
        kernel_ns_per_op: both(&|p| p.kernel_ns_per_op)?,
        components,
        functions,
    })
}

pub fn render(e: &Explanation) -> String {
    let mut out = String::from("\nWhy (profiles, ns of CPU per operation, A -> B)\n");
    if let Some(m) = &e.missing {
        let _ = writeln!(out, "  {m}");
        return out;
    }
    if e.figures.is_empty() {
        out.push_str("  no changed figure was profiled on both sides\n");
    }
    for f in &e.figures {
        let d = |x: &Delta| format!("{:.1} -> {:.1} ({:+.1})", x.a, x.b, x.delta);
        let _ = writeln!(out, "{}: {}", escape_controls(&f.label), d(&f.ns_per_op));
        let _ = writeln!(
            out,
            "  user {}   kernel {}",
            d(&f.user_ns_per_op),
            d(&f.kernel_ns_per_op)
        );
        for (c, x) in f.components.iter().take(4) {
            let _ = writeln!(out, "  {:<12} {}", c.name(), d(x));
        }
        for (name, x) in &f.functions {
            let name: String = escape_controls(name).chars().take(50).collect();
            let _ = writeln!(out, "    {:+9.1}  {name}", x.delta);
        }
    }
    out
}
