//! Cause capture: scheduler, interrupt, softirq, hrtimer and workqueue events on the measured CPUs
//! go into a private tracefs instance; a wake later than the threshold stops that instance's
//! tracing at once (one write from the measuring thread), and the collector reads back what the
//! CPU did between the deadline and the wake. Everything lives in a private instance (see
//! `tracefs`), so removing it restores everything.

use super::stacks::{samples_in, StackSample};
use super::timeline::{Span, SpanKind};
use crate::tracefs::{Instance, Tracefs};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

const EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_wakeup",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "timer/hrtimer_expire_entry",
    "timer/hrtimer_expire_exit",
    "workqueue/workqueue_execute_start",
    "workqueue/workqueue_execute_end",
];

/// A wake that crossed the threshold, as the measuring thread saw it.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    pub cpu: usize,
    pub class: &'static str,
    pub path: &'static str,
    pub reference_ns: u64,
    pub wake_ns: u64,
}

/// Shared between the measuring threads (which fire it) and the collector.
pub struct Trigger {
    pub threshold_ns: u64,
    armed: AtomicBool,
    /// The instance's tracing_on, written raw so the measuring thread pays one write(2). Closed by
    /// the Tracer after every measuring thread is gone; the instance cannot be removed while open.
    tracing_on: libc::c_int,
    pending: Mutex<Option<Mark>>,
}

impl Trigger {
    /// Called by a measuring thread after each wake; does nothing unless the wake is over the
    /// threshold and no episode is being collected.
    #[inline]
    pub fn check(&self, mark: Mark) {
        if mark.wake_ns.saturating_sub(mark.reference_ns) <= self.threshold_ns
            || !self.armed.swap(false, Ordering::AcqRel)
        {
            return;
        }
        // SAFETY: writing one byte from a static buffer to a descriptor the Tracer keeps open for
        // as long as measuring threads run.
        unsafe { libc::write(self.tracing_on, b"0".as_ptr().cast(), 1) };
        if let Ok(mut p) = self.pending.lock() {
            *p = Some(mark);
        }
    }
}

/// Which stacks cause capture records. Each costs time on the measured CPU at the events that
/// take one (a few microseconds per kernel stack on a VM), some of it on the late thread's path.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum StackMode {
    /// No stacks: events only
    Off,
    /// Kernel stacks at the sampling points
    Kernel,
    /// Kernel stacks, and user stacks with every event (functions named from the objects' symbol
    /// tables where they have one)
    All,
}

/// The cause-capture instance; dropping it removes the instance.
pub struct Tracer {
    instance: Instance,
    pub trigger: std::sync::Arc<Trigger>,
    pub episodes: Vec<Episode>,
    pub max_episodes: usize,
}

impl Tracer {
    pub fn start(
        cpus: &[usize],
        threshold_ns: u64,
        max_episodes: usize,
        stacks: StackMode,
    ) -> Result<Tracer> {
        let fs = Tracefs::open()?;
        let instance = Instance::create(&fs, "causes")?;
        let tracing_on = std::fs::OpenOptions::new()
            .write(true)
            .open(instance.path("tracing_on"))
            .context("cannot open tracing_on of the trace instance")?;
        let tracer = Tracer {
            instance,
            trigger: std::sync::Arc::new(Trigger {
                threshold_ns,
                armed: AtomicBool::new(false),
                tracing_on: std::os::fd::IntoRawFd::into_raw_fd(tracing_on),
                pending: Mutex::new(None),
            }),
            episodes: Vec::new(),
            max_episodes,
        };
        // From here on Drop closes the descriptor and removes the instance whatever fails.
        let i = &tracer.instance;
        i.write("trace_clock", "mono")?;
        i.write("buffer_size_kb", "4096")?;
        i.set_cpus(cpus)?;
        for ev in EVENTS {
            i.enable_event(ev)?;
        }
        if stacks != StackMode::Off {
            set_up_stacks(i, stacks == StackMode::All)?;
        }
        i.write("trace", "")?;
        i.write("tracing_on", "1")?;
        tracer.trigger.armed.store(true, Ordering::Release);
        Ok(tracer)
    }

    /// Collects a fired episode, if any, and re-arms while episodes remain to be kept.
    pub fn poll(&mut self) {
        let mark = match self.trigger.pending.lock() {
            Ok(mut p) => p.take(),
            Err(_) => None,
        };
        let Some(mark) = mark else { return };
        let text = self.instance.read("trace").unwrap_or_default();
        self.episodes.push(summarise(&mark, &parse(&text)));
        if self.episodes.len() < self.max_episodes
            && self.instance.write("trace", "").is_ok()
            && self.instance.write("tracing_on", "1").is_ok()
        {
            self.trigger.armed.store(true, Ordering::Release);
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.trigger.armed.store(false, Ordering::Release);
        // SAFETY: our descriptor; the measuring threads that could write to it have been joined.
        // Closed before the instance (dropped after this) is removed, which an open file prevents.
        unsafe { libc::close(self.trigger.tracing_on) };
    }
}

/// Kernel stacks at the sampling points: the tick (a periodic sample of whatever runs, as in the
/// seed's tool), device interrupts, softirqs, and each switch into a measuring thread away from a
/// task that was running (where that task gave the CPU up); user stacks with every event where the
/// kernel can walk them. The measuring threads' own timer expiries and switches from idle carry no
/// stack, so an on-time wake pays nothing for it.
fn set_up_stacks(i: &Instance, user: bool) -> Result<()> {
    // Not when one measuring thread follows another: that is no cause.
    let switch = format!(
        "stacktrace if next_comm ~ \"{p}*\" && prev_pid != 0 && !(prev_comm ~ \"{p}*\")",
        p = super::threads::THREAD_PREFIX
    );
    let tick = ["tick_nohz_handler", "tick_sched_timer"]
        .iter()
        .find_map(|f| super::stage_capture::kernel_symbol(f))
        .map(|a| format!("stacktrace if function == 0x{a:x}"));
    let mut triggers = vec![
        ("irq/irq_handler_entry", "stacktrace".to_string()),
        ("irq/softirq_entry", "stacktrace".to_string()),
        ("sched/sched_switch", switch),
    ];
    if let Some(t) = tick {
        triggers.push(("timer/hrtimer_expire_entry", t));
    }
    for (event, trigger) in triggers {
        let file = format!("events/{event}/trigger");
        if i.has(&file) {
            i.write(&file, &trigger)?;
        }
    }
    let options: &[&str] = if user {
        &["userstacktrace", "sym-userobj"]
    } else {
        &[]
    };
    for option in options {
        let file = format!("options/{option}");
        if i.has(&file) {
            i.write(&file, "1")?;
        }
    }
    Ok(())
}

/// One trace line.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub task: String,
    pub cpu: usize,
    pub ts_ns: u64,
    pub name: String,
    pub detail: String,
    /// For `<stack trace>` and `<user stack trace>` entries: the frames, innermost first.
    pub frames: Vec<String>,
}

/// Reads the default text format: `task-pid [cpu] flags secs.frac: event: details`.
pub fn parse(text: &str) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        // ` => function` lines are the frames of the stack entry above them.
        if let Some(frame) = line.strip_prefix(" => ") {
            if let Some(last) = out.last_mut() {
                last.frames.push(frame.trim().to_string());
            }
            continue;
        }
        let Some(open) = line.find("] ") else {
            continue;
        };
        let Some(lb) = line[..open].rfind('[') else {
            continue;
        };
        let Ok(cpu) = line[lb + 1..open].trim().parse::<usize>() else {
            continue;
        };
        let task = line[..lb].trim().to_string();
        let rest = &line[open + 2..];
        // Skip the flags column (absent on some kernels): the timestamp is the first token with a
        // dot followed by a colon.
        let mut parts = rest.splitn(2, ": ");
        let (Some(head), Some(tail)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some(ts) = head.split_whitespace().last() else {
            continue;
        };
        let Some((secs, frac)) = ts.split_once('.') else {
            continue;
        };
        let (Ok(s), Ok(f)) = (secs.parse::<u64>(), frac.parse::<u64>()) else {
            continue;
        };
        let ts_ns = s * 1_000_000_000 + f * 10u64.pow(9u32.saturating_sub(frac.len() as u32));
        let (name, detail) = tail.split_once(": ").unwrap_or((tail, ""));
        out.push(Event {
            task,
            cpu,
            ts_ns,
            name: name.trim().to_string(),
            detail: detail.trim().to_string(),
            frames: Vec::new(),
        });
    }
    out
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Episode {
    pub cpu: usize,
    pub class: String,
    pub path: String,
    pub lateness_ns: u64,
    /// Time each task ran on the CPU between the deadline and the wake, longest first.
    pub ran: Vec<(String, u64)>,
    pub irqs: Vec<(String, u64, u64)>,
    pub softirqs: Vec<(String, u64, u64)>,
    pub hrtimers: Vec<(String, u64)>,
    pub work: Vec<(String, u64)>,
    /// Longest stretch with no event on the CPU inside the window.
    pub longest_gap_ns: u64,
    pub verdict: String,
    pub events: usize,
    /// The episode as the table prints it.
    pub summary: String,
    /// Stacks sampled on the CPU while the thread was late (see `stacks`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<StackSample>,
    /// The deadline on the trace's clock (CLOCK_MONOTONIC), which places the episodes of a run on
    /// one timeline; absent in episodes stored before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ns: Option<u64>,
    /// What the CPU did from the deadline to the wake: the tasks that ran, and the interrupts,
    /// timers, softirqs and work items, each from its start (`export --format trace-event` draws
    /// them); absent in episodes stored before they were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<Span>,
}

pub(super) fn field<'a>(detail: &'a str, key: &str) -> Option<&'a str> {
    detail
        .split_whitespace()
        .map(|t| t.trim_matches(|c| c == '[' || c == ']'))
        .find_map(|t| t.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
}

/// The command of a `comm-pid` task column, unless it is the idle task.
fn running_task(task: &str) -> Option<&str> {
    let (comm, pid) = task.rsplit_once('-')?;
    (pid.parse::<u32>().ok()? != 0).then_some(comm)
}

/// What the CPU did from the deadline to the wake.
pub fn summarise(mark: &Mark, events: &[Event]) -> Episode {
    let (from, to) = (mark.reference_ns, mark.wake_ns);
    // Stack entries (`<stack trace>`) belong to the event before them, not to the timeline.
    let on_cpu: Vec<&Event> = events
        .iter()
        .filter(|e| e.cpu == mark.cpu && !e.name.starts_with('<'))
        .collect();
    // Who was running at the deadline: the last switch before it.
    let mut current = on_cpu
        .iter()
        .rfind(|e| e.ts_ns <= from && e.name == "sched_switch")
        .and_then(|e| field(&e.detail, "next_comm").map(str::to_string))
        .unwrap_or_else(|| "(unknown)".into());
    let mut since = from;
    let mut ran: BTreeMap<String, u64> = BTreeMap::new();
    let mut irqs: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut softirqs: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut hrtimers: BTreeMap<String, u64> = BTreeMap::new();
    let mut work: BTreeMap<String, u64> = BTreeMap::new();
    let mut open_irq: Option<(String, u64)> = None;
    let mut open_soft: Option<(String, u64)> = None;
    let mut open_timer: Option<(String, u64)> = None;
    let mut open_work: Option<(String, u64)> = None;
    let mut timeline: Vec<Span> = Vec::new();
    // A stretch from `start` to `end` (trace times), kept relative to the deadline.
    let mut stretch = |kind: SpanKind, name: &str, start: u64, end: u64| {
        let start = start.max(from);
        if end > start {
            timeline.push(Span {
                kind,
                name: name.to_string(),
                start_ns: start - from,
                dur_ns: end - start,
            });
        }
    };
    let mut last = from;
    let mut gap = 0;
    let mut gap_task = current.clone();
    let mut count = 0;
    for e in on_cpu.iter().filter(|e| e.ts_ns > from && e.ts_ns <= to) {
        count += 1;
        // Some kernels (this project's 6.18 VMs) fire no sched_switch when the idle task gives
        // way to a task it woke: an event recorded while another task was current shows that
        // task took over, at the latest right after the idle task's last event.
        if current.starts_with("swapper") && e.name != "sched_switch" {
            if let Some(comm) = running_task(&e.task) {
                *ran.entry(current.clone()).or_default() += last.saturating_sub(since);
                stretch(SpanKind::Task, &current, since, last);
                since = since.max(last);
                current = comm.to_string();
            }
        }
        if e.ts_ns - last > gap {
            gap = e.ts_ns - last;
            gap_task = current.clone();
        }
        last = e.ts_ns;
        match e.name.as_str() {
            "sched_switch" => {
                *ran.entry(current.clone()).or_default() += e.ts_ns - since;
                stretch(SpanKind::Task, &current, since, e.ts_ns);
                since = e.ts_ns;
                current = field(&e.detail, "next_comm").unwrap_or("?").to_string();
            }
            "irq_handler_entry" => {
                let name = field(&e.detail, "name").unwrap_or("?");
                let irq = field(&e.detail, "irq").unwrap_or("?");
                open_irq = Some((format!("irq {irq} {name}"), e.ts_ns));
            }
            "irq_handler_exit" => {
                if let Some((n, t)) = open_irq.take() {
                    stretch(SpanKind::Interrupt, &n, t, e.ts_ns);
                    let s = irqs.entry(n).or_default();
                    s.0 += 1;
                    s.1 += e.ts_ns - t;
                }
            }
            "softirq_entry" => {
                let action = field(&e.detail, "action").unwrap_or("?");
                open_soft = Some((
                    action.trim_matches(|c| c == '[' || c == ']').to_string(),
                    e.ts_ns,
                ));
            }
            "softirq_exit" => {
                if let Some((n, t)) = open_soft.take() {
                    stretch(SpanKind::Softirq, &n, t, e.ts_ns);
                    let s = softirqs.entry(n).or_default();
                    s.0 += 1;
                    s.1 += e.ts_ns - t;
                }
            }
            "hrtimer_expire_entry" => {
                let function = field(&e.detail, "function").unwrap_or("?").to_string();
                *hrtimers.entry(function.clone()).or_default() += 1;
                open_timer = Some((function, e.ts_ns));
            }
            "hrtimer_expire_exit" => {
                if let Some((n, t)) = open_timer.take() {
                    stretch(SpanKind::Timer, &n, t, e.ts_ns);
                }
            }
            "workqueue_execute_start" => {
                // `work struct 0x...: function name`
                let f = e.detail.rsplit_once("function ").map(|(_, f)| f.trim());
                let function = f.unwrap_or("?").to_string();
                *work.entry(function.clone()).or_default() += 1;
                open_work = Some((function, e.ts_ns));
            }
            "workqueue_execute_end" => {
                if let Some((n, t)) = open_work.take() {
                    stretch(SpanKind::Work, &n, t, e.ts_ns);
                }
            }
            _ => {}
        }
    }
    if to.saturating_sub(last) > gap {
        gap = to - last;
        gap_task = current.clone();
    }
    stretch(SpanKind::Task, &current, since, to);
    timeline.extend(super::timeline::wake_stages(mark, &on_cpu));
    *ran.entry(current).or_default() += to.saturating_sub(since);
    let mut ran: Vec<(String, u64)> = ran.into_iter().filter(|(_, t)| *t > 0).collect();
    ran.sort_by_key(|r| std::cmp::Reverse(r.1));
    let lateness = to.saturating_sub(from);
    // A CPU that was idle (or whose state is unknown) and saw no event at all for most of the
    // window, not even the timer that should have woken the thread, was not running this guest.
    let idle_gap = gap_task.starts_with("swapper") || gap_task == "(unknown)";
    let verdict = if idle_gap && gap * 2 >= lateness {
        format!(
            "no event on CPU {} for {:.0} us of the {:.0} us: the CPU was probably not running this guest (hypervisor)",
            mark.cpu,
            gap as f64 / 1e3,
            lateness as f64 / 1e3
        )
    } else if let Some((task, t)) = ran.first().filter(|(t, _)| !t.starts_with("swapper")) {
        format!(
            "{task} ran for {:.0} us of the {:.0} us",
            *t as f64 / 1e3,
            lateness as f64 / 1e3
        )
    } else {
        "the CPU was idle or in interrupts; see the lists".to_string()
    };
    let mut e = Episode {
        cpu: mark.cpu,
        class: mark.class.to_string(),
        path: mark.path.to_string(),
        lateness_ns: lateness,
        ran,
        irqs: irqs.into_iter().map(|(k, (n, t))| (k, n, t)).collect(),
        softirqs: softirqs.into_iter().map(|(k, (n, t))| (k, n, t)).collect(),
        hrtimers: hrtimers.into_iter().collect(),
        work: work.into_iter().collect(),
        longest_gap_ns: gap,
        verdict,
        events: count,
        summary: String::new(),
        samples: samples_in(events, mark.cpu, from, to),
        deadline_ns: Some(from),
        timeline,
    };
    e.summary = render(&e);
    e
}

/// The episode as the table prints it.
pub fn render(e: &Episode) -> String {
    let mut s = format!(
        "  {}/{} cpu{}: {:.0} us late, {} events. {}\n",
        e.class,
        e.path,
        e.cpu,
        e.lateness_ns as f64 / 1e3,
        e.events,
        e.verdict
    );
    if !e.ran.is_empty() {
        let ran: Vec<String> = e
            .ran
            .iter()
            .take(5)
            .map(|(t, ns)| format!("{t} {:.0} us", *ns as f64 / 1e3))
            .collect();
        s.push_str(&format!("    ran: {}\n", ran.join(", ")));
    }
    for (label, list) in [("irqs", &e.irqs), ("softirqs", &e.softirqs)] {
        if !list.is_empty() {
            let v: Vec<String> = list
                .iter()
                .map(|(n, c, ns)| format!("{n} x{c} {:.1} us", *ns as f64 / 1e3))
                .collect();
            s.push_str(&format!("    {label}: {}\n", v.join(", ")));
        }
    }
    if !e.hrtimers.is_empty() {
        let v: Vec<String> = e
            .hrtimers
            .iter()
            .map(|(n, c)| format!("{n} x{c}"))
            .collect();
        s.push_str(&format!("    hrtimers: {}\n", v.join(", ")));
    }
    if !e.work.is_empty() {
        let v: Vec<String> = e.work.iter().map(|(n, c)| format!("{n} x{c}")).collect();
        s.push_str(&format!("    work: {}\n", v.join(", ")));
    }
    if !e.samples.is_empty() {
        let causes = super::stacks::aggregate([e.samples.as_slice()]);
        let v: Vec<String> = causes
            .iter()
            .take(4)
            .map(|c| format!("{} x{}", c.function, c.samples))
            .collect();
        s.push_str(&format!("    stacks: {}\n", v.join(", ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "\
# tracer: nop
#
           <...>-100     [001] d..2.   10.000000: sched_switch: prev_comm=lat prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d.h1.   10.000900: irq_handler_entry: irq=11 name=virtio0
          <idle>-0       [001] d.h1.   10.000920: irq_handler_exit: irq=11 ret=handled
          <idle>-0       [001] ..s1.   10.000930: softirq_entry: vec=3 [action=NET_RX]
          <idle>-0       [001] ..s1.   10.000960: softirq_exit: vec=3 [action=NET_RX]
          <idle>-0       [001] d..2.   10.000970: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hog next_pid=200 next_prio=120
             hog-200     [001] d.h1.   10.002000: hrtimer_expire_entry: hrtimer=0000 function=hrtimer_wakeup now=1
             hog-200     [001] ....1   10.002100: workqueue_execute_start: work struct 00000000deadbeef: function vmstat_update
             hog-200     [000] d..2.   10.002500: sched_switch: prev_comm=x prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=y next_pid=2 next_prio=120
             hog-200     [001] d..2.   10.004970: sched_switch: prev_comm=hog prev_pid=200 prev_prio=120 prev_state=R ==> next_comm=lat next_pid=100 next_prio=120
             lat-100     [001] d..2.   10.005000: sched_switch: prev_comm=lat prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";

    #[test]
    fn parses_the_text_format() {
        let ev = parse(TRACE);
        assert_eq!(ev.len(), 11);
        assert_eq!(ev[0].cpu, 1);
        assert_eq!(ev[0].ts_ns, 10_000_000_000);
        assert_eq!(ev[1].name, "irq_handler_entry");
        assert_eq!(ev[1].ts_ns, 10_000_900_000);
        assert_eq!(field(&ev[1].detail, "name"), Some("virtio0"));
    }

    #[test]
    fn names_the_task_that_held_the_cpu() {
        let mark = Mark {
            cpu: 1,
            class: "normal",
            path: "timer",
            reference_ns: 10_000_500_000,
            wake_ns: 10_005_000_000,
        };
        let e = summarise(&mark, &parse(TRACE));
        assert_eq!(e.lateness_ns, 4_500_000);
        assert_eq!(e.ran[0], ("hog".to_string(), 4_000_000));
        assert_eq!(e.ran[1].0, "swapper/1");
        assert_eq!(e.irqs, vec![("irq 11 virtio0".to_string(), 1, 20_000)]);
        assert_eq!(e.softirqs, vec![("NET_RX".to_string(), 1, 30_000)]);
        assert_eq!(e.hrtimers, vec![("hrtimer_wakeup".to_string(), 1)]);
        assert_eq!(e.work, vec![("vmstat_update".to_string(), 1)]);
        assert!(
            e.verdict.starts_with("hog ran for 4000 us"),
            "{}",
            e.verdict
        );
        assert!(render(&e).contains("irq 11 virtio0"));
    }

    /// The same story on a kernel that reports no switch away from the idle task.
    const TRACE_NO_SWITCH_FROM_IDLE: &str = "\
           <...>-100     [001] d..2.   10.000000: sched_switch: prev_comm=lat prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d.h1.   10.000900: irq_handler_entry: irq=11 name=virtio0
          <idle>-0       [001] dNh2.   10.000950: sched_wakeup: comm=hog pid=200 prio=120 target_cpu=001
          <idle>-0       [001] d.h1.   10.000960: irq_handler_exit: irq=11 ret=handled
             hog-200     [001] d.h1.   10.002000: hrtimer_expire_entry: hrtimer=0000 function=tick_nohz_handler now=1
             hog-200     [001] d..2.   10.004970: sched_switch: prev_comm=hog prev_pid=200 prev_prio=120 prev_state=R ==> next_comm=lat next_pid=100 next_prio=120
";

    #[test]
    fn a_task_that_took_over_from_idle_without_a_switch_event_is_named() {
        let mark = Mark {
            cpu: 1,
            class: "normal",
            path: "timer",
            reference_ns: 10_000_500_000,
            wake_ns: 10_005_000_000,
        };
        let e = summarise(&mark, &parse(TRACE_NO_SWITCH_FROM_IDLE));
        // Idle until its last event (the interrupt's exit), the hog from then to its switch.
        assert_eq!(
            e.ran,
            vec![
                ("hog".to_string(), 4_010_000),
                ("swapper/1".to_string(), 460_000),
                ("lat".to_string(), 30_000),
            ]
        );
        assert!(
            e.verdict.starts_with("hog ran for 4010 us"),
            "{}",
            e.verdict
        );
        assert_eq!(running_task("<idle>-0"), None);
        assert_eq!(running_task("kworker/1:0-19"), Some("kworker/1:0"));
    }

    #[test]
    fn an_empty_window_is_named_as_hypervisor_time() {
        let mark = Mark {
            cpu: 1,
            class: "high",
            path: "timer",
            reference_ns: 10_005_500_000,
            wake_ns: 10_008_500_000,
        };
        let e = summarise(&mark, &parse(TRACE));
        assert_eq!(e.events, 0);
        assert!(e.verdict.contains("hypervisor"), "{}", e.verdict);
    }
}
