//! When the machine itself ran at another speed in one run than in the other. A VM whose host
//! shares its cores, a frequency that settles differently, a neighbour on the same physical core:
//! every figure of the run moves together, and an A/A comparison would read as a speed-up. Two
//! yardsticks show it: the readings every run takes between its rounds (a CPU-bound loop and a
//! memory-bound walk, see [`crate::meter::yardstick`]), and, in runs stored before those, the
//! `cpu.reference` figure (pure computation in the first-level caches, no system call). On the
//! same CPU model, a yardstick that moved beyond its own interval means the machine moved, since
//! no OS change reaches code that never enters the kernel.
//!
//! Whether a given figure follows the machine's speed is not known: a system call does, a walk
//! through DRAM mostly does not. So a figure is called changed only when it changed both as
//! measured and relative to the yardstick (B scaled by the yardstick's speed-up, the minimum
//! effect widened by the yardstick's own uncertainty), in the same direction: a change that holds
//! whichever way the figure depends on the CPU.

use super::{judge, CompareConfig, Side, Verdict};
use crate::meter::yardstick::Yardstick;
use crate::results::figure::{Direction, Evidence, Figure, Role};
use crate::results::model::Run;
use crate::stats::summary::median_of;
use crate::units::Unit;
use serde::Serialize;
use std::collections::BTreeMap;

/// The machine's own change of speed between the two sides.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MachineSpeed {
    /// Which yardstick saw it: "yardstick" (the CPU loop read between every run's rounds) or
    /// "cpu.reference" (the figure, in runs that predate the readings).
    pub source: String,
    /// How many times faster the CPU yardstick ran in B than in A.
    pub speedup: f64,
    /// The 95 % interval of the yardstick's B/A time ratio.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_ci95: Option<[f64; 2]>,
    /// What the yardstick's own uncertainty adds to the minimum effect of the relative judgement.
    pub added_min_effect: f64,
    /// Geometric mean speed-up of the figures judged relative to the yardstick, and its interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geomean_relative: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geomean_relative_ci95: Option<[f64; 2]>,
    /// How many times faster the memory-bound walk ran in B, and whether that moved beyond noise
    /// (a neighbour's traffic or a cache shared with another guest moves it alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_speedup: Option<f64>,
    pub memory_moved: bool,
}

/// The yardstick's speed-up when it moved beyond noise between two runs of one CPU model: its
/// verdict, speed-up and B/A interval, as the comparison judged it.
pub(super) fn moved(
    role: Role,
    verdict: Verdict,
    speedup: f64,
    ratio_ci95: Option<[f64; 2]>,
    same_cpu: bool,
) -> Option<MachineSpeed> {
    let moved = role == Role::CpuReference
        && same_cpu
        && matches!(verdict, Verdict::Faster | Verdict::Slower)
        && speedup.is_finite()
        && speedup > 0.0;
    if !moved {
        return None;
    }
    let ratio = 1.0 / speedup;
    // How far the interval reaches from the estimate, as a fraction: the yardstick's speed-up is
    // known only that well, so a relative change must clear it as well as the minimum effect.
    let added_min_effect = ratio_ci95.map_or(0.0, |[lo, hi]| {
        let reach = (hi / ratio).max(ratio / lo);
        if reach.is_finite() {
            (reach - 1.0).max(0.0)
        } else {
            0.0
        }
    });
    Some(MachineSpeed {
        source: "cpu.reference".into(),
        speedup,
        ratio_ci95,
        added_min_effect,
        geomean_relative: None,
        geomean_relative_ci95: None,
        memory_speedup: None,
        memory_moved: false,
    })
}

/// The machine's change of speed from the yardstick readings of both sides, when every run of
/// both holds at least two (runs stored before the readings fall back on `cpu.reference`). The
/// CPU loop decides whether the machine moved; the memory walk is judged the same way and said
/// beside it.
pub(super) fn from_yardsticks(
    a: &[&Run],
    b: &[&Run],
    same_cpu: bool,
    config: &CompareConfig,
) -> Option<MachineSpeed> {
    let (cpu, memory) = (Yardstick::cpu as Pick, Yardstick::memory as Pick);
    let (verdict, speedup, ci) = judged(a, b, cpu, config)?;
    let memory = judged(a, b, memory, config);
    let mut m = moved(Role::CpuReference, verdict, speedup, ci, same_cpu)?;
    m.source = "yardstick".into();
    m.memory_speedup = memory.map(|(_, s, _)| s);
    m.memory_moved = memory.is_some_and(|(v, _, _)| matches!(v, Verdict::Faster | Verdict::Slower));
    Some(m)
}

type Pick = fn(&Yardstick) -> Vec<f64>;

/// One yardstick judged as a figure of its own: its verdict, B's speed-up and the interval of
/// B/A.
fn judged(
    a: &[&Run],
    b: &[&Run],
    pick: Pick,
    config: &CompareConfig,
) -> Option<(Verdict, f64, Option<[f64; 2]>)> {
    let readings = |runs: &[&Run]| {
        runs.iter()
            .map(|r| r.yardstick.as_ref().map(pick).filter(|v| v.len() >= 2))
            .collect::<Option<Vec<Vec<f64>>>>()
    };
    let (sa, sb) = (yardstick_side(&readings(a)?), yardstick_side(&readings(b)?));
    let speedup = sa.value() / sb.value();
    let step = judge::test("yardstick", &sa, &sb, config);
    let ratio = sb.value() / sa.value();
    let j = judge::decide(vec![step], &[ratio], &[speedup > 1.0], config).pop()?;
    Some((j.verdict, speedup, j.ratio_ci95))
}

/// One side of a yardstick as a figure measured in rounds: each reading one round.
fn yardstick_side(runs: &[Vec<f64>]) -> Side {
    let rounds: Vec<Vec<f64>> = runs.iter().flatten().map(|&v| vec![v]).collect();
    let run_values: Vec<f64> = runs.iter().map(|r| median_of(&mut r.clone())).collect();
    let mut all: Vec<f64> = runs.iter().flatten().copied().collect();
    Side {
        figure: Figure {
            key: "yardstick".into(),
            group: "yardstick".into(),
            unit: Unit::Nanoseconds,
            direction: Direction::Lower,
            role: Role::CpuReference,
            value: median_of(&mut all),
            interval: None,
            evidence: Evidence::Rounds(rounds.clone()),
            explain: BTreeMap::new(),
        },
        run_values,
        rounds,
        explain: Vec::new(),
        caveats: Vec::new(),
        pages: Vec::new(),
    }
}

/// Whether a figure's value is a time or a rate that a faster machine changes (not a count, a
/// share, an exact simulation, a time between failures, nor the yardstick itself).
pub(super) fn follows_machine(side: &Side) -> bool {
    side.figure.role != Role::CpuReference
        && !matches!(side.figure.evidence, Evidence::Exact)
        && matches!(
            side.figure.unit,
            Unit::Nanoseconds | Unit::BytesPerSecond | Unit::OpsPerSecond
        )
}

/// The factor that takes a B value to what it would read at A's machine speed.
pub(super) fn factor(direction: Direction, machine_speedup: f64) -> f64 {
    match direction {
        // A faster machine shortened B's times: lengthen them back.
        Direction::Lower => machine_speedup,
        Direction::Higher => 1.0 / machine_speedup,
    }
}

/// Side B of one figure as it would read at A's machine speed.
pub(super) fn at_speed_of_a(side: &Side, machine_speedup: f64) -> Side {
    let k = factor(side.figure.direction, machine_speedup);
    let mut out = side.clone();
    out.run_values.iter_mut().for_each(|v| *v *= k);
    out.rounds.iter_mut().flatten().for_each(|v| *v *= k);
    out.figure.value *= k;
    out.figure.interval = out.figure.interval.map(|[lo, hi]| [lo * k, hi * k]);
    if let Evidence::Rounds(rounds) = &mut out.figure.evidence {
        rounds.iter_mut().flatten().for_each(|v| *v *= k);
    }
    out
}

/// The verdict of a figure that follows the machine: changed only when both judgements agree.
/// Returns the verdict and the reason.
pub(super) fn combine(
    measured: (Verdict, &str),
    relative: (Verdict, &str),
    machine: &MachineSpeed,
) -> (Verdict, String) {
    let changed = |v: Verdict| matches!(v, Verdict::Faster | Verdict::Slower);
    let (mv, mr) = measured;
    let (rv, rr) = relative;
    let moved = format!(
        "the machine itself ran {:.3}x as fast in B ({})",
        machine.speedup, machine.source
    );
    match (changed(mv), changed(rv)) {
        (true, true) if mv == rv => (mv, format!("{mr}; relative to the CPU yardstick too: {rr}")),
        (false, false) => (mv, mr.to_string()),
        (true, _) => (
            Verdict::NoChange,
            format!(
                "{mr}; but {moved}, and relative to it not so: {rr} (a change must hold both as \
                 measured and relative to the machine's speed)"
            ),
        ),
        (false, _) => (
            Verdict::NoChange,
            format!(
                "{mr}; {moved}, and relative to it: {rr} (a change must hold both as measured \
                 and relative to the machine's speed)"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(speedup: f64) -> MachineSpeed {
        moved(
            Role::CpuReference,
            Verdict::Faster,
            speedup,
            Some([0.78, 0.86]),
            true,
        )
        .unwrap()
    }

    #[test]
    fn the_yardstick_moves_the_machine_only_on_one_cpu_model_and_beyond_noise() {
        let f = Verdict::Faster;
        assert!(moved(Role::CpuReference, f, 1.2, None, false).is_none());
        assert!(moved(Role::CpuReference, Verdict::NoChange, 1.2, None, true).is_none());
        assert!(moved(Role::Os, f, 1.2, None, true).is_none());
        let m = machine(1.0 / 0.82);
        // The interval reaches further below the ratio (0.82/0.78) than above it (0.86/0.82):
        // about 5.1 % more to clear.
        assert!((m.added_min_effect - (0.82 / 0.78 - 1.0)).abs() < 1e-9);
    }

    #[test]
    fn scaling_takes_b_to_the_speed_of_a_in_both_directions() {
        // B ran 1.25x faster: a time of 80 reads 100 at A's speed, a rate of 125 reads 100.
        assert_eq!(80.0 * factor(Direction::Lower, 1.25), 100.0);
        assert_eq!(125.0 * factor(Direction::Higher, 1.25), 100.0);
    }

    #[test]
    fn a_change_is_called_only_when_both_judgements_agree() {
        let m = machine(1.2);
        let (v, why) = combine((Verdict::Faster, "fast"), (Verdict::NoChange, "same"), &m);
        assert_eq!(v, Verdict::NoChange);
        // The measured judgement's own words come first (its method), then the machine's part.
        assert!(why.starts_with("fast; but the machine"), "{why}");
        assert!(why.contains("1.200x") && why.contains("both"), "{why}");
        let (v, _) = combine((Verdict::NoChange, "same"), (Verdict::Slower, "slow"), &m);
        assert_eq!(v, Verdict::NoChange);
        let (v, _) = combine((Verdict::Faster, "fast"), (Verdict::Slower, "slow"), &m);
        assert_eq!(v, Verdict::NoChange);
        let (v, why) = combine((Verdict::Slower, "slow"), (Verdict::Slower, "slower"), &m);
        assert_eq!(v, Verdict::Slower);
        assert!(why.contains("relative to the CPU yardstick too"), "{why}");
    }
}
