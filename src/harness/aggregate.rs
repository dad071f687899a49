//! A figure's rounds, gathered from the processes that measured them, made into one measurement:
//! the samples one round after the other, each round's value, the figure's value and interval from
//! the spread between rounds, counters and interference, and what the reader should know.

use super::round::RoundOutcome;
use super::HarnessConfig;
use crate::results::model::{
    CounterScopes, CounterValues, Interference, Measurement, Params, RoundValue, Status, Unit,
};
use crate::stats::{rounds, summary};
use std::collections::BTreeMap;

/// Bootstrap resamples for a figure's interval.
const RESAMPLES: usize = 2000;

/// One round as the suite received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundRecord {
    pub round: usize,
    /// Place in the run's order of all rounds.
    pub position: usize,
    pub outcome: RoundOutcome,
}

/// Builds the measurement of a figure from its rounds (at least one). `seed` makes the bootstrap
/// reproducible.
pub fn measurement(
    probe: &str,
    params: Params,
    unit: Unit,
    records: &[RoundRecord],
    config: &HarnessConfig,
    seed: u64,
) -> Measurement {
    let samples: Vec<f64> = records
        .iter()
        .flat_map(|r| r.outcome.samples.iter().copied())
        .collect();
    let mut summary = summary::summarize(&samples);
    let round_samples: Vec<Vec<f64>> = records.iter().map(|r| r.outcome.samples.clone()).collect();
    let estimate = rounds::estimate(&round_samples, 0.95, RESAMPLES, seed);
    // With one round there is no spread between rounds to go by: the order-statistic interval of
    // the samples stays, with the coverage it really has.
    if let Some(e) = estimate.as_ref().filter(|_| records.len() > 1) {
        summary.median = e.value;
        summary.ci95 = e.ci;
        summary.ci_level = e.level;
    }
    let interference = interference(records);
    let counters = median_over_rounds(records);
    let mut m = Measurement::not_measured(probe, params, unit, Status::Ok, String::new());
    m.reason = None;
    m.round_values = records
        .iter()
        .zip(&round_samples)
        .map(|(r, s)| RoundValue {
            round: r.round,
            position: r.position,
            value: rounds::round_value(s),
            iterations: r.outcome.iterations,
            cut_short: r.outcome.cut.is_some(),
        })
        .collect();
    m.warnings = warnings(
        records,
        &summary,
        estimate.as_ref(),
        &interference,
        &counters,
        config,
    );
    m.samples = samples;
    m.rounds = round_samples;
    m.summary = Some(summary);
    m.iterations = records.first().map_or(0, |r| r.outcome.iterations);
    m.bytes_per_op = records.first().and_then(|r| r.outcome.bytes_per_op);
    m.counters = counters;
    m.interference = interference;
    m
}

fn interference(records: &[RoundRecord]) -> Interference {
    let mut total = Interference::default();
    for i in records.iter().flat_map(|r| &r.outcome.interference) {
        total.irq_timer += i.irq_timer;
        total.irq_other += i.irq_other;
        total.csw_voluntary += i.csw_voluntary;
        total.csw_involuntary += i.csw_involuntary;
        total.steal_ms += i.steal_ms;
        if i.disturbed() {
            total.disturbed_samples += 1;
        }
        total.per_sample.push(*i);
    }
    total
}

/// Each counter's median over the rounds that counted it.
fn median_over_rounds(records: &[RoundRecord]) -> CounterScopes {
    fn per_map(
        records: &[RoundRecord],
        pick: fn(&CounterScopes) -> &CounterValues,
    ) -> CounterValues {
        let mut by_event: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for r in records {
            for (name, v) in pick(&r.outcome.counters) {
                by_event.entry(name).or_default().push(*v);
            }
        }
        by_event
            .into_iter()
            .map(|(name, vs)| (name.to_string(), rounds::round_value(&vs)))
            .collect()
    }
    CounterScopes {
        user: per_map(records, |c| &c.user),
        kernel: per_map(records, |c| &c.kernel),
        software: per_map(records, |c| &c.software),
        scaled: records.iter().any(|r| r.outcome.counters.scaled),
    }
}

fn warnings(
    records: &[RoundRecord],
    summary: &crate::results::model::Summary,
    estimate: Option<&rounds::RoundEstimate>,
    interference: &Interference,
    counters: &CounterScopes,
    config: &HarnessConfig,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for note in records.iter().flat_map(|r| &r.outcome.notes) {
        if !out.contains(note) {
            out.push(note.clone());
        }
    }
    let kept: usize = records.iter().map(|r| r.outcome.samples.len()).sum();
    for r in records {
        if let Some(cut) = r.outcome.cut {
            let which = if records.len() > 1 {
                format!("round {} ", r.round + 1)
            } else {
                String::new()
            };
            out.push(format!(
                "{which}cut short after {} of {} samples: {}",
                r.outcome.samples.len(),
                config.samples,
                cut.describe()
            ));
        }
    }
    match estimate {
        Some(e) if records.len() > 1 && e.between_cv > config.cv_warning => out.push(format!(
            "rounds differ: CV {:.1} % between rounds (over {:.0} %)",
            e.between_cv * 100.0,
            config.cv_warning * 100.0
        )),
        _ if records.len() == 1 && summary.cv > config.cv_warning => out.push(format!(
            "spread CV {:.1} % (over {:.0} %)",
            summary.cv * 100.0,
            config.cv_warning * 100.0
        )),
        _ => {}
    }
    if !summary.outliers.is_empty() {
        out.push(format!(
            "{} of {} samples are outliers",
            summary.outliers.len(),
            kept
        ));
    }
    if interference.disturbed_samples > 0 {
        out.push(format!(
            "hypervisor stole time in {} of {} samples",
            interference.disturbed_samples, kept
        ));
    }
    if counters.scaled {
        out.push("counters multiplexed, scaled by time enabled/running".into());
    }
    if records.iter().any(|r| r.outcome.at_floor > 0) {
        out.push("some samples were no longer than the harness's own cost".into());
    }
    out
}
