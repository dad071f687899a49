//! Where a probe's time goes: its workload run again under sampling (`run --profile`), apart from
//! the timed rounds, and the samples turned into time per operation by user and kernel, kernel
//! component, function and call stack (the document is `results::profile`).
//!
//! The sampler is opened before the probe is built, so the partner threads and processes a
//! two-party probe starts inherit it; it is enabled only around the timed region of each sample
//! of the workload, so set-up and clean-up are not in the profile. Names are taken while the
//! processes still live (their mappings go with them).

pub mod aggregate;
pub mod command;
pub mod symbolize;

use crate::harness::Workload;
use crate::interrupt;
use crate::kernel_parts::SymbolTable;
use crate::meter::perf::sampling::Sampler;
use crate::results::profile::ProbeProfile;
use aggregate::{Gathered, Pace};
use anyhow::Result;
use std::time::{Duration, Instant};
use symbolize::{Symbolizer, UserName};

/// Time in the workload's timed region per figure: a few thousand samples at
/// [`crate::meter::perf::sampling::SAMPLE_HZ`].
pub const PROFILE_TIME: Duration = Duration::from_millis(150);
/// A sampled run of the workload shorter than this gets more operations next time: switching the
/// sampler on and off costs a call into every CPU's event (and every inherited copy's), which
/// would otherwise take much of a round made of short runs (1 ms samples cost more than they
/// sampled here).
const SHORT_RUN: Duration = Duration::from_millis(20);

/// Wall time of the workload's runs without the sampler, taken between the sampled ones, that
/// the sampler's cost is judged from: a third of [`PROFILE_TIME`] at most.
const UNSAMPLED_TIME: Duration = Duration::from_millis(50);

/// Runs `work` under `sampler` for [`PROFILE_TIME`] (less after Ctrl-C, keeping what was
/// sampled), `iterations_hint` operations at a time (what the timed rounds settled on) at first,
/// more when a run is shorter than [`SHORT_RUN`]. After each sampled run, while less than
/// [`UNSAMPLED_TIME`] was spent so, the same run without the sampler, to see how much it slowed
/// the workload.
pub fn sample_workload<W: Workload + ?Sized>(
    sampler: &mut Sampler,
    work: &mut W,
    iterations_hint: Option<u64>,
) -> Result<Gathered> {
    let mut samples = Vec::new();
    let mut iters = iterations_hint
        .unwrap_or(1)
        .clamp(1, work.max_iters().max(1));
    let (mut sampled, mut unsampled) = (Paced::default(), Paced::default());
    while sampled.spent < PROFILE_TIME && !interrupt::requested() {
        let took = timed_run(work, iters, Some(&*sampler))?;
        sampler.drain(&mut samples);
        sampled.add(iters, took);
        if unsampled.spent < UNSAMPLED_TIME && !interrupt::requested() {
            unsampled.add(iters, timed_run(work, iters, None)?);
        }
        if took < SHORT_RUN {
            iters = longer_run(iters, took).min(work.max_iters().max(1));
        }
    }
    sampler.drain(&mut samples);
    Ok(Gathered {
        source: sampler.source,
        samples,
        stats: sampler.stats,
        operations: sampled.operations,
        notes: Vec::new(),
        pace: sampled.per_op().zip(unsampled.per_op()).map(|(s, u)| Pace {
            sampled_ns_per_op: s,
            unsampled_ns_per_op: u,
        }),
    })
}

/// One run of `iters` operations, prepared and finished untimed, under `sampler` when given.
fn timed_run<W: Workload + ?Sized>(
    work: &mut W,
    iters: u64,
    sampler: Option<&Sampler>,
) -> Result<Duration> {
    work.prepare(iters)?;
    if let Some(s) = sampler {
        s.enable();
    }
    let t = Instant::now();
    let ran = work.run(iters);
    let took = t.elapsed();
    if let Some(s) = sampler {
        s.disable();
    }
    ran?;
    work.finish()?;
    Ok(took)
}

/// Operations run and the wall time they took.
#[derive(Default)]
struct Paced {
    operations: u64,
    spent: Duration,
}

impl Paced {
    fn add(&mut self, iters: u64, took: Duration) {
        self.operations += iters;
        self.spent += took;
    }

    fn per_op(&self) -> Option<f64> {
        (self.operations > 0 && !self.spent.is_zero())
            .then(|| self.spent.as_nanos() as f64 / self.operations as f64)
    }
}

/// Operations for a run of about [`SHORT_RUN`], given that `iters` took `took`; at most 16 times
/// as many at a step, so one run that was fast by chance does not make the next one far too long.
fn longer_run(iters: u64, took: Duration) -> u64 {
    let want = (iters as u128 * SHORT_RUN.as_nanos()).div_ceil(took.as_nanos().max(1));
    let capped = u64::try_from(want.min(iters as u128 * 16)).unwrap_or(u64::MAX);
    capped.max(iters.saturating_add(1))
}

/// Names of every user address sampled, from the mappings of the sampled processes: to be called
/// in the worker while they still run.
pub fn name_user_frames(got: &Gathered) -> Vec<UserName> {
    let mut sym = Symbolizer::default();
    let mut pids: Vec<u32> = got.samples.iter().map(|s| s.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    for pid in pids {
        sym.read_maps(pid);
    }
    for s in &got.samples {
        for &addr in s.user_chain.iter().chain((!s.in_kernel).then_some(&s.ip)) {
            sym.user(s.pid, addr);
        }
    }
    sym.user_names()
}

/// The profile of what a worker gathered, with the user names it found and this machine's kernel
/// symbols (read once per run: `symbolize::kernel_symbols`).
pub fn profile_of(
    label: &str,
    got: &Gathered,
    user_names: Vec<UserName>,
    kernel: Option<&SymbolTable>,
) -> ProbeProfile {
    let mut sym = Symbolizer::with_kernel(kernel);
    sym.preset_user(user_names);
    aggregate::profile(label, got, &mut sym)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_runs_grow_toward_the_run_length_and_never_shrink() {
        // 1000 operations in 2 ms: 10 000 for 20 ms.
        assert_eq!(longer_run(1000, Duration::from_millis(2)), 10_000);
        // Far too short: at most 16 times at a step.
        assert_eq!(longer_run(10, Duration::from_nanos(10)), 160);
        // Already long: one more at least, so a run that keeps coming out short still grows.
        assert_eq!(longer_run(7, Duration::from_millis(19)), 8);
        assert_eq!(longer_run(1, Duration::ZERO), 16);
    }
}
