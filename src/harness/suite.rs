//! A whole run's measurements: every figure in several rounds, the rounds in a shuffled order that
//! the seed fixes, each round in a fresh process, the harness's own cost measured afresh at the
//! start of every round. The caller gives the validated configuration and gets measurements back.

use super::aggregate::{self, RoundRecord};
use super::schedule;
use super::worker::{self, Job, Report, Task, WorkerCommand};
use super::HarnessConfig;
use crate::interrupt;
use crate::probes::{claims, ProbeDef, Scale};
use crate::results::model::{label, Measurement, Overhead, Params, Status};
use crate::stats::{rng::Rng, summary};
use anyhow::{bail, Result};
use std::path::Path;

/// One figure to measure: a probe at one parameter point.
#[derive(Clone)]
pub struct Variant {
    pub probe: &'static ProbeDef,
    pub scale: Scale,
    pub params: Params,
}

impl Variant {
    pub fn label(&self) -> String {
        label(self.probe.id, &self.params)
    }
}

pub struct SuiteConfig<'a> {
    pub variants: Vec<Variant>,
    pub harness: HarnessConfig,
    /// Rounds per figure (at least one).
    pub rounds: usize,
    /// Fixes the order of the rounds and the figures' bootstrap.
    pub seed: u64,
    pub cpu: usize,
    pub fifo: Option<i32>,
    pub counters: bool,
    /// The run's scratch directory, which the caller removes afterwards.
    pub scratch: &'a Path,
    pub worker: WorkerCommand,
}

/// What the run measured.
pub struct SuiteOutcome {
    /// One per figure that got at least one round (or was skipped or failed), in the given order.
    pub measurements: Vec<Measurement>,
    /// The harness's own cost, the median of each round's.
    pub overhead: Option<Overhead>,
    /// Stopped by Ctrl-C or SIGTERM: some rounds were not measured.
    pub interrupted: bool,
}

/// Where the run is, for a progress line.
pub struct Progress<'a> {
    /// Rounds done so far, of `total`.
    pub done: usize,
    pub total: usize,
    /// Round number, from 0, of `rounds`.
    pub round: usize,
    pub rounds: usize,
    /// The figure about to be measured, or None while the harness's own cost is.
    pub label: Option<&'a str>,
}

/// Per figure, what has come back so far.
#[derive(Default)]
struct Gathered {
    records: Vec<RoundRecord>,
    /// The probe cannot run here: no more rounds are tried.
    skipped: Option<String>,
    /// Failures, by round; a figure whose first attempt failed is not tried again.
    failures: Vec<(usize, String)>,
}

impl Gathered {
    fn settled(&self) -> bool {
        self.skipped.is_some() || (self.records.is_empty() && !self.failures.is_empty())
    }
}

/// Measures every figure of `config` and returns the measurements.
pub fn run(config: &SuiteConfig, progress: &mut dyn FnMut(Progress)) -> Result<SuiteOutcome> {
    if config.rounds == 0 {
        bail!("at least one round is needed");
    }
    let order = schedule::order(config.variants.len(), config.rounds, config.seed);
    let mut gathered: Vec<Gathered> = config
        .variants
        .iter()
        .map(|_| Gathered::default())
        .collect();
    let mut overheads: Vec<Overhead> = Vec::new();
    let mut round_overhead: Option<(usize, Overhead)> = None;
    let mut interrupted = false;
    let job = |task: Task| Job {
        cpu: config.cpu,
        fifo: config.fifo,
        counters: config.counters,
        harness: config.harness.clone(),
        scratch: config.scratch.to_path_buf(),
        task,
    };
    for (position, slot) in order.iter().enumerate() {
        if interrupt::requested() {
            interrupted = true;
            break;
        }
        let mut show = |label: Option<&str>| {
            progress(Progress {
                done: position,
                total: order.len(),
                round: slot.round,
                rounds: config.rounds,
                label,
            })
        };
        if round_overhead
            .as_ref()
            .is_none_or(|(r, _)| *r != slot.round)
        {
            show(None);
            match worker::run_job(&config.worker, &job(Task::Overhead))? {
                Report::Overhead(o) => {
                    overheads.push(o.clone());
                    round_overhead = Some((slot.round, o));
                }
                Report::Interrupted => {
                    interrupted = true;
                    break;
                }
                Report::Failed(e) if round_overhead.is_none() => {
                    bail!("measuring the harness's own cost failed: {e}")
                }
                // A later round keeps the cost measured before; nothing measured is lost.
                _ => {}
            }
        }
        let Some((_, overhead)) = &round_overhead else {
            continue;
        };
        let variant = &config.variants[slot.variant];
        let got = &mut gathered[slot.variant];
        if got.settled() {
            continue;
        }
        let label = variant.label();
        show(Some(&label));
        let task = Task::Round {
            probe: variant.probe.id.to_string(),
            params: variant.params.clone(),
            scale: variant.scale,
            overhead: overhead.clone(),
            iterations_hint: got.records.first().map(|r| r.outcome.iterations),
        };
        match worker::run_job(&config.worker, &job(task))? {
            Report::Round(outcome) => {
                let cut_by_user = outcome.cut == Some(crate::meter::Cut::Interrupted);
                got.records.push(RoundRecord {
                    round: slot.round,
                    position,
                    outcome,
                });
                if cut_by_user {
                    interrupted = true;
                    break;
                }
            }
            Report::Skipped(reason) => got.skipped = Some(reason),
            Report::Failed(error) => got.failures.push((slot.round, error)),
            Report::Interrupted => {
                interrupted = true;
                break;
            }
            Report::Overhead(_) => {
                bail!("a measuring process answered the wrong task; this is a bug")
            }
        }
    }
    let measurements = config
        .variants
        .iter()
        .zip(gathered)
        .enumerate()
        .filter_map(|(i, (v, got))| {
            let mut m = finish(v, got, config, i, interrupted)?;
            m.role = Some(v.probe.role());
            Some(m)
        })
        .collect();
    Ok(SuiteOutcome {
        measurements,
        overhead: median_overhead(&overheads),
        interrupted,
    })
}

/// The measurement of one figure from what its rounds gave.
fn finish(
    variant: &Variant,
    got: Gathered,
    config: &SuiteConfig,
    index: usize,
    interrupted: bool,
) -> Option<Measurement> {
    let (probe, unit) = (variant.probe.id, variant.probe.unit);
    if let Some(reason) = got.skipped.filter(|_| got.records.is_empty()) {
        return Some(Measurement::not_measured(
            probe,
            variant.params.clone(),
            unit,
            Status::Skipped,
            reason,
        ));
    }
    if got.records.is_empty() {
        let (_, error) = got.failures.into_iter().next()?;
        return Some(Measurement::not_measured(
            probe,
            variant.params.clone(),
            unit,
            Status::Failed,
            error,
        ));
    }
    let seed = Rng::stream(config.seed, index as u64).next_u64();
    let mut m = aggregate::measurement(
        probe,
        variant.params.clone(),
        unit,
        &got.records,
        &config.harness,
        seed,
    );
    m.checks = claims::check(probe, &variant.params, &m.counters);
    let own: Vec<&[_]> = got.records.iter().map(|r| &r.outcome.checks[..]).collect();
    m.checks.extend(claims::over_rounds(&own));
    m.warnings.extend(
        m.checks
            .iter()
            .filter(|c| !c.holds)
            .map(claims::contradiction),
    );
    for (round, error) in &got.failures {
        m.warnings
            .push(format!("round {} failed: {error}", round + 1));
    }
    if interrupted && got.records.len() < config.rounds {
        m.warnings.push(format!(
            "only {} of {} rounds: the run was interrupted",
            got.records.len(),
            config.rounds
        ));
    }
    Some(m)
}

/// Each field's median over the rounds' measurements of the harness's own cost.
fn median_overhead(all: &[Overhead]) -> Option<Overhead> {
    let first = all.first()?;
    let med = |pick: fn(&Overhead) -> f64| {
        let mut v: Vec<f64> = all.iter().map(pick).collect();
        v.sort_by(f64::total_cmp);
        summary::median(&v)
    };
    Some(Overhead {
        per_sample_ns: med(|o| o.per_sample_ns),
        per_iteration_ns: med(|o| o.per_iteration_ns),
        per_sample_counters: first.per_sample_counters.clone(),
    })
}
