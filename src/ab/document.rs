//! The stored result of `osmeter ab`: both sides as given, every figure's rounds on each side and
//! its pairs' ratios, the paired verdict, the machine's yardstick on each side, and how the
//! measurement ended. `show`, `export`, `report` and `compare` reach it through [`Document`].

use super::sides::SideSpec;
use super::AbConfig;
use crate::meter::yardstick::Yardstick;
use crate::results::compare::Verdict;
use crate::results::document::Document;
use crate::results::figure::{Direction, Evidence, Figure, Role};
use crate::results::model::RunKind;
use crate::stats::paired::Paired;
use crate::suite::Variant;
use crate::text::escape_controls;
use crate::units::Unit;
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::time::Duration;

pub const AB_SCHEMA: &str = "osmeter.ab/1";
/// False discovery rate across the figures of one A/B.
pub const ALPHA: f64 = 0.05;

/// How the two sides were measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// One after the other on one CPU, in a balanced order.
    Interleaved,
    /// Both at once on two CPUs, swapped between pairs.
    Duet,
    /// Both at once on one CPU, their samples taken in turn.
    Lockstep,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Interleaved => "interleaved",
            Mode::Duet => "duet",
            Mode::Lockstep => "lockstep",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AbDoc {
    pub schema: String,
    pub mode: Mode,
    pub a: SideSpec,
    pub b: SideSpec,
    pub min_effect: f64,
    pub budget_s: f64,
    pub cpus: Vec<usize>,
    pub pairs: usize,
    pub elapsed_s: f64,
    /// Why the pairs ended, in words.
    pub stopped: String,
    pub figures: Vec<AbFigure>,
    /// The machine's own speed on each side, read at the start of every side's round.
    pub yardstick_a: Yardstick,
    pub yardstick_b: Yardstick,
    /// The smallest change each figure could be found at, estimated after the first pairs.
    #[serde(default)]
    pub findable: Vec<Findable>,
    /// What `ab` could not put back when it ended (a tear-down that failed, a setting).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_changed: Vec<String>,
    /// The error that ended the pairs early, when one did (the pairs before it are kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AbFigure {
    pub key: String,
    pub group: String,
    pub unit: Unit,
    pub direction: Direction,
    pub role: Role,
    /// Each side's rounds, each round's samples.
    pub a_rounds: Vec<Vec<f64>>,
    pub b_rounds: Vec<Vec<f64>>,
    /// Each pair's B/A ratio of round values, in the order taken.
    pub ratios: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<Paired>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q_value: Option<f64>,
    pub verdict: Verdict,
    pub reason: String,
}

/// What the first pairs said a figure's change could be found at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Findable {
    pub key: String,
    pub pairs_in_budget: usize,
    /// The smallest change (a fraction) found 80 % of the time with the budget's pairs.
    pub change_in_budget: f64,
    /// Time that finding a change of the minimum effect needs; None when out of reach.
    pub seconds_for_min_effect: Option<f64>,
}

impl Findable {
    pub fn sentence(&self, budget: Duration, min_effect: f64) -> String {
        let mut s = format!(
            "in {} this machine can find changes of {:.1} % or more in {} (80 % of the time, \
             about {} pairs)",
            crate::progress::duration(budget),
            self.change_in_budget * 100.0,
            escape_controls(&self.key),
            self.pairs_in_budget
        );
        if self.change_in_budget > min_effect {
            match self.seconds_for_min_effect {
                Some(t) => {
                    let _ = write!(
                        s,
                        "; --min-effect {:.1} % needs about {} (--budget {}s)",
                        min_effect * 100.0,
                        crate::progress::duration(Duration::from_secs_f64(t)),
                        t.ceil() as u64
                    );
                }
                None => {
                    let _ = write!(
                        s,
                        "; --min-effect {:.1} % cannot be had on this machine in any sensible \
                         time (its pairs disagree too much)",
                        min_effect * 100.0
                    );
                }
            }
        }
        s
    }
}

impl AbFigure {
    pub(super) fn new(
        v: &Variant,
        a: &super::Gathered,
        b: &super::Gathered,
        ratios: &[f64],
    ) -> AbFigure {
        let unmeasured = [("A", a), ("B", b)].iter().find_map(|(side, g)| {
            g.skipped
                .as_ref()
                .map(|w| format!("skipped on {side}: {w}"))
                .or_else(|| g.failed.as_ref().map(|w| format!("failed on {side}: {w}")))
        });
        AbFigure {
            key: v.label(),
            group: v.probe.group().to_string(),
            unit: v.probe.unit,
            direction: Direction::of_unit(v.probe.unit),
            role: v.probe.role(),
            a_rounds: a.rounds.clone(),
            b_rounds: b.rounds.clone(),
            ratios: ratios.to_vec(),
            paired: Paired::of(ratios),
            q_value: None,
            verdict: Verdict::Untested,
            reason: unmeasured.unwrap_or_default(),
        }
    }

    /// How many times better B is than A (above 1: B better, whatever the unit).
    pub fn speedup(&self) -> Option<f64> {
        let r = self.paired?.ratio;
        Some(match self.direction {
            Direction::Lower => 1.0 / r,
            Direction::Higher => r,
        })
    }
}

/// What the measurement took, before the verdicts.
pub struct Taken {
    pub figures: Vec<AbFigure>,
    pub pairs: usize,
    pub elapsed: Duration,
    pub stopped: String,
    pub yardsticks: [Yardstick; 2],
    pub findable: Vec<Findable>,
    pub left_changed: Vec<String>,
    pub failure: Option<String>,
}

/// The document with every figure judged: changed when its paired interval excludes 1, its
/// p-value survives the false discovery rate across the figures, and the change is at least the
/// minimum effect.
pub fn judged(config: &AbConfig, taken: Taken) -> AbDoc {
    let mut figures = taken.figures;
    judge(&mut figures, config.min_effect);
    let [ya, yb] = taken.yardsticks;
    AbDoc {
        schema: AB_SCHEMA.to_string(),
        mode: config.mode,
        a: config.sides[0].clone(),
        b: config.sides[1].clone(),
        min_effect: config.min_effect,
        budget_s: config.budget.as_secs_f64(),
        cpus: match config.mode {
            Mode::Interleaved | Mode::Lockstep => vec![config.cpus[0]],
            Mode::Duet => config.cpus.to_vec(),
        },
        pairs: taken.pairs,
        elapsed_s: taken.elapsed.as_secs_f64(),
        stopped: taken.stopped,
        figures,
        yardstick_a: ya,
        yardstick_b: yb,
        findable: taken.findable,
        left_changed: taken.left_changed,
        failure: taken.failure,
    }
}

/// Sets each figure's q-value, verdict and reason.
pub fn judge(figures: &mut [AbFigure], min_effect: f64) {
    let p: Vec<f64> = figures
        .iter()
        .map(|f| f.paired.map_or(f64::NAN, |p| p.p_value))
        .collect();
    let q = crate::stats::fdr::benjamini_hochberg(&p);
    for (f, q) in figures.iter_mut().zip(q) {
        let (Some(p), Some(speedup)) = (f.paired, f.speedup()) else {
            if f.reason.is_empty() {
                f.reason = "fewer than two pairs: no verdict".into();
            }
            continue;
        };
        f.q_value = Some(q);
        let effect = (p.ratio - 1.0).abs();
        let changed = p.excludes_one() && q <= ALPHA && effect >= min_effect;
        f.verdict = match (changed, speedup > 1.0) {
            (false, _) => Verdict::NoChange,
            (true, true) => Verdict::Faster,
            (true, false) => Verdict::Slower,
        };
        let interval = format!(
            "B/A {:.4}, 95 % interval {:.4}-{:.4}",
            p.ratio, p.ci95[0], p.ci95[1]
        );
        f.reason = if changed {
            format!("{interval} over {} pairs, q = {q:.3}", p.pairs)
        } else if p.excludes_one() && q <= ALPHA {
            format!(
                "{interval}: a change, but smaller than the {:.1} % minimum effect",
                min_effect * 100.0
            )
        } else {
            format!("{interval} holds 1 or is not beyond the false discovery rate (q = {q:.3})")
        };
    }
}

impl AbDoc {
    pub fn changed(&self) -> impl Iterator<Item = &AbFigure> {
        self.figures
            .iter()
            .filter(|f| matches!(f.verdict, Verdict::Faster | Verdict::Slower))
    }

    /// The figures called slower by more than `pct` percent (`--fail-if-slower`).
    pub fn slower_beyond(&self, pct: f64) -> Vec<&str> {
        let limit = 1.0 - pct / 100.0;
        self.figures
            .iter()
            .filter(|f| f.verdict == Verdict::Slower && f.speedup().is_some_and(|s| s < limit))
            .map(|f| f.key.as_str())
            .collect()
    }

    /// The yardstick's drift over the measurement: the CPU loop's slowest reading over its
    /// fastest, both sides together.
    pub fn drift(&self) -> Option<f64> {
        let all: Vec<f64> = self
            .yardstick_a
            .cpu()
            .into_iter()
            .chain(self.yardstick_b.cpu())
            .collect();
        let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = all.iter().copied().fold(0.0, f64::max);
        (all.len() >= 2 && lo > 0.0).then(|| hi / lo)
    }
}

/// One side's value of a figure: the median of its rounds' values; None before any round.
pub fn side_value(rounds: &[Vec<f64>]) -> Option<f64> {
    let mut values = Evidence::Rounds(rounds.to_vec()).round_values();
    (!values.is_empty()).then(|| crate::stats::summary::median_of(&mut values))
}

fn side_line(s: &SideSpec) -> String {
    let mut parts = Vec::new();
    if let Some(c) = &s.setup {
        parts.push(format!("set-up `{c}`"));
    }
    if let Some(c) = &s.teardown {
        parts.push(format!("tear-down `{c}`"));
    }
    if let Some(c) = &s.wrap {
        parts.push(format!("under `{c}`"));
    }
    if parts.is_empty() {
        parts.push("the machine as it is".into());
    }
    escape_controls(&parts.join(", ")).into_owned()
}

impl Document for AbDoc {
    const KIND: RunKind = RunKind::Ab;

    /// Each figure on each side (its rounds), then its paired ratio.
    fn figures(&self) -> Vec<Figure> {
        let mut out = Vec::new();
        for f in &self.figures {
            for (side, rounds) in [("A", &f.a_rounds), ("B", &f.b_rounds)] {
                let Some(value) = side_value(rounds) else {
                    continue;
                };
                out.push(Figure {
                    key: format!("{} [{side}]", f.key),
                    group: f.group.clone(),
                    unit: f.unit,
                    direction: f.direction,
                    role: f.role,
                    value,
                    interval: None,
                    evidence: Evidence::Rounds(rounds.clone()),
                    explain: Default::default(),
                });
            }
            if let Some(p) = f.paired {
                out.push(Figure {
                    key: format!("{} B/A", f.key),
                    group: f.group.clone(),
                    unit: Unit::Ratio,
                    direction: f.direction,
                    role: Role::Other,
                    value: p.ratio,
                    interval: Some(p.ci95),
                    evidence: Evidence::Rounds(f.ratios.iter().map(|r| vec![*r]).collect()),
                    explain: Default::default(),
                });
            }
        }
        out
    }

    fn how(&self) -> String {
        format!(
            "A/B {} ({} pairs in {}): A {}; B {}",
            self.mode.as_str(),
            self.pairs,
            crate::progress::duration(Duration::from_secs_f64(self.elapsed_s)),
            side_line(&self.a),
            side_line(&self.b)
        )
    }

    fn text(&self) -> String {
        super::text::render(self)
    }
}
