//! The machine's verdict on a run: quiet, or busy with what took the measuring CPU and how much.
//! Said once per run, from what the harness recorded around every sample and what a watch of the
//! machine's tasks saw while the run measured. A busy run's figures are what this machine gave
//! under that load: they are shown, but not compared as findings (see `compare --force`) and left
//! out of histories unless asked.

pub use crate::meter::look::Look;
pub use crate::meter::watch::Taker;
use crate::results::figure::Role;
use crate::results::model::Measurement;
use serde::{Deserialize, Serialize};

/// Other processes took at least this share of the measuring CPU's time: the run is busy. A
/// kernel thread's tick now and then is far below it; a second job sharing the CPU (half of it
/// under a fair scheduler) far above.
pub const OTHERS_SHARE: f64 = 0.10;
/// At least this share of the samples of CPU-bound figures (which never block and have no
/// partner) lost a millisecond or more to another task, or time to the hypervisor: busy.
pub const DISTURBED_SHARE: f64 = 0.25;
/// Fewer such samples than this say nothing either way.
pub const MIN_SAMPLES: usize = 10;
/// The hypervisor stole at least this share of the measuring CPU's time: busy.
pub const STEAL_SHARE: f64 = 0.05;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Quiet,
    Busy,
}

/// The verdict and what it rests on, stored with the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Machine {
    pub verdict: Verdict,
    /// The measuring CPU.
    pub cpu: usize,
    /// How it was chosen: given with `--cpu`, or by osmeter as the one with least other work.
    pub cpu_choice: CpuChoice,
    /// Why the run is busy, one sentence each; empty when quiet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    pub evidence: Evidence,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuChoice {
    /// True when osmeter chose the CPU (no `--cpu`).
    pub chosen: bool,
    /// Each usable CPU's busy share over a short look before the run, when osmeter chose.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busy: Vec<CpuBusy>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuBusy {
    pub cpu: usize,
    /// Share of its time not idle.
    pub busy: f64,
}

impl CpuChoice {
    /// The CPU given with `--cpu`.
    pub fn given() -> CpuChoice {
        CpuChoice {
            chosen: false,
            busy: Vec::new(),
        }
    }

    /// The CPU with the least other work of those looked at; of equals the last (the first CPU
    /// takes more of the machine's interrupts and housekeeping).
    pub fn least_busy(&self) -> Option<usize> {
        self.busy
            .iter()
            .rev()
            .min_by(|a, b| a.busy.total_cmp(&b.busy))
            .map(|b| b.cpu)
    }
}

/// What the verdict rests on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Evidence {
    /// Wall time the run measured for, seconds.
    pub seconds: f64,
    /// Share of the measuring CPU's time other processes used (osmeter's own left out), when the
    /// tasks could be read.
    pub others_share: Option<f64>,
    /// The processes that used the measuring CPU most, most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub takers: Vec<Taker>,
    /// Other tasks runnable on the measuring CPU, on average over the watch's looks.
    pub runnable_others: Option<f64>,
    /// Share of the measuring CPU's time the hypervisor stole, when /proc/stat states it.
    pub steal_share: Option<f64>,
    /// Samples of CPU-bound figures (CPU reference, hardware), those taken again included, and how
    /// many of them another task preempted or the hypervisor stole time in.
    pub cpu_bound_samples: usize,
    pub disturbed_samples: usize,
    /// Over every figure's samples: involuntary switches of the measuring thread, interrupts,
    /// stolen time.
    pub csw_involuntary: u64,
    pub interrupts: u64,
    pub steal_ms: f64,
    /// The machine just before and just after the run.
    pub before: Option<Look>,
    pub after: Option<Look>,
}

impl Evidence {
    /// Fills the sample counts from the run's figures.
    pub fn count_samples(&mut self, measurements: &[Measurement]) {
        for m in measurements {
            let i = &m.interference;
            self.csw_involuntary += i.csw_involuntary;
            self.interrupts += i.irq_timer + i.irq_other;
            self.steal_ms += i.steal_ms;
            if matches!(m.role, Some(Role::CpuReference | Role::Hardware)) {
                // Samples taken again were preempted: the machine disturbed them as much as it
                // took from them.
                self.cpu_bound_samples += i.per_sample.len() + i.retaken_samples;
                self.disturbed_samples +=
                    i.retaken_lost_time + i.per_sample.iter().filter(|s| s.lost_time()).count();
            }
        }
    }

    fn disturbed_share(&self) -> Option<f64> {
        (self.cpu_bound_samples >= MIN_SAMPLES)
            .then(|| self.disturbed_samples as f64 / self.cpu_bound_samples as f64)
    }
}

/// The run's machine verdict from what the watch saw, the looks before and after, and the
/// figures' samples.
pub fn judged(
    cpu: usize,
    cpu_choice: CpuChoice,
    watched: crate::meter::watch::Watched,
    [before, after]: [Look; 2],
    measurements: &[Measurement],
) -> Machine {
    let capacity_ms = watched.seconds * 1000.0;
    let mut evidence = Evidence {
        seconds: watched.seconds,
        others_share: (capacity_ms > 0.0).then(|| (watched.others_ms / capacity_ms).min(1.0)),
        takers: watched.takers,
        runnable_others: Some(watched.runnable),
        steal_share: watched
            .cpu_ticks
            .filter(|t| t.total > 0)
            .map(|t| t.steal as f64 / t.total as f64),
        before: Some(before),
        after: Some(after),
        ..Evidence::default()
    };
    evidence.count_samples(measurements);
    let (verdict, reasons) = judge(cpu, &evidence);
    Machine {
        verdict,
        cpu,
        cpu_choice,
        reasons,
        evidence,
    }
}

/// The verdict from the evidence, with the reasons for a busy one.
pub fn judge(cpu: usize, e: &Evidence) -> (Verdict, Vec<String>) {
    let mut reasons = Vec::new();
    if let Some(share) = e.others_share.filter(|&s| s >= OTHERS_SHARE) {
        let who = if e.takers.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = e
                .takers
                .iter()
                .map(|t| {
                    format!(
                        "{} (pid {}) {}",
                        crate::text::escape_controls(&shortened(&t.command, TAKER_NAME)),
                        t.pid,
                        crate::units::duration(t.cpu_ms * 1e6)
                    )
                })
                .collect();
            format!(": {}", names.join(", "))
        };
        reasons.push(format!(
            "other processes used {} of CPU {cpu}'s time{who}",
            percent(share)
        ));
    }
    if let Some(share) = e.disturbed_share().filter(|&s| s >= DISTURBED_SHARE) {
        reasons.push(format!(
            "{} of {} samples of CPU-bound figures ({}) waited 1 ms or more for their CPU or lost \
             time to the hypervisor",
            e.disturbed_samples,
            e.cpu_bound_samples,
            percent(share)
        ));
    }
    if let Some(share) = e.steal_share.filter(|&s| s >= STEAL_SHARE) {
        reasons.push(format!(
            "the hypervisor stole {} of CPU {cpu}'s time",
            percent(share)
        ));
    }
    let verdict = if reasons.is_empty() {
        Verdict::Quiet
    } else {
        Verdict::Busy
    };
    (verdict, reasons)
}

/// How much of a taker's command line a reason quotes: enough to recognise a compiler or a build
/// from the program and its first arguments, where a whole `rustc` command line runs to hundreds
/// of columns.
const TAKER_NAME: usize = 48;

/// `text` cut to `most` characters, the cut marked.
fn shortened(text: &str, most: usize) -> std::borrow::Cow<'_, str> {
    if text.chars().count() <= most {
        return text.into();
    }
    let kept: String = text.chars().take(most - 3).collect();
    format!("{}...", kept.trim_end()).into()
}

/// Words joined into lines of at most `width` characters (a longer word stands alone).
/// A number and its percent sign stay on one line.
fn wrap(text: &str, width: usize) -> String {
    const GLUE: char = '\u{1}';
    let text = text.replace(" %", &GLUE.to_string());
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        // As printed: each glued sign takes two characters.
        let len = word.chars().count() + word.matches(GLUE).count();
        if line > 0 && line + 1 + len > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += len;
    }
    out.push('\n');
    out.replace(GLUE, " %")
}

fn percent(share: f64) -> String {
    format!("{:.0} %", share * 100.0)
}

impl Machine {
    pub fn busy(&self) -> bool {
        self.verdict == Verdict::Busy
    }

    /// How the measuring CPU came to be, for a sentence: "CPU 1 (given)" or "CPU 0 (the least
    /// busy: CPU 0 2 %, CPU 1 48 %)".
    pub fn cpu_words(&self) -> String {
        if !self.cpu_choice.chosen {
            return format!("CPU {} (given with --cpu)", self.cpu);
        }
        let all: Vec<String> = self
            .cpu_choice
            .busy
            .iter()
            .map(|b| format!("CPU {} {}", b.cpu, percent(b.busy)))
            .collect();
        if all.len() < 2 {
            return format!("CPU {}", self.cpu);
        }
        format!("CPU {} (the least busy: {})", self.cpu, all.join(", "))
    }

    /// One line for a quiet run; one paragraph for a busy one.
    pub fn text(&self) -> String {
        let e = &self.evidence;
        if !self.busy() {
            let others = e
                .others_share
                .map(|s| format!(", other processes {} of it", percent(s)))
                .unwrap_or_default();
            return format!(
                "Machine: quiet. Measured on {}{others}.\n",
                self.cpu_words()
            );
        }
        let load = match (&e.before, &e.after) {
            (Some(b), Some(a)) => format!(
                " The 1-minute load was {:.2} at the start, {:.2} at the end.",
                b.loadavg[0], a.loadavg[0]
            ),
            _ => String::new(),
        };
        wrap(
            &format!(
                "Machine: BUSY. Measured on {}; {}.{load} The figures above are what this \
                 machine gave under that load, not what it gives quiet: they are not marked one \
                 by one, `osmeter compare` will not call them changed against another run \
                 (--force shows them, marked), and histories leave this run out (--include-busy \
                 takes it in). For figures to keep, measure again when the machine is quiet, or \
                 on a CPU with less other work (--cpu N).",
                self.cpu_words(),
                self.reasons.join("; ")
            ),
            crate::columns::prose_width(),
        )
    }
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
