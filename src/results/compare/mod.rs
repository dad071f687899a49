//! Statistics on two runs, or two groups of runs: which figures moved beyond noise, by how much, and
//! which counters explain it.

pub mod rank;

use crate::results::derive::REFERENCE_PROBE;
use crate::results::model::{label, CounterScopes, Measurement, Run, Status, Unit};
use serde::Serialize;
use std::collections::BTreeMap;

/// Knobs of the verdict.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// Significance level of the rank test.
    pub alpha: f64,
    /// Smallest change worth reporting, as a fraction (0.03 = 3 %): differences between runs that
    /// small come from page placement and cache colouring as much as from the system under test.
    pub min_effect: f64,
    pub resamples: usize,
    /// Run-to-run spread of each figure (robust coefficient of variation of run medians) learned
    /// from other stored runs of the same host, by figure key. Samples within one run share its page
    /// placement, cache colouring and file-system state, so they understate how much a figure moves
    /// between runs; a change must also clear `NOISE_MULTIPLE` times this spread.
    pub history_noise: BTreeMap<String, History>,
}

/// What earlier runs of the same host say about one figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct History {
    /// Robust coefficient of variation of the run medians.
    pub cv: f64,
    /// Smallest and largest run median seen.
    pub min: f64,
    pub max: f64,
}

impl History {
    /// From the medians of earlier runs; `None` for fewer than three.
    pub fn from_medians(medians: &[f64]) -> Option<History> {
        let cv = robust_cv(medians)?;
        let min = medians.iter().copied().fold(f64::INFINITY, f64::min);
        let max = medians.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(History { cv, min, max })
    }

    /// Both values lie within what this host has already shown (widened by `margin`): a figure that
    /// swings between states (a file system's inode reuse, a cache shared with neighbours) is not
    /// called changed for landing in a state it has been in before.
    fn covers(&self, a: f64, b: f64, margin: f64) -> bool {
        let (lo, hi) = (self.min * (1.0 - margin), self.max * (1.0 + margin));
        (lo..=hi).contains(&a) && (lo..=hi).contains(&b)
    }
}

/// How many run-to-run spreads a change must exceed. The difference of two runs has sqrt(2) times
/// the spread of one; three spreads is about two standard deviations of that difference.
pub const NOISE_MULTIPLE: f64 = 3.0;

/// Robust coefficient of variation of a set of run medians: 1.4826 MAD / median. `None` for fewer
/// than three values.
pub fn robust_cv(values: &[f64]) -> Option<f64> {
    if values.len() < 3 {
        return None;
    }
    let med = median(values);
    if med <= 0.0 {
        return None;
    }
    let dev: Vec<f64> = values.iter().map(|v| (v - med).abs()).collect();
    Some(1.4826 * median(&dev) / med)
}

impl Default for CompareConfig {
    fn default() -> Self {
        CompareConfig {
            alpha: 0.01,
            min_effect: 0.03,
            resamples: 2000,
            history_noise: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    NoChange,
}

/// One figure present on both sides.
#[derive(Debug, Clone, Serialize)]
pub struct FigureComparison {
    pub key: String,
    pub probe: String,
    pub unit: Unit,
    pub median_a: f64,
    pub median_b: f64,
    /// median(B) / median(A) of the figure as measured.
    pub ratio: f64,
    pub ratio_ci95: [f64; 2],
    /// How many times faster B is than A (above 1 means B is faster, whatever the unit).
    pub speedup: f64,
    pub p_value: f64,
    /// Smallest change that counts for this figure: the threshold, or the run-to-run noise when
    /// that is larger.
    pub noise_floor: f64,
    /// Where the run-to-run noise came from: "history (N runs)", "groups", or "unknown".
    pub noise_source: String,
    pub verdict: Verdict,
    /// Counters per operation that moved most between A and B: (scope.event, A, B).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counter_deltas: Vec<(String, f64, f64)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub runs_a: Vec<String>,
    pub runs_b: Vec<String>,
    /// Fingerprint fields whose values differ: (field, A, B).
    pub fingerprint_differences: Vec<(String, String, String)>,
    pub figures: Vec<FigureComparison>,
    /// Figures only one side has.
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// Geometric mean of speedups per probe group.
    pub geomean_by_group: BTreeMap<String, f64>,
    pub geomean: Option<f64>,
    /// Speedup of the CPU-bound reference, and of the OS figures relative to it (Ousterhout's
    /// question: did the OS get faster as fast as the CPU?).
    pub cpu_speedup: Option<f64>,
    pub os_speedup_relative_to_cpu: Option<f64>,
    pub alpha: f64,
    pub min_effect: f64,
    /// Earlier runs of the same host whose spread set the per-figure noise (filled by the caller).
    pub history_runs: usize,
}

/// Pooled samples of one figure over the runs of one side.
struct Side<'a> {
    samples: Vec<f64>,
    /// Median of each run's samples, for the run-to-run spread within a group.
    run_medians: Vec<f64>,
    unit: Unit,
    probe: &'a str,
    counters: Vec<&'a CounterScopes>,
}

fn gather<'a>(runs: &[&'a Run]) -> BTreeMap<String, Side<'a>> {
    let mut out: BTreeMap<String, Side> = BTreeMap::new();
    for run in runs {
        for m in run
            .measurements
            .iter()
            .filter(|m| m.status == Status::Ok && !m.samples.is_empty())
        {
            let side = out.entry(key(m)).or_insert_with(|| Side {
                samples: Vec::new(),
                run_medians: Vec::new(),
                unit: m.unit,
                probe: &m.probe,
                counters: Vec::new(),
            });
            side.samples.extend(&m.samples);
            side.run_medians.push(median(&m.samples));
            side.counters.push(&m.counters);
        }
    }
    out
}

fn key(m: &Measurement) -> String {
    label(&m.probe, &m.params)
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    crate::harness::stats::median(&v)
}

/// Mean over runs of each counter, flattened to "scope.event".
fn mean_counters(sets: &[&CounterScopes]) -> BTreeMap<String, f64> {
    let mut sum: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for c in sets {
        for (scope, map) in [
            ("user", &c.user),
            ("kernel", &c.kernel),
            ("software", &c.software),
        ] {
            for (event, v) in map {
                let e = sum.entry(format!("{scope}.{event}")).or_insert((0.0, 0));
                e.0 += v;
                e.1 += 1;
            }
        }
    }
    sum.into_iter()
        .map(|(k, (s, n))| (k, s / n as f64))
        .collect()
}

/// Smallest count per operation worth explaining a change with: below it a counter is noise
/// (a context switch every thousand operations).
const COUNTER_FLOOR: f64 = 0.01;

/// Counters that changed by more than 10 %, largest relative change first, at most five.
fn counter_deltas(a: &[&CounterScopes], b: &[&CounterScopes]) -> Vec<(String, f64, f64)> {
    let (ma, mb) = (mean_counters(a), mean_counters(b));
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

fn geomean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = xs
        .filter(|x| *x > 0.0 && x.is_finite())
        .fold((0.0, 0usize), |(s, n), x| (s + x.ln(), n + 1));
    (n > 0).then(|| (sum / n as f64).exp())
}

/// Flattens a JSON object to dotted keys with display values.
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&p, v, out);
            }
        }
        serde_json::Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// Fields that differ between the first run of each side (the hostname and run-specific paths are
/// expected to differ in a fleet, so they are reported like any other field).
pub fn fingerprint_differences(
    a: &serde_json::Value,
    b: &serde_json::Value,
) -> Vec<(String, String, String)> {
    let (mut fa, mut fb) = (BTreeMap::new(), BTreeMap::new());
    flatten("", a, &mut fa);
    flatten("", b, &mut fb);
    let keys: std::collections::BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (va, vb) = (fa.get(k), fb.get(k));
            (va != vb).then(|| {
                let show = |v: Option<&String>| v.cloned().unwrap_or_else(|| "(absent)".into());
                (k.clone(), show(va), show(vb))
            })
        })
        .collect()
}

pub fn compare(a: &[&Run], b: &[&Run], config: &CompareConfig) -> Comparison {
    let (sa, sb) = (gather(a), gather(b));
    let mut figures = Vec::new();
    for (k, side_a) in &sa {
        let Some(side_b) = sb.get(k) else { continue };
        let (ma, mb) = (median(&side_a.samples), median(&side_b.samples));
        if ma <= 0.0 || mb <= 0.0 {
            continue;
        }
        let ratio = mb / ma;
        let seed = k.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, c| {
            (h ^ c as u64).wrapping_mul(0x100_0000_01b3)
        });
        let ci = rank::ratio_ci95(&side_a.samples, &side_b.samples, config.resamples, seed);
        let p = rank::mann_whitney_p(&side_a.samples, &side_b.samples);
        let higher_better = side_a.unit.higher_is_better();
        let speedup = if higher_better { ratio } else { 1.0 / ratio };
        // Run-to-run spread: within each group (runs relative to their own group's median), and
        // from the history of the host; the larger counts.
        let within_groups: Vec<f64> = [side_a, side_b]
            .iter()
            .flat_map(|s| {
                let m = median(&s.run_medians);
                s.run_medians.iter().map(move |v| v / m)
            })
            .collect();
        let group_noise = (side_a.run_medians.len() + side_b.run_medians.len() >= 4)
            .then(|| robust_cv(&within_groups))
            .flatten();
        let seen = config.history_noise.get(k).copied();
        let history = seen.map(|h| h.cv);
        let (noise, noise_source) = match (group_noise, history) {
            (Some(g), Some(h)) if g >= h => (Some(g), "groups".to_string()),
            (_, Some(h)) => (Some(h), "history".to_string()),
            (Some(g), None) => (Some(g), "groups".to_string()),
            (None, None) => (None, "unknown".to_string()),
        };
        let noise_floor = noise.map_or(config.min_effect, |n| {
            config.min_effect.max(NOISE_MULTIPLE * n)
        });
        let beyond_noise = p < config.alpha
            && (ci[0] > 1.0 || ci[1] < 1.0)
            && (ratio.ln().abs()) >= (1.0 + noise_floor).ln()
            && !seen.is_some_and(|h| h.covers(ma, mb, config.min_effect));
        let verdict = match (beyond_noise, speedup > 1.0) {
            (false, _) => Verdict::NoChange,
            (true, true) => Verdict::Faster,
            (true, false) => Verdict::Slower,
        };
        let counter_deltas = if verdict == Verdict::NoChange {
            Vec::new()
        } else {
            counter_deltas(&side_a.counters, &side_b.counters)
        };
        figures.push(FigureComparison {
            key: k.clone(),
            probe: side_a.probe.to_string(),
            unit: side_a.unit,
            median_a: ma,
            median_b: mb,
            ratio,
            ratio_ci95: ci,
            speedup,
            p_value: p,
            noise_floor,
            noise_source,
            verdict,
            counter_deltas,
        });
    }
    let mut by_group: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for f in &figures {
        let group = f.probe.split('.').next().unwrap_or("").to_string();
        by_group.entry(group).or_default().push(f.speedup);
    }
    let cpu_speedup = figures
        .iter()
        .find(|f| f.probe == REFERENCE_PROBE)
        .map(|f| f.speedup);
    let os = geomean(
        figures
            .iter()
            .filter(|f| f.probe != REFERENCE_PROBE)
            .map(|f| f.speedup),
    );
    Comparison {
        runs_a: a.iter().map(|r| r.id.clone()).collect(),
        runs_b: b.iter().map(|r| r.id.clone()).collect(),
        fingerprint_differences: match (a.first(), b.first()) {
            (Some(ra), Some(rb)) => fingerprint_differences(&ra.fingerprint, &rb.fingerprint),
            _ => Vec::new(),
        },
        only_in_a: sa
            .keys()
            .filter(|k| !sb.contains_key(*k))
            .cloned()
            .collect(),
        only_in_b: sb
            .keys()
            .filter(|k| !sa.contains_key(*k))
            .cloned()
            .collect(),
        geomean_by_group: by_group
            .into_iter()
            .filter_map(|(g, v)| Some((g, geomean(v.into_iter())?)))
            .collect(),
        geomean: geomean(figures.iter().map(|f| f.speedup)),
        cpu_speedup,
        os_speedup_relative_to_cpu: match (os, cpu_speedup) {
            (Some(o), Some(c)) if c > 0.0 => Some(o / c),
            _ => None,
        },
        figures,
        alpha: config.alpha,
        min_effect: config.min_effect,
        history_runs: 0,
    }
}

#[cfg(test)]
mod tests;
