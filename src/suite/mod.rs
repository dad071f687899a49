//! A whole run's measurements: every figure in several rounds, the rounds in a shuffled order that
//! the seed fixes, each round in a fresh process, the harness's own cost measured afresh at the
//! start of every round. After the first rounds, the figures whose rounds disagree most get more
//! rounds, as many as the run's time budget holds (the time goes where the noise is; a steady
//! figure is done after its first rounds). The caller gives the validated configuration and gets
//! measurements back.

pub mod guest;
mod profiling;
pub mod runfs;
pub mod worker;

use crate::harness::aggregate::{self, RoundRecord};
use crate::harness::schedule::{self, Slot};
use crate::harness::usual::Usual;
use crate::harness::HarnessConfig;
use crate::interrupt;
use crate::meter::yardstick::Yardstick;
use crate::probes::{claims, ProbeDef, Scale};
use crate::results::model::{label, Measurement, Overhead, Params, Status};
use crate::stats::{rng::Rng, summary};
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};
use worker::{Job, Report, Task, WorkerCommand};

/// Rounds of every figure unless --rounds says otherwise: enough for a spread between rounds, few
/// enough for the quick suite to stay short.
pub const DEFAULT_ROUNDS: usize = 3;
/// More rounds than this is a typo: every round is a process per figure.
pub const MAX_ROUNDS: usize = 1000;
/// Most samples kept per round (`run --repeat`, `stat -r`): at the shortest samples a round of one
/// figure already takes minutes, and a day-long run is what `latency --duration` allows too.
pub const MAX_REPEAT: usize = 100_000;
/// Most samples run and discarded before the kept ones (`--warmup`).
pub const MAX_WARMUP: usize = 10_000;
/// A figure whose interval from rounds is about this wide (spread between rounds over the square
/// root of their number, relative) or wider gets another round, if the budget holds it: about a
/// third of the 3 % minimum effect a comparison uses.
pub const EXTRA_ROUND_SPREAD: f64 = 0.01;

/// Without a budget, the extra rounds take half the time the first rounds took, or this long if
/// that is more: a small selection (`run syscall`: four figures, about 4 s) otherwise ends before
/// its noisy figures got the rounds that make a comparison of a few percent possible.
pub const MIN_EXTRA_TIME: Duration = Duration::from_secs(10);

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

/// Every figure of a selection, probe by probe.
pub fn variants_of(selected: &[crate::probes::selection::Selected]) -> Vec<Variant> {
    selected
        .iter()
        .flat_map(|sel| {
            sel.variants.iter().map(|params| Variant {
                probe: sel.probe,
                scale: sel.scale,
                params: params.clone(),
            })
        })
        .collect()
}

pub struct SuiteConfig<'a> {
    pub variants: Vec<Variant>,
    pub harness: HarnessConfig,
    /// Rounds of every figure (at least one).
    pub rounds: usize,
    /// Figures whose rounds disagree get more rounds, up to this many in all (`rounds`: none).
    pub max_rounds: usize,
    /// Wall time the whole run should stay within: an extra round of a figure is started only
    /// while its expected time fits. None: the extra rounds take at most half the time the first
    /// rounds took, or [`MIN_EXTRA_TIME`] if that is more.
    pub budget: Option<Duration>,
    /// How much each figure's rounds usually disagree on this host (by label), from its stored
    /// runs; figures not in it are judged by their probe's usual spread.
    pub usual: BTreeMap<String, Usual>,
    /// Fixes the order of the rounds and the figures' bootstrap.
    pub seed: u64,
    pub cpu: usize,
    pub fifo: Option<i32>,
    /// No measuring process starts with a fixed address-space layout (`--system-aslr`).
    pub system_aslr: bool,
    pub counters: bool,
    /// Between the first timed rounds and the extra ones, one sampling round of every measured
    /// figure (`--profile`).
    pub profile: bool,
    /// The run's scratch directory, which the caller removes afterwards.
    pub scratch: &'a Path,
    /// Where the file-system probes work.
    pub file_systems: crate::probes::FileSystems,
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
    /// With `profile`: where each figure's time goes.
    pub profiles: Option<crate::results::profile::Profiles>,
    /// The machine's own speed, read at the start of every round.
    pub yardstick: Yardstick,
}

/// Where the run is, for a progress line.
pub struct Progress<'a> {
    /// Rounds done so far; of `total` in the first rounds, beyond it in the extra ones.
    pub done: usize,
    /// The first rounds of every figure: known from the start, so it never grows.
    pub total: usize,
    /// Round number, from 0, of `rounds`.
    pub round: usize,
    pub rounds: usize,
    /// The figure about to be measured, or None while the harness's own cost is.
    pub label: Option<&'a str>,
    /// Since the run began.
    pub elapsed: Duration,
    /// When the extra rounds must end, from the start of the run: the budget, or once the first
    /// rounds are done, the time they allow the extra ones.
    pub deadline: Option<Duration>,
    /// A sampling round of `--profile`, after the timed ones (`round` of `rounds` profiles).
    pub profiling: bool,
}

impl Progress<'_> {
    fn extra(&self) -> bool {
        self.done >= self.total
    }

    /// The time left, and whether it is an upper bound (extra rounds end early when every
    /// figure's rounds agree). None until there is a rate to go by.
    pub fn left(&self) -> Option<(Duration, bool)> {
        if self.extra() {
            let deadline = self.deadline?;
            return Some((deadline.saturating_sub(self.elapsed), true));
        }
        if self.done == 0 || self.elapsed < Duration::from_secs(1) {
            return None;
        }
        let first_left = self
            .elapsed
            .mul_f64((self.total - self.done) as f64 / self.done as f64);
        Some(match self.deadline {
            Some(deadline) => {
                let to_deadline = deadline.saturating_sub(self.elapsed);
                (first_left.max(to_deadline), to_deadline > first_left)
            }
            None => {
                let first = self.elapsed + first_left;
                (first_left + (first / 2).max(MIN_EXTRA_TIME), true)
            }
        })
    }

    /// One status line: how far, how long so far, how long still, what now.
    pub fn line(&self) -> String {
        use crate::progress::duration;
        let what = self.label.unwrap_or("the harness's own cost");
        if self.profiling {
            return format!(
                "[profile {}/{}] {}: {what}",
                self.round + 1,
                self.rounds,
                duration(self.elapsed)
            );
        }
        let place = if self.extra() {
            format!(
                "[extra round {}] {}",
                self.done - self.total + 1,
                duration(self.elapsed)
            )
        } else {
            format!(
                "[{}/{}] {}",
                self.done + 1,
                self.total,
                duration(self.elapsed)
            )
        };
        let left = match self.left() {
            Some((left, true)) => format!(", up to {} left", duration(left)),
            Some((left, false)) => format!(", about {} left", duration(left)),
            None => String::new(),
        };
        format!(
            "{place}{left}: round {}/{}: {what}",
            self.round + 1,
            self.rounds
        )
    }
}

/// Per figure, what has come back so far.
#[derive(Default)]
struct Gathered {
    records: Vec<RoundRecord>,
    /// The probe cannot run here: no more rounds are tried.
    skipped: Option<String>,
    /// Failures, by round; a figure whose first attempt failed is not tried again.
    failures: Vec<(usize, String)>,
    /// Wall time its rounds took, worker start to answer.
    spent: Duration,
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
    let started = Instant::now();
    let order = schedule::order(config.variants.len(), config.rounds, config.seed);
    let mut state = State {
        gathered: config
            .variants
            .iter()
            .map(|_| Gathered::default())
            .collect(),
        overheads: Vec::new(),
        yardstick: Yardstick::default(),
        overhead_time: Duration::ZERO,
        round_overhead: None,
        interrupted: false,
        done: 0,
        total: order.len(),
        started,
        deadline: config.budget,
    };
    state.measure(config, &order, progress)?;
    let first_rounds = started.elapsed();
    // A small selection's first rounds are over in seconds, too soon for the machine's drift over
    // tens of seconds to show between them: every figure then gets rounds spread over the extra
    // time, not only the noisy ones, so the spread between rounds holds the drift too.
    let spread_all = first_rounds < MIN_EXTRA_TIME;
    // Profiles are taken here, between the first rounds and the extra ones, so that timed rounds
    // stand on both sides of them in time: a machine that drifts while they run shows in the
    // spread of the timed rounds too, rather than in the profiles alone. The time they take is
    // not the extra rounds' to lose.
    let profiling_started = Instant::now();
    let profiles = profiling::profile_all(config, &mut state, progress)?;
    let deadline = config
        .budget
        .unwrap_or(first_rounds + (first_rounds / 2).max(MIN_EXTRA_TIME))
        + profiling_started.elapsed();
    state.deadline = Some(deadline);
    let mut last = order.last().map(|s| s.variant);
    for round in config.rounds..config.max_rounds {
        if state.interrupted {
            break;
        }
        let overhead_cost = state.overhead_time / state.overheads.len().max(1) as u32;
        let left = deadline
            .saturating_sub(started.elapsed())
            .saturating_sub(overhead_cost);
        let chosen = choose_extra(&state.gathered, left, spread_all);
        if chosen.is_empty() {
            break;
        }
        let slots = schedule::extra(&chosen, round, config.seed, last);
        last = slots.last().map(|s| s.variant);
        state.measure(config, &slots, progress)?;
    }
    let interrupted = state.interrupted;
    let measurements = config
        .variants
        .iter()
        .zip(state.gathered)
        .enumerate()
        .filter_map(|(i, (v, got))| {
            let mut m = finish(v, got, config, i, interrupted)?;
            m.role = Some(v.probe.role());
            Some(m)
        })
        .collect();
    Ok(SuiteOutcome {
        measurements,
        overhead: median_overhead(&state.overheads),
        interrupted,
        profiles,
        yardstick: state.yardstick,
    })
}

/// The figures that get one more round within `left`: those whose interval from rounds is still
/// wide ([`EXTRA_ROUND_SPREAD`]), or with `all` every figure still measured, widest first, as
/// many as their rounds' usual time fits.
fn choose_extra(gathered: &[Gathered], left: Duration, all: bool) -> Vec<usize> {
    let mut wide: Vec<(usize, f64, Duration)> = gathered
        .iter()
        .enumerate()
        .filter(|(_, g)| !g.settled() && g.failures.is_empty() && g.records.len() >= 2)
        .filter_map(|(i, g)| {
            let values: Vec<f64> = g
                .records
                .iter()
                .map(|r| crate::stats::rounds::round_value(&r.outcome.samples))
                .collect();
            let cv = crate::harness::usual::between_cv(&values)?;
            let width = cv / (values.len() as f64).sqrt();
            let cost = g.spent / g.records.len() as u32;
            (all || width > EXTRA_ROUND_SPREAD).then_some((i, width, cost))
        })
        .collect();
    wide.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut spend = Duration::ZERO;
    let mut chosen = Vec::new();
    for (i, _, cost) in wide {
        if spend + cost <= left {
            spend += cost;
            chosen.push(i);
        }
    }
    chosen.sort_unstable();
    chosen
}

/// What the run has measured so far.
struct State {
    gathered: Vec<Gathered>,
    overheads: Vec<Overhead>,
    yardstick: Yardstick,
    /// Wall time the measurements of the harness's own cost took (the yardstick's included).
    overhead_time: Duration,
    round_overhead: Option<(usize, Overhead)>,
    interrupted: bool,
    /// Rounds done; the first `total` of them are every figure's first rounds.
    done: usize,
    total: usize,
    started: Instant,
    /// See [`Progress::deadline`].
    deadline: Option<Duration>,
}

impl State {
    /// Measures the given rounds in order, each in a fresh process.
    fn job(config: &SuiteConfig, task: Task) -> Job {
        Job {
            cpu: config.cpu,
            fifo: config.fifo,
            system_aslr: config.system_aslr,
            counters: config.counters,
            harness: config.harness.clone(),
            scratch: config.scratch.to_path_buf(),
            file_systems: config.file_systems,
            task,
        }
    }

    /// One reading of the machine's own speed; a reading that fails is left out (the figures do
    /// not depend on it), and Ctrl-C is noticed at the next figure.
    fn read_yardstick(&mut self, config: &SuiteConfig) -> Result<()> {
        let t = Instant::now();
        let report = worker::run_job(&config.worker, &Self::job(config, Task::Yardstick))?;
        self.overhead_time += t.elapsed();
        if let Report::Yardstick(mut reading) = report {
            reading.at_ms = self.started.elapsed().as_millis() as u64;
            self.yardstick.readings.push(reading);
        }
        Ok(())
    }

    fn measure(
        &mut self,
        config: &SuiteConfig,
        slots: &[Slot],
        progress: &mut dyn FnMut(Progress),
    ) -> Result<()> {
        let job = |task: Task| Self::job(config, task);
        let rounds = config.rounds.max(slots.last().map_or(0, |s| s.round + 1));
        for slot in slots {
            if interrupt::requested() {
                self.interrupted = true;
                return Ok(());
            }
            let position = self.done;
            let (total, started, deadline) = (self.total, self.started, self.deadline);
            let mut show = |label: Option<&str>| {
                progress(Progress {
                    done: position,
                    total,
                    round: slot.round,
                    rounds,
                    label,
                    elapsed: started.elapsed(),
                    deadline,
                    profiling: false,
                })
            };
            if self
                .round_overhead
                .as_ref()
                .is_none_or(|(r, _)| *r != slot.round)
            {
                show(None);
                let t = Instant::now();
                let report = worker::run_job(&config.worker, &job(Task::Overhead))?;
                self.overhead_time += t.elapsed();
                match report {
                    Report::Overhead(o) => {
                        self.overheads.push(o.clone());
                        self.round_overhead = Some((slot.round, o));
                        self.read_yardstick(config)?;
                    }
                    Report::Interrupted => {
                        self.interrupted = true;
                        return Ok(());
                    }
                    Report::Failed(e) if self.round_overhead.is_none() => {
                        bail!("measuring the harness's own cost failed: {e}")
                    }
                    // A later round keeps the cost measured before; nothing measured is lost.
                    _ => {}
                }
            }
            self.done += 1;
            let Some((_, overhead)) = &self.round_overhead else {
                continue;
            };
            let variant = &config.variants[slot.variant];
            let got = &mut self.gathered[slot.variant];
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
            let t = Instant::now();
            let report = worker::run_job(&config.worker, &job(task))?;
            got.spent += t.elapsed();
            match report {
                Report::Round(outcome) => {
                    let cut_by_user = outcome.cut == Some(crate::meter::Cut::Interrupted);
                    got.records.push(RoundRecord {
                        round: slot.round,
                        position,
                        outcome,
                    });
                    if cut_by_user {
                        self.interrupted = true;
                        return Ok(());
                    }
                }
                Report::Skipped(reason) => got.skipped = Some(reason),
                Report::Failed(error) => got.failures.push((slot.round, error)),
                Report::Interrupted => {
                    self.interrupted = true;
                    return Ok(());
                }
                Report::Overhead(_)
                | Report::Yardstick(_)
                | Report::Profile(..)
                | Report::ProfileRefused(_) => {
                    bail!("a measuring process answered the wrong task; this is a bug")
                }
            }
        }
        Ok(())
    }
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
    let usual = config
        .usual
        .get(&variant.label())
        .copied()
        .unwrap_or(Usual::Probe {
            cv: crate::probes::noise::expected_cv(probe),
        });
    let mut m = aggregate::measurement(
        probe,
        variant.params.clone(),
        unit,
        &got.records,
        &config.harness,
        usual,
        seed,
    );
    m.checks = claims::check(probe, &variant.params, &m.counters, m.iterations);
    let own: Vec<&[_]> = got.records.iter().map(|r| &r.outcome.checks[..]).collect();
    m.checks.extend(claims::over_rounds(&own));
    m.warnings.extend(
        m.checks
            .iter()
            .filter(|c| !c.holds)
            .map(crate::results::model::ClaimCheck::contradiction),
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
        summary::median_of(&mut all.iter().map(pick).collect::<Vec<_>>())
    };
    Some(Overhead {
        per_sample_ns: med(|o| o.per_sample_ns),
        per_iteration_ns: med(|o| o.per_iteration_ns),
        per_sample_counters: first.per_sample_counters.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::round::RoundOutcome;

    fn gathered(values: &[f64], each: Duration) -> Gathered {
        Gathered {
            records: values
                .iter()
                .enumerate()
                .map(|(round, &v)| RoundRecord {
                    round,
                    position: round,
                    outcome: RoundOutcome::of_samples(vec![v, v, v], 10),
                })
                .collect(),
            skipped: None,
            failures: Vec::new(),
            spent: each * values.len() as u32,
        }
    }

    fn at(done: usize, elapsed_s: u64, deadline_s: Option<u64>) -> Progress<'static> {
        Progress {
            done,
            total: 100,
            round: 0,
            rounds: 3,
            label: Some("syscall.null"),
            elapsed: Duration::from_secs(elapsed_s),
            deadline: deadline_s.map(Duration::from_secs),
            profiling: false,
        }
    }

    #[test]
    fn the_progress_line_gives_elapsed_and_left_from_the_plan() {
        // A quarter of the first rounds in 10 s, no budget: 30 s more of first rounds, then
        // extra rounds of at most half of the first rounds' 40 s.
        let line = at(25, 10, None).line();
        assert_eq!(
            line,
            "[26/100] 10.0 s, up to 50.0 s left: round 1/3: syscall.null"
        );
        // With a 50 s budget: the first rounds alone need 30 s more, the budget allows 40.
        assert!(at(25, 10, Some(50)).line().contains("up to 40.0 s left"));
        // First rounds slower than the budget: their own estimate, not a bound.
        assert!(at(10, 10, Some(50))
            .line()
            .contains("about 1 min 30 s left"));
        // Extra rounds count on from the first ones without a total that grows.
        let extra = at(103, 45, Some(50)).line();
        assert!(
            extra.starts_with("[extra round 4] 45.0 s, up to 5.0 s left"),
            "{extra}"
        );
        // No rate yet: no guess.
        assert_eq!(at(0, 0, None).left(), None);
        // Profile rounds count among themselves, whatever extra rounds came before them.
        let profile = Progress {
            round: 1,
            rounds: 7,
            profiling: true,
            ..at(110, 50, None)
        };
        assert!(
            profile.line().starts_with("[profile 2/7] 50.0 s: "),
            "{}",
            profile.line()
        );
    }

    #[test]
    fn extra_rounds_go_to_the_figures_whose_rounds_disagree_widest_first_within_the_budget() {
        let ms = Duration::from_millis;
        let figures = vec![
            // Steady: 0.1 % between rounds.
            gathered(&[100.0, 100.1, 99.9], ms(100)),
            // 10 % and 5 % between rounds.
            gathered(&[90.0, 100.0, 110.0], ms(100)),
            gathered(&[95.0, 100.0, 105.0], ms(100)),
            // Wide, but failed once: not tried again.
            Gathered {
                failures: vec![(1, "gone".into())],
                ..gathered(&[50.0, 100.0, 150.0], ms(100))
            },
            // Skipped here.
            Gathered {
                skipped: Some("no".into()),
                ..Gathered::default()
            },
        ];
        assert_eq!(choose_extra(&figures, ms(1000), false), vec![1, 2]);
        // A small selection spreads every figure still measured over the extra time.
        assert_eq!(choose_extra(&figures, ms(1000), true), vec![0, 1, 2]);
        assert_eq!(choose_extra(&figures, ms(150), true), vec![1]);
        // Room for one round: the widest.
        assert_eq!(choose_extra(&figures, ms(150), false), vec![1]);
        assert!(choose_extra(&figures, ms(50), false).is_empty());
        // A long round that does not fit leaves room for a shorter one.
        let mixed = vec![
            gathered(&[50.0, 100.0, 150.0], ms(800)),
            gathered(&[95.0, 100.0, 105.0], ms(100)),
        ];
        assert_eq!(choose_extra(&mixed, ms(500), false), vec![1]);
    }
}
