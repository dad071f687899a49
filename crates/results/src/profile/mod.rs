//! Where a probe's time goes: the document `run --profile` stores beside the figures (one profile
//! per figure, from sampling rounds of its own), and its compact text. docs/profiles.md describes
//! every field.

mod bootstrap;
mod brief;
pub mod drift;
pub mod explain;
mod text;

pub use brief::render_brief;
pub use text::render;

use crate::kernel_parts::Component;
use crate::meter::perf::sampling::SamplingSource;
use serde::{Deserialize, Serialize};

pub const PROFILES_SCHEMA: &str = "osmeter.profiles/1";

/// Fewer samples than this say little about where the time goes: the figure says so instead.
pub const FEW_SAMPLES: u64 = 100;

/// The profiles of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Profiles {
    pub schema: String,
    /// Why no figure was profiled (the kernel refused to sample), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// Why the kernel's functions are addresses, not names (kallsyms unreadable or hidden), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_symbols: Option<String>,
    #[serde(default)]
    pub probes: Vec<ProbeProfile>,
}

impl Profiles {
    pub fn refused(reason: String) -> Profiles {
        Profiles {
            schema: PROFILES_SCHEMA.into(),
            refused: Some(reason),
            ..Profiles::default()
        }
    }
}

/// One figure's profile. Times are nanoseconds of CPU per operation of the figure, on the measuring
/// thread and the processes it started (partners of two-party probes).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProbeProfile {
    /// The figure's label (`probe` or `probe[param=value]`).
    pub label: String,
    /// None when nothing was sampled.
    pub source: Option<SamplingSource>,
    pub samples: u64,
    /// Samples the kernel dropped (ring full) and times it throttled the event.
    pub lost: u64,
    pub throttled: u64,
    /// Operations run while sampling.
    pub operations: u64,
    /// Distinct processes and threads that samples were taken in: more than one when a partner
    /// (or a workload's child) was sampled with the measuring thread.
    #[serde(default)]
    pub processes: u32,
    #[serde(default)]
    pub threads: u32,
    /// CPU time the samples stand for, per operation: user + kernel.
    pub ns_per_op: f64,
    pub user_ns_per_op: f64,
    pub kernel_ns_per_op: f64,
    /// Kernel time by component, largest first.
    pub components: Vec<ComponentShare>,
    /// Functions by the time spent in them (self time), largest first, at most [`TOP_FUNCTIONS`].
    pub functions: Vec<FunctionShare>,
    /// Call stacks, root first, frames joined by `;`, with their sample counts (the folded format
    /// of flamegraph.pl), most frequent first, at most [`MAX_STACKS`].
    pub folded: Vec<FoldedStack>,
    /// How many times slower the workload ran under sampling than without (1 or more), when it
    /// was timed both ways; the times per operation above are divided by it, so that they are the
    /// workload's own at its unsampled speed. Profiles stored before it was measured have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_slowdown: Option<f64>,
    /// What limits this profile (too few samples, samples lost), for the reader.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

pub const TOP_FUNCTIONS: usize = 20;
pub const MAX_STACKS: usize = 2000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ComponentShare {
    pub component: Component,
    pub ns_per_op: f64,
    pub samples: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FunctionShare {
    /// The symbol, `binary+0xOFFSET` for user code without one, or `0xADDRESS` where no symbol
    /// covers the address (never a guessed name).
    pub name: String,
    pub kernel: bool,
    /// Kernel functions only; an address with no symbol takes its nearest named caller's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<Component>,
    pub ns_per_op: f64,
    pub samples: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FoldedStack {
    pub stack: String,
    pub samples: u64,
}

impl ProbeProfile {
    /// The kernel's share of the sampled time, 0 to 1.
    pub fn kernel_share(&self) -> f64 {
        if self.ns_per_op > 0.0 {
            self.kernel_ns_per_op / self.ns_per_op
        } else {
            0.0
        }
    }
}

/// The folded stacks of every profile, each prefixed with its figure's label as the root frame,
/// as flamegraph.pl, inferno and speedscope read them. Frames are stored names: a `;` or a line
/// break in one (written by another host) would split it, so they become `_`.
pub fn folded_text(profiles: &Profiles) -> String {
    let clean = |s: &str| s.replace(['\n', '\r'], "_");
    let mut out = String::new();
    for p in &profiles.probes {
        for s in &p.folded {
            let label = clean(&p.label).replace([';', ' '], "_");
            out.push_str(&format!("{label};{} {}\n", clean(&s.stack), s.samples));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::model::tests::empty_run;

    /// A profile whose samples each stand for 1 ns per operation.
    fn profile(label: &str, security_ns: f64, entry_ns: f64) -> ProbeProfile {
        let n = |ns: f64| ns as u64;
        ProbeProfile {
            label: label.into(),
            source: Some(SamplingSource::CpuClock),
            samples: n(100.0 + security_ns + entry_ns),
            operations: 10,
            ns_per_op: 100.0 + security_ns + entry_ns,
            user_ns_per_op: 100.0,
            kernel_ns_per_op: security_ns + entry_ns,
            components: vec![
                ComponentShare {
                    component: Component::Security,
                    ns_per_op: security_ns,
                    samples: n(security_ns),
                },
                ComponentShare {
                    component: Component::EntryExit,
                    ns_per_op: entry_ns,
                    samples: n(entry_ns),
                },
            ],
            functions: vec![FunctionShare {
                name: "__seccomp_filter".into(),
                kernel: true,
                component: Some(Component::Security),
                ns_per_op: security_ns,
                samples: n(security_ns),
            }],
            folded: vec![FoldedStack {
                stack: "a;b".into(),
                samples: 3,
            }],
            ..ProbeProfile::default()
        }
    }

    #[test]
    fn profiles_travel_with_the_run_and_runs_without_them_stay_as_they_were() {
        let plain = serde_json::to_value(empty_run()).unwrap();
        assert!(plain.get("profiles").is_none());
        let mut run = empty_run();
        run.profiles = Some(Profiles {
            schema: PROFILES_SCHEMA.into(),
            probes: vec![profile("syscall.null", 5.0, 50.0)],
            ..Profiles::default()
        });
        let text = serde_json::to_string(&run).unwrap();
        let back: crate::results::model::Run = serde_json::from_str(&text).unwrap();
        assert_eq!(back.profiles, run.profiles);
        assert_eq!(
            folded_text(run.profiles.as_ref().unwrap()),
            "syscall.null;a;b 3\n"
        );
    }

    #[test]
    fn explain_gives_the_difference_to_the_component_and_function_that_grew() {
        let with = |p: ProbeProfile| {
            let mut r = empty_run();
            r.profiles = Some(Profiles {
                schema: PROFILES_SCHEMA.into(),
                probes: vec![p],
                ..Profiles::default()
            });
            r
        };
        let a1 = with(profile("syscall.null", 0.0, 50.0));
        let a2 = with(profile("syscall.null", 10.0, 50.0));
        let b = with(profile("syscall.null", 205.0, 55.0));
        let e = explain::explain(&[&a1, &a2], &[&b], &["syscall.null".into()]);
        assert_eq!(e.missing, None);
        let f = &e.figures[0];
        // A is the mean of its two runs.
        assert_eq!(f.kernel_ns_per_op.a, 55.0);
        assert_eq!(f.kernel_ns_per_op.delta, 205.0);
        assert_eq!(f.components[0].0, Component::Security);
        assert_eq!(f.components[0].1.delta, 200.0);
        assert_eq!(f.components[1].1.delta, 5.0);
        assert_eq!(f.functions[0].0, "__seccomp_filter");
        let none = explain::explain(&[&empty_run()], &[&b], &["syscall.null".into()]);
        assert!(none
            .missing
            .unwrap()
            .contains("baseline (A) has no profiles"));
        assert!(none.figures.is_empty());
        assert!(explain::render(&e).contains("security     5.0 -> 205.0 (+200.0, "));
        // 205 samples of security on B against 0 and 10 on A's two runs: about 200 +- 2 sqrt(205)
        // and the spread of A's runs.
        let [lo, hi] = f.components[0].1.ci95;
        assert!(
            lo > 150.0 && lo < 200.0 && hi > 200.0 && hi < 255.0,
            "{lo} {hi}"
        );
        let [lo, hi] = f.ns_per_op.ci95;
        assert!(
            lo < f.ns_per_op.delta && f.ns_per_op.delta < hi,
            "{lo} {hi}"
        );
        assert!(e.interval.starts_with("bootstrap"), "{}", e.interval);
    }
}
