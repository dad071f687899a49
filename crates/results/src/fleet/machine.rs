//! The machine's own speed in a fleet's view: every run reads a CPU yardstick between its rounds
//! (a register-only loop that no operating-system change reaches, see
//! [`crate::meter::yardstick`]), so a host whose figures are off can be told apart: off with its
//! machine (the yardstick moved as much: a slower CPU, a clock, a host that shares its cores) or
//! off relative to it too (the system: a kernel, a filter, a setting).
//!
//! Only the classes judged on each host's own runs (too few hosts to measure the spread between
//! them, see [`super::judge`]) read it, since the readings live in the run documents: a few hosts'
//! newest runs are cheap to read where a fleet of thousands of runs is not, and a class of many
//! hosts absorbs a drifting machine in that spread.

use super::{Class, HostRuns, MIN_HOSTS, SPREAD_HOSTS};
use crate::results::store::Store;
use crate::stats::summary::median_of;
use std::collections::{BTreeMap, HashMap};

/// Each run's CPU yardstick, by run id: the log of its median reading (nanoseconds per step) and
/// the standard error of that log.
pub type Speeds = HashMap<String, (f64, f64)>;

/// The newest runs of each host whose yardstick is read: more than a class judged on its own
/// runs usually holds in its window, few enough to read at once.
const RUNS_PER_HOST: usize = 20;

/// The yardsticks of the newest runs of every host in a class judged on its own runs. A store
/// that cannot give the documents gives no speeds: the view is then without the relative
/// judgement, never without its hosts.
pub(super) fn speeds(
    store: &mut dyn Store,
    hosts: &BTreeMap<String, HostRuns>,
    classes: &BTreeMap<String, Class>,
) -> Speeds {
    let ids: Vec<&str> = classes
        .values()
        .filter(|c| (MIN_HOSTS..SPREAD_HOSTS).contains(&c.hosts.len()))
        .flat_map(|c| c.hosts.iter())
        .filter_map(|h| hosts.get(h))
        .flat_map(|h| h.runs.iter().rev().take(RUNS_PER_HOST))
        .map(|r| r.id.as_str())
        .collect();
    if ids.is_empty() {
        return Speeds::new();
    }
    let Ok(documents) = store.load_many(&ids) else {
        return Speeds::new();
    };
    ids.iter()
        .zip(documents)
        .filter_map(|(id, run)| {
            let readings = run?.yardstick?.cpu();
            Some((id.to_string(), one_run(&readings)?))
        })
        .collect()
}

/// One run's yardstick from its readings: the log of their median and its standard error.
fn one_run(readings: &[f64]) -> Option<(f64, f64)> {
    let logs: Vec<f64> = readings
        .iter()
        .filter(|v| v.is_finite() && **v > 0.0)
        .map(|v| v.ln())
        .collect();
    if logs.is_empty() {
        return None;
    }
    let center = median_of(&mut logs.clone());
    Some((center, sd(&logs) / (logs.len() as f64).sqrt()))
}

/// A host's machine speed over the runs `ids` (those of them that read it): the median of the
/// runs' yardsticks in nanoseconds per step, and its uncertainty as a standard deviation on the
/// log scale (the runs' spread, or their own readings' where the runs agree by chance).
pub(super) fn of_runs<'a>(
    speeds: &Speeds,
    ids: impl Iterator<Item = &'a str>,
) -> Option<(f64, f64)> {
    let runs: Vec<(f64, f64)> = ids.filter_map(|id| speeds.get(id).copied()).collect();
    if runs.is_empty() {
        return None;
    }
    let n = runs.len() as f64;
    let mut logs: Vec<f64> = runs.iter().map(|r| r.0).collect();
    let within = (runs.iter().map(|r| r.1 * r.1).sum::<f64>() / n / n).sqrt();
    let between = sd(&logs) / n.sqrt();
    Some((median_of(&mut logs).exp(), within.max(between)))
}

/// The sample standard deviation (0 for fewer than two values).
fn sd(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosts_speed_is_its_runs_median_with_their_spread_or_their_own() {
        let speeds: Speeds = [
            ("a".to_string(), (10f64.ln(), 0.001)),
            ("b".to_string(), (12f64.ln(), 0.001)),
            ("c".to_string(), (11f64.ln(), 0.001)),
        ]
        .into_iter()
        .collect();
        let (ns, sd) = of_runs(&speeds, ["a", "b", "c", "not read"].into_iter()).unwrap();
        assert!((ns - 11.0).abs() < 1e-9, "{ns}");
        // The runs disagree far beyond their readings' own error: their spread counts.
        assert!(sd > 0.03 && sd < 0.06, "{sd}");
        let (_, one) = of_runs(&speeds, ["a"].into_iter()).unwrap();
        assert!((one - 0.001).abs() < 1e-12, "{one}");
        assert!(of_runs(&speeds, ["x"].into_iter()).is_none());
        assert_eq!(one_run(&[]), None);
        let (log, _) = one_run(&[3.0, 1.0, 2.0]).unwrap();
        assert!((log - 2f64.ln()).abs() < 1e-12);
    }
}
