//! Figures: the one shape in which every kind of run states what it measured, so that show,
//! export, compare, history and the report treat a latency percentile, an MCPI or a system-call
//! time alike.
//!
//! A figure has a stable key (unique within a run, the same in every run of that kind that
//! measured the same thing), a unit, the direction in which it is better, a headline value with its
//! interval, and the evidence behind it: the values of independent repetitions (rounds in separate
//! processes, runs of a command), each holding its samples, or the statement that the value is
//! exact (a simulation gives the same result for the same input).

pub mod bench;
mod guest;

use crate::results::model::{Run, RunKind, Status};
use crate::stats::summary::{cv, median_of};
use crate::units::{self, Unit};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A figure the run meant to state but could not, and why.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Unmeasured {
    pub key: String,
    pub status: Status,
    pub reason: String,
}

impl Run {
    /// What the run could not measure: skipped or failed probes, streams that failed, classes
    /// this machine would not run.
    pub fn unmeasured(&self) -> Vec<Unmeasured> {
        let mut out: Vec<Unmeasured> = self
            .measurements
            .iter()
            .filter(|m| m.status != Status::Ok)
            .map(|m| Unmeasured {
                key: m.label(),
                status: m.status,
                reason: m.reason.clone().unwrap_or_default(),
            })
            .collect();
        out.extend(self.sections.iter().flat_map(|d| d.unmeasured()));
        out
    }

    /// Every figure the run states, whatever its kind, in the order its own table shows them.
    pub fn figures(&self) -> Vec<Figure> {
        match self.kind() {
            RunKind::Run => bench::figures(self),
            kind => self
                .sections
                .of_kind(kind)
                .map(|d| d.figures())
                .unwrap_or_default(),
        }
    }
}

/// Which way a figure is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Lower,
    Higher,
}

impl Direction {
    pub fn of_unit(unit: Unit) -> Direction {
        if unit.higher_is_better() {
            Direction::Higher
        } else {
            Direction::Lower
        }
    }

    /// How many times better `b` is than `a`: above 1 means better, whatever the direction.
    pub fn speedup(self, a: f64, b: f64) -> f64 {
        match self {
            Direction::Lower => a / b,
            Direction::Higher => b / a,
        }
    }
}

/// What a figure's value rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Evidence {
    /// Deterministic: the same input gives the same value, so any difference is real.
    Exact,
    /// Independent repetitions, each with its samples. One repetition says nothing about the
    /// variation between runs (its samples share page placement, caches and neighbours).
    Rounds(Vec<Vec<f64>>),
}

impl Evidence {
    /// The value of each repetition: the median of its samples.
    pub fn round_values(&self) -> Vec<f64> {
        match self {
            Evidence::Exact => Vec::new(),
            Evidence::Rounds(rounds) => rounds
                .iter()
                .filter(|r| !r.is_empty())
                .map(|r| median_of(&mut r.clone()))
                .collect(),
        }
    }

    /// Every sample of every repetition.
    pub fn samples(&self) -> Vec<f64> {
        match self {
            Evidence::Exact => Vec::new(),
            Evidence::Rounds(rounds) => rounds.iter().flatten().copied().collect(),
        }
    }
}

/// What a figure measures, for summaries that must not mix kinds of speed (Ousterhout's question
/// is how the operating system's primitives kept up with the CPU: hardware figures and the
/// harness's own cost do not belong in that average).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// An operating-system primitive (a system call, a context switch, a file operation).
    Os,
    /// The CPU-bound reference that OS speed is set against.
    CpuReference,
    /// The hardware more than the OS (memory copy bandwidth, memory latency).
    Hardware,
    /// Anything else: a latency percentile, a simulated MCPI, a command's time.
    Other,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Figure {
    /// Stable and unique within a run: `syscall.null`, `ipc.pipe_pingpong placement=cross`,
    /// `high/timer cpu1 p99`, `ds5000-200 mcpi.total`, `time:wall`.
    pub key: String,
    /// For geometric means and grouping: the probe group, or the part that produced it.
    pub group: String,
    pub unit: Unit,
    pub direction: Direction,
    pub role: Role,
    /// The headline value: a median, an exact result, a mean of runs.
    pub value: f64,
    /// A 95 % confidence interval of `value`, where the evidence gives one.
    pub interval: Option<[f64; 2]>,
    pub evidence: Evidence,
    /// Related quantities that can explain a change (counters per operation by `scope.event`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub explain: BTreeMap<String, f64>,
}

impl Figure {
    /// An exact figure (a simulation result, a count taken once).
    pub fn exact(
        key: impl Into<String>,
        group: &str,
        unit: Unit,
        direction: Direction,
        value: f64,
    ) -> Figure {
        Figure {
            key: key.into(),
            group: group.to_string(),
            unit,
            direction,
            role: Role::Other,
            value,
            interval: None,
            evidence: Evidence::Exact,
            explain: BTreeMap::new(),
        }
    }

    /// The value in the unit name that suits it.
    pub fn shown(&self) -> String {
        units::format(self.value, self.unit)
    }

    /// Coefficient of variation between repetitions, where there are at least two.
    pub fn round_cv(&self) -> Option<f64> {
        cv(&self.evidence.round_values())
    }

    /// The spread to show beside the figure: between repetitions where there are several, else
    /// between the samples of its one repetition.
    pub fn cv(&self) -> Option<f64> {
        self.round_cv().or_else(|| cv(&self.evidence.samples()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speedup_reads_the_same_whatever_the_direction() {
        assert_eq!(Direction::Lower.speedup(200.0, 100.0), 2.0);
        assert_eq!(Direction::Higher.speedup(100.0, 200.0), 2.0);
        assert_eq!(Direction::of_unit(Unit::BytesPerSecond), Direction::Higher);
        assert_eq!(Direction::of_unit(Unit::Nanoseconds), Direction::Lower);
    }

    #[test]
    fn rounds_give_their_medians_and_spread() {
        let e = Evidence::Rounds(vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.0], vec![]]);
        assert_eq!(e.round_values(), vec![2.0, 4.5]);
        assert_eq!(e.samples().len(), 5);
        assert!(Evidence::Exact.round_values().is_empty());
        let mut f = Figure::exact("k", "g", Unit::Nanoseconds, Direction::Lower, 3.0);
        assert_eq!(f.round_cv(), None);
        f.evidence = Evidence::Rounds(vec![vec![9.0], vec![11.0]]);
        let cv = f.round_cv().unwrap();
        assert!((cv - 2f64.sqrt() / 10.0).abs() < 1e-12, "{cv}");
        assert_eq!(f.shown(), "3.00 ns");
    }

    #[test]
    fn a_figure_reads_back_as_it_was_written() {
        let mut f = Figure::exact(
            "ds mcpi.total",
            "memsim",
            Unit::CyclesPerInstruction,
            Direction::Lower,
            0.5,
        );
        f.explain.insert("kernel.instructions".into(), 800.0);
        let back: Figure = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
        assert_eq!(back, f);
    }
}
