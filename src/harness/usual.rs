//! How much a figure's rounds usually disagree on this host, so that a figure is flagged when it is
//! noisier than it usually is here, not when it passes one spread for all figures: a file-creation
//! figure that always moves 8 % between rounds is not news, a system call that usually moves 0.3 %
//! and now moves 4 % is. The usual spread comes from the host's stored runs (each run's spread
//! between its rounds, the median over the latest runs); without enough of them, from what the probe
//! usually shows ([`crate::probes::noise`]).

use crate::results::model::{label, Run, RunKind};
use crate::results::store::{RunFilter, Store};
use crate::stats::summary;
use anyhow::Result;
use std::collections::BTreeMap;

/// Latest stored runs of the host read for the usual spreads.
pub const HISTORY_RUNS: usize = 20;
/// Stored runs of a figure (each with two rounds or more) needed before its own history is used.
pub const MIN_HISTORY_RUNS: usize = 3;
/// A figure is flagged when its rounds disagree this many times more than usual. With three rounds
/// the spread of one run is itself uncertain (a standard deviation from two degrees of freedom): the
/// median of past spreads is about 0.83 of the true one, and a run passes three times that by
/// chance about once in 300 figures.
pub const NOISIER: f64 = 3.0;
/// Nor is a figure flagged below this spread between rounds, however steady it usually is: 1 % is
/// less than any minimum effect a comparison uses.
pub const FLOOR_CV: f64 = 0.01;
/// The spread between rounds expected of a figure nothing more is known about.
pub const DEFAULT_CV: f64 = 0.03;

/// What a figure's spread between rounds is judged against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Usual {
    /// The median spread (coefficient of variation between rounds) over this host's stored runs.
    History { cv: f64, runs: usize },
    /// What the probe usually shows, with no (or too little) stored history here.
    Probe { cv: f64 },
}

impl Usual {
    pub fn cv(&self) -> f64 {
        match *self {
            Usual::History { cv, .. } | Usual::Probe { cv } => cv,
        }
    }

    /// The spread above which the figure is flagged.
    pub fn limit(&self) -> f64 {
        (NOISIER * self.cv()).max(FLOOR_CV)
    }

    /// Where the usual spread comes from, for the reason: "3.1 % usual here (12 runs)".
    pub fn describe(&self) -> String {
        match *self {
            Usual::History { cv, runs } => format!("usually {} here ({runs} runs)", percent(cv)),
            Usual::Probe { cv } => format!("{} expected for this probe", percent(cv)),
        }
    }
}

/// A spread as a percentage, with the digits [`crate::units::number`] gives it: "3.10 %".
pub fn percent(cv: f64) -> String {
    format!("{} %", crate::units::number(cv * 100.0))
}

/// Coefficient of variation of one run's round values (None with fewer than two rounds).
pub fn between_cv(round_values: &[f64]) -> Option<f64> {
    summary::cv(round_values)
}

/// Per figure label, the usual spread between rounds over the given runs (newest first; only the
/// first [`HISTORY_RUNS`] of them count), for figures with at least [`MIN_HISTORY_RUNS`] runs of
/// two rounds or more.
pub fn from_runs(runs: &[Run]) -> BTreeMap<String, Usual> {
    let mut spreads: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in runs.iter().take(HISTORY_RUNS) {
        for m in &run.measurements {
            if let Some(cv) = between_cv(&m.round_medians()) {
                spreads
                    .entry(label(&m.probe, &m.params))
                    .or_default()
                    .push(cv);
            }
        }
    }
    spreads
        .into_iter()
        .filter(|(_, v)| v.len() >= MIN_HISTORY_RUNS)
        .map(|(k, mut v)| {
            v.sort_by(f64::total_cmp);
            let runs = v.len();
            (
                k,
                Usual::History {
                    cv: summary::median(&v),
                    runs,
                },
            )
        })
        .collect()
}

/// The usual spreads of this host's latest stored microbenchmark runs that were not interrupted.
pub fn from_store(store: &mut dyn Store, host: &str) -> Result<BTreeMap<String, Usual>> {
    let ids: Vec<String> = store
        .list(&RunFilter {
            host: Some(host.to_string()),
            ..Default::default()
        })?
        .into_iter()
        .filter(|r| r.kind == RunKind::Run.as_str() && !r.interrupted)
        .take(HISTORY_RUNS)
        .map(|r| r.id)
        .collect();
    let wanted: Vec<&str> = ids.iter().map(String::as_str).collect();
    // A busy run's rounds disagree because of the other work, not as the figure usually does.
    let runs: Vec<_> = store
        .load_many(&wanted)?
        .into_iter()
        .flatten()
        .filter(|r| !r.busy())
        .collect();
    Ok(from_runs(&runs))
}

/// This machine's host name, as the fingerprint records it.
pub fn this_host() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::model::{Measurement, Params, RoundValue, Status, Unit};

    fn figure(probe: &str, rounds: &[f64]) -> Measurement {
        let mut m = Measurement::not_measured(
            probe,
            Params::new(),
            Unit::Nanoseconds,
            Status::Ok,
            String::new(),
        );
        m.round_values = rounds
            .iter()
            .enumerate()
            .map(|(i, &value)| RoundValue {
                round: i,
                position: i,
                value,
                iterations: 1,
                cut_short: false,
            })
            .collect();
        m
    }

    fn run(figures: Vec<Measurement>) -> Run {
        let mut r = Run::new("r".into(), "2026-01-01T00:00:00Z".into());
        r.measurements = figures;
        r
    }

    #[test]
    fn between_cv_known_answers() {
        assert_eq!(between_cv(&[5.0]), None);
        assert_eq!(between_cv(&[0.0, 0.0]), None);
        assert_eq!(between_cv(&[2.0, 2.0, 2.0]), Some(0.0));
        // Mean 100, sample standard deviation 10.
        let cv = between_cv(&[90.0, 100.0, 110.0]).unwrap();
        assert!((cv - 0.1).abs() < 1e-12, "{cv}");
    }

    #[test]
    fn the_usual_spread_is_the_median_over_runs_with_rounds() {
        // A steady figure (spreads 1, 2 and 3 %), a noisy one (spreads 10, 20, 90 %: the median
        // ignores the one wild run), one seen in two runs only, one with single rounds.
        let history: Vec<Run> = [0.01, 0.02, 0.03]
            .iter()
            .zip([0.10, 0.20, 0.90])
            .map(|(&s, n)| {
                run(vec![
                    figure("steady", &[100.0 * (1.0 - s), 100.0, 100.0 * (1.0 + s)]),
                    figure("noisy", &[100.0 * (1.0 - n), 100.0, 100.0 * (1.0 + n)]),
                    figure("single", &[100.0]),
                ])
            })
            .chain((0..2).map(|_| run(vec![figure("rare", &[1.0, 2.0])])))
            .collect();
        let usual = from_runs(&history);
        let cv = |k: &str| usual[k].cv();
        assert!((cv("steady") - 0.02).abs() < 1e-9, "{}", cv("steady"));
        assert!((cv("noisy") - 0.20).abs() < 1e-9, "{}", cv("noisy"));
        assert!(matches!(usual["steady"], Usual::History { runs: 3, .. }));
        assert!(!usual.contains_key("single"));
        assert!(!usual.contains_key("rare"));
    }

    #[test]
    fn only_the_latest_runs_count() {
        // Newest first: 20 runs at 1 %, then 30 older ones at 50 %, which are not read.
        let mut history: Vec<Run> = (0..HISTORY_RUNS)
            .map(|_| run(vec![figure("f", &[99.0, 100.0, 101.0])]))
            .collect();
        history.extend((0..30).map(|_| run(vec![figure("f", &[50.0, 100.0, 150.0])])));
        let usual = from_runs(&history);
        assert!(usual["f"].cv() < 0.02);
        assert!(matches!(
            usual["f"],
            Usual::History {
                runs: HISTORY_RUNS,
                ..
            }
        ));
    }

    #[test]
    fn the_limit_is_a_multiple_of_the_usual_spread_with_a_floor() {
        assert_eq!(Usual::Probe { cv: 0.001 }.limit(), FLOOR_CV);
        let h = Usual::History { cv: 0.04, runs: 5 };
        assert!((h.limit() - 0.12).abs() < 1e-12);
        assert!(h.describe().contains("5 runs"), "{}", h.describe());
        assert!(Usual::Probe { cv: 0.02 }
            .describe()
            .contains("expected for this probe"));
    }
}
