//! The measuring threads. Each stream (a class on a path on a CPU) is one thread, plus a signalling
//! thread for the thread-to-thread paths; all share one start time and one set of periods, with
//! their phases spread across the period so that they do not queue behind each other.
//!
//! Inside the loop a thread only sleeps, reads the clock and records into preallocated structures.

use super::accounting::{Accounting, Deadlines};
use super::buffer::BufferConfig;
use super::stage_capture::StageTaps;
use super::trace::{Mark, Trigger};
use crate::meter::placement;
use crate::system::limits;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// How a wake reaches the measuring thread.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Path {
    /// Absolute-deadline sleep on CLOCK_MONOTONIC; lateness = running - deadline.
    Timer,
    /// A timer-driven thread signals through a futex; lateness = running - signal.
    Futex,
    /// The same through an eventfd the waiter reads.
    Eventfd,
    /// The same through a pipe the waiter reads.
    Pipe,
}

impl Path {
    pub const ALL: [Path; 4] = [Path::Timer, Path::Futex, Path::Eventfd, Path::Pipe];
    pub fn name(self) -> &'static str {
        match self {
            Path::Timer => "timer",
            Path::Futex => "futex",
            Path::Eventfd => "eventfd",
            Path::Pipe => "pipe",
        }
    }
    pub fn parse(s: &str) -> Option<Path> {
        Path::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// The measuring classes: two real-time priorities and the normal time-sharing class.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ClassName {
    /// SCHED_FIFO at --prio-high
    High,
    /// SCHED_FIFO at --prio-medium
    Medium,
    /// SCHED_OTHER
    Normal,
}

impl ClassName {
    pub const ALL: [ClassName; 3] = [ClassName::High, ClassName::Medium, ClassName::Normal];
    pub fn as_str(self) -> &'static str {
        match self {
            ClassName::High => "high",
            ClassName::Medium => "medium",
            ClassName::Normal => "normal",
        }
    }
}

/// A scheduling class: a name and a SCHED_FIFO priority, or SCHED_OTHER.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Class {
    pub name: ClassName,
    pub fifo: Option<i32>,
}

/// SCHED_FIFO priorities of the high and medium classes unless `--prio-high`/`--prio-medium` say
/// otherwise (99 is left to the kernel's own threads).
pub const DEFAULT_PRIO_HIGH: i32 = 90;
pub const DEFAULT_PRIO_MEDIUM: i32 = 50;

impl Class {
    /// The class of `name` with these priorities for the two real-time classes.
    pub fn with_priorities(name: ClassName, high: i32, medium: i32) -> Class {
        Class {
            name,
            fifo: match name {
                ClassName::High => Some(high),
                ClassName::Medium => Some(medium),
                ClassName::Normal => None,
            },
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct StreamSpec {
    pub class: Class,
    pub path: Path,
    pub cpu: usize,
}

#[derive(Debug)]
pub struct StreamResult {
    pub spec: StreamSpec,
    pub periods_planned: u64,
    pub acct: Accounting,
    /// CPU time of the measuring thread (and of its signaller, for the signal paths), nanoseconds.
    pub cpu_ns: u64,
    pub error: Option<String>,
    /// With `--compute`: the pipeline the thread fed, real underruns against the model.
    pub compute: Option<super::compute::ComputeResult>,
}

/// Start of every measuring thread's name (stage capture picks their events by it).
pub const THREAD_PREFIX: &str = "lat-";

pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub(super) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: as above.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until `deadline` (CLOCK_MONOTONIC); an interruption by a signal just resumes, the caller
/// checks the stop flag once per period.
pub(super) fn sleep_until(deadline: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: ts is valid; TIMER_ABSTIME makes a resumed sleep keep the same deadline.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

pub(super) fn enter_class(spec: &StreamSpec) -> Result<(), String> {
    placement::pin_current_thread(spec.cpu).map_err(|e| format!("{e:#}"))?;
    // Normal threads get 50 us of timer slack by default, which would be measured as lateness;
    // real-time threads have none. 1 ns (0 would mean "the default") puts the classes on equal terms.
    // SAFETY: a per-thread setting of the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    if let Some(p) = spec.class.fifo {
        placement::set_fifo(p).map_err(|e| format!("{e:#}"))?;
    }
    Ok(())
}

/// What every stream shares: periods, start, and the stop flag (Ctrl-C).
#[derive(Clone)]
pub struct Plan {
    pub period_ns: u64,
    pub periods: u64,
    pub start_ns: u64,
    pub buffers: Vec<BufferConfig>,
    pub stop: Arc<AtomicBool>,
    /// Cause capture (`--trace`): fired by a wake over its threshold.
    pub trigger: Option<Arc<Trigger>>,
    /// Stage capture (`--stages`): per stream index, where a timer thread leaves its wake times.
    pub stages: Option<Arc<StageTaps>>,
    /// `--compute`: timer threads compute this long per period, feeding a pipeline.
    pub compute_ns: Option<u64>,
    /// The latest wake of each class so far, for the progress line.
    pub worst: Arc<WorstSoFar>,
}

/// The latest wake (missed periods included) of each class so far: the measuring threads raise
/// it as they go, the progress line reads it while they run.
#[derive(Debug, Default)]
pub struct WorstSoFar([AtomicU64; 3]);

impl WorstSoFar {
    #[inline]
    pub fn saw(&self, class: ClassName, lateness_ns: u64) {
        let slot = &self.0[class as usize];
        // Most wakes are no new maximum: a plain load leaves the cache line shared between the
        // measuring threads, where a read-modify-write on every wake would bounce it.
        if lateness_ns > slot.load(Ordering::Relaxed) {
            slot.fetch_max(lateness_ns, Ordering::Relaxed);
        }
    }

    /// The worst so far, or None before the class's first wake.
    pub fn get(&self, class: ClassName) -> Option<u64> {
        Some(self.0[class as usize].load(Ordering::Relaxed)).filter(|&ns| ns > 0)
    }
}

/// A wake `wake_ns` of a period due at `reference_ns`: raises the class's worst so far and fires
/// cause capture when it is late enough.
#[inline]
pub(super) fn observe_wake(plan: &Plan, spec: &StreamSpec, reference_ns: u64, wake_ns: u64) {
    plan.worst
        .saw(spec.class.name, wake_ns.saturating_sub(reference_ns));
    if let Some(t) = &plan.trigger {
        t.check(Mark {
            cpu: spec.cpu,
            class: spec.class.name.as_str(),
            path: spec.path.name(),
            reference_ns,
            wake_ns,
        });
    }
}

/// Runs every stream to the end of the plan (or the stop flag) and returns one result each. A
/// thread that cannot start (a limit on threads or memory) stops the others and is the error:
/// a measurement missing some of its streams is not the one asked for.
pub fn run_streams(specs: &[StreamSpec], plan: &Plan) -> anyhow::Result<Vec<StreamResult>> {
    let n = specs.len().max(1) as u64;
    let mut handles = Vec::new();
    let mut refused = None;
    for (i, &spec) in specs.iter().enumerate() {
        let mine = plan.clone();
        let phase = plan.period_ns * i as u64 / n;
        let name = format!(
            "{THREAD_PREFIX}{}-{}",
            spec.class.name.as_str(),
            spec.path.name()
        );
        let started = limits::spawn(&name, move || match (spec.path, mine.compute_ns) {
            (Path::Timer, Some(c)) => Ok(super::compute::compute_stream(spec, &mine, phase, c, i)),
            (Path::Timer, None) => Ok(timer_stream(spec, &mine, phase, i)),
            _ => signal_stream(spec, &mine, phase),
        });
        match started {
            Ok(h) => handles.push((h, spec)),
            Err(e) => {
                plan.stop.store(true, Ordering::Relaxed);
                refused = Some(e);
                break;
            }
        }
    }
    let mut results = Vec::new();
    for (h, spec) in handles {
        match h.join() {
            Ok(Ok(r)) => results.push(r),
            Ok(Err(e)) => refused = refused.or(Some(e)),
            Err(_) => results.push(StreamResult {
                spec,
                periods_planned: plan.periods,
                acct: Accounting::new(plan.period_ns, 0, &[]),
                cpu_ns: 0,
                error: Some("the measuring thread panicked".into()),
                compute: None,
            }),
        }
    }
    match refused {
        Some(e) => Err(e.context("the latency measurement was stopped")),
        None => Ok(results),
    }
}

fn timer_stream(spec: StreamSpec, plan: &Plan, phase: u64, index: usize) -> StreamResult {
    let mut acct = Accounting::new(plan.period_ns, plan.periods, &plan.buffers);
    let result = |acct, cpu_ns, error| StreamResult {
        spec,
        periods_planned: plan.periods,
        acct,
        cpu_ns,
        error,
        compute: None,
    };
    if let Err(e) = enter_class(&spec) {
        return result(acct, 0, Some(e));
    }
    let cpu0 = thread_cpu_ns();
    let d = Deadlines {
        first_ns: plan.start_ns + phase + plan.period_ns,
        period_ns: plan.period_ns,
        total: plan.periods,
    };
    let tap = plan
        .stages
        .as_ref()
        .and_then(|t| t.get(index).cloned().flatten());
    if let Some(t) = &tap {
        t.begin(d.first_ns, d.period_ns);
    }
    let mut k = 0;
    while k < d.total && !plan.stop.load(Ordering::Relaxed) {
        sleep_until(d.at(k));
        let now = monotonic_ns();
        if let Some(t) = &tap {
            t.record(k, now);
        }
        observe_wake(plan, &spec, d.at(k), now);
        k = d.wake(&mut acct, k, now);
    }
    result(acct, thread_cpu_ns() - cpu0, None)
}

/// Signal times kept for a waiter that falls behind; older ones are extrapolated by the period.
const RING: usize = 4096;

struct Channel {
    /// Signals posted so far; also the futex word.
    seq: AtomicU32,
    times: Vec<AtomicU64>,
    done: AtomicBool,
    /// The waiter could not start: the signaller stops at once.
    quit: AtomicBool,
    fds: [libc::c_int; 2],
    path: Path,
}

impl Channel {
    fn new(path: Path) -> Result<Channel, String> {
        let mut fds = [-1, -1];
        // SAFETY: plain descriptor creation; fds is a valid out array.
        let rc = unsafe {
            match path {
                Path::Eventfd => {
                    fds[0] = libc::eventfd(0, libc::EFD_CLOEXEC);
                    fds[1] = fds[0];
                    fds[0]
                }
                Path::Pipe => libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC),
                _ => 0,
            }
        };
        if rc < 0 {
            return Err(format!(
                "cannot create the {} channel: {}",
                path.name(),
                std::io::Error::last_os_error()
            ));
        }
        if path == Path::Pipe {
            // A waiter stalled for a long time must not block the signaller on a full pipe.
            // SAFETY: fcntl on our own descriptor.
            unsafe { libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK) };
        }
        Ok(Channel {
            seq: AtomicU32::new(0),
            times: (0..RING).map(|_| AtomicU64::new(0)).collect(),
            done: AtomicBool::new(false),
            quit: AtomicBool::new(false),
            fds,
            path,
        })
    }

    fn notify(&self) {
        let one: u64 = 1;
        // SAFETY: the futex word and the descriptors live as long as self; results are ignored
        // because the waiter re-reads `seq` on every wake anyway.
        unsafe {
            match self.path {
                Path::Futex => {
                    libc::syscall(
                        libc::SYS_futex,
                        self.seq.as_ptr(),
                        libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                        1,
                    );
                }
                Path::Eventfd => {
                    libc::write(self.fds[1], (&one as *const u64).cast(), 8);
                }
                Path::Pipe => {
                    libc::write(self.fds[1], (&one as *const u64).cast(), 1);
                }
                Path::Timer => {}
            }
        }
    }

    /// Blocks until something may have been posted (spurious returns are fine).
    fn wait(&self, seen: u32) {
        let mut buf = [0u8; 64];
        // SAFETY: as above; buf is large enough for one eventfd counter or a batch of pipe bytes.
        unsafe {
            match self.path {
                Path::Futex => {
                    libc::syscall(
                        libc::SYS_futex,
                        self.seq.as_ptr(),
                        libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                        seen,
                        std::ptr::null::<libc::timespec>(),
                    );
                }
                Path::Eventfd => {
                    libc::read(self.fds[0], buf.as_mut_ptr().cast(), 8);
                }
                Path::Pipe => {
                    libc::read(self.fds[0], buf.as_mut_ptr().cast(), buf.len());
                }
                Path::Timer => {}
            }
        }
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // SAFETY: closing descriptors we own, once (eventfd uses the same one twice).
        unsafe {
            if self.fds[0] >= 0 {
                libc::close(self.fds[0]);
            }
            if self.fds[1] >= 0 && self.fds[1] != self.fds[0] {
                libc::close(self.fds[1]);
            }
        }
    }
}

/// Marks the channel done and wakes the waiter however the signaller leaves.
struct Finish<'a>(&'a Channel);
impl Drop for Finish<'_> {
    fn drop(&mut self) {
        self.0.done.store(true, Ordering::Release);
        self.0.notify();
    }
}

/// One stream of a signal path: this thread waits, a signalling thread of its own posts. Err when
/// the signalling thread cannot start: the wait would never end, so every stream is stopped.
fn signal_stream(spec: StreamSpec, plan: &Plan, phase: u64) -> anyhow::Result<StreamResult> {
    let mut acct = Accounting::new(plan.period_ns, plan.periods, &plan.buffers);
    let chan = match Channel::new(spec.path) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            return Ok(StreamResult {
                spec,
                periods_planned: plan.periods,
                acct,
                cpu_ns: 0,
                error: Some(e),
                compute: None,
            })
        }
    };
    let signaller = {
        let chan = Arc::clone(&chan);
        let plan = plan.clone();
        let name = format!("sig-{}-{}", spec.class.name.as_str(), spec.path.name());
        limits::spawn(&name, move || -> (u64, Option<String>) {
            let _finish = Finish(&chan);
            if let Err(e) = enter_class(&spec) {
                return (0, Some(e));
            }
            let cpu0 = thread_cpu_ns();
            let d = Deadlines {
                first_ns: plan.start_ns + phase + plan.period_ns,
                period_ns: plan.period_ns,
                total: plan.periods,
            };
            let mut k = 0;
            while k < d.total {
                if plan.stop.load(Ordering::Relaxed) || chan.quit.load(Ordering::Relaxed) {
                    break;
                }
                sleep_until(d.at(k));
                let now = monotonic_ns();
                // A late signaller posts every deadline already past in one go (same time),
                // so it still sleeps once per wake; the waiter counts them as missed.
                let mut next = k + 1;
                while next < d.total && d.at(next) <= now {
                    next += 1;
                }
                for j in k..next {
                    chan.times[j as usize % RING].store(now, Ordering::Relaxed);
                }
                chan.seq.store(next as u32, Ordering::Release);
                chan.notify();
                k = next;
            }
            (thread_cpu_ns() - cpu0, None)
        })
    };
    let signaller = match signaller {
        Ok(h) => h,
        Err(e) => {
            plan.stop.store(true, Ordering::Relaxed);
            return Err(e);
        }
    };
    let mut error = enter_class(&spec).err();
    let cpu0 = thread_cpu_ns();
    let mut last: u64 = 0;
    if error.is_none() {
        loop {
            let posted = u64::from(chan.seq.load(Ordering::Acquire));
            if posted == last {
                if chan.done.load(Ordering::Acquire)
                    && u64::from(chan.seq.load(Ordering::Acquire)) == last
                {
                    break;
                }
                chan.wait(last as u32);
                continue;
            }
            let now = monotonic_ns();
            let newest = chan.times[(posted - 1) as usize % RING].load(Ordering::Relaxed);
            for j in last..posted {
                let sent = if posted - j <= RING as u64 {
                    chan.times[j as usize % RING].load(Ordering::Relaxed)
                } else {
                    newest.saturating_sub((posted - 1 - j) * plan.period_ns)
                };
                if j == last {
                    observe_wake(plan, &spec, sent, now);
                }
                acct.period(j, now.saturating_sub(sent), j == last);
            }
            last = posted;
        }
    } else {
        chan.quit.store(true, Ordering::Relaxed);
    }
    let mut cpu_ns = thread_cpu_ns() - cpu0;
    match signaller.join() {
        Ok((ns, e)) => {
            cpu_ns += ns;
            error = error.or(e);
        }
        Err(_) => error = error.or(Some("the signalling thread panicked".into())),
    }
    Ok(StreamResult {
        spec,
        periods_planned: plan.periods,
        acct,
        cpu_ns,
        error,
        compute: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(periods: u64) -> Plan {
        Plan {
            period_ns: 1_000_000,
            periods,
            start_ns: monotonic_ns() + 5_000_000,
            buffers: BufferConfig::default_table(0.5),
            stop: Arc::new(AtomicBool::new(false)),
            trigger: None,
            stages: None,
            compute_ns: None,
            worst: Arc::default(),
        }
    }

    #[test]
    fn every_path_accounts_for_every_period_at_normal_priority() {
        let _cpu = crate::latency::MEASURED_CPU
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let cpu = *placement::usable_cpus().last().unwrap();
        let specs: Vec<StreamSpec> = Path::ALL
            .into_iter()
            .map(|path| StreamSpec {
                class: Class {
                    name: ClassName::Normal,
                    fifo: None,
                },
                path,
                cpu,
            })
            .collect();
        let results = run_streams(&specs, &plan(200)).unwrap();
        assert_eq!(results.len(), 4);
        for r in &results {
            assert!(r.error.is_none(), "{:?}", r.error);
            assert_eq!(r.acct.periods(), 200, "{:?}", r.spec.path);
            assert_eq!(r.acct.corrected.count(), 200);
            assert_eq!(r.acct.raw.count(), r.acct.woken);
            assert!(r.acct.woken > 0);
            assert!(r.cpu_ns > 0);
            assert_eq!(r.acct.buffers[0].1.periods, 200);
        }
    }

    #[test]
    fn the_stop_flag_ends_early_with_consistent_counts() {
        let _cpu = crate::latency::MEASURED_CPU
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let p = plan(100_000);
        let stop = Arc::clone(&p.stop);
        let cpu = *placement::usable_cpus().last().unwrap();
        let specs = [Path::Timer, Path::Pipe].map(|path| StreamSpec {
            class: Class {
                name: ClassName::Normal,
                fifo: None,
            },
            path,
            cpu,
        });
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            stop.store(true, Ordering::Relaxed);
        });
        let results = run_streams(&specs, &p).unwrap();
        t.join().unwrap();
        for r in results {
            assert!(r.error.is_none());
            assert!(r.acct.periods() < 100_000);
            assert_eq!(r.acct.corrected.count(), r.acct.periods());
        }
    }
}
