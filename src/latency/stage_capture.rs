//! Stage capture (`latency --stages`, root): the kernel events of the measured timer threads'
//! wakes, read in binary from a private trace instance while the run goes on, matched with the
//! wake times the threads saw, and split into stages (see `stages`).
//!
//! Overhead is measured in the same run: the ring buffer is switched on and off in alternating
//! phases and the threads' wakes in each are compared. The events stay attached in the off phases
//! (attaching and detaching tracepoints patches kernel code on every CPU, which would disturb the
//! measurement itself), so the figure is the cost of recording, the larger part.

use super::histogram::Histogram;
use super::ringbuf::{self, CpuPipe, EventFormat, RawEvent, FLAG_HARDIRQ, FLAG_SOFTIRQ};
use super::stages::{Event, KernelWake, Overhead, PhaseLog, Stages, StreamStageAcc, Tracker};
use super::threads::{monotonic_ns, THREAD_PREFIX};
use crate::tracefs::{Instance, Tracefs};
use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;

/// Wake times kept per stream for the collector, which reads them within a second or so.
const RING: usize = 1 << 16;
/// Length of each traced and untraced phase, by default.
pub const PHASE_NS: u64 = 1_000_000_000;
/// User wakes are classified once they are this old (the thread has surely written them).
const SETTLE_NS: u64 = 200_000_000;
/// Kernel wakes not matched with a user wake within this time are given up.
const MATCH_TIMEOUT_NS: u64 = 2_000_000_000;

/// What a measuring timer thread shares with the collector: its tid, its deadline schedule, and
/// the time of each wake. Written by the thread without a system call.
pub struct StageTap {
    tid: AtomicI32,
    first_ns: AtomicU64,
    period_ns: AtomicU64,
    wake: Box<[AtomicU64]>,
    tag: Box<[AtomicU64]>,
}

impl StageTap {
    pub fn new() -> Arc<StageTap> {
        Arc::new(StageTap {
            tid: AtomicI32::new(0),
            first_ns: AtomicU64::new(0),
            period_ns: AtomicU64::new(0),
            wake: (0..RING).map(|_| AtomicU64::new(0)).collect(),
            tag: (0..RING).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Called by the thread before its first sleep.
    pub fn begin(&self, first_deadline_ns: u64, period_ns: u64) {
        self.first_ns.store(first_deadline_ns, Ordering::Relaxed);
        self.period_ns.store(period_ns, Ordering::Relaxed);
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        self.tid.store(tid, Ordering::Release);
    }

    /// The thread woke for period `k` at `now`.
    #[inline]
    pub fn record(&self, k: u64, now: u64) {
        let slot = k as usize % RING;
        self.wake[slot].store(now, Ordering::Relaxed);
        self.tag[slot].store(k + 1, Ordering::Release);
    }

    fn tid(&self) -> i32 {
        self.tid.load(Ordering::Acquire)
    }

    fn schedule(&self) -> (u64, u64) {
        (
            self.first_ns.load(Ordering::Relaxed),
            self.period_ns.load(Ordering::Relaxed),
        )
    }

    /// When the thread woke for period k, if it did and the slot still holds it.
    fn wake_of(&self, k: u64) -> Option<u64> {
        let slot = k as usize % RING;
        if self.tag[slot].load(Ordering::Acquire) != k + 1 {
            return None;
        }
        let w = self.wake[slot].load(Ordering::Relaxed);
        (self.tag[slot].load(Ordering::Acquire) == k + 1).then_some(w)
    }
}

/// One tap per measuring stream, by stream index; None for streams without stages.
pub type StageTaps = Vec<Option<Arc<StageTap>>>;

/// The stages of one stream and how complete they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StreamStages {
    /// Wakes that happened with the ring buffer on.
    pub traced_wakes: u64,
    /// Of those, wakes whose kernel events were all found and matched.
    pub with_stages: u64,
    /// Chains of events broken by a lost event or cut by a phase switch.
    pub incomplete: u64,
    /// Complete chains the thread's own wake times did not match (expected 0).
    #[serde(default)]
    pub unmatched: u64,
    pub stages: Option<Stages>,
    /// Stages that do not apply here, and why.
    pub not_applicable: BTreeMap<String, String>,
    /// From alternating phases; None when every wake was traced.
    pub overhead: Option<Overhead>,
}

/// How the stages were captured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StageCaptureInfo {
    pub method: String,
    pub events: Vec<String>,
    /// Length of the traced and untraced phases; None when every wake was traced.
    pub phase_ms: Option<u64>,
    /// Events the kernel dropped (buffers full); the wakes they broke count as incomplete.
    pub lost_events: u64,
}

/// Everything `--stages` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StagesReport {
    pub info: StageCaptureInfo,
    /// One per stream with stages, in stream order (None for the others).
    pub streams: Vec<Option<StreamStages>>,
}

/// Field positions of the events used, read from this kernel's format files.
struct Decoder {
    start: (u16, ringbuf::Field, ringbuf::Field),
    expire: (u16, ringbuf::Field, ringbuf::Field),
    waking: (u16, ringbuf::Field),
    switch: (u16, ringbuf::Field),
    local_timer: Option<u16>,
    /// `raw_syscalls/sys_exit` and its syscall number field, where the kernel has it.
    sleep_exit: Option<(u16, ringbuf::Field)>,
}

/// The system call the timer threads sleep in; its exits mark them running again after a wake
/// from idle, which some kernels report no switch for.
const SLEEP_SYSCALL: i64 = libc::SYS_clock_nanosleep;
const SLEEP_EXIT_EVENT: &str = "raw_syscalls/sys_exit";

fn format(inst: &Instance, event: &str) -> Result<EventFormat> {
    let text = inst.read(&format!("events/{event}/format"))?;
    ringbuf::parse_format(&text).ok_or_else(|| anyhow!("cannot read the format of {event}"))
}

fn field(f: &EventFormat, name: &str) -> Result<ringbuf::Field> {
    f.field(name)
        .cloned()
        .ok_or_else(|| anyhow!("event {} has no field {name} on this kernel", f.name))
}

impl Decoder {
    fn new(inst: &Instance) -> Result<Decoder> {
        let start = format(inst, "timer/hrtimer_start")?;
        let expire = format(inst, "timer/hrtimer_expire_entry")?;
        let waking = format(inst, "sched/sched_waking")?;
        let switch = format(inst, "sched/sched_switch")?;
        let local_timer = format(inst, "irq_vectors/local_timer_entry").ok();
        let sleep_exit = format(inst, SLEEP_EXIT_EVENT)
            .ok()
            .and_then(|f| Some((f.id, f.field("id")?.clone())));
        Ok(Decoder {
            start: (
                start.id,
                field(&start, "hrtimer")?,
                field(&start, "softexpires")?,
            ),
            expire: (
                expire.id,
                field(&expire, "hrtimer")?,
                field(&expire, "now")?,
            ),
            waking: (waking.id, field(&waking, "pid")?),
            switch: (switch.id, field(&switch, "next_pid")?),
            local_timer: local_timer.map(|f| f.id),
            sleep_exit,
        })
    }

    fn decode(&self, e: &RawEvent) -> Option<Event> {
        let id = e.id();
        let d = e.data;
        if id == self.start.0 {
            Some(Event::TimerStart {
                pid: e.pid(),
                timer: self.start.1.uint(d)?,
                soft_expires: self.start.2.uint(d)?,
            })
        } else if id == self.expire.0 {
            let flags = e.flags();
            Some(Event::Expire {
                timer: self.expire.1.uint(d)?,
                now: self.expire.2.uint(d)?,
                in_softirq: flags & FLAG_SOFTIRQ != 0 && flags & FLAG_HARDIRQ == 0,
            })
        } else if id == self.waking.0 {
            Some(Event::Waking {
                pid: self.waking.1.int(d)? as i32,
                ts: e.ts,
                current: e.pid(),
            })
        } else if id == self.switch.0 {
            Some(Event::SwitchIn {
                next_pid: self.switch.1.int(d)? as i32,
                ts: e.ts,
            })
        } else if Some(id) == self.local_timer {
            Some(Event::TimerInterrupt { ts: e.ts })
        } else if let Some((_, nr)) = self.sleep_exit.as_ref().filter(|(i, _)| *i == id) {
            (nr.int(d)? == SLEEP_SYSCALL).then_some(Event::SleepExit {
                pid: e.pid(),
                ts: e.ts,
            })
        } else {
            None
        }
    }
}

/// The kernel address of a text symbol, from /proc/kallsyms (None where addresses are hidden).
pub fn kernel_symbol(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    text.lines().find_map(|l| {
        let mut p = l.split_whitespace();
        let addr = u64::from_str_radix(p.next()?, 16).ok()?;
        let _kind = p.next()?;
        (p.next()? == name && addr != 0).then_some(addr)
    })
}

/// Per stream: the collector's state.
struct StreamState {
    tap: Arc<StageTap>,
    cpu: usize,
    acc: StreamStageAcc,
    pending: VecDeque<KernelWake>,
    /// Next period whose user wake is to be classified into a phase.
    cursor: u64,
    traced: Histogram,
    untraced: Histogram,
    with_stages: u64,
    unmatched: u64,
}

struct Collector {
    // The pipes are closed before the instance is removed (fields drop in this order).
    pipes: Vec<CpuPipe>,
    inst: Instance,
    decoder: Decoder,
    trackers: HashMap<usize, Tracker>,
    streams: Vec<Option<StreamState>>,
    phases: PhaseLog,
    tracing: bool,
    phase_ns: Option<u64>,
    next_switch_ns: u64,
    lost: u64,
    events: Vec<String>,
}

impl Collector {
    fn switch_tracing(&mut self, on: bool) {
        // What was recorded before the switch is read first, so chains the switch cuts can be
        // told from chains broken by lost events.
        self.drain();
        for t in self.trackers.values_mut() {
            t.forget_open_chains();
        }
        let before = monotonic_ns();
        if self
            .inst
            .write("tracing_on", if on { "1" } else { "0" })
            .is_ok()
        {
            self.phases.switches.push((before, monotonic_ns(), on));
            self.tracing = on;
        }
    }

    fn drain(&mut self) {
        for pipe in &mut self.pipes {
            let cpu = pipe.cpu;
            let tracker = self.trackers.entry(cpu).or_default();
            let mut found = Vec::new();
            while let Ok(Some(page)) = pipe.next_subbuf() {
                let info = ringbuf::parse_subbuf(page, |e| {
                    if let Some(ev) = self.decoder.decode(&e) {
                        if let Some(w) = tracker.feed(ev) {
                            found.push(w);
                        }
                    }
                });
                self.lost += info.lost;
            }
            for w in found {
                if let Some(s) = self
                    .streams
                    .iter_mut()
                    .flatten()
                    .find(|s| s.tap.tid() == w.tid)
                {
                    s.pending.push_back(w);
                }
            }
        }
    }

    /// Matches kernel wakes with the threads' own wake times, and files settled user wakes
    /// into the traced or untraced phase.
    fn settle(&mut self, now: u64, final_pass: bool) {
        for s in self.streams.iter_mut().flatten() {
            let (first, period) = s.tap.schedule();
            if period == 0 {
                continue;
            }
            while let Some(k) = s.pending.front().copied() {
                let Some(offset) = k.deadline_ns.checked_sub(first) else {
                    s.unmatched += 1;
                    s.pending.pop_front();
                    continue;
                };
                let index = offset / period;
                match s.tap.wake_of(index) {
                    Some(user) if offset % period == 0 => {
                        s.acc.record(offset, &k, user);
                        s.with_stages += 1;
                        s.pending.pop_front();
                    }
                    _ if final_pass || now.saturating_sub(k.switch_in_ns) > MATCH_TIMEOUT_NS => {
                        s.unmatched += 1;
                        s.pending.pop_front();
                    }
                    _ => break,
                }
            }
            loop {
                let deadline = first + s.cursor * period;
                if !final_pass && deadline + SETTLE_NS > now || final_pass && deadline > now {
                    break;
                }
                if let Some(user) = s.tap.wake_of(s.cursor) {
                    match self.phases.state_during(deadline, user) {
                        Some(true) => s.traced.record(user - deadline.min(user)),
                        Some(false) => s.untraced.record(user - deadline.min(user)),
                        None => {}
                    }
                }
                s.cursor += 1;
            }
        }
    }
}

/// A running stage capture; `finish` stops it and gives the report.
pub struct StageCapture {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Result<StagesReport>>>,
}

impl StageCapture {
    /// Starts the collector for the streams with a tap, on `cpus` (the measured CPUs); `span_ns`
    /// is the planned length of the run. Call it before the measurement's start time is set:
    /// attaching the events stalls the CPUs for a moment. With `phase_ns` the ring buffer
    /// alternates on and off in phases of that length, which measures the overhead; without it
    /// every wake is traced.
    pub fn start(
        cpus: &[usize],
        taps: &StageTaps,
        stream_cpus: &[usize],
        span_ns: u64,
        phase_ns: Option<u64>,
    ) -> Result<StageCapture> {
        let fs = Tracefs::open()?;
        let inst = Instance::create(&fs, "stages")?;
        let decoder =
            Decoder::new(&inst).context("--stages: this kernel lacks an event it needs")?;
        inst.write("trace_clock", "mono")?;
        inst.write("buffer_size_kb", "2048")?;
        inst.set_cpus(cpus)?;
        let dir = inst.path("");
        let bytes = ringbuf::subbuf_bytes(&dir);
        let pipes = cpus
            .iter()
            .map(|&c| CpuPipe::open(&dir, c, bytes))
            .collect::<std::io::Result<Vec<_>>>()
            .context("cannot open the trace pipes")?;
        let streams = taps
            .iter()
            .zip(stream_cpus)
            .map(|(t, &cpu)| {
                t.as_ref().map(|tap| StreamState {
                    tap: Arc::clone(tap),
                    cpu,
                    acc: StreamStageAcc::new(span_ns),
                    pending: VecDeque::new(),
                    cursor: 0,
                    traced: Histogram::new(),
                    untraced: Histogram::new(),
                    with_stages: 0,
                    unmatched: 0,
                })
            })
            .collect();
        let events = set_up_events(&inst)?;
        let trackers = cpus.iter().map(|&c| (c, Tracker::default())).collect();
        let mut collector = Collector {
            inst,
            pipes,
            decoder,
            trackers,
            streams,
            phases: PhaseLog::default(),
            tracing: false,
            phase_ns,
            next_switch_ns: u64::MAX,
            lost: 0,
            events,
        };
        collector.switch_tracing(true);
        if let Some(p) = phase_ns {
            collector.next_switch_ns = monotonic_ns() + p;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let measured: Vec<usize> = cpus.to_vec();
        let handle = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("osm-stages".into())
                .spawn(move || run(collector, &stop, &measured))
                .map_err(|e| crate::system::limits::cannot_start("the stage collector", &e))?
        };
        Ok(StageCapture {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops (after the measuring threads are done) and reports.
    pub fn finish(mut self) -> Result<StagesReport> {
        self.stop.store(true, Ordering::Release);
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            _ => Err(anyhow!("the stage collector failed")),
        }
    }
}

impl Drop for StageCapture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Collects until stopped, switching phases.
fn run(mut c: Collector, stop: &AtomicBool, measured: &[usize]) -> Result<StagesReport> {
    // Keep the reading off the measured CPUs when there are others.
    let others: Vec<usize> = crate::meter::placement::usable_cpus()
        .into_iter()
        .filter(|x| !measured.contains(x))
        .collect();
    if !others.is_empty() {
        let _ = crate::meter::placement::set_affinity(&others);
    }
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(std::time::Duration::from_millis(10));
        c.drain();
        let now = monotonic_ns();
        if let Some(p) = c.phase_ns {
            if now >= c.next_switch_ns {
                let on = !c.tracing;
                c.switch_tracing(on);
                c.next_switch_ns = now + p;
            }
        }
        c.settle(now, false);
    }
    c.switch_tracing(false);
    c.settle(monotonic_ns(), true);
    Ok(report(&c))
}

/// Events, and the filters that keep them to the measuring threads' sleeps. The threads do not
/// exist yet (attaching events patches kernel code and stalls CPUs, so it is done before the
/// measurement), so they are picked by name and by the timer function that wakes sleepers.
fn set_up_events(inst: &Instance) -> Result<Vec<String>> {
    let wakeup = kernel_symbol("hrtimer_wakeup").map(|a| format!("function == 0x{a:x}"));
    let filters = [
        ("timer/hrtimer_start", wakeup.clone()),
        ("timer/hrtimer_expire_entry", wakeup),
        (
            "sched/sched_waking",
            Some(format!("comm ~ \"{THREAD_PREFIX}*\"")),
        ),
        (
            "sched/sched_switch",
            Some(format!("next_comm ~ \"{THREAD_PREFIX}*\"")),
        ),
        ("irq_vectors/local_timer_entry", None),
        (SLEEP_EXIT_EVENT, Some(format!("id == {SLEEP_SYSCALL}"))),
    ];
    let mut enabled = Vec::new();
    for (event, filter) in filters {
        if !inst.has(&format!("events/{event}")) {
            continue;
        }
        if let Some(f) = filter {
            inst.write(&format!("events/{event}/filter"), &f)?;
        }
        inst.enable_event(event)?;
        enabled.push(event.to_string());
    }
    Ok(enabled)
}

fn report(c: &Collector) -> StagesReport {
    let streams = c
        .streams
        .iter()
        .map(|s| {
            s.as_ref().map(|s| {
                let (_, period) = s.tap.schedule();
                let measured_ns = s.cursor * period;
                let events = c
                    .trackers
                    .get(&s.cpu)
                    .map_or(0, |t| t.events_of(s.tap.tid()));
                let incomplete = c
                    .trackers
                    .get(&s.cpu)
                    .map_or(0, |t| t.incomplete(s.tap.tid()));
                let stages = (s.with_stages > 0).then(|| s.acc.stages(measured_ns));
                let mut not_applicable = BTreeMap::new();
                if stages.as_ref().is_some_and(|st| st.softirq.is_none()) {
                    not_applicable.insert(
                        "softirq".to_string(),
                        "the timer of every sleep expired in the hard interrupt (this kernel wakes \
                         sleeping threads there; PREEMPT_RT kernels defer most timers to a softirq)"
                            .to_string(),
                    );
                }
                StreamStages {
                    traced_wakes: s.traced.count(),
                    with_stages: s.with_stages,
                    incomplete,
                    unmatched: s.unmatched,
                    stages,
                    not_applicable,
                    overhead: c
                        .phase_ns
                        .map(|_| Overhead::from(&s.traced, &s.untraced, events)),
                }
            })
        })
        .collect();
    StagesReport {
        info: StageCaptureInfo {
            method: "tracefs (binary per-CPU ring buffers of a private instance)".into(),
            events: c.events.clone(),
            phase_ms: c.phase_ns.map(|p| p / 1_000_000),
            lost_events: c.lost,
        },
        streams,
    }
}

mod text;

pub use text::{render, render_header};

#[cfg(test)]
mod tests;
