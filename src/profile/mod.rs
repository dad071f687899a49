//! Where a probe's time goes: its workload run again under sampling (`run --profile`), apart from
//! the timed rounds, and the samples turned into time per operation by user and kernel, kernel
//! component, function and call stack (the document is `results::profile`).
//!
//! The sampler is opened before the probe is built, so the partner threads and processes a
//! two-party probe starts inherit it; it is enabled only around the timed region of each sample
//! of the workload, so set-up and clean-up are not in the profile. Names are taken while the
//! processes still live (their mappings go with them).

pub mod aggregate;
pub mod elf;
pub mod symbolize;

use crate::harness::Workload;
use crate::interrupt;
use crate::meter::perf::sampling::Sampler;
use crate::results::profile::ProbeProfile;
use aggregate::Gathered;
use anyhow::Result;
use std::path::Path;
use std::time::{Duration, Instant};

/// Time in the workload's timed region per figure: a few thousand samples at
/// [`crate::meter::perf::sampling::SAMPLE_HZ`].
pub const PROFILE_TIME: Duration = Duration::from_millis(250);
/// A sample of the workload this short doubles its operations when no earlier round said how many.
const SHORT_SAMPLE: Duration = Duration::from_millis(5);

/// Runs `work` under `sampler` for [`PROFILE_TIME`] (less after Ctrl-C, keeping what was
/// sampled), `iterations_hint` operations at a time (what the timed rounds settled on).
pub fn sample_workload<W: Workload + ?Sized>(
    sampler: &mut Sampler,
    work: &mut W,
    iterations_hint: Option<u64>,
) -> Result<Gathered> {
    let mut samples = Vec::new();
    let mut iters = iterations_hint
        .unwrap_or(1)
        .clamp(1, work.max_iters().max(1));
    let mut operations = 0u64;
    let mut spent = Duration::ZERO;
    while spent < PROFILE_TIME && !interrupt::requested() {
        work.prepare(iters)?;
        sampler.enable();
        let t = Instant::now();
        let ran = work.run(iters);
        let took = t.elapsed();
        sampler.disable();
        ran?;
        work.finish()?;
        sampler.drain(&mut samples);
        spent += took;
        operations += iters;
        if iterations_hint.is_none() && took < SHORT_SAMPLE {
            iters = (iters * 2).min(work.max_iters().max(1));
        }
    }
    sampler.drain(&mut samples);
    Ok(Gathered {
        source: sampler.source,
        samples,
        stats: sampler.stats,
        operations,
    })
}

/// The profile of what was gathered, named with this machine's kernel symbols and the mappings
/// of the sampled processes (to be called while they still run). The second value says why kernel
/// functions stayed addresses, if they did.
pub fn profile_of(label: &str, got: &Gathered) -> (ProbeProfile, Option<String>) {
    let mut sym = symbolize::Symbolizer::new(Path::new("/proc/kallsyms"));
    let mut pids: Vec<u32> = got.samples.iter().map(|s| s.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    for pid in pids {
        sym.read_maps(pid);
    }
    let profile = aggregate::profile(label, got, &mut sym);
    (profile, sym.kernel_note.clone())
}
