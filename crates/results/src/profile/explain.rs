//! `compare --explain`: for the figures that changed, the difference of their profiles per
//! operation, by kernel component and by function. Each side's figure is the mean over the runs of
//! that side that profiled it. The interval of a difference is a bootstrap over the samples of
//! each side's profiles and over its runs when it has several (see [`super::bootstrap`]).

use super::bootstrap::{self, Cell, RunCells};
use super::{ProbeProfile, Profiles};
use crate::kernel_parts::Component;
use crate::results::model::Run;
use crate::text::escape_controls;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Functions listed per figure, by the size of their change.
const SHOWN_FUNCTIONS: usize = 8;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Explanation {
    pub figures: Vec<FigureExplanation>,
    /// Why nothing is explained (neither side has profiles), and how to take them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// How the intervals were taken (`bootstrap::METHOD`).
    #[serde(default)]
    pub interval: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct FigureExplanation {
    pub label: String,
    pub ns_per_op: Delta,
    pub user_ns_per_op: Delta,
    pub kernel_ns_per_op: Delta,
    /// Largest change first.
    pub components: Vec<(Component, Delta)>,
    pub functions: Vec<(String, Delta)>,
    /// Why the difference is not shown as the figure's cause (see [`super::drift`]); the
    /// components and functions are then left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caution: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Delta {
    pub a: f64,
    pub b: f64,
    pub delta: f64,
    /// 95 % interval of `delta`, by bootstrap over the samples (and the runs) of each side.
    pub ci95: [f64; 2],
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
    Explanation {
        figures,
        missing,
        interval: bootstrap::METHOD.to_string(),
    }
}

/// The profiles of `label` in a side's runs (those that could profile it).
fn profiles_of<'a>(side: &[&'a Run], label: &str) -> Vec<&'a ProbeProfile> {
    side.iter()
        .filter_map(|r| r.profiles.as_ref())
        .filter_map(|p: &Profiles| {
            p.probes
                .iter()
                .find(|q| q.label == label && q.source.is_some())
        })
        .collect()
}

/// Where each quantity of a figure sits in the value vectors: total, user, kernel, then one per
/// component, then one per function named on either side.
struct Layout {
    functions: Vec<String>,
}

const TOTAL: usize = 0;
const USER: usize = 1;
const KERNEL: usize = 2;
const FIRST_COMPONENT: usize = 3;

impl Layout {
    fn component(c: Component) -> usize {
        FIRST_COMPONENT + Component::ALL.iter().position(|&x| x == c).unwrap_or(0)
    }

    fn function(&self, name: &str) -> Option<usize> {
        self.functions
            .binary_search_by(|f| f.as_str().cmp(name))
            .ok()
            .map(|i| FIRST_COMPONENT + Component::ALL.len() + i)
    }

    fn len(&self) -> usize {
        FIRST_COMPONENT + Component::ALL.len() + self.functions.len()
    }

    /// One run's profile as cells: each listed function, the rest of each component past its
    /// listed functions, the rest of the user time.
    fn cells(&self, p: &ProbeProfile) -> RunCells {
        let mut cells = Vec::new();
        let mut rest: BTreeMap<Option<Component>, (u64, f64)> = BTreeMap::new();
        for c in &p.components {
            let r = rest.entry(Some(c.component)).or_default();
            r.0 += c.samples;
            r.1 += c.ns_per_op;
        }
        let user_samples = p
            .samples
            .saturating_sub(p.components.iter().map(|c| c.samples).sum());
        rest.insert(None, (user_samples, p.user_ns_per_op));
        for f in &p.functions {
            let part = if f.kernel {
                f.component.or(Some(Component::Other))
            } else {
                None
            };
            let r = rest.entry(part).or_default();
            r.0 = r.0.saturating_sub(f.samples);
            r.1 -= f.ns_per_op;
            let mut into = vec![TOTAL, if f.kernel { KERNEL } else { USER }];
            into.extend(part.map(Layout::component));
            into.extend(self.function(&f.name));
            cells.push(Cell {
                samples: f.samples,
                ns_per_op: f.ns_per_op,
                into,
            });
        }
        for (part, (samples, ns)) in rest {
            let mut into = vec![TOTAL];
            match part {
                Some(c) => into.extend([KERNEL, Layout::component(c)]),
                None => into.push(USER),
            }
            cells.push(Cell {
                samples,
                // What rounding left (a difference of sums) is no time.
                ns_per_op: ns.max(0.0),
                into,
            });
        }
        cells
    }
}

fn figure(a: &[&Run], b: &[&Run], label: &str) -> Option<FigureExplanation> {
    let (pa, pb) = (profiles_of(a, label), profiles_of(b, label));
    if pa.is_empty() || pb.is_empty() {
        return None;
    }
    let mut functions: Vec<String> = pa
        .iter()
        .chain(&pb)
        .flat_map(|p| p.functions.iter().map(|f| f.name.clone()))
        .collect();
    functions.sort_unstable();
    functions.dedup();
    let layout = Layout { functions };
    let n = layout.len();
    let (ca, cb): (Vec<RunCells>, Vec<RunCells>) = (
        pa.iter().map(|p| layout.cells(p)).collect(),
        pb.iter().map(|p| layout.cells(p)).collect(),
    );
    let (va, vb) = (bootstrap::side_mean(&ca, n), bootstrap::side_mean(&cb, n));
    let ci = bootstrap::intervals(&ca, &cb, n, seed_of(label));
    let delta = |q: usize| Delta {
        // A sum over nothing is -0.0: shown as 0.
        a: va[q] + 0.0,
        b: vb[q] + 0.0,
        delta: vb[q] - va[q],
        ci95: ci[q],
    };
    let mut components: Vec<(Component, Delta)> = Component::ALL
        .iter()
        .map(|&c| (c, delta(Layout::component(c))))
        .filter(|(_, d)| d.a > 0.0 || d.b > 0.0)
        .collect();
    components.sort_by(|x, y| y.1.delta.abs().total_cmp(&x.1.delta.abs()));
    let mut functions: Vec<(String, Delta)> = layout
        .functions
        .iter()
        .filter_map(|name| Some((name.clone(), delta(layout.function(name)?))))
        .collect();
    functions.sort_by(|x, y| y.1.delta.abs().total_cmp(&x.1.delta.abs()));
    functions.truncate(SHOWN_FUNCTIONS);
    Some(FigureExplanation {
        label: label.to_string(),
        ns_per_op: delta(TOTAL),
        user_ns_per_op: delta(USER),
        kernel_ns_per_op: delta(KERNEL),
        components,
        functions,
        caution: None,
    })
}

/// The same figure draws the same resamples whatever else is compared.
fn seed_of(label: &str) -> u64 {
    label.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

pub fn render(e: &Explanation) -> String {
    let mut out = String::from(
        "\nWhy (profiles, ns of CPU per operation, A -> B; 95 % intervals by bootstrap)\n",
    );
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
        if let Some(why) = &f.caution {
            let _ = writeln!(out, "  not a cause: {why}");
        }
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
