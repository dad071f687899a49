//! Causes with stacks: in the spirit of the seed paper's sampling tool (which hooked the timer
//! interrupt and kept the interrupted instruction pointer), the cause-capture instance records a
//! kernel stack at every timer expiry, device interrupt and softirq on the measured CPUs and at
//! every switch into a measuring thread, and a user stack where the kernel can walk one. For each
//! late wake the samples between the deadline and the wake name the function that was running
//! instead of the thread; across episodes they are counted by function.
//!
//! A sample's function is found below the tracing and entry machinery: after the interrupt entry
//! frame (`asm_...`) for a sample taken in an interrupt, which is what the interrupt cut into (user
//! space when nothing follows it); past the scheduler's own frames for a switch, which is where the
//! task that ran gave the CPU up.

use super::elfsyms;
use super::trace::Event;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Frames kept per sample (from the function outward).
const KEEP_FRAMES: usize = 12;
const KEEP_USER_FRAMES: usize = 8;

/// Frames that belong to tracing, scheduling or interrupt handling rather than to what ran.
const MACHINERY: &[&str] = &[
    "trace_",
    "__trace",
    "event_trigger",
    "__schedule",
    "schedule",
    "preempt_schedule",
    "__cond_resched",
    "_cond_resched",
    "irqentry_",
    "raw_irqentry_",
    "exit_to_user_mode",
    "syscall_exit",
    "do_syscall_64",
    "entry_SYSCALL",
    "__sysvec_",
    "sysvec_",
    "__common_interrupt",
    "common_interrupt",
    "__hrtimer_run_queues",
    "hrtimer_interrupt",
    "hrtimer_run_softirq",
    "__do_softirq",
    "handle_softirqs",
    "do_softirq",
    "__irq_exit_rcu",
    "irq_exit_rcu",
    "__softirqentry_text_start",
];

fn is_entry(frame: &str) -> bool {
    frame.starts_with("asm_")
}

fn is_machinery(frame: &str) -> bool {
    MACHINERY.iter().any(|p| frame.starts_with(p))
}

/// Where a stack's own function is: an index into the frames, or user space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    Kernel(usize),
    User,
    Unknown,
}

/// Finds the function a kernel stack (innermost frame first) was taken in.
pub fn leaf(frames: &[String]) -> Leaf {
    if let Some(entry) = frames.iter().position(|f| is_entry(f)) {
        // Taken in an interrupt or exception: what it cut into is the next frame, unless
        // that is user space (the stack ends at the entry).
        return match frames[entry + 1..]
            .iter()
            .position(|f| !is_entry(f) && !is_machinery(f))
        {
            Some(i) => Leaf::Kernel(entry + 1 + i),
            None => Leaf::User,
        };
    }
    match frames.iter().position(|f| !is_machinery(f)) {
        Some(i) => Leaf::Kernel(i),
        None if frames.is_empty() => Leaf::Unknown,
        None => Leaf::User,
    }
}

/// One stack sample taken while a measuring thread was late.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StackSample {
    /// The event that took it (hrtimer_expire_entry, irq_handler_entry, softirq_entry,
    /// sched_switch).
    pub event: String,
    /// Time after the deadline.
    pub offset_ns: u64,
    /// The task that was running.
    pub task: String,
    /// The function it was in (`[user] TASK` in user space).
    pub function: String,
    /// Kernel frames from that function outward.
    pub kernel_stack: Vec<String>,
    /// User frames where the kernel could walk them: `function (object)` where the object has a
    /// symbol table, else object and offset as tracefs wrote them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_stack: Vec<String>,
}

fn sample_of(e: &Event, kernel: &[String], user: &[String], from: u64) -> Option<StackSample> {
    let (function, stack) = match leaf(kernel) {
        Leaf::Kernel(i) => (
            kernel[i].clone(),
            kernel[i..].iter().take(KEEP_FRAMES).cloned().collect(),
        ),
        Leaf::User => {
            // Named by its function where the object has a symbol table, else grouped by the
            // object it ran in (the offsets stay in the user stack).
            let first = user.first().map(String::as_str).unwrap_or("");
            let function = match elfsyms::name_frame(first) {
                Some((name, file)) => format!("[user] {name} ({file})"),
                None => {
                    let object = first
                        .split('[')
                        .next()
                        .filter(|o| o.starts_with('/'))
                        .map(|o| format!(" ({})", o.rsplit('/').next().unwrap_or(o)))
                        .unwrap_or_default();
                    format!("[user] {}{object}", task_name(&e.task))
                }
            };
            (function, Vec::new())
        }
        Leaf::Unknown => return None,
    };
    Some(StackSample {
        event: e.name.clone(),
        offset_ns: e.ts_ns.saturating_sub(from),
        task: task_name(&e.task),
        function,
        kernel_stack: stack,
        user_stack: user
            .iter()
            .take(KEEP_USER_FRAMES)
            .map(|f| named_user_frame(f))
            .collect(),
    })
}

/// `function (object)` where the object names it, else the frame as tracefs wrote it.
fn named_user_frame(frame: &str) -> String {
    match elfsyms::name_frame(frame) {
        Some((name, file)) => format!("{name} ({file})"),
        None => frame.to_string(),
    }
}

/// `comm-pid` as the trace shows it, without the pid.
fn task_name(task: &str) -> String {
    match task.rsplit_once('-') {
        Some((name, pid)) if pid.chars().all(|c| c.is_ascii_digit()) => name.to_string(),
        _ => task.to_string(),
    }
}

/// The samples on `cpu` within [from, to]: each event that carried a kernel stack, with the user
/// stack that followed it. A stack entry follows its event on the same CPU.
pub fn samples_in(events: &[Event], cpu: usize, from: u64, to: u64) -> Vec<StackSample> {
    let mut out = Vec::new();
    let mut current: Option<(&Event, Vec<String>, Vec<String>)> = None;
    let flush = |c: Option<(&Event, Vec<String>, Vec<String>)>, out: &mut Vec<StackSample>| {
        if let Some((e, k, u)) = c {
            if !k.is_empty() && e.ts_ns >= from && e.ts_ns <= to {
                out.extend(sample_of(e, &k, &u, from));
            }
        }
    };
    for e in events.iter().filter(|e| e.cpu == cpu) {
        match e.name.as_str() {
            "<stack trace>" => {
                if let Some(c) = current.as_mut() {
                    c.1 = e.frames.clone();
                }
            }
            "<user stack trace>" => {
                if let Some(c) = current.as_mut() {
                    c.2 = e.frames.clone();
                }
            }
            _ => {
                flush(current.take(), &mut out);
                current = Some((e, Vec::new(), Vec::new()));
            }
        }
    }
    flush(current, &mut out);
    out
}

/// A function seen running instead of late threads, over all episodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cause {
    pub function: String,
    pub samples: u64,
    /// Episodes in which it was seen.
    pub episodes: u64,
    /// Its share of all samples.
    pub share: f64,
    pub tasks: Vec<String>,
    /// The kernel stack of its first sample.
    pub example: Vec<String>,
    /// The user stack of its first sample that has one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_example: Vec<String>,
}

/// Counts samples by function across episodes, most samples first.
pub fn aggregate<'a>(episodes: impl IntoIterator<Item = &'a [StackSample]>) -> Vec<Cause> {
    #[derive(Default)]
    struct Acc {
        samples: u64,
        episodes: BTreeSet<usize>,
        tasks: BTreeSet<String>,
        example: Vec<String>,
        user_example: Vec<String>,
    }
    let mut by: BTreeMap<String, Acc> = BTreeMap::new();
    let mut total = 0u64;
    for (i, samples) in episodes.into_iter().enumerate() {
        for s in samples {
            total += 1;
            let a = by.entry(s.function.clone()).or_default();
            a.samples += 1;
            a.episodes.insert(i);
            a.tasks.insert(s.task.clone());
            if a.example.is_empty() {
                a.example = s.kernel_stack.clone();
            }
            if a.user_example.is_empty() {
                a.user_example = s.user_stack.clone();
            }
        }
    }
    let mut causes: Vec<Cause> = by
        .into_iter()
        .map(|(function, a)| Cause {
            function,
            samples: a.samples,
            episodes: a.episodes.len() as u64,
            share: a.samples as f64 / total.max(1) as f64,
            tasks: a.tasks.into_iter().collect(),
            example: a.example,
            user_example: a.user_example,
        })
        .collect();
    causes.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then(b.episodes.cmp(&a.episodes))
            .then(a.function.cmp(&b.function))
    });
    causes
}

/// The top causes as the table prints them.
pub fn render(causes: &[Cause], episodes: usize, top: usize) -> String {
    let total: u64 = causes.iter().map(|c| c.samples).sum();
    if total == 0 {
        return format!(
            "Causes: no stack samples in the {episodes} episode(s) (nothing was interrupted or \
             switched on the CPU while the thread was late)\n"
        );
    }
    let mut s = format!(
        "Causes: {total} stack samples in {episodes} episode(s), by function (what ran instead)\n"
    );
    for c in causes.iter().take(top) {
        s.push_str(&format!(
            "  {:>4} samples {:>5.1} % in {} episode(s)  {}  ({})\n",
            c.samples,
            c.share * 100.0,
            c.episodes,
            c.function,
            c.tasks.join(", ")
        ));
        if c.example.len() > 1 {
            let chain: Vec<&str> = c
                .example
                .iter()
                .skip(1)
                .take(4)
                .map(String::as_str)
                .collect();
            s.push_str(&format!("         called from {}\n", chain.join(" <- ")));
        }
        if !c.user_example.is_empty() {
            let chain: Vec<&str> = c.user_example.iter().take(4).map(String::as_str).collect();
            s.push_str(&format!("         user stack {}\n", chain.join(" <- ")));
        }
    }
    s
}

#[cfg(test)]
mod tests;
