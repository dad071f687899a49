//! `stat --profile`: the command run once more under sampling after its timed runs, its children
//! included (they inherit the sampler), its stdout sent where stat sends it. The ring is drained,
//! and the mappings of new processes read, every few milliseconds while it runs, since a process's
//! mappings go with it.

use super::aggregate::Gathered;
use super::symbolize::{kernel_symbols, Symbolizer};
use crate::meter::perf::sampling::Sampler;
use crate::results::profile::{Profiles, PROFILES_SCHEMA};
use anyhow::{Context, Result};
use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const POLL: Duration = Duration::from_millis(5);

/// Profiles `cmd` (one run of it) under `label`; a refusal by the kernel is a profile document
/// that says why, not an error.
pub fn profile_command(mut cmd: Command, label: &str) -> Result<Profiles> {
    let mut sampler = match Sampler::open() {
        Ok(s) => s,
        Err(refused) => return Ok(Profiles::refused(refused.reason)),
    };
    let mut sym = Symbolizer::default();
    let mut seen = HashSet::new();
    let mut samples = Vec::new();
    sampler.enable();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {label} to profile it"))?;
    loop {
        let done = child.try_wait()?.is_some();
        let before = samples.len();
        sampler.drain(&mut samples);
        for s in &samples[before..] {
            if s.pid != std::process::id() && seen.insert(s.pid) {
                sym.read_maps(s.pid);
            }
        }
        if done || crate::interrupt::requested() {
            break;
        }
        std::thread::sleep(POLL);
    }
    sampler.disable();
    if child.try_wait()?.is_none() {
        // Ctrl-C: the command has it too; what was sampled is kept.
        let _ = child.wait();
    }
    sampler.drain(&mut samples);
    // The sampler is osmeter's own thread's: its polling is not the command's time.
    let own = std::process::id();
    samples.retain(|s| s.pid != own);
    let got = Gathered {
        source: sampler.source,
        samples,
        stats: sampler.stats,
        operations: 1,
    };
    for s in &got.samples {
        for &addr in s.user_chain.iter().chain((!s.in_kernel).then_some(&s.ip)) {
            sym.user(s.pid, addr);
        }
    }
    let names = sym.user_names();
    let kernel = kernel_symbols(Path::new("/proc/kallsyms"));
    let profile = super::profile_of(label, &got, names, kernel.as_ref().ok());
    Ok(Profiles {
        schema: PROFILES_SCHEMA.into(),
        kernel_symbols: kernel.err(),
        probes: vec![profile],
        ..Profiles::default()
    })
}
