//! `compare --explain`: for the figures that changed, the difference of their profiles per
//! operation, by kernel component and by function. Each side's figure is the mean over the runs of
//! that side that profiled it. The interval of a difference treats each side's sample count as
//! Poisson (a share from n samples is uncertain by 1/sqrt(n) of itself): it says whether the
//! samples could make the difference alone, not how the machine varies from run to run.

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
    /// 95 % interval of `delta` from the sample counts.
    pub ci95: [f64; 2],
}

impl Delta {
    /// From each side's (mean, standard error).
    fn new((a, se_a): (f64, f64), (b, se_b): (f64, f64)) -> Delta {
        // A sum over nothing is -0.0: shown as 0.
        let (a, b) = (a + 0.0, b + 0.0);
        let half = 1.96 * (se_a * se_a + se_b * se_b).sqrt();
        Delta {
            a,
            b,
            delta: b - a,
            ci95: [b - a - half, b - a + half],
        }
    }
}

/// A value per operation and the samples it came from.
type Picked = (f64, u64);

fn kernel_samples(p: &ProbeProfile) -> u64 {
    p.components.iter().map(|c| c.samples).sum()
}

/// Mean over the side's runs of what `pick` reads from `label`'s profile, and its standard error;
/// None if no run of the side profiled the figure.
fn mean_of(
    side: &[&Run],
    label: &str,
    pick: &dyn Fn(&ProbeProfile) -> Picked,
) -> Option<(f64, f64)> {
    let values: Vec<Picked> = side
        .iter()
        .filter_map(|r| r.profiles.as_ref())
        .filter_map(|p: &Profiles| {
            p.probes
                .iter()
                .find(|q| q.label == label && q.source.is_some())
        })
        .map(pick)
        .collect();
    if values.is_empty() {
        return None;
    }
    let k = values.len() as f64;
    let mean = values.iter().map(|v| v.0).sum::<f64>() / k;
    let variance: f64 = values
        .iter()
        .map(|&(v, n)| if n > 0 { v * v / n as f64 } else { 0.0 })
        .sum();
    Some((mean, variance.sqrt() / k))
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
    let both = |pick: &dyn Fn(&ProbeProfile) -> Picked| -> Option<Delta> {
        Some(Delta::new(
            mean_of(a, label, pick)?,
            mean_of(b, label, pick)?,
        ))
    };
    let ns_per_op = both(&|p| (p.ns_per_op, p.samples))?;
    let mut components: Vec<(Component, Delta)> = Component::ALL
        .iter()
        .filter_map(|&c| {
            let of = move |p: &ProbeProfile| {
                p.components
                    .iter()
                    .filter(|s| s.component == c)
                    .fold((0.0, 0), |(v, n), s| (v + s.ns_per_op, n + s.samples))
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
                    .fold((0.0, 0), |(v, n), f| (v + f.ns_per_op, n + f.samples))
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
        user_ns_per_op: both(&|p| {
            let user = p.samples.saturating_sub(kernel_samples(p));
            (p.user_ns_per_op, user)
        })?,
        kernel_ns_per_op: both(&|p| (p.kernel_ns_per_op, kernel_samples(p)))?,
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
        let d = |x: &Delta| {
            format!(
                "{:.1} -> {:.1} ({:+.1}, {:+.1} to {:+.1})",
                x.a, x.b, x.delta, x.ci95[0], x.ci95[1]
            )
        };
        let _ = writeln!(out, "{}: {}", escape_controls(&f.label), d(&f.ns_per_op));
        let _ = writeln!(out, "  {:<12} {}", "(user)", d(&f.user_ns_per_op));
        let _ = writeln!(out, "  {:<12} {}", "(kernel)", d(&f.kernel_ns_per_op));
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
