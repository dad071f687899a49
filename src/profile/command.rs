//! `stat --profile`: the command run once more under sampling after its timed runs, its children
//! included (they inherit the sampler), its stdout sent where stat sends it. The ring is drained,
//! and the mappings of new processes read, every few milliseconds while it runs, since a process's
//! mappings go with it.

use super::aggregate::{Gathered, Pace};
use super::symbolize::{kernel_symbols, Symbolizer};
use crate::guard::command::{GuardedChild, Stream};
use crate::meter::perf::sampling::Sampler;
use crate::results::profile::{Profiles, PROFILES_SCHEMA};
use anyhow::{anyhow, Result};
use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

const POLL_MS: i32 = 5;
/// A command that has not ended this long after Ctrl-C was passed on is ended with all it started.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// Profiles one run of `argv` (its standard output to `stdout`) under `label`; a refusal by the
/// kernel is a profile document that says why, not an error. The command runs under a guardian
/// (crate::guard::command), so nothing it starts outlives osmeter; the guardian inherits the
/// sampler too, but only waits, and its few samples are left out with osmeter's own.
/// `unsampled_ns`, the command's wall time when it ran without the sampler (the timed runs'
/// median), lets the sampler's own cost be taken out, as for probes.
pub fn profile_command(
    argv: &[String],
    stdout: Stream,
    label: &str,
    unsampled_ns: Option<f64>,
) -> Result<Profiles> {
    let mut sampler = match Sampler::open() {
        Ok(s) => s,
        Err(refused) => return Ok(Profiles::refused(refused.reason)),
    };
    let mut sym = Symbolizer::default();
    let mut seen = HashSet::new();
    let mut samples = Vec::new();
    sampler.enable();
    let started = Instant::now();
    let mut child = GuardedChild::spawn(argv, stdout, Stream::Inherit, None)
        .and_then(|mut c| c.release().map(|_| c))
        .map_err(|e| {
            crate::system::processes::cannot_start(&format!("{label} to profile it"), &e)
        })?;
    let guardian = child.guardian() as u32;
    let mut asked: Option<Instant> = None;
    child
        .wait_waking(POLL_MS, |child| {
            let before = samples.len();
            sampler.drain(&mut samples);
            for s in &samples[before..] {
                if s.pid != std::process::id() && s.pid != guardian && seen.insert(s.pid) {
                    sym.read_maps(s.pid);
                }
            }
            // Ctrl-C: the command has it from the terminal too; what was sampled is kept.
            match asked {
                None if crate::interrupt::requested() => {
                    asked = Some(Instant::now());
                    child.signal(libc::SIGINT);
                }
                Some(t) if t.elapsed() >= STOP_GRACE => child.stop(),
                _ => {}
            }
        })
        .map_err(|e| anyhow!("waiting for {label}: {e}"))?;
    let sampled_ns = started.elapsed().as_nanos() as f64;
    sampler.disable();
    drop(child);
    sampler.drain(&mut samples);
    // The sampler is osmeter's own thread's: its polling is not the command's time, nor is the
    // guardian's waiting.
    let own = std::process::id();
    samples.retain(|s| s.pid != own && s.pid != guardian);
    let got = Gathered {
        source: sampler.source,
        samples,
        stats: sampler.stats,
        operations: 1,
        notes: Vec::new(),
        // A run cut short by Ctrl-C says nothing of the command's pace.
        pace: unsampled_ns.filter(|_| asked.is_none()).map(|ns| Pace {
            sampled_ns_per_op: sampled_ns,
            unsampled_ns_per_op: ns,
        }),
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
