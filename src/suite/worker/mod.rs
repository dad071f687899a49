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

mod serve;

pub use serve::serve;

use crate::harness::round::RoundOutcome;
use crate::harness::HarnessConfig;
use crate::interrupt;
use crate::probes::{self, FileSystems, Scale};
use crate::results::model::{Overhead, Params};
use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
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
/// Names the report pipe (its device and inode) in a worker's environment. Descriptor 3 alone
/// proves nothing: a shell, `/usr/bin/time -o FILE` or a CI runner may leave one open, and a
/// worker that took such a file for its parent's pipe would read a job that never comes. The
/// variable passes through any wrapper of the worker (`ab --a-wrap`), as descriptors do.
const REPORT_PIPE_ENV: &str = "OSMETER_REPORT_PIPE";

/// Everything a worker needs to measure one task, without reading the command line.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Job {
    pub cpu: usize,
    pub fifo: Option<i32>,
    /// Start the worker with the system's address-space randomisation whatever the probe.
    #[serde(default)]
    pub system_aslr: bool,
    pub counters: bool,
    pub harness: HarnessConfig,
    /// The run's scratch directory (made and removed by the parent).
    pub scratch: PathBuf,
    /// Where the file-system probes work.
    #[serde(default)]
    pub file_systems: FileSystems,
    pub task: Task,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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

/// What a worker writes back: its report, and the signal that stopped it if one did, so that the
/// parent tells a signal it passed on (the user's Ctrl-C) from one another process sent.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
struct Answer {
    report: Report,
    stopped_by: Option<Stop>,
}

/// A stopping signal a worker received, and who sent it (None: the kernel, or unnamed).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
struct Stop {
    signal: i32,
    sender: Option<i32>,
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
    run_job_in_turns(command, job, None)
}

/// The two ends of pipes a worker takes its samples in turn over (see [`crate::harness::turns`]).
pub struct TurnPipes {
    pub read: std::os::fd::OwnedFd,
    pub write: std::os::fd::OwnedFd,
    /// This worker hands the token over first.
    pub second: bool,
}

/// The descriptors a worker in turns finds its pipes on.
const TURN_FDS: (libc::c_int, libc::c_int) = (4, 5);

/// [`run_job`], the worker taking its samples in turn with a partner's over `turns`; the pipes are
/// closed here once the worker has them, so that either side's end is seen by the other.
pub fn run_job_in_turns(
    command: &WorkerCommand,
    job: &Job,
    turns: Option<TurnPipes>,
) -> Result<Report> {
    use std::os::fd::AsRawFd;
    let grace = STOP_GRACE;
    let (read_end, write_end) = pipe()?;
    let parent = std::process::id() as libc::pid_t;
    let identity = pipe_identity(write_end.0)
        .ok_or_else(|| anyhow!("the measuring process's pipe is not a pipe; this is a bug"))?;
    let mut cmd = crate::programs::command(&command.program);
    match &turns {
        Some(t) => cmd.env(
            crate::harness::turns::TURNS_ENV,
            format!(
                "{},{},{}",
                TURN_FDS.0,
                TURN_FDS.1,
                if t.second { "second" } else { "first" }
            ),
        ),
        None => cmd.env_remove(crate::harness::turns::TURNS_ENV),
    };
    let turn_fds = turns
        .as_ref()
        .map(|t| (t.read.as_raw_fd(), t.write.as_raw_fd()));
    cmd.args(&command.args)
        .env(REPORT_PIPE_ENV, identity)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let fd = write_end.0;
    let fixed_layout = !job.system_aslr
        && matches!(&job.task, Task::Round { probe, .. } if probes::wants_fixed_layout(probe));
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
            if let Some((read, write)) = turn_fds {
                // Copied above every fixed number first, so that neither dup2 below can close
                // the other's source.
                let high = [read, write].map(|fd| libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 16));
                for (from, to) in high.into_iter().zip([TURN_FDS.0, TURN_FDS.1]) {
                    if from < 0 || libc::dup2(from, to) < 0 || libc::fcntl(to, libc::F_SETFD, 0) < 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
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
    let oom_kills_before = oom_kills();
    let mut child = cmd.spawn().map_err(|e| {
        crate::system::processes::cannot_start(
            &format!("the measuring process {}", command.program.display()),
            &e,
        )
    })?;
    drop(write_end);
    drop(turns);
    let mut worker = Worker::of(&child);
    let text = serde_json::to_vec(job)?;
    // A worker that died at once closes its stdin; how it ended is reported below.
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&text);
    }
    let answer = read_answer(&mut worker, &read_end, grace);
    worker.group.kill(libc::SIGKILL);
    let answer = answer?;
    let ended = worker.wait_briefly(grace)?;
    let cpu_s = ended.map(|(_, cpu_s)| cpu_s);
    match answer {
        Some(line) => {
            let Answer { report, stopped_by } = serde_json::from_slice(&line).map_err(|e| {
                anyhow!("the measuring process answered something unreadable ({e}); this is a bug")
            })?;
            Ok(match stopped_by {
                // A signal osmeter passed on is the user's; any other came from elsewhere.
                Some(stop) if !interrupt::requested() => stopped_from_outside(report, stop, cpu_s),
                _ => report,
            })
        }
        None if interrupt::requested() => Ok(Report::Interrupted),
        None => Ok(Report::Failed(match ended {
            Some((status, cpu_s)) => describe_end(status, job, cpu_s, oom_kills_before),
            None => STARVED.to_string(),
        })),
    }
}

/// A worker process, reaped here (with its CPU time) rather than by `Child`, whose wait gives no
/// resource usage.
struct Worker {
    pid: libc::pid_t,
    group: Group,
    /// How it ended and the CPU seconds it used, once reaped.
    ended: Option<(std::process::ExitStatus, f64)>,
}

impl Worker {
    fn of(child: &Child) -> Worker {
        let pid = child.id() as libc::pid_t;
        Worker {
            pid,
            group: Group(pid),
            ended: None,
        }
    }

    /// Reaps the worker if it has ended; whether it has.
    fn poll(&mut self) -> Result<bool> {
        if self.ended.is_some() {
            return Ok(true);
        }
        let mut status = 0;
        // SAFETY: rusage is plain data the kernel fills; the pid is our own unreaped child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::wait4(self.pid, &mut status, libc::WNOHANG, &mut usage) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                return Ok(false);
            }
            return Err(anyhow!("cannot wait for the measuring process: {e}"));
        }
        if rc == self.pid {
            let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            use std::os::unix::process::ExitStatusExt;
            self.ended = Some((
                std::process::ExitStatus::from_raw(status),
                secs(usage.ru_utime) + secs(usage.ru_stime),
            ));
        }
        Ok(self.ended.is_some())
    }

    /// Waits up to `limit` for the worker to end; None if it did not (it is left to end on its
    /// own).
    fn wait_briefly(&mut self, limit: Duration) -> Result<Option<(std::process::ExitStatus, f64)>> {
        let t = Instant::now();
        loop {
            if self.poll()? {
                return Ok(self.ended);
            }
            if t.elapsed() > limit {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// The kernel's count of out-of-memory kills so far (/proc/vmstat's oom_kill, every cgroup's
/// included), so that a worker killed meanwhile is said to be the OOM killer's only when one
/// happened.
fn oom_kills() -> Option<u64> {
    let vmstat = std::fs::read_to_string("/proc/vmstat").ok()?;
    vmstat
        .lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|n| n.trim().parse().ok())
}

/// Who sent a signal, for messages: "process 1234 (kill)".
fn sender_text(sender: Option<i32>) -> String {
    match sender {
        Some(pid) => match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
            Ok(comm) => format!(
                "process {pid} ({})",
                crate::text::escape_controls(comm.trim())
            ),
            Err(_) => format!("process {pid}"),
        },
        None => "the kernel".to_string(),
    }
}

/// A worker stopped by a signal that neither the user's Ctrl-C nor osmeter sent: the run goes on,
/// what the worker measured before it is kept, and the figure says what happened.
fn stopped_from_outside(report: Report, stop: Stop, cpu_s: Option<f64>) -> Report {
    let name = interrupt::name_of(stop.signal);
    let why = if stop.signal == libc::SIGXCPU && stop.sender.is_none() {
        crate::system::limits::cpu_time_reached(cpu_s.unwrap_or(0.0)).map_or_else(
            || "the measuring process reached a CPU-time limit (SIGXCPU)".to_string(),
            |limit| format!("the measuring process got SIGXCPU: {limit}"),
        )
    } else {
        format!(
            "the measuring process got {name} from {}, not from osmeter nor from Ctrl-C at its \
             terminal",
            sender_text(stop.sender)
        )
    };
    match report {
        Report::Round(mut outcome) if outcome.cut == Some(crate::meter::Cut::Interrupted) => {
            outcome.cut = Some(crate::meter::Cut::Outside);
            outcome
                .notes
                .push(format!("{why}; the samples taken before it are kept"));
            Report::Round(outcome)
        }
        Report::Interrupted => Report::Failed(format!("{why}, before it had taken a sample")),
        other => other,
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

/// Reads the worker's one-line answer while watching for Ctrl-C and for the worker's end.
fn read_answer(worker: &mut Worker, read_end: &Fd, grace: Duration) -> Result<Option<Vec<u8>>> {
    let group = worker.group;
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
        if worker.poll()? {
            exited = true;
        }
    }
}

/// How a worker that answered nothing ended, naming what ended it: a resource limit, the
/// out-of-memory killer only when the kernel counted a kill meanwhile, or another process.
fn describe_end(
    status: std::process::ExitStatus,
    job: &Job,
    cpu_s: f64,
    oom_kills_before: Option<u64>,
) -> String {
    use std::os::unix::process::ExitStatusExt;
    let oom_killed = matches!((oom_kills_before, oom_kills()), (Some(a), Some(b)) if b > a);
    // The kernel sends SIGKILL at RLIMIT_CPU's hard limit (SIGXCPU first only below it).
    let cpu_limit = crate::system::limits::cpu_time()
        .and_then(|l| l.soft.or(l.hard))
        .is_some_and(|at| cpu_s + 0.5 >= at as f64);
    match status.signal() {
        Some(libc::SIGKILL | libc::SIGXCPU) if cpu_limit => format!(
            "the measuring process was killed ({}): {}",
            interrupt::name_of(status.signal().unwrap_or(libc::SIGKILL)),
            crate::system::limits::cpu_time_reached(cpu_s).unwrap_or_default()
        ),
        Some(libc::SIGKILL) if oom_killed => {
            "the measuring process was killed (SIGKILL) by the kernel's out-of-memory killer (the \
             kernel counted an out-of-memory kill while it ran): give it more memory, or measure \
             with smaller sizes (--set)"
                .to_string()
        }
        Some(libc::SIGKILL) if job.fifo.is_some() => {
            "the measuring process was killed (SIGKILL): at SCHED_FIFO that is the hard real-time \
             limit (RLIMIT_RTTIME) of a sample that never blocked, or a `kill -9` from another \
             process (the kernel counted no out-of-memory kill while it ran)"
                .to_string()
        }
        Some(libc::SIGKILL) => {
            "the measuring process was killed (SIGKILL) by another process (a `kill -9`, a job \
             scheduler, a watchdog): the kernel counted no out-of-memory kill while it ran, and no \
             limit of osmeter's was reached"
                .to_string()
        }
        Some(libc::SIGXFSZ) => format!(
            "the measuring process was killed (SIGXFSZ): {}",
            crate::system::limits::file_too_large(&job.scratch)
        ),
        // Rust aborts when an allocation fails, which an address-space limit makes likely.
        Some(libc::SIGABRT)
            if crate::system::limits::of(libc::RLIMIT_AS).is_some_and(|l| l.soft.is_some()) =>
        {
            format!(
                "the measuring process aborted (SIGABRT), most likely because it could not \
                 allocate memory: {}",
                crate::system::limits::memory_limit()
            )
        }
        Some(
            sig @ (libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE | libc::SIGABRT),
        ) => {
            format!("the measuring process died of signal {sig}; this is a bug")
        }
        Some(sig) => format!(
            "the measuring process was ended by {} from another process, before it could answer",
            interrupt::name_of(sig)
        ),
        None => format!(
            "the measuring process exited with status {} without a result; see the message above",
            status.code().unwrap_or(-1)
        ),
    }
}

/// A process group to signal; ESRCH (already gone) is fine.
#[derive(Clone, Copy)]
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

/// A pipe's identity as the worker's environment carries it: `DEVICE:INODE` of the descriptor,
/// or None when it is not a pipe (or not open).
fn pipe_identity(fd: libc::c_int) -> Option<String> {
    crate::programs::pipe_identity(fd).map(|(dev, ino)| format!("{dev}:{ino}"))
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
