//! One figure gathered over the runs of one side of a comparison, and what is read from a side
//! besides its value: whether its pages differ from the other side's, and the counters that moved.

use crate::meter::pages::Pages;
use crate::results::figure::{Evidence, Figure};
use crate::results::model::Run;
use crate::stats::summary::median_of;
use std::collections::BTreeMap;

/// One figure over the runs of one side.
#[derive(Clone)]
pub(super) struct Side {
    pub(super) figure: Figure,
    /// The figure's value in each run.
    pub(super) run_values: Vec<f64>,
    /// Repetitions of all runs of the side.
    pub(super) rounds: Vec<Vec<f64>>,
    pub(super) explain: Vec<BTreeMap<String, f64>>,
    /// Contradicted claims of the figure's probe in any run of the side.
    pub(super) caveats: Vec<String>,
    /// Which pages backed the figure's buffers in each run (None: not said).
    pub(super) pages: Vec<Option<Pages>>,
}

impl Side {
    pub(super) fn exact(&self) -> bool {
        matches!(self.figure.evidence, Evidence::Exact)
    }
    pub(super) fn samples(&self) -> Vec<f64> {
        self.rounds.iter().flatten().copied().collect()
    }
    pub(super) fn round_values(&self) -> Vec<f64> {
        Evidence::Rounds(self.rounds.clone()).round_values()
    }
    /// The side's value: the run's own for one run, the median over runs for a group.
    pub(super) fn value(&self) -> f64 {
        if self.run_values.len() == 1 {
            self.run_values[0]
        } else {
            median_of(&mut self.run_values.clone())
        }
    }
}

pub(super) fn gather(runs: &[&Run]) -> BTreeMap<String, Side> {
    let mut out: BTreeMap<String, Side> = BTreeMap::new();
    for run in runs {
        let mut caveats = crate::results::figure::bench::caveats(run);
        let pages = crate::results::figure::bench::pages(run);
        for f in run.figures() {
            let side = out.entry(f.key.clone()).or_insert_with(|| Side {
                figure: f.clone(),
                run_values: Vec::new(),
                rounds: Vec::new(),
                explain: Vec::new(),
                caveats: Vec::new(),
                pages: Vec::new(),
            });
            side.pages.push(pages.get(&f.key).copied());
            for c in caveats.remove(&f.key).unwrap_or_default() {
                if !side.caveats.contains(&c) {
                    side.caveats.push(c);
                }
            }
            side.run_values.push(f.value);
            if let Evidence::Rounds(r) = &f.evidence {
                side.rounds.extend(r.iter().cloned());
            }
            side.explain.push(f.explain);
        }
    }
    out
}

/// How the reason of a figure not compared for its pages begins.
pub const NOT_COMPARED: &str = "not compared: ";

/// Why a figure is not compared when its sides had different kinds of pages (a figure that
/// depends on physical placement is another figure on 2 MiB pages than on 4 KiB ones).
pub(super) fn pages_differ(a: &Side, b: &Side) -> Option<String> {
    let kind = |s: &Side| -> Option<Option<Pages>> {
        let first = *s.pages.first()?;
        s.pages.iter().all(|p| *p == first).then_some(first)
    };
    let (ka, kb) = (kind(a), kind(b));
    if ka.is_some() && ka == kb {
        return None;
    }
    if a.pages.iter().chain(&b.pages).all(Option::is_none) {
        return None;
    }
    let words = |k: Option<Option<Pages>>| match k {
        Some(Some(p)) => p.describe(),
        Some(None) => "pages it did not record",
        None => "different pages in different runs",
    };
    Some(format!(
        "{NOT_COMPARED}A had {}, B {}; a figure that depends on where its buffers lie in \
         physical memory is compared only between runs with the same kind of pages",
        words(ka),
        words(kb)
    ))
}

/// Mean over runs of each explaining quantity.
fn mean_explain(sets: &[BTreeMap<String, f64>]) -> BTreeMap<String, f64> {
    let mut sum: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for set in sets {
        for (k, v) in set {
            let e = sum.entry(k.clone()).or_insert((0.0, 0));
            e.0 += v;
            e.1 += 1;
        }
    }
    sum.into_iter()
        .map(|(k, (s, n))| (k, s / n as f64))
        .collect()
}

/// Smallest count per operation worth explaining a change with: below it a counter is noise
/// (a context switch every thousand operations).
const COUNTER_FLOOR: f64 = 0.01;

/// Quantities that changed by more than 10 %, largest relative change first, at most five.
pub(super) fn counter_deltas(
    a: &[BTreeMap<String, f64>],
    b: &[BTreeMap<String, f64>],
) -> Vec<(String, f64, f64)> {
    let (ma, mb) = (mean_explain(a), mean_explain(b));
    let mut out: Vec<(String, f64, f64, f64)> = ma
        .iter()
        .filter_map(|(k, &va)| {
            let vb = *mb.get(k)?;
            let base = va.abs().max(vb.abs());
            if base < COUNTER_FLOOR {
                return None;
            }
            let rel = (vb - va).abs() / base;
            (rel > 0.10).then(|| (k.clone(), va, vb, rel))
        })
        .collect();
    out.sort_by(|x, y| y.3.total_cmp(&x.3));
    out.into_iter()
        .take(5)
        .map(|(k, a, b, _)| (k, a, b))
        .collect()
}
