//! Which hosts are off their class: each host's distance from its class's median, on a log scale,
//! against a noise, under one false-discovery rate over every host x figure test.
//!
//! The noise depends on how many hosts a class has:
//! - with [`SPREAD_HOSTS`] or more, the spread between the hosts (a robust one, the median
//!   absolute deviation) together with each host's own uncertainty: hosts of one class differ a
//!   little for real (a DIMM, a BIOS setting, a neighbour), and a fleet asks which host is off
//!   *that*;
//! - with fewer, each host's own runs (their intervals, from their rounds, and the spread between
//!   the runs). The spread of three values is known too poorly to be a noise: with Student's t on
//!   two degrees of freedom, a host twice as slow as two others that agree within a percent came
//!   out at q 0.12, "no host is off". Taken against its own runs, which are tight, it is off; a
//!   host that is off by the smallest distance worth calling but whose runs cannot tell is said
//!   to be undecided, with the runs that would decide, never fine.
//!
//! Relative to the machine, or as measured? Every run reads a CPU yardstick, so each host's
//! figures could be taken relative to its own machine's speed, as `compare` does for two runs of
//! one machine. For a fleet that would hide what a fleet most wants to see: a slow machine (a CPU
//! held at a lower clock, a host that shares its cores, a failing fan) is a finding there, where
//! for one machine's A/B it is only drift. So the verdict, `--fail-if-off` included, is on the
//! values as measured, and, where the classes are small enough to read the yardsticks (see
//! [`super::machine`]), each host is judged relative to its machine's speed too and every host
//! called off says which it is: off with its machine (the yardstick moved as much) or off
//! relative to it as well (the system). A host off relative to its machine only (a slower
//! system on a faster machine) is shown as such, not called.

use super::{Cell, Class, FigureRow, FleetQuery, MIN_HOSTS};
use crate::results::figure::Direction;
use crate::stats::dist::{normal_cdf, normal_quantile, t_two_sided_p};
use crate::stats::fdr::benjamini_hochberg;
use crate::stats::summary::{median, median_and_mad, median_of, MAD_TO_SD};
use crate::units::Unit;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Fewest hosts whose spread is the noise: their median absolute deviation then has five degrees
/// of freedom or more. Below, each host's own runs are.
pub const SPREAD_HOSTS: usize = 6;

/// Most runs a host is said to need: beyond, the distance is too small for its noise to decide
/// in any number of runs a user would make.
const MOST_RUNS: usize = 1000;

/// What a figure's distances were judged against.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Noise {
    /// The spread between the class's hosts, with each host's own uncertainty.
    #[default]
    BetweenHosts,
    /// Each host's own runs: too few hosts to measure the spread between them.
    OwnRuns,
}

/// Why a host called off is off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Cause {
    /// Off relative to its machine's speed too: the system (kernel, configuration, a filter).
    System,
    /// Off only as measured: its machine's yardstick moved as much, the machine itself is slower
    /// or faster.
    Machine,
}

/// A host's standing with its value taken relative to its machine's speed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Relative {
    /// (value at the machine's speed) / the class's median of the same.
    pub ratio: f64,
    pub ratio_interval: [f64; 2],
    /// Adjusted for the number of relative tests (Benjamini-Hochberg).
    pub q_value: f64,
    /// Off relative to the machine's speed, by the same rule as the verdict.
    pub off: bool,
}

/// One host x figure test, for the adjustment over all of them.
struct Test {
    class: String,
    figure: usize,
    cell: usize,
    p: f64,
    /// For hosts judged on their own runs: what a number of runs would need to reach.
    reach: Option<Reach>,
}

/// A distance judged on own runs, and the noise it is judged against, per run.
struct Reach {
    distance: f64,
    per_run_own: f64,
    per_run_center: f64,
    runs: usize,
}

/// Sets every host against its class's median and calls the outliers under one false-discovery
/// rate over every test made; in classes judged on their own runs, the same relative to each
/// host's machine speed, under a rate of its own.
pub(super) fn judge(classes: &mut BTreeMap<String, Class>, query: &FleetQuery) {
    let mut tests = Vec::new();
    let mut relative_tests = Vec::new();
    for class in classes.values_mut() {
        if class.hosts.len() < MIN_HOSTS {
            class.not_judged = Some(format!(
                "{} host(s) of this class: at least {MIN_HOSTS} are needed for a median to set \
                 them against",
                class.hosts.len()
            ));
        }
        for (fi, row) in class.figures.iter_mut().enumerate() {
            let mut values: Vec<f64> = row.cells.iter().map(|c| c.value).collect();
            values.sort_by(f64::total_cmp);
            row.median = median(&values);
            if class.not_judged.is_some() || row.cells.len() < MIN_HOSTS {
                continue;
            }
            row.noise = if row.cells.len() < SPREAD_HOSTS {
                Noise::OwnRuns
            } else {
                Noise::BetweenHosts
            };
            for (ci, (p, reach)) in measured(row).into_iter().enumerate() {
                tests.push(Test {
                    class: class.name.clone(),
                    figure: fi,
                    cell: ci,
                    p,
                    reach,
                });
            }
            if row.noise == Noise::OwnRuns {
                for (ci, p) in relative(row).into_iter().enumerate() {
                    if let Some(p) = p {
                        relative_tests.push((class.name.clone(), fi, ci, p));
                    }
                }
            }
        }
    }
    call(classes, &tests, query);
    call_relative(classes, &relative_tests, query);
}

/// A host's own uncertainty, as a standard deviation on the log scale, from the side of its
/// interval that faces its class (the lower side when the host is `above` it): intervals of few
/// rounds are lopsided, a disturbed round stretches the far side, not the near one.
fn own_sd(cell: &Cell, above: bool) -> f64 {
    let toward = if above {
        cell.interval[0]
    } else {
        cell.interval[1]
    };
    (cell.value.ln() - toward.max(f64::MIN_POSITIVE).ln()).abs() / 1.96
}

/// Each cell's ratio to the class and its p-value as measured (with, for own runs, what more runs
/// would need to reach).
fn measured(row: &mut FigureRow) -> Vec<(f64, Option<Reach>)> {
    let logs: Vec<f64> = row.cells.iter().map(|c| c.value.ln()).collect();
    let (center, mad) = median_and_mad(&logs);
    let own: Vec<f64> = row
        .cells
        .iter()
        .zip(&logs)
        .map(|(c, log)| own_sd(c, *log > center))
        .collect();
    // The center's own uncertainty, for hosts judged on their own runs: the median of a few
    // hosts is one of them (or two), as uncertain as a typical host.
    let center_sd = median_of(&mut own.clone());
    let median = row.median;
    let noise = row.noise;
    let mut out = Vec::with_capacity(row.cells.len());
    for (ci, cell) in row.cells.iter_mut().enumerate() {
        cell.ratio = cell.value / median;
        cell.ratio_interval = [cell.interval[0] / median, cell.interval[1] / median];
        let distance = logs[ci] - center;
        let (z, p, reach) = match noise {
            Noise::BetweenHosts => {
                let spread = MAD_TO_SD * mad;
                let sigma = (spread * spread + own[ci] * own[ci]).sqrt().max(1e-9);
                let z = distance / sigma;
                // The spread between hosts is estimated from the class's hosts, the host's own
                // uncertainty from its rounds: Student's t with the degrees of freedom of that
                // mix (Welch-Satterthwaite; the own part counted as known), so a class does not
                // cry wolf when the spread decides, and a host far outside its own interval is
                // not excused by the class's size.
                let hosts_df = (logs.len() - 1) as f64;
                let between = spread * spread;
                let p = if between > 0.0 {
                    let df = ((between + own[ci] * own[ci]).powi(2)
                        / (between * between / hosts_df))
                        .max(hosts_df);
                    t_two_sided_p(z, df)
                } else {
                    normal_p(z)
                };
                (z, p, None)
            }
            Noise::OwnRuns => {
                let z = z_score(distance, own[ci], center_sd);
                let runs = cell.runs.max(1);
                let reach = Reach {
                    distance: distance.abs(),
                    per_run_own: own[ci] * (runs as f64).sqrt(),
                    per_run_center: center_sd * (runs as f64).sqrt(),
                    runs,
                };
                (z, normal_p(z), Some(reach))
            }
        };
        cell.z = z;
        cell.p_value = p;
        out.push((p, reach));
    }
    out
}

fn normal_p(z: f64) -> f64 {
    if z.is_infinite() {
        return 0.0;
    }
    2.0 * (1.0 - normal_cdf(z.abs()))
}

/// Whether a figure's value follows the machine's speed (a time or a rate, which a faster CPU
/// changes), so that taking it relative to the yardstick means something.
fn follows_machine(unit: Unit) -> bool {
    matches!(
        unit,
        Unit::Nanoseconds | Unit::BytesPerSecond | Unit::OpsPerSecond
    )
}

/// Each cell's standing relative to its machine's speed and its p-value, where every host of the
/// row has a machine speed and the figure follows it.
fn relative(row: &mut FigureRow) -> Vec<Option<f64>> {
    let speeds: Option<Vec<(f64, f64)>> = row
        .cells
        .iter()
        .map(|c| c.machine_ns.map(|ns| (ns.ln(), c.machine_sd)))
        .collect();
    let (Some(speeds), true) = (speeds, follows_machine(row.unit)) else {
        return vec![None; row.cells.len()];
    };
    // A time scales with the time per step of the machine, a rate with its inverse.
    let sign = match row.direction {
        Direction::Lower => 1.0,
        Direction::Higher => -1.0,
    };
    let logs: Vec<f64> = row
        .cells
        .iter()
        .zip(&speeds)
        .map(|(c, (speed, _))| c.value.ln() - sign * speed)
        .collect();
    let center = median_of(&mut logs.clone());
    let own: Vec<f64> = row
        .cells
        .iter()
        .zip(speeds.iter().zip(&logs))
        .map(|(c, ((_, speed_sd), log))| {
            let figure = own_sd(c, *log > center);
            (figure * figure + speed_sd * speed_sd).sqrt()
        })
        .collect();
    let center_sd = median_of(&mut own.clone());
    row.cells
        .iter_mut()
        .enumerate()
        .map(|(ci, cell)| {
            let distance = logs[ci] - center;
            let z = z_score(distance, own[ci], center_sd);
            let ratio = distance.exp();
            let reach = (1.96 * own[ci]).exp();
            cell.relative = Some(Relative {
                ratio,
                ratio_interval: [ratio / reach, ratio * reach],
                q_value: 1.0,
                off: false,
            });
            Some(normal_p(z))
        })
        .collect()
}

/// Whether a ratio's interval lies wholly beyond the smallest distance worth calling, not only
/// its point: a host 3.1 % off with an interval reaching down to 2.9 % is within what the noise
/// allows.
fn clear(interval: [f64; 2], min_effect: f64) -> bool {
    let floor = 1.0 + min_effect;
    interval[0] >= floor || interval[1] <= 1.0 / floor
}

/// The verdicts as measured: q-values over every test, the outliers, and for hosts judged on
/// their own runs that are off by the smallest distance worth calling but not called, the runs
/// that would decide.
fn call(classes: &mut BTreeMap<String, Class>, tests: &[Test], query: &FleetQuery) {
    let p: Vec<f64> = tests.iter().map(|t| t.p).collect();
    let q = benjamini_hochberg(&p);
    // A p-value this small passes Benjamini-Hochberg whatever the others are (Bonferroni's bound).
    let z_needed = normal_quantile(1.0 - query.alpha / (2.0 * tests.len().max(1) as f64));
    for (t, q) in tests.iter().zip(q) {
        let row = &mut classes.get_mut(&t.class).expect("judged class").figures[t.figure];
        let direction = row.direction;
        let cell = &mut row.cells[t.cell];
        cell.q_value = q;
        cell.outlier = q < query.alpha && clear(cell.ratio_interval, query.min_effect);
        cell.slower = match direction {
            Direction::Lower => cell.ratio > 1.0,
            Direction::Higher => cell.ratio < 1.0,
        };
        let beyond_floor = cell.ratio.ln().abs() >= (1.0 + query.min_effect).ln();
        if !cell.outlier && beyond_floor {
            if let Some(reach) = &t.reach {
                cell.runs_to_decide = Some(runs_to_decide(reach, z_needed, query.min_effect));
            }
        }
    }
}

/// The runs per host at which a distance judged on own runs would be decided, were the runs as
/// spread as they are now: its z past what the false-discovery rate needs, and its interval clear
/// of the smallest distance worth calling.
fn runs_to_decide(reach: &Reach, z_needed: f64, min_effect: f64) -> usize {
    let floor = (1.0 + min_effect).ln();
    let per_run = (reach.per_run_own.powi(2) + reach.per_run_center.powi(2)).sqrt();
    let for_z = (z_needed * per_run / reach.distance).powi(2);
    let room = reach.distance - floor;
    let for_interval = if room > 0.0 {
        (1.96 * reach.per_run_own / room).powi(2)
    } else {
        f64::INFINITY
    };
    let runs = for_z.max(for_interval).ceil();
    let (fewest, most) = (reach.runs + 1, MOST_RUNS.max(reach.runs + 1));
    if runs.is_finite() {
        (runs as usize).clamp(fewest, most)
    } else {
        most
    }
}

/// The relative verdicts, under a false-discovery rate of their own, and the cause of each
/// outlier where the relative judgement was made.
fn call_relative(
    classes: &mut BTreeMap<String, Class>,
    tests: &[(String, usize, usize, f64)],
    query: &FleetQuery,
) {
    let p: Vec<f64> = tests.iter().map(|t| t.3).collect();
    let q = benjamini_hochberg(&p);
    for ((class, fi, ci, _), q) in tests.iter().zip(q) {
        let cell = &mut classes.get_mut(class).expect("judged class").figures[*fi].cells[*ci];
        let Some(relative) = cell.relative.as_mut() else {
            continue;
        };
        relative.q_value = q;
        relative.off = q < query.alpha && clear(relative.ratio_interval, query.min_effect);
        if cell.outlier {
            let same_way = (relative.ratio > 1.0) == (cell.ratio > 1.0);
            cell.cause = Some(if relative.off && same_way {
                Cause::System
            } else {
                Cause::Machine
            });
        }
    }
}

/// A host's distance from its class's centre in units of the two uncertainties together (its
/// own runs' and the centre's); with no noise at all (exact figures) any distance is real.
fn z_score(distance: f64, own_sd: f64, center_sd: f64) -> f64 {
    let sigma = (own_sd * own_sd + center_sd * center_sd).sqrt();
    if sigma > 0.0 {
        distance / sigma
    } else if distance == 0.0 {
        0.0
    } else {
        distance.signum() * f64::INFINITY
    }
}

#[cfg(test)]
mod tests;
