//! `run --profile`: between the first timed rounds and the extra ones, one more round of every
//! measured figure in a fresh worker, its workload under sampling instead of the clock, so the
//! timed rounds stay untouched and surround the profiles in time.
//! The kernel refusing to sample ends profiling with one reason for the run; Ctrl-C keeps the
//! profiles taken.

use super::worker::{self, Job, Report, Task};
use super::{Progress, State, SuiteConfig};
use crate::interrupt;
use crate::kernel_parts::SymbolTable;
use crate::meter::perf::sampling::Sampler;
use crate::probes::{self, Built, ProbeEnv};
use crate::profile::profile_of;
use crate::profile::symbolize::kernel_symbols;
use crate::results::profile::{Profiles, PROFILES_SCHEMA};
use anyhow::{anyhow, Context, Result};
use std::path::Path;

/// One sampling round of every figure that was measured, in the given order.
pub(super) fn profile_all(
    config: &SuiteConfig,
    state: &mut State,
    progress: &mut dyn FnMut(Progress),
) -> Result<Option<Profiles>> {
    if !config.profile || state.interrupted {
        return Ok(None);
    }
    let mut profiles = Profiles {
        schema: PROFILES_SCHEMA.into(),
        ..Profiles::default()
    };
    let measured: Vec<usize> = (0..config.variants.len())
        .filter(|&i| !state.gathered[i].records.is_empty())
        .collect();
    // Read once, at the first profile: every worker samples the same kernel.
    let mut kernel: Option<Option<SymbolTable>> = None;
    let count = measured.len();
    for (nth, i) in measured.into_iter().enumerate() {
        if interrupt::requested() {
            state.interrupted = true;
            break;
        }
        let variant = &config.variants[i];
        let label = variant.label();
        progress(Progress {
            done: state.done,
            total: state.total,
            round: nth,
            rounds: count,
            label: Some(&label),
            elapsed: state.started.elapsed(),
            deadline: None,
            profiling: true,
        });
        let task = Task::Profile {
            probe: variant.probe.id.to_string(),
            params: variant.params.clone(),
            scale: variant.scale,
            iterations_hint: state.gathered[i]
                .records
                .first()
                .map(|r| r.outcome.iterations),
        };
        match worker::run_job(&config.worker, &State::job(config, task))? {
            Report::Profile(got, names) => {
                let table = kernel.get_or_insert_with(|| {
                    let read = kernel_symbols(Path::new("/proc/kallsyms"));
                    profiles.kernel_symbols = read.as_ref().err().cloned();
                    read.ok()
                });
                profiles
                    .probes
                    .push(profile_of(&label, &got, names, table.as_ref()));
            }
            Report::ProfileRefused(reason) => {
                profiles.refused = Some(reason);
                break;
            }
            Report::Interrupted => {
                state.interrupted = true;
                break;
            }
            // The figure stands without a profile; say why in its place.
            Report::Skipped(why) | Report::Failed(why) => {
                profiles.probes.push(crate::results::profile::ProbeProfile {
                    label,
                    notes: vec![format!("not profiled: {why}")],
                    ..Default::default()
                })
            }
            Report::Overhead(_) | Report::Yardstick(_) | Report::Round(_) => {
                return Err(anyhow!(
                    "a measuring process answered the wrong task; this is a bug"
                ))
            }
        }
    }
    Ok(Some(profiles))
}

/// The worker's side of a profile task: sampling opened before the probe is built (so its
/// partners inherit it), the workload sampled, named while it still runs.
pub(super) fn serve(job: &Job) -> Result<Report> {
    let Task::Profile {
        probe,
        params,
        scale,
        iterations_hint,
    } = &job.task
    else {
        return Err(anyhow!("not a profile task; this is a bug"));
    };
    let def = probes::find(probe).ok_or_else(|| anyhow!("no probe {probe}"))?;
    let mut sampler = match Sampler::open() {
        Ok(s) => s,
        Err(refused) => return Ok(Report::ProfileRefused(refused.reason)),
    };
    let env = ProbeEnv {
        scratch: &job.scratch,
        cpu: job.cpu,
        scale: *scale,
        file_systems: job.file_systems,
    };
    match (def.build)(&env, params).with_context(|| format!("setting up {probe}"))? {
        Built::Skip(reason) => Ok(Report::Skipped(reason)),
        Built::Ready(mut work) => {
            let how = whole_workload(&mut sampler, work.as_ref());
            let mut got =
                crate::profile::sample_workload(&mut sampler, work.as_mut(), *iterations_hint)?;
            got.notes.extend(how);
            let names = crate::profile::name_user_frames(&got);
            Ok(Report::Profile(Box::new(got), names))
        }
    }
}

/// Widens `sampler` (the measuring process and what it starts) to every process of the workload:
/// its cgroup, for workloads that have one (a server it reaches but did not start is in it), and
/// the run's file system server (`--fs fuse`), which works for every file probe and app but runs
/// in a cgroup of its own. Returns how it was sampled, for the profile's notes.
fn whole_workload(sampler: &mut Sampler, work: &dyn crate::harness::Workload) -> Vec<String> {
    let mut how = Vec::new();
    if let Some(cgroup) = work.cgroup() {
        how.push(match Sampler::open_cgroup(&cgroup) {
            Ok(whole) => {
                *sampler = whole;
                format!(
                    "sampled: every process in the workload's cgroup {}",
                    cgroup.display()
                )
            }
            Err(refused) => format!(
                "sampled: the measuring process and what it started, not the workload's cgroup \
                 ({})",
                refused.reason
            ),
        });
    }
    if let Some(server) = crate::apps::image::run_server_cgroup() {
        how.push(match sampler.add_cgroup(&server) {
            Ok(()) => format!(
                "sampled with it: the run's file system server (fuse2fs, cgroup {})",
                server.display()
            ),
            Err(refused) => format!(
                "not sampled: the run's file system server (fuse2fs, cgroup {}): {}",
                server.display(),
                refused.reason
            ),
        });
    }
    how
}
