//! Statistics on two runs, or two groups of runs: which figures moved beyond noise, by how much, and
//! which counters explain it.

pub mod rank;
pub mod select;
mod sides;

pub mod exact;
pub mod history;
mod judge;
pub mod machine_speed;
mod system;
pub mod text;

pub use sides::NOT_COMPARED;
use sides::{counter_deltas, gather, pages_differ, Side};
pub use system::{fingerprint_differences, setting_blind_spots};

use crate::results::figure::{Direction, Role};
use crate::results::model::{Run, RunKind, Unit};
use crate::stats::geomean::geomean;
use crate::stats::summary::{median_and_mad, MAD_TO_SD};
use machine_speed::MachineSpeed;
use serde::Serialize;
use std::collections::BTreeMap;

/// Knobs of the verdict.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// False discovery rate controlled across the figures of a comparison (Benjamini-Hochberg): of
    /// the figures called changed, at most this share is expected to be changed by chance.
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
    pub fn covers(&self, a: f64, b: f64, margin: f64) -> bool {
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
    let (med, mad) = median_and_mad(values);
    if med <= 0.0 {
        return None;
    }
    Some(MAD_TO_SD * mad / med)
}

impl Default for CompareConfig {
    fn default() -> Self {
        CompareConfig {
            alpha: 0.05,
            min_effect: 0.03,
            resamples: 2000,
            history_noise: BTreeMap::new(),
        }
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    NoChange,
    /// Neither side has a spread to test against (one value each, and no interval of its own, or
    /// one reaching zero): the ratio is shown, no verdict.
    Untested,
}

/// One figure present on both sides.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FigureComparison {
    pub key: String,
    pub group: String,
    pub unit: Unit,
    pub direction: Direction,
    pub role: Role,
    /// The figure on each side (for groups: the median over the runs).
    pub value_a: f64,
    pub value_b: f64,
    /// value(B) / value(A) of the figure as measured.
    pub ratio: f64,
    pub ratio_ci95: Option<[f64; 2]>,
    /// How many times better B is than A (above 1 means B is better, whatever the unit).
    pub speedup: f64,
    /// For OS and hardware figures, `speedup` over the CPU reference's speed-up, when both sides
    /// measured the CPU reference: below 1, this figure gained less than the CPU did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup_relative_to_cpu: Option<f64>,
    pub p_value: Option<f64>,
    /// `p_value` adjusted for the number of figures tested in this comparison (Benjamini-Hochberg);
    /// compared with the comparison's false discovery rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub q_value: Option<f64>,
    /// Smallest change that counts for this figure: the threshold, or the run-to-run noise when
    /// that is larger.
    pub noise_floor: f64,
    /// What the verdict rests on: "rounds" (the spread between rounds), "history" (stored runs of
    /// the host raised the minimum effect), "samples" (one round per side),
    /// "intervals" (one value per side, judged by the interval each carries), "exact" or "unknown".
    pub noise_source: String,
    pub verdict: Verdict,
    /// Why the verdict is what it is, in words.
    pub reason: String,
    /// Counters per operation that moved most between A and B: (scope.event, A, B).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counter_deltas: Vec<(String, f64, f64)>,
    /// Why the figure may not be what its name says on either side ("A: counters contradict the
    /// probe: ..."): its verdict compares something else.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Comparison {
    pub kind: RunKind,
    pub runs_a: Vec<String>,
    pub runs_b: Vec<String>,
    /// Fingerprint fields whose values differ: (field, A, B).
    pub fingerprint_differences: Vec<(String, String, String)>,
    /// Changed settings (of `fingerprint_differences`) that osmeter's own set-up keeps from the
    /// figures, with why and how to measure them: (setting, why).
    pub setting_blind_spots: Vec<(String, String)>,
    pub figures: Vec<FigureComparison>,
    /// Figures only one side has.
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// Geometric mean of speedups per group.
    pub geomean_by_group: BTreeMap<String, f64>,
    pub geomean: Option<f64>,
    /// 95 % interval of `geomean`: whole probes resampled, widened to the figures' own intervals
    /// taken as moving together (a machine faster for a whole run moves them all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geomean_ci95: Option<[f64; 2]>,
    /// Speedup of the CPU-bound reference, and of the OS figures relative to it (Ousterhout's
    /// question: did the OS get faster as fast as the CPU?). Hardware figures and the harness's
    /// own are left out of the OS mean.
    pub cpu_speedup: Option<f64>,
    pub os_speedup: Option<f64>,
    pub os_speedup_relative_to_cpu: Option<f64>,
    pub alpha: f64,
    pub min_effect: f64,
    /// Earlier runs of the same host whose spread set the per-figure noise (filled by the caller).
    pub history_runs: usize,
    /// Runs of either side measured on a busy machine: their figures hold the disturbance, so no
    /// figure is called changed unless the caller forces it (and then each is marked).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub busy: Vec<BusyRun>,
    /// Set when the CPU yardstick moved beyond noise between runs of one CPU model: the machine
    /// itself ran at another speed, and figures that follow it are called changed only when they
    /// changed both as measured and relative to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_speed: Option<MachineSpeed>,
    /// Every run of both sides read the machine's yardstick, so `machine_speed` being absent
    /// means the machine was seen not to move (runs stored before the yardstick cannot say).
    #[serde(skip)]
    pub machine_watched: bool,
}

impl Comparison {
    /// The figures called slower by more than `pct` percent (`compare --fail-if-slower`).
    pub fn slower_beyond(&self, pct: f64) -> Vec<&str> {
        let limit = 1.0 - pct / 100.0;
        self.figures
            .iter()
            .filter(|f| f.verdict == Verdict::Slower && f.speedup < limit)
            .map(|f| f.key.as_str())
            .collect()
    }
}

/// A compared run that was measured on a busy machine.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct BusyRun {
    /// "A" or "B".
    pub side: String,
    pub run: String,
    pub reasons: Vec<String>,
}

fn busy_runs(a: &[&Run], b: &[&Run]) -> Vec<BusyRun> {
    [("A", a), ("B", b)]
        .iter()
        .flat_map(|(side, runs)| {
            runs.iter().filter_map(move |r| {
                let m = r.machine.as_ref().filter(|m| m.busy())?;
                Some(BusyRun {
                    side: side.to_string(),
                    run: r.id.clone(),
                    reasons: m.reasons.clone(),
                })
            })
        })
        .collect()
}

/// The kind of every run, or an error naming two runs of different kinds.
pub fn common_kind(a: &[&Run], b: &[&Run]) -> anyhow::Result<RunKind> {
    let mut all = a.iter().chain(b);
    let first = all
        .next()
        .ok_or_else(|| crate::usage!("compare needs a run on each side"))?;
    for r in all {
        if r.kind() != first.kind() {
            return Err(crate::usage!(
                "run {} is a {} run and run {} a {} run: compare runs of one kind \
                 (`osmeter runs` shows the kind of each)",
                first.id,
                first.kind(),
                r.id,
                r.kind()
            ));
        }
    }
    Ok(first.kind())
}

/// Compares the figures of two runs (or two groups of runs) of one kind.
pub fn compare(a: &[&Run], b: &[&Run], config: &CompareConfig) -> anyhow::Result<Comparison> {
    let kind = common_kind(a, b)?;
    let busy = busy_runs(a, b);
    // Guest counts are exact: any difference is a change, however small.
    let exact = CompareConfig {
        min_effect: 0.0,
        ..config.clone()
    };
    let config = if kind == RunKind::Guest {
        &exact
    } else {
        config
    };
    let (sa, sb) = (gather(a), gather(b));
    let mut figures = Vec::new();
    let keys = comparable(a, &sa, &sb);
    // Each figure on its own, then the false discovery rate across all of them.
    let steps: Vec<judge::Step> = keys
        .iter()
        .map(|k| judge::test(k, &sa[*k], &sb[*k], config))
        .collect();
    let ratios: Vec<f64> = keys
        .iter()
        .map(|k| sb[*k].value() / sa[*k].value())
        .collect();
    let better: Vec<bool> = keys
        .iter()
        .map(|k| {
            let (a, b) = (&sa[*k], &sb[*k]);
            a.figure.direction.speedup(a.value(), b.value()) > 1.0
        })
        .collect();
    let judgements = judge::decide(steps, &ratios, &better, config);
    let same_cpu = same_cpu_model(a, b);
    let from_figure = keys.iter().zip(&judgements).find_map(|(k, j)| {
        let (a, b) = (&sa[*k], &sb[*k]);
        machine_speed::moved(
            a.figure.role,
            j.verdict,
            a.figure.direction.speedup(a.value(), b.value()),
            j.ratio_ci95,
            same_cpu,
        )
    });
    // The readings every run takes come first; cpu.reference speaks for runs without them.
    let mut machine = machine_speed::from_yardsticks(a, b, same_cpu, config).or(from_figure);
    let relative = machine
        .as_ref()
        .map(|m| judged_at_speed_of_a(&keys, &sa, &sb, m, config));
    let follows: Vec<bool> = keys
        .iter()
        .map(|k| machine.is_some() && machine_speed::follows_machine(&sa[*k]))
        .collect();
    for (i, (k, j)) in keys.into_iter().zip(judgements).enumerate() {
        let (side_a, side_b) = (&sa[k], &sb[k]);
        let (verdict, reason) = match (pages_differ(side_a, side_b), &machine, &relative) {
            (Some(why), _, _) => (Verdict::Untested, why),
            (None, Some(m), Some(rel)) if follows[i] => {
                machine_speed::combine((j.verdict, &j.reason), (rel[i].verdict, &rel[i].reason), m)
            }
            _ => (j.verdict, j.reason.clone()),
        };
        figures.push(figure(k, (side_a, side_b), &j, (verdict, reason), &busy));
    }
    let mut by_group: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for f in &figures {
        by_group.entry(f.group.clone()).or_default().push(f.speedup);
    }
    let cpu_speedup = relate_to_cpu(&mut figures);
    if let Some(m) = &mut machine {
        relate_to_machine(m, &figures, &follows);
    }
    let os_speedup = geomean(
        figures
            .iter()
            .filter(|f| f.role == Role::Os)
            .map(|f| f.speedup),
    );
    Ok(Comparison {
        kind,
        runs_a: a.iter().map(|r| r.id.clone()).collect(),
        runs_b: b.iter().map(|r| r.id.clone()).collect(),
        fingerprint_differences: match (a.first(), b.first()) {
            (Some(ra), Some(rb)) => {
                fingerprint_differences(ra.fingerprint.as_ref(), rb.fingerprint.as_ref())
            }
            _ => Vec::new(),
        },
        setting_blind_spots: setting_blind_spots(a, b),
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
            .filter_map(|(g, v)| Some((g, geomean(v)?)))
            .collect(),
        geomean: geomean(figures.iter().map(|f| f.speedup)),
        geomean_ci95: geomean_interval(&figures, |_, f| f.speedup),
        cpu_speedup,
        os_speedup,
        os_speedup_relative_to_cpu: match (os_speedup, cpu_speedup) {
            (Some(o), Some(c)) if c > 0.0 => Some(o / c),
            _ => None,
        },
        figures,
        alpha: config.alpha,
        min_effect: config.min_effect,
        history_runs: 0,
        busy,
        machine_speed: machine,
        machine_watched: a
            .iter()
            .chain(b)
            .all(|r| r.yardstick.as_ref().is_some_and(|y| y.readings.len() >= 2)),
    })
}

/// The figures both sides have, with a positive finite value each, in the order of the first
/// run's own table.
fn comparable<'k>(
    a: &[&Run],
    sa: &'k BTreeMap<String, Side>,
    sb: &BTreeMap<String, Side>,
) -> Vec<&'k String> {
    let order: Vec<String> = a
        .first()
        .map(|r| r.figures().into_iter().map(|f| f.key).collect())
        .unwrap_or_default();
    let mut keys: Vec<&String> = sa.keys().filter(|k| sb.contains_key(*k)).collect();
    keys.sort_by_key(|k| order.iter().position(|o| o == *k).unwrap_or(usize::MAX));
    keys.into_iter()
        .filter(|k| {
            let (va, vb) = (sa[*k].value(), sb[*k].value());
            va > 0.0 && vb > 0.0 && va.is_finite() && vb.is_finite()
        })
        .collect()
}

/// One figure's row: both values, the judgement's statistics, its verdict and reason (after the
/// page kinds and the machine's own speed had their say), the counters that moved when it
/// changed, and every caveat of either side.
fn figure(
    key: &str,
    (side_a, side_b): (&Side, &Side),
    j: &judge::Judgement,
    (verdict, reason): (Verdict, String),
    busy: &[BusyRun],
) -> FigureComparison {
    let (va, vb) = (side_a.value(), side_b.value());
    let f = &side_a.figure;
    let counter_deltas = if matches!(verdict, Verdict::Faster | Verdict::Slower) {
        counter_deltas(&side_a.explain, &side_b.explain)
    } else {
        Vec::new()
    };
    FigureComparison {
        key: key.to_string(),
        group: f.group.clone(),
        unit: f.unit,
        direction: f.direction,
        role: f.role,
        value_a: va,
        value_b: vb,
        ratio: vb / va,
        ratio_ci95: j.ratio_ci95,
        speedup: f.direction.speedup(va, vb),
        speedup_relative_to_cpu: None,
        p_value: j.p_value,
        q_value: j.q_value,
        noise_floor: j.noise_floor,
        noise_source: j.noise_source.clone(),
        verdict,
        reason,
        counter_deltas,
        caveats: [("A", side_a), ("B", side_b)]
            .iter()
            .flat_map(|(name, side)| side.caveats.iter().map(move |c| format!("{name}: {c}")))
            .chain(
                busy.iter()
                    .map(|r| format!("{}: run {} was measured on a busy machine", r.side, r.run)),
            )
            .collect(),
    }
}

/// Sets each OS and hardware figure's speed-up over the CPU reference's; returns the CPU's.
fn relate_to_cpu(figures: &mut [FigureComparison]) -> Option<f64> {
    let cpu_speedup = figures
        .iter()
        .find(|f| f.role == Role::CpuReference)
        .map(|f| f.speedup);
    for f in figures.iter_mut() {
        f.speedup_relative_to_cpu = match (cpu_speedup, f.role) {
            (Some(cpu), Role::Os | Role::Hardware) if cpu > 0.0 => Some(f.speedup / cpu),
            _ => None,
        };
    }
    cpu_speedup
}

/// The geometric mean with every figure that follows the machine's speed taken to A's speed.
fn relate_to_machine(m: &mut MachineSpeed, figures: &[FigureComparison], follows: &[bool]) {
    let speedup = m.speedup;
    let relative = |i: usize, f: &FigureComparison| {
        if follows[i] {
            f.speedup / speedup
        } else {
            f.speedup
        }
    };
    m.geomean_relative = geomean(figures.iter().enumerate().map(|(i, f)| relative(i, f)));
    m.geomean_relative_ci95 = geomean_interval(figures, relative);
}

/// Whether every run of both sides names the same CPU model (or none does).
fn same_cpu_model(a: &[&Run], b: &[&Run]) -> bool {
    let model = |r: &&Run| r.fingerprint.as_ref().and_then(|f| f.cpu_model.clone());
    let mut models = a.iter().chain(b).map(model);
    let first = models.next().flatten();
    models.all(|m| m == first)
}

/// The judgements again with every figure that follows the machine's speed taken to A's speed,
/// the minimum effect widened by the yardstick's own uncertainty.
fn judged_at_speed_of_a(
    keys: &[&String],
    sa: &BTreeMap<String, Side>,
    sb: &BTreeMap<String, Side>,
    machine: &MachineSpeed,
    config: &CompareConfig,
) -> Vec<judge::Judgement> {
    let config = CompareConfig {
        min_effect: config.min_effect + machine.added_min_effect,
        ..config.clone()
    };
    let scaled: Vec<Side> = keys
        .iter()
        .map(|k| {
            if machine_speed::follows_machine(&sa[*k]) {
                machine_speed::at_speed_of_a(&sb[*k], machine.speedup)
            } else {
                sb[*k].clone()
            }
        })
        .collect();
    let steps = keys
        .iter()
        .zip(&scaled)
        .map(|(k, b)| judge::test(k, &sa[*k], b, &config))
        .collect();
    let ratios: Vec<f64> = keys
        .iter()
        .zip(&scaled)
        .map(|(k, b)| b.value() / sa[*k].value())
        .collect();
    let better: Vec<bool> = keys
        .iter()
        .zip(&scaled)
        .map(|(k, b)| sa[*k].figure.direction.speedup(sa[*k].value(), b.value()) > 1.0)
        .collect();
    judge::decide(steps, &ratios, &better, &config)
}

/// The interval of the geometric mean speed-up: resampling probes (a probe's figures, its sizes
/// and placements, share its process and move together, so they count as one draw), widened to
/// what the figures' own intervals give if an error of the machine moved them all at once (a
/// host that ran one whole run faster): an A/A comparison must not read as a speed-up.
fn geomean_interval(
    figures: &[FigureComparison],
    speedup: impl Fn(usize, &FigureComparison) -> f64,
) -> Option<[f64; 2]> {
    use crate::stats::geomean::{clustered_interval, shared_error_interval, union};
    let mut by_probe: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (i, f) in figures.iter().enumerate() {
        let probe = f.key.split_once(' ').map_or(f.key.as_str(), |(p, _)| p);
        by_probe.entry(probe).or_default().push(speedup(i, f));
    }
    let clusters: Vec<Vec<f64>> = by_probe.into_values().collect();
    // A fixed seed: the same comparison prints the same interval every time.
    let resampled = clustered_interval(&clusters, 0.95, 2000, 0x6765_6f6d);
    let half_widths: Vec<f64> = figures
        .iter()
        .filter_map(|f| f.ratio_ci95)
        .filter(|[lo, hi]| *lo > 0.0 && hi.is_finite())
        .map(|[lo, hi]| (hi.ln() - lo.ln()) / 2.0)
        .collect();
    let shared = geomean(figures.iter().enumerate().map(|(i, f)| speedup(i, f)))
        .and_then(|g| shared_error_interval(g, &half_widths));
    union(resampled, shared)
}

#[cfg(test)]
mod rounds_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod yardstick_tests;
