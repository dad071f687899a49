//! Stages of a timer wake, from kernel timestamps: where the time between a sleeping thread's
//! deadline and the moment its code runs again went.
//!
//! For an absolute-deadline sleep the kernel arms an hrtimer (`hrtimer_start`, whose soft expiry is
//! the deadline itself), the timer interrupt expires it (`hrtimer_expire_entry`, whose `now` field
//! is the clock read when the expiry code began), the expiry function wakes the thread
//! (`sched_waking`), the scheduler switches to it (`sched_switch`), and the thread reads the clock.
//! Stages, which add up to the measured lateness exactly:
//! - `interrupt`: deadline -> the timer interrupt's expiry code runs (interrupts off, the hardware
//!   or hypervisor delivering the interrupt late, idle exit);
//! - `softirq`: only where the timer expires in the softirq (PREEMPT_RT, or soft timers): the
//!   interrupt -> the softirq that expires it (the seed paper's deferred-procedure-call delay);
//! - `handler`: expiry code began -> our thread is woken (other expired timers run first);
//! - `thread`: woken -> switched in (other tasks, the scheduler, preemption off);
//! - `to_user`: switched in -> the thread's own clock read (return from the system call).
//!
//! Some kernels (this project's 6.18 VMs among them) fire no `sched_switch` when a CPU's idle task
//! gives way to the task it woke: a wake from idle has no switch-in event. For those the switch-in
//! is taken at the thread's exit from its sleep system call (`sys_exit`), the first event the thread
//! itself records once running; the thread stage then includes the return from the scheduler
//! (a microsecond or two), and such a wake is complete, not broken.
//!
//! This module is pure logic over decoded events; `stage_capture` reads them from tracefs.

use super::accounting::{summarise_windows, WindowSummary, WINDOWS};
use super::document::{Distribution, StoredHistogram};
use super::histogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The events the stage tracker needs, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `hrtimer_start` recorded while `pid` was current.
    TimerStart {
        pid: i32,
        timer: u64,
        soft_expires: u64,
    },
    /// `hrtimer_expire_entry`: `now` is the clock the expiry code read; `in_softirq` when it ran
    /// in softirq context rather than the hard interrupt.
    Expire {
        timer: u64,
        now: u64,
        in_softirq: bool,
    },
    /// `current` is the task that was running when the wake-up was recorded.
    Waking {
        pid: i32,
        ts: u64,
        current: i32,
    },
    SwitchIn {
        next_pid: i32,
        ts: u64,
    },
    /// `sys_exit` of the sleep system call, recorded while `pid` was current: the thread runs
    /// again.
    SleepExit {
        pid: i32,
        ts: u64,
    },
    /// The local timer interrupt's entry (x86 `local_timer_entry`).
    TimerInterrupt {
        ts: u64,
    },
}

/// Kernel moments of one wake of a measured thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelWake {
    pub tid: i32,
    pub deadline_ns: u64,
    /// The timer interrupt that led to a softirq expiry (None for a hard-interrupt expiry, or
    /// where the architecture has no such event).
    pub irq_entry_ns: Option<u64>,
    pub expiry_ns: u64,
    pub in_softirq: bool,
    pub waking_ns: u64,
    pub switch_in_ns: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct TidState {
    timer: u64,
    deadline: u64,
    armed: bool,
    expiry: Option<(u64, bool, Option<u64>)>,
    waking: Option<u64>,
    /// The timer expired before the thread had gone to sleep: it never left the CPU.
    woke_running: bool,
    /// The idle task was current when the thread was woken: the kernel may report no switch-in.
    woke_from_idle: bool,
}

/// Follows sleeping threads through the events of one CPU, in order. Every thread that arms a
/// timer is followed (the caller keeps the wakes of the threads it measures), so the tracker can
/// start before those threads exist.
#[derive(Debug, Default)]
pub struct Tracker {
    tids: HashMap<i32, TidState>,
    last_timer_interrupt: Option<u64>,
    /// Per thread, wakes whose chain of events was broken (an event lost, or a wake before the
    /// thread slept).
    incomplete: HashMap<i32, u64>,
    /// Per thread, the events that belong to its own wakes: its timer's arming and expiry, its
    /// wake-up, its switch-in and sleep exit, and the timer interrupt that expired its timer.
    /// Other threads' events on the same CPU are not its cost.
    events: HashMap<i32, u64>,
    /// A timer interrupt has been seen and not yet attributed to an expiry.
    irq_unclaimed: bool,
}

impl Tracker {
    /// Drops chains in progress without counting them: recording is about to stop or has just
    /// started, so their events are cut by the switch, not lost.
    pub fn forget_open_chains(&mut self) {
        for s in self.tids.values_mut() {
            *s = TidState::default();
        }
        self.last_timer_interrupt = None;
    }

    pub fn incomplete(&self, tid: i32) -> u64 {
        self.incomplete.get(&tid).copied().unwrap_or(0)
    }

    /// Events recorded for `tid`'s own wakes (see the field).
    pub fn events_of(&self, tid: i32) -> u64 {
        self.events.get(&tid).copied().unwrap_or(0)
    }

    fn count(&mut self, tid: i32, n: u64) {
        if self.tids.contains_key(&tid) {
            *self.events.entry(tid).or_default() += n;
        }
    }

    /// Feeds one event; returns a wake when this event completes one.
    pub fn feed(&mut self, e: Event) -> Option<KernelWake> {
        match e {
            Event::TimerInterrupt { ts } => {
                self.last_timer_interrupt = Some(ts);
                self.irq_unclaimed = true;
            }
            Event::TimerStart {
                pid,
                timer,
                soft_expires,
            } => {
                *self.events.entry(pid).or_default() += 1;
                let s = self.tids.entry(pid).or_default();
                // A thread the timer caught before it slept returns to user space without a
                // switch; its wake is complete once it sleeps again.
                let done = match (s.expiry, s.waking) {
                    (Some((expiry, in_softirq, irq)), Some(waking)) if s.woke_running => {
                        Some(KernelWake {
                            tid: pid,
                            deadline_ns: s.deadline,
                            irq_entry_ns: irq,
                            expiry_ns: expiry,
                            in_softirq,
                            waking_ns: waking,
                            switch_in_ns: waking,
                        })
                    }
                    (Some(_), _) if s.armed => {
                        *self.incomplete.entry(pid).or_default() += 1;
                        None
                    }
                    _ => None,
                };
                *s = TidState {
                    timer,
                    deadline: soft_expires,
                    armed: true,
                    ..TidState::default()
                };
                return done;
            }
            Event::Expire {
                timer,
                now,
                in_softirq,
            } => {
                let irq = self.last_timer_interrupt;
                let found = self
                    .tids
                    .iter_mut()
                    .find(|(_, s)| s.armed && s.timer == timer && s.expiry.is_none());
                if let Some((&tid, s)) = found {
                    s.expiry = Some((now, in_softirq, irq.filter(|_| in_softirq)));
                    // The interrupt that expired this timer is counted once, with its expiry.
                    let n = 1 + u64::from(std::mem::take(&mut self.irq_unclaimed));
                    self.count(tid, n);
                }
            }
            Event::Waking { pid, ts, current } => {
                self.count(pid, 1);
                if let Some(s) = self.tids.get_mut(&pid) {
                    if s.expiry.is_some() && s.waking.is_none() {
                        s.waking = Some(ts);
                        s.woke_running = current == pid;
                        s.woke_from_idle = current == 0;
                    }
                }
            }
            Event::SleepExit { pid, ts } => {
                self.count(pid, 1);
                let s = self.tids.get_mut(&pid)?;
                // Only a wake from idle may lack its switch-in; after any other wake a missing
                // switch is a lost event, and the chain stays broken.
                if !s.woke_from_idle {
                    return None;
                }
                return Self::complete(s, pid, ts);
            }
            Event::SwitchIn { next_pid, ts } => {
                self.count(next_pid, 1);
                let s = self.tids.get_mut(&next_pid)?;
                return Self::complete(s, next_pid, ts);
            }
        }
        None
    }

    /// The thread runs again since `ts`: its wake is complete if it was woken from a sleep.
    fn complete(s: &mut TidState, tid: i32, ts: u64) -> Option<KernelWake> {
        let (Some((expiry, in_softirq, irq)), Some(waking)) = (s.expiry, s.waking) else {
            return None;
        };
        if s.woke_running {
            // Switched back in after a preemption, not after a sleep: the wake counts from when
            // it was woken, at the next arming.
            return None;
        }
        let wake = KernelWake {
            tid,
            deadline_ns: s.deadline,
            irq_entry_ns: irq,
            expiry_ns: expiry,
            in_softirq,
            waking_ns: waking,
            switch_in_ns: ts,
        };
        *s = TidState::default();
        Some(wake)
    }
}

/// Names of the stages in pipeline order.
pub const STAGES: [&str; 5] = ["interrupt", "softirq", "handler", "thread", "to_user"];

/// One wake split into stages (nanoseconds); `softirq` only when the timer expired there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WakeStages {
    pub interrupt: u64,
    pub softirq: Option<u64>,
    pub handler: u64,
    pub thread: u64,
    pub to_user: u64,
}

impl WakeStages {
    /// Splits the wake that the thread saw at `user_ns`; None when the timestamps are out of
    /// order (which the clocks never should be: such a wake is counted, not used).
    pub fn split(k: &KernelWake, user_ns: u64) -> Option<WakeStages> {
        let d = k.deadline_ns;
        let (interrupt, softirq) = match (k.in_softirq, k.irq_entry_ns) {
            (true, Some(irq)) if irq >= d && irq <= k.expiry_ns => {
                (irq - d, Some(k.expiry_ns - irq))
            }
            _ => (k.expiry_ns.checked_sub(d)?, None),
        };
        Some(WakeStages {
            interrupt,
            softirq,
            handler: k.waking_ns.checked_sub(k.expiry_ns)?,
            thread: k.switch_in_ns.checked_sub(k.waking_ns)?,
            to_user: user_ns.checked_sub(k.switch_in_ns)?,
        })
    }

    pub fn total(&self) -> u64 {
        self.interrupt + self.softirq.unwrap_or(0) + self.handler + self.thread + self.to_user
    }
}

/// A histogram and the maxima of consecutive windows, for one stage of one stream.
#[derive(Debug, Clone)]
pub struct StageAcc {
    pub hist: Histogram,
    /// (window width, maxima by window index).
    windows: Vec<(&'static str, u64, Vec<u64>)>,
}

impl StageAcc {
    pub fn new(span_ns: u64) -> StageAcc {
        StageAcc {
            hist: Histogram::new(),
            windows: WINDOWS
                .iter()
                .filter(|(_, w)| *w <= span_ns)
                .map(|&(n, w)| (n, w, Vec::new()))
                .collect(),
        }
    }

    /// `at_ns` is when the wake was due, from the start of the run.
    pub fn record(&mut self, at_ns: u64, value: u64) {
        self.hist.record(value);
        for (_, width, maxima) in &mut self.windows {
            let slot = (at_ns / *width) as usize;
            if maxima.len() <= slot {
                maxima.resize(slot + 1, 0);
            }
            maxima[slot] = maxima[slot].max(value);
        }
    }

    /// Percentiles and the spread of window maxima over the windows the run completed.
    pub fn stats(&self, measured_ns: u64, total_mean_ns: f64) -> StageStats {
        let h = &self.hist;
        StageStats {
            dist: Distribution::of(h),
            mean_share: if total_mean_ns > 0.0 {
                h.mean() / total_mean_ns
            } else {
                0.0
            },
            windows: self
                .windows
                .iter()
                .filter_map(|(name, width, maxima)| {
                    let complete = ((measured_ns / width) as usize).min(maxima.len());
                    summarise_windows(name, &maxima[..complete])
                })
                .collect(),
            histogram: StoredHistogram::of(h),
        }
    }
}

/// One stage's distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StageStats {
    /// Its percentiles, as a stream's lateness has them (the same keys in the document).
    #[serde(flatten)]
    pub dist: Distribution,
    /// Its mean over the mean total: the shares of all stages add up to 1.
    pub mean_share: f64,
    /// Worst case per window (1 s, 1 min, 1 h as the run allows).
    pub windows: Vec<WindowSummary>,
    /// The non-empty buckets of its histogram, for the plot and the intervals of its
    /// percentiles (absent in documents written before it was stored).
    #[serde(default, skip_serializing_if = "StoredHistogram::is_empty")]
    pub histogram: StoredHistogram,
}

/// The stages of one stream, keyed by stage name in pipeline order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stages {
    pub interrupt: StageStats,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub softirq: Option<StageStats>,
    pub handler: StageStats,
    pub thread: StageStats,
    pub to_user: StageStats,
    /// The same wakes end to end (deadline to the thread's clock read).
    pub total: StageStats,
}

/// All stage accumulators of one stream.
#[derive(Debug, Clone)]
pub struct StreamStageAcc {
    pub interrupt: StageAcc,
    pub softirq: StageAcc,
    pub handler: StageAcc,
    pub thread: StageAcc,
    pub to_user: StageAcc,
    pub total: StageAcc,
    /// Kernel wakes whose times were out of order.
    pub inconsistent: u64,
}

impl StreamStageAcc {
    pub fn new(span_ns: u64) -> StreamStageAcc {
        StreamStageAcc {
            interrupt: StageAcc::new(span_ns),
            softirq: StageAcc::new(span_ns),
            handler: StageAcc::new(span_ns),
            thread: StageAcc::new(span_ns),
            to_user: StageAcc::new(span_ns),
            total: StageAcc::new(span_ns),
            inconsistent: 0,
        }
    }

    /// Records a matched wake due `at_ns` after the start of the run.
    pub fn record(&mut self, at_ns: u64, k: &KernelWake, user_ns: u64) {
        let Some(s) = WakeStages::split(k, user_ns) else {
            self.inconsistent += 1;
            return;
        };
        self.interrupt.record(at_ns, s.interrupt);
        if let Some(v) = s.softirq {
            self.softirq.record(at_ns, v);
        }
        self.handler.record(at_ns, s.handler);
        self.thread.record(at_ns, s.thread);
        self.to_user.record(at_ns, s.to_user);
        self.total.record(at_ns, s.total());
    }

    pub fn stages(&self, measured_ns: u64) -> Stages {
        let mean = self.total.hist.mean();
        let st = |a: &StageAcc| a.stats(measured_ns, mean);
        Stages {
            interrupt: st(&self.interrupt),
            softirq: (self.softirq.hist.count() > 0).then(|| st(&self.softirq)),
            handler: st(&self.handler),
            thread: st(&self.thread),
            to_user: st(&self.to_user),
            total: st(&self.total),
        }
    }
}

/// When tracing was switched on and off: each switch is bracketed by clock reads around the
/// write, and a wake overlapping a bracket belongs to neither phase.
#[derive(Debug, Clone, Default)]
pub struct PhaseLog {
    /// (before the write, after it, tracing on afterwards), in time order.
    pub switches: Vec<(u64, u64, bool)>,
}

impl PhaseLog {
    /// Whether tracing was on for the whole of [from, to]; None when it changed in between or
    /// before the first switch.
    pub fn state_during(&self, from: u64, to: u64) -> Option<bool> {
        let mut state = None;
        for &(a, b, on) in &self.switches {
            if b < from {
                state = Some(on);
            } else if a <= to {
                return None;
            } else {
                break;
            }
        }
        state
    }
}

/// What the tracing cost, from wakes measured alternately with the ring buffer on and off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Overhead {
    pub traced_wakes: u64,
    pub untraced_wakes: u64,
    pub traced_p50_ns: u64,
    pub untraced_p50_ns: u64,
    pub traced_p99_ns: u64,
    pub untraced_p99_ns: u64,
    /// traced p50 - untraced p50: what recording added to the median wake (can come out
    /// slightly negative from noise).
    pub added_p50_ns: i64,
    /// Kernel events recorded per traced wake for the staged thread's own wakes (its timer,
    /// wake-up, switch-in, sleep exit and the interrupt that expired its timer; other threads'
    /// events on the CPU are not counted).
    pub events_per_wake: f64,
}

impl Overhead {
    /// Whether both phases had wakes to compare (a thread that never slept in one has none).
    pub fn measured(&self) -> bool {
        self.traced_wakes > 0 && self.untraced_wakes > 0
    }

    pub fn from(traced: &Histogram, untraced: &Histogram, events: u64) -> Overhead {
        Overhead {
            traced_wakes: traced.count(),
            untraced_wakes: untraced.count(),
            traced_p50_ns: traced.percentile(0.5),
            untraced_p50_ns: untraced.percentile(0.5),
            traced_p99_ns: traced.percentile(0.99),
            untraced_p99_ns: untraced.percentile(0.99),
            added_p50_ns: traced.percentile(0.5) as i64 - untraced.percentile(0.5) as i64,
            events_per_wake: if traced.count() > 0 {
                events as f64 / traced.count() as f64
            } else {
                0.0
            },
        }
    }
}

#[cfg(test)]
mod tests;
