//! Rounds measured in fresh processes. `osmeter run` starts its own executable again as a hidden
//! `measure-worker` for every task (the harness's own cost, or one round of one figure), so each
//! round gets its own address space, page placement and allocator state, and nothing a figure did
//! carries over into the next one.
//!
//! The parent writes a [`Job`] to the worker's stdin; the worker answers with one [`Report`] line
//! on descriptor 3 (its stdout stays free, and a probe's child writing there cannot garble the
//! answer). The worker runs in a process group of its own, dies with its parent (parent-death
//! signal), and is the only process that pins itself, switches to SCHED_FIFO and lowers
//! RLIMIT_RTTIME, so the parent never holds a real-time class to restore. Ctrl-C reaches the parent,
//! which passes it on to the worker's group and, if the worker does not answer within
//! [`STOP_GRACE`] (it answers between two samples, and a sample may be long), kills the group: the
//! rounds that finished are kept, the one cut off is lost.

use crate::harness::round::{measure_round, RoundOutcome};
use crate::harness::HarnessConfig;
use crate::interrupt;
use crate::meter::rt_limit::{self, OnLimit, RtTimeLimit};
use crate::meter::{placement, SystemSensors};
use crate::probes::{self, Built, FileSystems, ProbeEnv, Scale};
use crate::results::model::{Overhead, Params};
use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// The descriptor a worker writes its report to.
const REPORT_FD: libc::c_int = 3;
/// personality(2)'s ADDR_NO_RANDOMIZE: the exec'd program's stack, mmap base and heap are where
/// they would be without address-space randomisation.
const NO_RANDOMIZE: libc::c_ulong = 0x0040000;
/// The hidden subcommand.
pub const SUBCOMMAND: &str = "measure-worker";

/// Everything a worker needs to measure one task, without reading the command line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    pub cpu: usize,
    pub fifo: Option<i32>,
    pub counters: bool,
    pub harness: HarnessConfig,
    /// The run's scratch directory (made and removed by the parent).
    pub scratch: PathBuf,
    /// Where the file-system probes work.
    #[serde(default)]
    pub file_systems: FileSystems,
    pub task: Task,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Task {
    /// The harness's own cost, subtracted from the figures of the rounds that follow.
    Overhead,
    /// The machine's own speed between rounds (see [`crate::meter::yardstick`]).
    Yardstick,
    /// One round of one probe variant.
    Round {
        probe: String,
        params: Params,
        scale: Scale,
        overhead: Overhead,
        /// Iterations per sample an earlier round of this figure settled on.
        iterations_hint: Option<u64>,
    },
    /// The workload of one probe variant under sampling (`run --profile`), not timed.
    Profile {
        probe: String,
        params: Params,
        scale: Scale,
        iterations_hint: Option<u64>,
    },
}

/// A worker's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Report {
    Overhead(Overhead),
    Yardstick(crate::meter::yardstick::YardstickReading),
    Round(RoundOutcome),
    /// The probe cannot run here, and why.
    Skipped(String),
    /// The task failed, and why.
    Failed(String),
    /// Stopped by Ctrl-C before anything was kept.
    Interrupted,
    /// A figure's samples, with the names of their user addresses (the run names kernel ones).
    Profile(
        Box<crate::profile::aggregate::Gathered>,
        Vec<crate::profile::symbolize::UserName>,
    ),
    /// The kernel refused to sample, and why: no figure of this run can be profiled.
    ProfileRefused(String),
}

/// How to start a worker: this executable by default.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl WorkerCommand {
    /// The running executable itself (through /proc/self/exe, so a rebuilt or deleted file on disk
    /// does not matter).
    pub fn this_executable() -> WorkerCommand {
        WorkerCommand {
            program: PathBuf::from("/proc/self/exe"),
            args: vec![SUBCOMMAND.to_string()],
        }
    }
}

/// Runs one job in a fresh worker process and returns its report. A worker that dies without
/// answering is reported as a failure naming how it ended. On Ctrl-C the worker is asked to stop and
/// given [`STOP_GRACE`] to answer with what it measured before its process group is killed.
pub fn run_job(command: &WorkerCommand, job: &Job) -> Result<Report> {
    let grace = STOP_GRACE;
    let (read_end, write_end) = pipe()?;
    let parent = std::process::id() as libc::pid_t;
    let mut cmd = crate::programs::command(&command.program);
    cmd.args(&command.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let fd = write_end.0;
    let fixed_layout =
        matches!(&job.task, Task::Round { probe, .. } if probes::wants_fixed_layout(probe));
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if fixed_layout {
                // The same address-space layout in every round: see probes::wants_fixed_layout.
                let current = libc::personality(0xffff_ffff);
                if current != -1 {
                    libc::personality(current as libc::c_ulong | NO_RANDOMIZE);
                }
            }
            if libc::dup2(fd, REPORT_FD) < 0 || libc::fcntl(REPORT_FD, libc::F_SETFD, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // A group of its own: Ctrl-C at the terminal reaches the parent only, which decides.
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| {
        crate::system::limits::cannot_start(
            &format!("the measuring process {}", command.program.display()),
            &e,
        )
    })?;
    drop(write_end);
    let group = Group(child.id() as libc::pid_t);
    let text = serde_json::to_vec(job)?;
    // A worker that died at once closes its stdin; how it ended is reported below.
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&text);
    }
    let answer = read_answer(&mut child, &read_end, &group, grace);
    group.kill(libc::SIGKILL);
    let answer = answer?;
    let status = wait_briefly(&mut child, grace)?;
    match answer {
        Some(line) => serde_json::from_slice(&line).map_err(|e| {
            anyhow!("the measuring process answered something unreadable ({e}); this is a bug")
        }),
        None if interrupt::requested() => Ok(Report::Interrupted),
        None => Ok(Report::Failed(match status {
            Some(status) => describe_end(status, job),
            None => STARVED.to_string(),
        })),
    }
}

/// How long a worker asked to stop (Ctrl-C, SIGTERM) may take to answer before it is killed,
/// whatever --min-time is: it answers between two samples, so with samples of this length or
/// shorter what it measured is kept; a longer sample in progress is given up so that the run
/// still ends about a second after the signal.
pub const STOP_GRACE: Duration = Duration::from_secs(1);

/// A killed process that does not end could not get a CPU to die on.
const STARVED: &str = "the measuring process did not end even when killed: it cannot get its CPU, \
                       most likely because a real-time task of higher priority keeps it busy (see \
                       `ps -eLo pid,cls,rtprio,psr,cmd`); it will end once that CPU is free";

/// Waits up to `limit` for the worker to end; None if it did not (it is left to end on its own).
fn wait_briefly(child: &mut Child, limit: Duration) -> Result<Option<std::process::ExitStatus>> {
    let t = Instant::now();
    loop {
        if let Some(status) = child
            .try_wait()
            .context("cannot wait for the measuring process")?
        {
            return Ok(Some(status));
        }
        if t.elapsed() > limit {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reads the worker's one-line answer while watching for Ctrl-C and for the worker's end.
fn read_answer(
    child: &mut Child,
    read_end: &Fd,
    group: &Group,
    grace: Duration,
) -> Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    let mut asked_to_stop: Option<Instant> = None;
    let mut exited = false;
    loop {
        if interrupt::requested() {
            match asked_to_stop {
                None => {
                    group.kill(libc::SIGINT);
                    asked_to_stop = Some(Instant::now());
                }
                // Killed and still not gone: it cannot run to die; stop waiting for it.
                Some(t) if t.elapsed() > 2 * grace => return Ok(None),
                Some(t) if t.elapsed() > grace => group.kill(libc::SIGKILL),
                Some(_) => {}
            }
        }
        let mut pfd = libc::pollfd {
            fd: read_end.0,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pfd, 1, if exited { 0 } else { 100 }) };
        if ready > 0 {
            let mut chunk = [0u8; 65536];
            // SAFETY: reading into a local buffer of the given size.
            let n = unsafe { libc::read(read_end.0, chunk.as_mut_ptr().cast(), chunk.len()) };
            if n > 0 {
                buf.extend_from_slice(&chunk[..n as usize]);
                if let Some(end) = buf.iter().position(|&b| b == b'\n') {
                    buf.truncate(end);
                    return Ok(Some(buf));
                }
                continue;
            }
            if n == 0 {
                // Every writer is gone.
                return Ok(None);
            }
        }
        if exited {
            // The worker is gone and nothing more is waiting (a forked child of a probe may still
            // hold the pipe open: it is killed with the group).
            return Ok(None);
        }
        if child.try_wait()?.is_some() {
            exited = true;
        }
    }
}

fn describe_end(status: std::process::ExitStatus, job: &Job) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(libc::SIGKILL) if job.fifo.is_some() => {
            "the measuring process was killed (SIGKILL): at SCHED_FIFO that is the hard real-time \
             limit (RLIMIT_RTTIME) of a sample that never blocked, or the kernel's out-of-memory \
             killer"
                .to_string()
        }
        Some(libc::SIGKILL) => {
            "the measuring process was killed (SIGKILL), most likely by the kernel's out-of-memory \
             killer"
                .to_string()
        }
        Some(sig) => format!("the measuring process died of signal {sig}; this is a bug"),
        None => format!(
            "the measuring process exited with status {} without a result; see the message above",
            status.code().unwrap_or(-1)
        ),
    }
}

/// A process group to signal; ESRCH (already gone) is fine.
struct Group(libc::pid_t);

impl Group {
    fn kill(&self, signal: libc::c_int) {
        // SAFETY: signalling the group of a worker this process started.
        unsafe { libc::kill(-self.0, signal) };
    }
}

/// An owned descriptor, closed on drop.
struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

/// A close-on-exec pipe; the read end does not block.
fn pipe() -> Result<(Fd, Fd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!(
            "cannot make a pipe for the measuring process: {}",
            std::io::Error::last_os_error()
        );
    }
    let (r, w) = (Fd(fds[0]), Fd(fds[1]));
    // SAFETY: setting a flag on our own descriptor.
    unsafe { libc::fcntl(r.0, libc::F_SETFL, libc::O_NONBLOCK) };
    Ok((r, w))
}

/// The worker's side: reads the job from stdin, measures it, writes the report to descriptor 3.
/// Exit status 0 whenever a report was written, whatever it says.
pub fn serve() -> Result<i32> {
    // SAFETY: F_GETFD only queries the descriptor.
    if unsafe { libc::fcntl(REPORT_FD, libc::F_GETFD) } < 0 {
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
    // SAFETY: descriptor 3 was checked above and is owned by this process from here on.
    let mut out = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(REPORT_FD) };
    let mut line = serde_json::to_vec(&report)?;
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
        return super::profiling::serve(job);
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
