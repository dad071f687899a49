//! `osmeter ab`: two set-ups of the same probes measured in the same minutes. A machine drifts
//! over tens of seconds (a host's other guests, a clock that settles, a neighbour's cache), so two
//! runs minutes apart differ by more than their own rounds do. Here A and B alternate in a
//! balanced order (A B, B A, A B, ...: a drift that grows steadily cancels within every two
//! pairs), each round in fresh measuring processes, and the verdict rests on each pair's B/A
//! ratio ([`crate::stats::paired`]). In a duet both sides run at once on two CPUs, swapped within
//! each pair, so they share even the drift of the second; in lockstep they share one CPU and take
//! their samples in turn. Pairs go on until every figure's interval is narrower than the change
//! asked for, or the time budget ends. A pair itself is taken in [`pair`].

pub mod document;
pub mod html;
mod pair;
pub mod sides;
mod text;

use crate::harness::HarnessConfig;
use crate::interrupt;
use crate::meter::yardstick::Yardstick;
use crate::results::model::Overhead;
use crate::stats::paired::{self, Paired};
use crate::stats::rng::Rng;
use crate::suite::Variant;
use anyhow::{bail, Result};
use document::{AbDoc, AbFigure, Findable, Mode};
use pair::PairContext;
use sides::{SideSpec, Switch};
use std::path::Path;
use std::time::{Duration, Instant};

/// Pairs taken before any figure may be called settled, and before the smallest findable change
/// is estimated: two balanced blocks (A B B A, B A A B... counts as two pairs each).
pub const PILOT_PAIRS: usize = 4;

/// A side's harness cost is measured in the first pair and again every this many pairs. It is a
/// property of the side (a wrapper such as a seccomp filter slows the harness's own clock reads
/// too), drifts with the machine no faster than the figures, and is a fraction of a percent of a
/// sample: measured in every pair it took a quarter of the pairs' time.
const OVERHEAD_EVERY: usize = 8;

/// A validated `ab` request.
pub struct AbConfig<'a> {
    pub variants: Vec<Variant>,
    pub harness: HarnessConfig,
    pub sides: [SideSpec; 2],
    pub mode: Mode,
    /// Smallest change worth finding, as a fraction.
    pub min_effect: f64,
    pub budget: Duration,
    pub max_pairs: usize,
    pub seed: u64,
    /// The measuring CPU; in a duet the second side's CPU follows.
    pub cpus: [usize; 2],
    pub counters: bool,
    pub fifo: Option<i32>,
    pub system_aslr: bool,
    pub scratch: &'a Path,
    pub file_systems: crate::probes::FileSystems,
}

/// What one side measured of one figure.
#[derive(Default, Clone)]
struct Gathered {
    rounds: Vec<Vec<f64>>,
    /// The round value of this side in the pair being measured.
    this_pair: Option<f64>,
    skipped: Option<String>,
    failed: Option<String>,
}

/// Measures both sides in pairs and returns the document (its figures judged).
pub fn measure(config: &AbConfig, status: &mut dyn FnMut(&str)) -> Result<AbDoc> {
    interrupt::install();
    let workers = [config.sides[0].worker()?, config.sides[1].worker()?];
    let mut switch = Switch::new([&config.sides[0], &config.sides[1]]);
    let started = Instant::now();
    let n = config.variants.len();
    let mut got: [Vec<Gathered>; 2] = [vec![Gathered::default(); n], vec![Gathered::default(); n]];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut hints: Vec<Option<u64>> = vec![None; n];
    let mut yardsticks = [Yardstick::default(), Yardstick::default()];
    let mut overheads: [Option<Overhead>; 2] = [None, None];
    let mut findable = Vec::new();
    let mut rng = Rng::new(config.seed);
    let mut stopped = String::from("the most pairs asked for (--max-pairs)");
    let mut pairs = 0;
    let mut failure = None;
    while pairs < config.max_pairs {
        if interrupt::requested() {
            stopped = "interrupted (Ctrl-C or a signal): the pairs taken are kept".into();
            break;
        }
        let spent = started.elapsed();
        if pairs >= PILOT_PAIRS {
            let per_pair = spent / pairs as u32;
            if spent + per_pair > config.budget {
                stopped = format!(
                    "the budget of {} ended",
                    crate::progress::duration(config.budget)
                );
                break;
            }
            if settled(&ratios, &got, config.min_effect) {
                stopped = format!(
                    "every figure's interval is within ±{:.1} % (half the --min-effect)",
                    config.min_effect * 50.0
                );
                break;
            }
        }
        let mut order: Vec<usize> = (0..n).collect();
        rng.shuffle(&mut order);
        if pairs % OVERHEAD_EVERY == 0 {
            overheads = [None, None];
        }
        let ctx = PairContext {
            config,
            workers: &workers,
            order: &order,
            hints: &hints,
            overheads: &overheads,
            pair: pairs,
        };
        let outcome = match config.mode {
            Mode::Interleaved => ctx.interleaved(&mut switch, &mut got, status, started),
            Mode::Duet | Mode::Lockstep => ctx.together(&mut got, status, started),
        };
        // Before the first pair an error is the answer; after it, the pairs taken are kept.
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) if pairs > 0 => {
                failure = Some(format!("{e:#}"));
                stopped = format!("stopped by an error after {pairs} pairs");
                break;
            }
            Err(e) => return Err(e),
        };
        for (kept, measured) in overheads.iter_mut().zip(outcome.overheads.clone()) {
            if measured.is_some() {
                *kept = measured;
            }
        }
        for (kept, reading) in yardsticks.iter_mut().zip(outcome.yardstick) {
            if let Some(mut r) = reading {
                r.at_ms = started.elapsed().as_millis() as u64;
                kept.readings.push(r);
            }
        }
        if outcome.interrupted {
            stopped = "interrupted (Ctrl-C or a signal): the pairs taken are kept".into();
            break;
        }
        for i in 0..n {
            if let (Some(a), Some(b)) = (got[0][i].this_pair.take(), got[1][i].this_pair.take()) {
                ratios[i].push(b / a);
            }
            hints[i] = hints[i].or(outcome.iterations[i]);
        }
        pairs += 1;
        if pairs == PILOT_PAIRS {
            let per_pair = started.elapsed() / pairs as u32;
            findable = estimate(config, &ratios, per_pair);
            for f in &findable {
                status("");
                let line = format!(
                    "osmeter: ab: {}",
                    f.sentence(config.budget, config.min_effect)
                );
                // Wrapped as every message is: one line per figure can run past 200 columns.
                eprintln!(
                    "{}",
                    crate::columns::fit_prose(&line, crate::columns::width())
                );
            }
        }
    }
    let left = switch.finish();
    if pairs == 0 {
        bail!(
            "no pair was measured{}",
            if interrupt::requested() {
                format!(": stopped by {}", interrupt::what_stopped())
            } else {
                String::new()
            }
        );
    }
    Ok(document::judged(
        config,
        document::Taken {
            figures: config
                .variants
                .iter()
                .enumerate()
                .map(|(i, v)| AbFigure::new(v, &got[0][i], &got[1][i], &ratios[i]))
                .collect(),
            pairs,
            elapsed: started.elapsed(),
            stopped,
            yardsticks,
            findable,
            left_changed: left,
            failure,
        },
    ))
}

/// Whether every figure that can still be measured has an interval narrow enough.
fn settled(ratios: &[Vec<f64>], got: &[Vec<Gathered>; 2], min_effect: f64) -> bool {
    ratios.iter().enumerate().all(|(i, r)| {
        let out = [&got[0][i], &got[1][i]]
            .iter()
            .any(|g| g.skipped.is_some() || g.failed.is_some());
        out || Paired::of(r).is_some_and(|p| p.half_width() <= min_effect / 2.0)
    })
}

/// The smallest change each figure can be found at in the budget, from the pilot pairs.
fn estimate(config: &AbConfig, ratios: &[Vec<f64>], per_pair: Duration) -> Vec<Findable> {
    let in_budget = (config.budget.as_secs_f64() / per_pair.as_secs_f64().max(1e-3)) as usize;
    config
        .variants
        .iter()
        .zip(ratios)
        .filter_map(|(v, r)| {
            let p = Paired::of(r)?;
            let needed = paired::pairs_needed(p.sd_log, config.min_effect);
            Some(Findable {
                key: v.label(),
                pairs_in_budget: in_budget,
                change_in_budget: paired::findable(p.sd_log, in_budget.max(2)),
                seconds_for_min_effect: needed.map(|n| n as f64 * per_pair.as_secs_f64()),
            })
        })
        .collect()
}
