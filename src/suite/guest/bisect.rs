//! Bisection over an ordered list of kernels (`osmeter bisect`): the first kernel whose count
//! of one probe differs from the good kernel's by more than a threshold, in log2 boots. Counts
//! are exact, so one boot judges a kernel; a kernel that cannot be counted is skipped, as
//! `git bisect skip` does, and the answer is then a range.

use crate::capture::system::{archive, debver, kernel};
use crate::usage;
use anyhow::Result;

/// What `bisect --json` prints: the kernels, every boot's verdict, and the answer.
#[derive(Debug, Clone, Default, serde::Serialize, schemars::JsonSchema)]
pub struct BisectDoc {
    pub probe: String,
    /// The count that decides, `MODE.EVENT`.
    pub figure: String,
    /// A kernel is bad when its count moved by more than this % of the good count (0: any move).
    pub min_change: f64,
    /// The kernels bisected, from good to bad.
    pub kernels: Vec<String>,
    /// Every boot in order: the two ends, then the steps.
    pub steps: Vec<BisectStep>,
    pub last_good: Option<String>,
    pub first_bad: Option<String>,
    /// Kernels between the last good and the first bad one that could not be counted.
    pub untestable_between: usize,
    /// The kernel functions that moved from the last good to the first bad kernel (kernel
    /// instructions per operation), largest first; None when not split.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub functions: Option<Vec<crate::results::kernel_timeline::FunctionMove>>,
}

/// One boot of a bisection.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct BisectStep {
    pub kernel: String,
    /// `good`, `bad` or `untestable`.
    pub verdict: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl BisectStep {
    pub fn of(kernel: &str, v: &Verdict) -> BisectStep {
        let (verdict, count, reason) = match v {
            Verdict::Good(x) => ("good", Some(*x), None),
            Verdict::Bad(x) => ("bad", Some(*x), None),
            Verdict::Untestable(why) => ("untestable", None, Some(why.clone())),
        };
        BisectStep {
            kernel: kernel.to_string(),
            verdict: verdict.into(),
            count,
            reason,
        }
    }
}

/// What `guest-check --json` prints.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct GuestCheckDoc {
    pub kernel: String,
    pub probe: String,
    pub figure: String,
    pub expect: f64,
    pub min_change: f64,
    /// `good` (exit 0), `bad` (exit 1) or `untestable` (exit 125).
    pub verdict: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How a kernel's count stands against the good kernel's.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Good(f64),
    Bad(f64),
    /// Not counted (not fetched, did not boot, the probe failed): why.
    Untestable(String),
}

/// Whether `value` has moved from `good` by more than `min_change` percent (0: any change).
pub fn is_bad(good: f64, value: f64, min_change: f64) -> bool {
    let moved = (value - good).abs();
    if min_change == 0.0 || good == 0.0 {
        return moved > 0.0;
    }
    moved > good.abs() * min_change / 100.0
}

/// Where a bisection ended: the last good and first bad kernel's indices (neighbours, or with
/// only untestable kernels between them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub last_good: usize,
    pub first_bad: usize,
}

/// The most boots a list of `n` kernels takes between its two ends (both ends already judged).
pub fn boots_needed(n: usize) -> usize {
    let mut inner = n.saturating_sub(2);
    let mut boots = 0;
    while inner > 0 {
        boots += 1;
        inner /= 2;
    }
    boots
}

/// Bisects kernels `0..n` where 0 is good and n-1 bad: `judge(i)` boots kernel i. Untestable
/// kernels are stepped around (the nearest testable one to the middle is tried instead).
pub fn bisect(n: usize, judge: &mut dyn FnMut(usize) -> Result<Verdict>) -> Result<Found> {
    let (mut lo, mut hi) = (0, n.saturating_sub(1));
    let mut untestable = vec![false; n];
    while hi > lo + 1 {
        let mid = (lo + hi) / 2;
        // The middle, then outwards from it, among the kernels not yet found untestable.
        let next = (0..hi - lo)
            .flat_map(|d| [mid + d, mid.wrapping_sub(d)])
            .find(|&i| i > lo && i < hi && !untestable[i]);
        let Some(i) = next else { break };
        match judge(i)? {
            Verdict::Good(_) => lo = i,
            Verdict::Bad(_) => hi = i,
            Verdict::Untestable(_) => untestable[i] = true,
        }
    }
    Ok(Found {
        last_good: lo,
        first_bad: hi,
    })
}

/// The archive's kernel packages of `good`'s flavour from `good` to `bad`, both included, in
/// Debian version order from good to bad (a bisection may look for a fix, newer kernel good).
pub fn archive_between(good: &str, bad: &str) -> Result<Vec<String>> {
    let (good, bad) = (resolve(good, "--good")?, resolve(bad, "--bad")?);
    let flavour = |name: &str| {
        crate::results::kernel_timeline::split_release(name.trim_start_matches("linux-image-")).1
    };
    let f = flavour(&good);
    if f.is_empty() || f != flavour(&bad) {
        return Err(usage!(
            "bisect --good {good} --bad {bad}: the two are not Debian kernel packages of one \
             flavour (cloud-amd64, rt-amd64, amd64); name two of one flavour, or give the \
             kernels between them in order with --between"
        ));
    }
    let all = archive::resolve(&format!("linux-image-*-{f}"))?;
    let version_of = |name: &str| {
        all.iter()
            .find(|c| c.name == name)
            .map(|c| c.version.clone())
            .ok_or_else(|| {
                usage!(
                    "bisect: the archive offers no {name} (apt-cache pkgnames linux-image- \
                     lists them; run apt-get update if the list is old)"
                )
            })
    };
    let (vg, vb) = (version_of(&good)?, version_of(&bad)?);
    let forward = debver::compare(&vg, &vb).is_le();
    let (lo, hi) = if forward { (&vg, &vb) } else { (&vb, &vg) };
    let mut names: Vec<String> = all
        .iter()
        .filter(|c| flavour(&c.name) == f)
        .filter(|c| debver::compare(&c.version, lo).is_ge())
        .filter(|c| debver::compare(&c.version, hi).is_le())
        .map(|c| c.name.clone())
        .collect();
    if !forward {
        names.reverse();
    }
    Ok(names)
}

fn resolve(name: &str, flag: &str) -> Result<String> {
    if super::sweep::is_path(name) || archive::is_pattern(name) {
        return Err(usage!(
            "bisect {flag} {name}: without --between, --good and --bad name Debian kernel \
             packages (linux-image-6.1.0-47-cloud-amd64), and the archive's packages between \
             them are bisected; for image files or patterns give the kernels between in order \
             with --between"
        ));
    }
    let full = if name.starts_with("linux-") {
        name.to_string()
    } else {
        format!("linux-image-{name}")
    };
    kernel::resolve_package(&full).map_err(|e| usage!("bisect {flag} {name}: {e:#}"))
}

/// `--figure MODE.EVENT`: `kernel.instructions`, `user.loads`, ...
pub fn figure_arg(text: &str) -> std::result::Result<String, String> {
    match text.trim().split_once('.') {
        Some(("user" | "kernel", "instructions" | "loads" | "stores")) => Ok(text.trim().into()),
        _ => Err(
            "give MODE.EVENT: MODE user or kernel, EVENT instructions, loads or stores, \
                  e.g. kernel.instructions"
                .into(),
        ),
    }
}

/// `--min-change PCT`: a percentage from 0 to 100, with or without `%`.
pub fn min_change_arg(text: &str) -> std::result::Result<f64, String> {
    let t = text.trim().trim_end_matches('%').trim();
    match t.parse::<f64>() {
        Ok(v) if (0.0..100.0).contains(&v) => Ok(v),
        _ => Err("give a percentage from 0 to 100 (e.g. 2 or 2%); 0: any difference".into()),
    }
}

/// `--expect COUNT`: a count per operation, zero or more.
pub fn count_arg(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(
            "give the good kernel's count per operation, e.g. 307 (osmeter run --guest \
                  GOOD PROBE prints it)"
                .into(),
        ),
    }
}

/// The machine the last good and first bad kernels are simulated on to split their kernel
/// instructions by function: the split is what is wanted, and the smallest machine costs least.
pub fn split_presets() -> Result<Vec<crate::memsim::machine::MachineConfig>> {
    super::presets(&[crate::memsim::config::PresetName("pentium")])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bisects a list whose counts are `counts` (None: untestable), recording the kernels booted.
    fn run(counts: &[Option<f64>], min: f64) -> (Found, Vec<usize>) {
        let good = counts[0].unwrap();
        let mut booted = Vec::new();
        let found = bisect(counts.len(), &mut |i| {
            booted.push(i);
            Ok(match counts[i] {
                None => Verdict::Untestable("did not boot".into()),
                Some(v) if is_bad(good, v, min) => Verdict::Bad(v),
                Some(v) => Verdict::Good(v),
            })
        })
        .unwrap();
        (found, booted)
    }

    #[test]
    fn the_first_changed_kernel_is_found_in_log2_boots() {
        let mut counts: Vec<Option<f64>> = vec![Some(307.0); 19];
        for c in counts.iter_mut().skip(11) {
            *c = Some(309.0);
        }
        let (found, booted) = run(&counts, 0.0);
        assert_eq!(
            found,
            Found {
                last_good: 10,
                first_bad: 11
            }
        );
        assert!(booted.len() <= boots_needed(19), "{booted:?}");
        assert_eq!(boots_needed(19), 5);
        assert_eq!(boots_needed(2), 0);
        // A change under the threshold is good: +2 on 307 is 0.65 %.
        let (found, _) = run(&counts, 1.0);
        assert_eq!(found.last_good, 17);
    }

    #[test]
    fn untestable_kernels_are_stepped_around() {
        let counts = [Some(10.0), Some(10.0), None, None, Some(12.0), Some(12.0)];
        let (found, booted) = run(&counts, 0.0);
        assert_eq!(
            found,
            Found {
                last_good: 1,
                first_bad: 4
            }
        );
        assert!(booted.contains(&2) && booted.contains(&3), "{booted:?}");
    }

    #[test]
    fn a_threshold_is_a_percentage_of_the_good_count() {
        assert!(!is_bad(300.0, 300.0, 0.0) && is_bad(300.0, 301.0, 0.0));
        assert!(!is_bad(300.0, 303.0, 1.0) && is_bad(300.0, 304.0, 1.0));
        assert!(is_bad(300.0, 290.0, 1.0));
        assert!(is_bad(0.0, 1.0, 5.0));
    }
}
