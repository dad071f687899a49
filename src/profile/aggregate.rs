//! Samples to a profile: each sample stands for an amount of CPU time (its period on cpu-clock; a
//! sampling interval on cycles, whose frequency mode aims at [`SAMPLE_HZ`] a second of CPU), which
//! goes to user or kernel, to the component of the kernel function it was taken in (an address no
//! symbol covers takes its nearest named caller's, so a JIT-compiled BPF program counts where it
//! was called from), and to that function; the whole stack goes to the folded stacks.

use super::symbolize::{Frame, Symbolizer};
use crate::kernel_parts::Component;
use crate::meter::perf::sampling::{RingStats, Sample, SamplingSource, SAMPLE_HZ};
use crate::results::profile::{
    ComponentShare, FoldedStack, FunctionShare, ProbeProfile, FEW_SAMPLES, MAX_STACKS,
    TOP_FUNCTIONS,
};
use std::collections::HashMap;

/// What a profiling round gathered, handed from the worker to the run.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Gathered {
    pub source: SamplingSource,
    pub samples: Vec<Sample>,
    pub stats: RingStats,
    pub operations: u64,
    /// How the samples were taken, when the reader should know (a workload's cgroup, or why not).
    #[serde(default)]
    pub notes: Vec<String>,
    /// How fast the workload ran with the sampler on and with it off, when both were timed.
    #[serde(default)]
    pub pace: Option<Pace>,
}

/// Wall time per operation of the workload's runs under sampling and of runs of it between them
/// without: on a machine where each sample is dear (a VM whose timer interrupts leave the guest)
/// the sampled runs are several times slower, and every sample then stands for less of the
/// workload's own time than its period.
#[derive(
    Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Pace {
    pub sampled_ns_per_op: f64,
    pub unsampled_ns_per_op: f64,
}

impl Pace {
    /// How many times slower the sampled runs were; never below 1 (sampling cannot speed a
    /// workload up, so a lower ratio is noise and nothing is scaled).
    pub fn slowdown(&self) -> f64 {
        let ratio = self.sampled_ns_per_op / self.unsampled_ns_per_op;
        if ratio.is_finite() {
            ratio.max(1.0)
        } else {
            1.0
        }
    }
}

/// A slowdown below this is not worth a note of its own.
const NOTED_SLOWDOWN: f64 = 1.1;

/// The kernel's handler of the ioctl that switches the sampler on and off: a sample taken inside
/// it is the sampler's own cost, not the workload's (the enable is sampled from the moment the
/// first CPU's event starts, the disable until the last one stops).
const SAMPLER_SWITCH: &str = "perf_ioctl";

#[derive(Default)]
struct Tally {
    ns: f64,
    samples: u64,
}

impl Tally {
    fn add(&mut self, ns: f64) {
        self.ns += ns;
        self.samples += 1;
    }
}

pub fn profile(label: &str, got: &Gathered, sym: &mut Symbolizer<'_>) -> ProbeProfile {
    let mut user = Tally::default();
    let mut kernel = Tally::default();
    let mut components: HashMap<Component, Tally> = HashMap::new();
    let mut functions: HashMap<(String, bool, Option<Component>), Tally> = HashMap::new();
    let mut stacks: HashMap<String, u64> = HashMap::new();
    let mut own = 0u64;
    for s in &got.samples {
        let ns = match got.source {
            SamplingSource::CpuClock => s.period as f64,
            SamplingSource::Cycles => 1e9 / SAMPLE_HZ as f64,
        };
        let kframes: Vec<Frame> = s.kernel_chain.iter().map(|&a| sym.kernel(a)).collect();
        if kframes.iter().any(|f| f.name == SAMPLER_SWITCH) {
            own += 1;
            continue;
        }
        let uframes: Vec<Frame> = s.user_chain.iter().map(|&a| sym.user(s.pid, a)).collect();
        if s.in_kernel {
            kernel.add(ns);
            // A leaf the taxonomy places nowhere (a clock read, a small helper) works for its
            // caller: the trace clock a tracepoint reads is tracing's time, not "other".
            let component = kframes
                .iter()
                .filter_map(|f| f.component)
                .find(|&c| c != Component::Other)
                .unwrap_or(Component::Other);
            components.entry(component).or_default().add(ns);
            let leaf = kframes
                .first()
                .map_or_else(|| sym.kernel(s.ip).name, |f| f.name.clone());
            functions
                .entry((leaf, true, Some(component)))
                .or_default()
                .add(ns);
        } else {
            user.add(ns);
            let leaf = uframes
                .first()
                .map_or_else(|| sym.user(s.pid, s.ip).name, |f| f.name.clone());
            functions.entry((leaf, false, None)).or_default().add(ns);
        }
        let stack: Vec<&str> = uframes
            .iter()
            .rev()
            .chain(kframes.iter().rev())
            .map(|f| f.name.as_str())
            .collect();
        let stack = if stack.is_empty() {
            "[no stack]".to_string()
        } else {
            stack.join(";")
        };
        *stacks.entry(stack).or_default() += 1;
    }
    // Each sample's period counts the sampler's own cost with the workload's time; scaled by the
    // slowdown, the figures are the workload's time per operation at its unsampled speed.
    let slowdown = got.pace.map(|p| p.slowdown());
    let ops = got.operations.max(1) as f64 * slowdown.unwrap_or(1.0);
    let mut components: Vec<ComponentShare> = components
        .into_iter()
        .map(|(component, t)| ComponentShare {
            component,
            ns_per_op: t.ns / ops,
            samples: t.samples,
        })
        .collect();
    components.sort_by(|a, b| {
        b.ns_per_op
            .total_cmp(&a.ns_per_op)
            .then(a.component.cmp(&b.component))
    });
    let mut functions: Vec<FunctionShare> = functions
        .into_iter()
        .map(|((name, kernel, component), t)| FunctionShare {
            name,
            kernel,
            component,
            ns_per_op: t.ns / ops,
            samples: t.samples,
        })
        .collect();
    functions.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.name.cmp(&b.name)));
    functions.truncate(TOP_FUNCTIONS);
    let mut folded: Vec<FoldedStack> = stacks
        .into_iter()
        .map(|(stack, samples)| FoldedStack { stack, samples })
        .collect();
    folded.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.stack.cmp(&b.stack)));
    let cut = folded.len().saturating_sub(MAX_STACKS);
    folded.truncate(MAX_STACKS);
    let samples = got.samples.len() as u64 - own;
    let distinct = |key: fn(&Sample) -> u32| {
        let mut v: Vec<u32> = got.samples.iter().map(key).collect();
        v.sort_unstable();
        v.dedup();
        v.len() as u32
    };
    ProbeProfile {
        processes: distinct(|s| s.pid),
        threads: distinct(|s| s.tid),
        label: label.to_string(),
        source: Some(got.source),
        samples,
        lost: got.stats.lost,
        throttled: got.stats.throttled,
        operations: got.operations,
        ns_per_op: (user.ns + kernel.ns) / ops,
        user_ns_per_op: user.ns / ops,
        kernel_ns_per_op: kernel.ns / ops,
        components,
        functions,
        folded,
        sampling_slowdown: slowdown,
        notes: got
            .notes
            .iter()
            .cloned()
            .chain(slowdown_note(got.pace))
            .chain(notes(samples, &got.stats, cut, own))
            .collect(),
    }
}

fn slowdown_note(pace: Option<Pace>) -> Option<String> {
    let pace = pace?;
    let slowdown = pace.slowdown();
    (slowdown >= NOTED_SLOWDOWN).then(|| {
        format!(
            "sampling slowed the workload {slowdown:.2}x ({} per operation sampled, {} without): \
             the times per operation are scaled to its unsampled speed",
            crate::units::duration(pace.sampled_ns_per_op),
            crate::units::duration(pace.unsampled_ns_per_op),
        )
    })
}

fn notes(samples: u64, stats: &RingStats, cut: usize, own: u64) -> Vec<String> {
    let mut out = Vec::new();
    if own > 0 {
        out.push(format!(
            "{own} sample{} left out: taken while the sampler was being switched on or off",
            if own == 1 { "" } else { "s" }
        ));
    }
    if samples < FEW_SAMPLES {
        out.push(format!(
            "only {samples} samples: the workload was on a CPU too briefly while sampled to say \
             where its time goes (it may mostly wait, for I/O or a partner)"
        ));
    }
    if stats.lost > 0 {
        out.push(format!(
            "{} samples lost (the ring was full): the shares leave them out",
            stats.lost
        ));
    }
    if stats.throttled > 0 {
        out.push(format!(
            "the kernel throttled sampling {} times (perf_event_max_sample_rate)",
            stats.throttled
        ));
    }
    if cut > 0 {
        out.push(format!("{cut} rarest stacks left out of the folded stacks"));
    }
    out
}

#[cfg(test)]
#[path = "aggregate_tests.rs"]
mod tests;
