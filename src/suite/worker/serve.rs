//! The measuring process's own side: it checks that descriptor 3 is the pipe its parent named,
//! reads its [`Job`], pins itself, takes SCHED_FIFO and its RLIMIT_RTTIME when asked, measures
//! the task and writes one [`Report`] line back.

use super::{
    pipe_identity, Answer, Job, Report, Stop, Task, REPORT_FD, REPORT_PIPE_ENV, SUBCOMMAND,
};
use crate::harness::round::measure_round;
use crate::harness::HarnessConfig;
use crate::interrupt;
use crate::meter::rt_limit::{self, OnLimit, RtTimeLimit};
use crate::meter::{placement, SystemSensors};
use crate::probes::{self, Built, ProbeEnv};
use anyhow::{anyhow, Context, Result};
use std::io::{Read, Write};

/// The worker's side: reads the job from stdin, measures it, writes the report to descriptor 3.
/// Exit status 0 whenever a report was written, whatever it says.
pub fn serve() -> Result<i32> {
    // The parent named its pipe; descriptor 3 must be that very pipe, not whatever a shell or a
    // tool such as `/usr/bin/time -o FILE` happened to leave open there.
    let named = std::env::var(REPORT_PIPE_ENV).ok();
    if named.is_none() || named != pipe_identity(REPORT_FD) {
        return Err(crate::usage!(
            "{SUBCOMMAND} is started by `osmeter run` itself, not by hand; run `osmeter run` instead"
        ));
    }
    // Exec'd programs (the exec probe's helper) must not inherit the report pipe.
    // SAFETY: setting a flag on a descriptor we checked exists.
    unsafe { libc::fcntl(REPORT_FD, libc::F_SETFD, libc::FD_CLOEXEC) };
    interrupt::install();
    let mut text = Vec::new();
    std::io::stdin()
        .read_to_end(&mut text)
        .context("cannot read the job")?;
    let job: Job = serde_json::from_slice(&text).context("cannot read the job")?;
    let report = perform(&job);
    let answer = Answer {
        report,
        stopped_by: interrupt::first_signal().map(|signal| Stop {
            signal,
            sender: interrupt::first_sender(),
        }),
    };
    // SAFETY: descriptor 3 was checked above and is owned by this process from here on.
    let mut out = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(REPORT_FD) };
    let mut line = serde_json::to_vec(&answer)?;
    line.push(b'\n');
    out.write_all(&line)
        .context("cannot hand the result back")?;
    Ok(crate::error::EXIT_OK)
}

fn perform(job: &Job) -> Report {
    match measure(job) {
        Ok(report) => report,
        Err(e) if interrupt::is_interrupt(&e) => Report::Interrupted,
        Err(e) => Report::Failed(format!("{e:#}")),
    }
}

fn measure(job: &Job) -> Result<Report> {
    crate::harness::turns::adopt_from_env().map_err(|why| anyhow!(why))?;
    // Read (and remembered) before pinning, so two-party probes still see every CPU they may place
    // a partner on.
    let _ = placement::usable_cpus();
    placement::pin_current_thread(job.cpu)?;
    let retake_preempted = match &job.task {
        Task::Round { probe, .. } => probes::find(probe).is_some_and(|d| {
            matches!(
                d.role(),
                crate::results::figure::Role::CpuReference | crate::results::figure::Role::Hardware
            )
        }),
        Task::Overhead | Task::Yardstick | Task::Profile { .. } => false,
    };
    let harness = HarnessConfig {
        realtime: job.fifo.is_some(),
        retake_preempted,
        ..job.harness.clone()
    };
    // Nothing to restore: the process ends with the task. The harness blocks between samples, so
    // the limit only ever counts one sample, and a runaway one is stopped within seconds.
    let _limit = job.fifo.map(|_| {
        let (soft, hard) = rt_limit::sample_limits_us(harness.min_sample_ns);
        RtTimeLimit::set(soft, Some(hard), OnLimit::Notify)
    });
    if let Some(prio) = job.fifo {
        placement::set_fifo(prio)?;
    }
    if let Task::Profile { .. } = &job.task {
        return crate::suite::profiling::serve(job);
    }
    if let Task::Yardstick = &job.task {
        return Ok(Report::Yardstick(crate::meter::yardstick::measure()));
    }
    let mut sensors = SystemSensors::new(job.counters, Some(job.cpu));
    match &job.task {
        Task::Overhead => Ok(Report::Overhead(crate::harness::measure_overhead(
            &mut sensors,
            &harness,
        )?)),
        Task::Round {
            probe,
            params,
            scale,
            overhead,
            iterations_hint,
        } => {
            let def = probes::find(probe).ok_or_else(|| anyhow!("no probe {probe}"))?;
            let env = ProbeEnv {
                scratch: &job.scratch,
                cpu: job.cpu,
                scale: *scale,
                file_systems: job.file_systems,
            };
            match (def.build)(&env, params).with_context(|| format!("setting up {probe}"))? {
                Built::Skip(reason) => Ok(Report::Skipped(reason)),
                Built::Ready(mut work) => Ok(Report::Round(measure_round(
                    &mut sensors,
                    work.as_mut(),
                    &harness,
                    overhead,
                    def.unit,
                    *iterations_hint,
                )?)),
            }
        }
        Task::Profile { .. } | Task::Yardstick => unreachable!("served above"),
    }
}
