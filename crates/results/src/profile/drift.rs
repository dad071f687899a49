//! Whether a difference of profiles may be shown as the cause of a changed figure. Profiles are
//! taken in rounds of their own, minutes apart from the other side's, so they drift with the
//! machine as timed rounds do: a host that ran B's profile rounds slower makes every component and
//! function of B look costlier, and a list of kernel functions would then blame the kernel for
//! what the whole machine did. A figure's difference is withheld, with the reason, when the
//! machine's yardstick moved between the sides, the profile rounds' own user time moved with it
//! and the figure did not change beyond that move; when, in runs without the yardstick's readings,
//! user time moved as much as kernel time (code outside the kernel seldom slows down for a kernel
//! change); or when the profiles' ratio lies well outside the interval the timed rounds give the
//! figure. A figure that changed even relative to the machine's own move keeps its explanation:
//! its change is more than the machine's.

use super::explain::{Delta, Explanation};
use crate::results::compare::{Comparison, FigureComparison, Verdict};
use crate::units::Unit;

/// Below this relative change, user and kernel time are not said to have moved.
const MOVED: f64 = 0.10;
/// User time "moved as much as" kernel time when its relative change is at least this share of
/// the kernel's, in the same direction.
const AS_MUCH: f64 = 0.75;
/// How far past the timed rounds' interval the profiles' ratio may lie before the two are said to
/// disagree: profiles are rounds of sampling, fewer and noisier than timed ones.
const AGREE: f64 = 1.25;

/// Withholds the components and functions of every figure whose profile difference cannot be
/// read as its cause, saying why in its caution.
pub fn withhold_drift(e: &mut Explanation, c: &Comparison) {
    for f in &mut e.figures {
        let timed = c.figures.iter().find(|x| x.key == f.label);
        let why = machine_moved(c, timed, &f.user_ns_per_op)
            // Where the yardstick watched the machine, it speaks for the machine: user time that
            // grew beside kernel time is then the change's own (a kernel path that evicts the
            // program's cache lines, as netfilter rules do to a web server).
            .or_else(|| {
                (!c.machine_watched)
                    .then(|| moved_together(&f.user_ns_per_op, &f.kernel_ns_per_op))
                    .flatten()
            })
            .or_else(|| timed.and_then(|t| disagrees(&f.ns_per_op, t)));
        if let Some(why) = why {
            f.caution = Some(why);
            f.components.clear();
            f.functions.clear();
        }
    }
}

fn relative(d: &Delta) -> Option<f64> {
    (d.a > 0.0).then(|| d.delta / d.a)
}

fn machine_moved(c: &Comparison, timed: Option<&FigureComparison>, user: &Delta) -> Option<String> {
    let m = c.machine_speed.as_ref()?;
    // The profile rounds are rounds of their own: their user time, which no kernel change
    // reaches, says whether the machine's move reached them. Untouched, they explain as they are.
    let expected = (1.0 / m.speedup).ln();
    let followed = user.a > 0.0
        && user.b > 0.0
        && (user.b / user.a).ln() * expected > 0.0
        && (user.b / user.a).ln().abs() >= 0.5 * expected.abs();
    if user.a > 0.0 && user.b > 0.0 && !followed {
        return None;
    }
    // Judged relative to the machine as well as measured (see compare::machine_speed): a change
    // that survived both is the figure's own.
    if timed.is_some_and(|t| matches!(t.verdict, Verdict::Faster | Verdict::Slower)) {
        return None;
    }
    // Counts and shares do not follow the machine's speed; times and rates do.
    timed
        .is_none_or(|t| {
            matches!(
                t.unit,
                Unit::Nanoseconds | Unit::BytesPerSecond | Unit::OpsPerSecond
            )
        })
        .then(|| {
            format!(
                "the whole machine ran {:.2}x as fast in B ({}): the profiles' difference is the \
                 machine's, not shown as kernel code; compare the setting with `osmeter ab`",
                m.speedup, m.source
            )
        })
}

fn moved_together(user: &Delta, kernel: &Delta) -> Option<String> {
    let (u, k) = (relative(user)?, relative(kernel)?);
    let together = u.abs() > MOVED
        && k.abs() > MOVED
        && u.signum() == k.signum()
        && u.abs() >= AS_MUCH * k.abs();
    together.then(|| {
        format!(
            "user time moved as much as kernel time (user {:+.0} %, kernel {:+.0} %): the machine \
             moved between the sides' profile rounds, not kernel code alone",
            u * 100.0,
            k * 100.0
        )
    })
}

fn disagrees(total: &Delta, timed: &FigureComparison) -> Option<String> {
    if timed.unit != Unit::Nanoseconds || total.a <= 0.0 || total.b <= 0.0 {
        return None;
    }
    let profiled = total.b / total.a;
    // Outside what the timed rounds allow, with room for the profiles' own noise; timed rounds
    // too noisy to tell (a wide interval) do not gainsay a clear profile.
    let [lo, hi] = timed.ratio_ci95?;
    if profiled <= hi * AGREE && profiled >= lo / AGREE {
        return None;
    }
    Some(format!(
        "the profiles moved {profiled:.2}x where the timed rounds allow {lo:.3}x to {hi:.3}x: the \
         profile rounds drifted, so their difference is not shown as a cause"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(a: f64, b: f64) -> Delta {
        Delta {
            a,
            b,
            delta: b - a,
            ci95: [b - a - 1.0, b - a + 1.0],
        }
    }

    fn timed(ratio: f64, ci: [f64; 2], verdict: Verdict) -> FigureComparison {
        use crate::results::figure::{Direction, Role};
        FigureComparison {
            key: "syscall.null".into(),
            group: "syscall".into(),
            unit: Unit::Nanoseconds,
            direction: Direction::Lower,
            role: Role::Os,
            value_a: 100.0,
            value_b: 100.0 * ratio,
            ratio,
            ratio_ci95: Some(ci),
            speedup: 1.0 / ratio,
            speedup_relative_to_cpu: None,
            p_value: None,
            q_value: None,
            noise_floor: 0.03,
            noise_source: "rounds".into(),
            verdict,
            reason: String::new(),
            counter_deltas: Vec::new(),
            caveats: Vec::new(),
        }
    }

    #[test]
    fn profiles_outside_the_timed_interval_are_withheld() {
        // The A/A of the issue: timing 0.996 and sure of it, profiles 128 -> 271 ns.
        let sure = timed(0.996, [0.98, 1.01], Verdict::NoChange);
        assert!(disagrees(&delta(128.0, 271.0), &sure).is_some());
        // Within the interval widened by a quarter: they agree.
        assert!(disagrees(&delta(128.0, 150.0), &sure).is_none());
        // Timed rounds too noisy to tell do not gainsay a clear profile.
        let noisy = timed(3.4, [1.1, 11.0], Verdict::NoChange);
        assert!(disagrees(&delta(170.0, 1150.0), &noisy).is_none());
        // A figure that is not a time per operation is not checked.
        let mut rate = timed(0.5, [0.49, 0.51], Verdict::Faster);
        rate.unit = Unit::BytesPerSecond;
        assert!(disagrees(&delta(100.0, 300.0), &rate).is_none());
    }

    #[test]
    fn user_and_kernel_moving_alike_is_the_machine() {
        // Both about 40 % slower: the machine.
        assert!(moved_together(&delta(50.0, 70.0), &delta(100.0, 140.0)).is_some());
        // A kernel change: kernel time grew, user time stayed.
        assert!(moved_together(&delta(50.0, 51.0), &delta(100.0, 140.0)).is_none());
        // User time grew by a third as much (cache effects of a kernel change): still the kernel.
        assert!(moved_together(&delta(50.0, 57.0), &delta(100.0, 160.0)).is_none());
        // Opposite ways: not one machine-wide move.
        assert!(moved_together(&delta(50.0, 35.0), &delta(100.0, 140.0)).is_none());
        // Nothing to be relative to.
        assert!(moved_together(&delta(0.0, 5.0), &delta(100.0, 140.0)).is_none());
    }
}
