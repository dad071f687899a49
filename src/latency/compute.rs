//! The buffer model, tested by running it (`latency --compute C`): the timer thread of each class
//! really computes for c after every wake, as the producer of an n-buffer pipeline with one buffer
//! per period t, and counts the buffers that were not ready when the consumer needed them. Next to
//! those real underruns stands what the model predicts from the same thread's wake latencies, as a
//! latency measurement sees them: an underrun whenever a wake is later than (n-1)t - c.
//!
//! The producer makes buffers in order: buffer j is due at its deadline D_j and must be complete by
//! D_j + (n-1)t, when the consumer takes it. A late producer works through its backlog back to
//! back; a buffer whose last chance has passed for every depth when the producer gets to it is
//! dropped (an underrun for every depth), which also bounds how long it computes without sleeping.
//! The model sees none of this: not the compute time stretched by interference, not the queue a
//! late wake leaves behind.

use super::accounting::Accounting;
use super::buffer::{evaluate, mttf, BufferConfig, BufferResult, BufferTracker};
use super::histogram::Histogram;
use super::threads::{
    enter_class, monotonic_ns, observe_wake, sleep_until, thread_cpu_ns, Plan, StreamResult,
    StreamSpec,
};
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;

/// Pipeline depths a computing thread is checked against.
pub const DEPTHS: [u32; 3] = [2, 3, 4];
/// A computing real-time thread that has not blocked for this long blocks for a moment, so the
/// real-time CPU-time limit never fires while it catches up.
pub const MAX_BUSY_NS: u64 = 100_000_000;

/// Real underruns of one depth, counted buffer by buffer; a run of consecutive underruns is one
/// failure, as in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RealTracker {
    pub depth: u32,
    /// (n-1)t: how long after its deadline a buffer may be completed.
    pub slack_ns: u64,
    pub buffers: u64,
    pub underruns: u64,
    pub failures: u64,
    in_run: bool,
}

impl RealTracker {
    pub fn new(depth: u32, period_ns: u64) -> RealTracker {
        RealTracker {
            depth,
            slack_ns: u64::from(depth - 1) * period_ns,
            buffers: 0,
            underruns: 0,
            failures: 0,
            in_run: false,
        }
    }

    /// Buffer due at `deadline_ns` completed at `done_ns` (None: dropped).
    pub fn buffer(&mut self, deadline_ns: u64, done_ns: Option<u64>) {
        self.buffers += 1;
        let late = done_ns.is_none_or(|d| d > deadline_ns + self.slack_ns);
        if late {
            self.underruns += 1;
            if !self.in_run {
                self.failures += 1;
            }
        }
        self.in_run = late;
    }
}

/// What the producer does next, given the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Sleep until the buffer's deadline, then compute it.
    SleepThenCompute(u64),
    /// Compute it now (the producer is behind).
    Compute(u64),
    /// Too late for every depth: count it lost and move on.
    Drop(u64),
    Done,
}

/// The producer's schedule: buffer j is due at `first_ns + j * period_ns`.
#[derive(Debug, Clone, Copy)]
pub struct Producer {
    pub first_ns: u64,
    pub period_ns: u64,
    pub total: u64,
    /// The largest slack of the depths checked: older buffers are lost for all of them.
    pub max_slack_ns: u64,
    pub next: u64,
}

impl Producer {
    pub fn deadline(&self, j: u64) -> u64 {
        self.first_ns + j * self.period_ns
    }

    pub fn step(&self, now: u64) -> Step {
        let j = self.next;
        if j >= self.total {
            return Step::Done;
        }
        let d = self.deadline(j);
        if now < d {
            Step::SleepThenCompute(j)
        } else if now > d + self.max_slack_ns {
            Step::Drop(j)
        } else {
            Step::Compute(j)
        }
    }
}

/// A fixed amount of arithmetic per nanosecond of the calibrating run, so that interference makes
/// a buffer take longer, as it would real work.
#[derive(Debug, Clone, Copy)]
pub struct Work {
    pub iterations_per_us: f64,
}

fn spin(iterations: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..iterations {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x)
}

impl Work {
    /// Measures the calling thread's rate in its own CPU time, which a thread that preempts it
    /// does not count in (best of a few short runs: the least disturbed by cache and frequency).
    pub fn calibrate() -> Work {
        let n = 200_000;
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let t0 = thread_cpu_ns();
            spin(n);
            let dt = thread_cpu_ns().saturating_sub(t0).max(1);
            best = best.min(dt as f64);
        }
        Work {
            iterations_per_us: n as f64 * 1_000.0 / best,
        }
    }

    /// Does `ns` worth of work (as calibrated).
    pub fn run(&self, ns: u64) {
        spin((self.iterations_per_us * ns as f64 / 1_000.0) as u64);
    }
}

/// A computing thread's record during the run.
#[derive(Debug, Clone)]
pub struct ComputeRun {
    pub compute_ns: u64,
    pub work: Work,
    /// How long each buffer's computation really took.
    pub wall: Histogram,
    pub dropped: u64,
    pub real: Vec<RealTracker>,
    /// The model, fed with the wake latencies only (what a latency measurement sees).
    pub model: Vec<(BufferConfig, BufferTracker)>,
}

impl ComputeRun {
    pub fn new(compute_ns: u64, period_ns: u64, work: Work) -> ComputeRun {
        ComputeRun {
            compute_ns,
            work,
            wall: Histogram::new(),
            dropped: 0,
            real: DEPTHS
                .iter()
                .map(|&n| RealTracker::new(n, period_ns))
                .collect(),
            model: DEPTHS
                .iter()
                .map(|&n| {
                    let cfg = BufferConfig {
                        period_ns,
                        buffers: n,
                        compute_ns,
                    };
                    (cfg, BufferTracker::new(&cfg))
                })
                .collect(),
        }
    }

    /// A wake of the producer for a buffer it slept for, `lateness_ns` after its deadline.
    pub fn wake(&mut self, lateness_ns: u64) {
        for (_, t) in &mut self.model {
            t.observe(lateness_ns);
        }
    }

    pub fn buffer(&mut self, deadline_ns: u64, done_ns: Option<u64>) {
        if done_ns.is_none() {
            self.dropped += 1;
        }
        for r in &mut self.real {
            r.buffer(deadline_ns, done_ns);
        }
    }

    pub fn result(&self, measured_ns: u64) -> ComputeResult {
        let measured_s = measured_ns as f64 / 1e9;
        ComputeResult {
            compute_ns: self.compute_ns,
            iterations_per_us: self.work.iterations_per_us,
            compute_p50_ns: self.wall.percentile(0.5),
            compute_p99_ns: self.wall.percentile(0.99),
            compute_max_ns: self.wall.max(),
            dropped: self.dropped,
            depths: self
                .real
                .iter()
                .zip(&self.model)
                .map(|(r, (cfg, t))| DepthResult {
                    buffers: r.depth,
                    tolerance_ms: cfg.tolerance_ns() as f64 / 1e6,
                    real: RealResult::of(r, measured_s),
                    model: evaluate(cfg, t, measured_ns),
                })
                .collect(),
        }
    }
}

/// Real underruns of one depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RealResult {
    pub buffers: u64,
    pub underruns: u64,
    pub failures: u64,
    pub p_underrun: f64,
    pub mttf_s: Option<f64>,
    pub mttf_more_than_s: Option<f64>,
    pub mttf: String,
}

impl RealResult {
    fn of(r: &RealTracker, measured_s: f64) -> RealResult {
        let (mttf_s, more, text) = mttf(r.failures, measured_s);
        RealResult {
            buffers: r.buffers,
            underruns: r.underruns,
            failures: r.failures,
            p_underrun: if r.buffers == 0 {
                0.0
            } else {
                r.underruns as f64 / r.buffers as f64
            },
            mttf_s,
            mttf_more_than_s: more,
            mttf: text,
        }
    }
}

/// One depth: the pipeline as it ran, and the model's prediction from the same run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DepthResult {
    /// n.
    pub buffers: u32,
    /// (n-1)t - c, the lateness the model tolerates.
    pub tolerance_ms: f64,
    pub real: RealResult,
    pub model: BufferResult,
}

/// What a computing stream found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ComputeResult {
    /// c as asked.
    pub compute_ns: u64,
    /// Work rate calibrated on the thread before the run.
    pub iterations_per_us: f64,
    /// How long the computation of a buffer really took.
    pub compute_p50_ns: u64,
    pub compute_p99_ns: u64,
    pub compute_max_ns: u64,
    /// Buffers too late for every depth when the producer got to them.
    pub dropped: u64,
    pub depths: Vec<DepthResult>,
}

/// A timer stream whose thread computes `compute_ns` for every buffer (see the module comment).
pub fn compute_stream(
    spec: StreamSpec,
    plan: &Plan,
    phase: u64,
    compute_ns: u64,
    index: usize,
) -> StreamResult {
    let mut acct = Accounting::new(plan.period_ns, plan.periods, &plan.buffers);
    let finish = |acct, cpu_ns, error, compute| StreamResult {
        spec,
        periods_planned: plan.periods,
        acct,
        cpu_ns,
        error,
        compute,
    };
    if let Err(e) = enter_class(&spec) {
        return finish(acct, 0, Some(e), None);
    }
    // Calibrated at the thread's class on its CPU, before the first deadline.
    let mut run = ComputeRun::new(compute_ns, plan.period_ns, Work::calibrate());
    let cpu0 = thread_cpu_ns();
    let mut producer = Producer {
        first_ns: plan.start_ns + phase + plan.period_ns,
        period_ns: plan.period_ns,
        total: plan.periods,
        max_slack_ns: run.real.iter().map(|r| r.slack_ns).max().unwrap_or(0),
        next: 0,
    };
    let tap = plan
        .stages
        .as_ref()
        .and_then(|t| t.get(index).cloned().flatten());
    if let Some(t) = &tap {
        t.begin(producer.first_ns, producer.period_ns);
    }
    let mut busy_since = monotonic_ns();
    while !plan.stop.load(Ordering::Relaxed) {
        let now = monotonic_ns();
        let (j, slept) = match producer.step(now) {
            Step::Done => break,
            Step::Drop(j) => {
                plan.worst.saw(spec.class.name, now - producer.deadline(j));
                acct.period(j, now - producer.deadline(j), false);
                run.buffer(producer.deadline(j), None);
                producer.next += 1;
                continue;
            }
            Step::SleepThenCompute(j) => {
                sleep_until(producer.deadline(j));
                busy_since = monotonic_ns();
                (j, true)
            }
            Step::Compute(j) => (j, false),
        };
        let deadline = producer.deadline(j);
        let start = monotonic_ns();
        let lateness = start.saturating_sub(deadline);
        acct.period(j, lateness, slept);
        if slept {
            run.wake(lateness);
            if let Some(t) = &tap {
                t.record(j, start);
            }
            // Only a wake from sleep: a buffer computed late from the backlog has the thread
            // itself to blame.
            observe_wake(plan, &spec, deadline, start);
        } else {
            plan.worst.saw(spec.class.name, lateness);
        }
        run.work.run(compute_ns);
        let done = monotonic_ns();
        run.wall.record(done - start);
        run.buffer(deadline, Some(done));
        producer.next += 1;
        // Catching up without sleeping: block for a moment now and then, so a long backlog never
        // reaches the real-time CPU-time limit.
        if done - busy_since > MAX_BUSY_NS {
            sleep_until(done + 1_000);
            busy_since = monotonic_ns();
        }
    }
    let measured_ns = acct.periods() * plan.period_ns;
    let result = run.result(measured_ns);
    finish(acct, thread_cpu_ns() - cpu0, None, Some(result))
}

/// The comparison as the table prints it, one line per stream and depth.
pub fn render(label: &str, r: &ComputeResult, period_ns: u64) -> String {
    let mut s = format!(
        "  {label}: c {:.2} ms of t {:.2} ms, took p50 {:.2} / p99 {:.2} / max {:.2} ms{}\n",
        r.compute_ns as f64 / 1e6,
        period_ns as f64 / 1e6,
        r.compute_p50_ns as f64 / 1e6,
        r.compute_p99_ns as f64 / 1e6,
        r.compute_max_ns as f64 / 1e6,
        if r.dropped > 0 {
            format!(", {} buffers dropped", r.dropped)
        } else {
            String::new()
        }
    );
    for d in &r.depths {
        s.push_str(&format!(
            "    n={}  real: {} underruns, {} failures, MTTF {}   model: p {:.1e}, MTTF {}\n",
            d.buffers,
            d.real.underruns,
            d.real.failures,
            d.real.mttf,
            d.model.p_underrun,
            d.model.mttf
        ));
    }
    s
}

#[cfg(test)]
mod tests;
