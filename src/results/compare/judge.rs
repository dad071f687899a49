//! The verdict on each figure of a comparison, in two steps. First each figure is tested on its own:
//! where the sides were measured in rounds (fresh processes, shuffled order), on the variation
//! between rounds (Welch's test on log round values); where each side has a single round, on its
//! samples (rank test), which understates run-to-run noise and is said to. Then the false discovery
//! rate is controlled across all tested figures of the comparison (Benjamini-Hochberg): with 74
//! figures, a per-figure test at 5 % would call three or four of them changed by chance alone.
//! A figure is called changed when its adjusted p-value (q) is at most the comparison's level, the
//! interval of its ratio excludes 1, the change is at least the minimum effect (raised to three
//! times the run-to-run spread stored history shows, where there is history), and the values do
//! not both lie in a range the host has shown before. Each figure gets the reason in words.

use super::{rank, CompareConfig, Side, Verdict, NOISE_MULTIPLE};
use crate::stats::{fdr, twosample};

/// What the statistics say about one figure present on both sides.
pub(super) struct Judgement {
    pub ratio_ci95: Option<[f64; 2]>,
    pub p_value: Option<f64>,
    /// p-value adjusted for the number of figures tested (Benjamini-Hochberg).
    pub q_value: Option<f64>,
    pub noise_floor: f64,
    pub noise_source: String,
    pub verdict: Verdict,
    pub reason: String,
}

/// A figure tested on its own, before the false discovery rate is controlled.
pub(super) struct Test {
    ci: [f64; 2],
    p: f64,
    /// How the figure was tested, for the reason.
    method: String,
    noise_floor: f64,
    noise_source: &'static str,
    /// Stored history has seen both values already.
    shown_before: bool,
}

/// Either the figure is settled without a test (exact, or nothing to judge a spread by), or it
/// waits for the other figures' p-values.
pub(super) enum Step {
    Settled(Judgement),
    Tested(Test),
}

fn seed_of(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, c| {
        (h ^ c as u64).wrapping_mul(0x100_0000_01b3)
    })
}

fn changed(yes: bool, better: bool) -> Verdict {
    match (yes, better) {
        (false, _) => Verdict::NoChange,
        (true, true) => Verdict::Faster,
        (true, false) => Verdict::Slower,
    }
}

/// First step: the figure on its own.
pub(super) fn test(key: &str, a: &Side, b: &Side, config: &CompareConfig) -> Step {
    let (va, vb) = (a.value(), b.value());
    let ratio = vb / va;
    let better = a.figure.direction.speedup(va, vb) > 1.0;
    if a.exact() && b.exact() {
        let yes = beyond(ratio, config.min_effect);
        return Step::Settled(Judgement {
            ratio_ci95: None,
            p_value: None,
            q_value: None,
            noise_floor: config.min_effect,
            noise_source: "exact".into(),
            verdict: changed(yes, better),
            reason: format!(
                "exact figures (a simulation): {} the {:.0} % minimum effect",
                if yes {
                    "differ by at least"
                } else {
                    "differ by less than"
                },
                config.min_effect * 100.0
            ),
        });
    }
    let (ra, rb) = (a.round_values(), b.round_values());
    let between = twosample::log_ratio_test(&ra, &rb, 0.95).ok();
    let (ci, p, method, from_rounds) = match between {
        Some(t) if ra.len() + rb.len() >= 3 && (ra.len() > 1 || rb.len() > 1) => (
            t.ci,
            t.p_value,
            format!(
                "rounds {} + {} (Welch on log round values)",
                ra.len(),
                rb.len()
            ),
            true,
        ),
        _ => {
            let (sa, sb) = (a.samples(), b.samples());
            if sa.len() < 2 && sb.len() < 2 {
                return Step::Settled(Judgement {
                    ratio_ci95: None,
                    p_value: None,
                    q_value: None,
                    noise_floor: config.min_effect,
                    noise_source: "unknown".into(),
                    verdict: Verdict::Untested,
                    reason: "one value on each side: nothing to judge its spread by".into(),
                });
            }
            (
                rank::ratio_ci95(&sa, &sb, config.resamples, seed_of(key)),
                rank::mann_whitney_p(&sa, &sb),
                format!(
                    "samples {} + {} of one round per side (rank test; samples of one process \
                     understate run-to-run noise)",
                    sa.len(),
                    sb.len()
                ),
                false,
            )
        }
    };
    let seen = config.history_noise.get(key).copied();
    let (noise_floor, noise_source) = match seen {
        Some(h) if NOISE_MULTIPLE * h.cv > config.min_effect => (NOISE_MULTIPLE * h.cv, "history"),
        _ if from_rounds => (config.min_effect, "rounds"),
        _ => (config.min_effect, "samples"),
    };
    Step::Tested(Test {
        ci,
        p,
        method,
        noise_floor,
        noise_source,
        shown_before: seen.is_some_and(|h| h.covers(va, vb, config.min_effect)),
    })
}

fn beyond(ratio: f64, floor: f64) -> bool {
    ratio.ln().abs() >= (1.0 + floor).ln()
}

/// Second step: the false discovery rate controlled across every tested figure, and the verdicts.
/// `ratios` and `better` are per step, in the same order.
pub(super) fn decide(
    steps: Vec<Step>,
    ratios: &[f64],
    better: &[bool],
    config: &CompareConfig,
) -> Vec<Judgement> {
    let p: Vec<f64> = steps
        .iter()
        .map(|s| match s {
            Step::Tested(t) => t.p,
            Step::Settled(_) => f64::NAN,
        })
        .collect();
    let tested = p.iter().filter(|x| !x.is_nan()).count();
    let q = fdr::benjamini_hochberg(&p);
    steps
        .into_iter()
        .enumerate()
        .map(|(i, step)| match step {
            Step::Settled(j) => j,
            Step::Tested(t) => verdict(t, q[i], tested, ratios[i], better[i], config),
        })
        .collect()
}

fn verdict(
    t: Test,
    q: f64,
    tested: usize,
    ratio: f64,
    better: bool,
    config: &CompareConfig,
) -> Judgement {
    let significant = q <= config.alpha;
    let excludes_one = t.ci[0] > 1.0 || t.ci[1] < 1.0;
    let big_enough = beyond(ratio, t.noise_floor);
    let yes = significant && excludes_one && big_enough && !t.shown_before;
    let change = (ratio - 1.0).abs() * 100.0;
    let floor = t.noise_floor * 100.0;
    let floor_why = if t.noise_source == "history" {
        format!("{NOISE_MULTIPLE} x the run-to-run spread stored history shows")
    } else {
        "the minimum effect".to_string()
    };
    let fdr = format!("q {q:.4} (p {:.4} adjusted over {tested} figures)", t.p);
    let reason = if yes {
        format!(
            "{}: {fdr} <= {}, interval excludes 1, change {change:.1} % >= {floor:.1} % \
             ({floor_why})",
            t.method, config.alpha
        )
    } else if !significant {
        format!(
            "{}: {fdr} is above the false discovery rate {}",
            t.method, config.alpha
        )
    } else if !excludes_one {
        format!("{}: the 95 % interval of the ratio includes 1", t.method)
    } else if !big_enough {
        format!(
            "{}: {fdr} but the change {change:.1} % is below {floor:.1} % ({floor_why})",
            t.method
        )
    } else {
        format!(
            "{}: {fdr}, but both values lie in the range this host has already shown",
            t.method
        )
    };
    Judgement {
        ratio_ci95: Some(t.ci),
        p_value: Some(t.p),
        q_value: Some(q),
        noise_floor: t.noise_floor,
        noise_source: t.noise_source.to_string(),
        verdict: changed(yes, better),
        reason,
    }
}
