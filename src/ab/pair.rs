//! One pair of `ab`: each side's round of every probe, interleaved on one CPU, at once on two
//! (a duet) or at once on one in turns (lockstep), with each side's harness cost and yardstick
//! when they are due.

use super::document::Mode;
use super::sides::Switch;
use super::{AbConfig, Gathered};
use crate::interrupt;
use crate::meter::yardstick::YardstickReading;
use crate::results::model::Overhead;
use crate::suite::worker::{self, Job, Report, Task, WorkerCommand};
use anyhow::{bail, Result};
use std::time::Instant;

/// Each side reads the yardstick in the first pair and every this many pairs after: a drift
/// within a pair cancels in its ratio, and the readings only record the machine's pace over the
/// pairs, which changes over tens of seconds; read in every pair they took a tenth of its time.
const YARDSTICK_EVERY: usize = 4;

/// What one pair gave besides the figures' values.
pub(super) struct PairOutcome {
    pub(super) yardstick: [Option<YardstickReading>; 2],
    /// Each side's harness cost, as known after this pair.
    pub(super) overheads: [Option<Overhead>; 2],
    /// Iterations per sample the figures settled on in this pair (for the next pairs).
    pub(super) iterations: Vec<Option<u64>>,
    pub(super) interrupted: bool,
}

pub(super) struct PairContext<'c, 'a> {
    pub(super) config: &'c AbConfig<'a>,
    pub(super) workers: &'c [WorkerCommand; 2],
    pub(super) order: &'c [usize],
    pub(super) hints: &'c [Option<u64>],
    /// Each side's harness cost when known from an earlier pair.
    pub(super) overheads: &'c [Option<Overhead>; 2],
    pub(super) pair: usize,
}

/// One task of one side, and what came back.
enum Answer {
    Overhead(Overhead),
    Yardstick(YardstickReading),
    Value {
        value: f64,
        samples: Vec<f64>,
        iterations: u64,
    },
    Skipped(String),
    Failed(String),
    Interrupted,
}

impl PairContext<'_, '_> {
    /// Which side goes first in this pair: A B, then B A, and so on.
    fn first(&self) -> usize {
        self.pair % 2
    }

    fn job(&self, cpu: usize, task: Task) -> Job {
        Job {
            cpu,
            fifo: self.config.fifo,
            system_aslr: self.config.system_aslr,
            counters: self.config.counters,
            harness: self.config.harness.clone(),
            scratch: self.config.scratch.to_path_buf(),
            file_systems: self.config.file_systems,
            task,
        }
    }

    fn run(&self, side: usize, cpu: usize, task: Task) -> Result<Answer> {
        self.run_in_turns(side, cpu, task, None)
    }

    fn run_in_turns(
        &self,
        side: usize,
        cpu: usize,
        task: Task,
        turns: Option<worker::TurnPipes>,
    ) -> Result<Answer> {
        let higher_is_better = matches!(&task, Task::Round { probe, .. }
            if crate::probes::find(probe).is_some_and(|d| d.unit.higher_is_better()));
        Ok(
            match worker::run_job_in_turns(&self.workers[side], &self.job(cpu, task), turns)? {
                Report::Overhead(o) => Answer::Overhead(o),
                Report::Yardstick(r) => Answer::Yardstick(r),
                Report::Round(outcome) => {
                    if outcome.cut == Some(crate::meter::Cut::Interrupted) {
                        return Ok(Answer::Interrupted);
                    }
                    Answer::Value {
                        value: crate::stats::paired::fast_quartile(
                            &outcome.samples,
                            higher_is_better,
                        ),
                        iterations: outcome.iterations,
                        samples: outcome.samples,
                    }
                }
                Report::Skipped(why) => Answer::Skipped(why),
                Report::Failed(why) => Answer::Failed(why),
                Report::Interrupted => Answer::Interrupted,
                Report::Profile(..) | Report::ProfileRefused(_) => {
                    bail!("a measuring process answered the wrong task; this is a bug")
                }
            },
        )
    }

    fn round_task(&self, i: usize, overhead: &Overhead) -> Task {
        let v = &self.config.variants[i];
        Task::Round {
            probe: v.probe.id.to_string(),
            params: v.params.clone(),
            scale: v.scale,
            overhead: overhead.clone(),
            iterations_hint: self.hints[i],
        }
    }

    /// Both sides' rounds of each probe back to back, each under its set-up, on the measuring
    /// CPU, in a snake order (A B, B A, A B, ... over the probes), so that the two rounds of a
    /// probe are one round apart rather than a whole side's rounds: the host's changes of pace
    /// last about a second, and a pair whose rounds fall on two paces is 20-30 % off. A side's
    /// harness cost and yardstick come just before its first round of the pair; the set-up runs
    /// once per change of side (one more than there are probes).
    pub(super) fn interleaved(
        &self,
        switch: &mut Switch,
        got: &mut [Vec<Gathered>; 2],
        status: &mut dyn FnMut(&str),
        started: Instant,
    ) -> Result<PairOutcome> {
        let cpu = self.config.cpus[0];
        let mut out = PairOutcome {
            yardstick: [None, None],
            overheads: self.overheads.clone(),
            iterations: vec![None; self.order.len()],
            interrupted: false,
        };
        let first = self.first();
        let mut started_side = [false, false];
        for (k, &i) in self.order.iter().enumerate() {
            let sides = if k % 2 == 0 {
                [first, 1 - first]
            } else {
                [1 - first, first]
            };
            for side in sides {
                if interrupt::requested() {
                    out.interrupted = true;
                    return Ok(out);
                }
                let g = &mut got[side][i];
                if g.skipped.is_some() || g.failed.is_some() {
                    continue;
                }
                switch.enter(side)?;
                let name = &self.config.sides[side].name;
                if !started_side[side] {
                    started_side[side] = true;
                    status(&format!(
                        "[pair {}] {}: {name}: the harness's cost and the yardstick",
                        self.pair + 1,
                        crate::progress::duration(started.elapsed())
                    ));
                    if !self.side_start(side, cpu, &mut out)? {
                        return Ok(out);
                    }
                }
                let overhead = out.overheads[side]
                    .clone()
                    .expect("a side's cost is known once it has started");
                status(&format!(
                    "[pair {}] {}: {name}: {}",
                    self.pair + 1,
                    crate::progress::duration(started.elapsed()),
                    self.config.variants[i].label()
                ));
                let answer = self.run(side, cpu, self.round_task(i, &overhead))?;
                if keep(answer, &mut got[side][i], &mut out.iterations[i]) {
                    out.interrupted = true;
                    return Ok(out);
                }
            }
        }
        switch.leave()?;
        Ok(out)
    }

    /// A side's start in a pair: its harness cost when not known yet, and a yardstick reading,
    /// both put in `out`; false when interrupted (marked in `out`).
    fn side_start(&self, side: usize, cpu: usize, out: &mut PairOutcome) -> Result<bool> {
        let name = &self.config.sides[side].name;
        if out.overheads[side].is_none() {
            match self.run(side, cpu, Task::Overhead)? {
                Answer::Overhead(o) => out.overheads[side] = Some(o),
                Answer::Interrupted => {
                    out.interrupted = true;
                    return Ok(false);
                }
                Answer::Failed(e) => {
                    bail!("measuring the harness's own cost on {name} failed: {e}")
                }
                _ => bail!("a measuring process answered the wrong task; this is a bug"),
            }
        }
        if self.pair % YARDSTICK_EVERY == 0 {
            if let Answer::Yardstick(r) = self.run(side, cpu, Task::Yardstick)? {
                out.yardstick[side] = Some(r);
            }
        }
        Ok(true)
    }

    /// A and B at once, each task of the pair started on both sides together. In a duet A runs on
    /// the first CPU in even pairs and on the second in odd ones; in lockstep both run on the
    /// measuring CPU and take their samples in turn, the side first in the pair starting, and
    /// the harness's own cost and the yardstick are measured one side after the other.
    pub(super) fn together(
        &self,
        got: &mut [Vec<Gathered>; 2],
        status: &mut dyn FnMut(&str),
        started: Instant,
    ) -> Result<PairOutcome> {
        let lockstep = self.config.mode == Mode::Lockstep;
        let [c0, c1] = self.config.cpus;
        let cpus = if lockstep {
            [c0, c0]
        } else if self.first() == 0 {
            [c0, c1]
        } else {
            [c1, c0]
        };
        let mut out = PairOutcome {
            yardstick: [None, None],
            overheads: self.overheads.clone(),
            iterations: vec![None; self.order.len()],
            interrupted: false,
        };
        // In lockstep, a round's two workers share one CPU in turns; any other task would share
        // it at once, so those go one side after the other.
        let both_on = |cpus: [usize; 2], tasks: [Task; 2], in_turns: bool| -> Result<[Answer; 2]> {
            let [ta, tb] = tasks;
            if lockstep && !in_turns {
                let first = self.first();
                let mut tasks = [Some(ta), Some(tb)];
                let mut answers = [None, None];
                for side in [first, 1 - first] {
                    let task = tasks[side].take().expect("each side's task once");
                    answers[side] = Some(self.run(side, cpus[side], task)?);
                }
                let [a, b] = answers.map(|a| a.expect("both sides answered"));
                return Ok([a, b]);
            }
            let [pa, pb] = match lockstep {
                true => turn_pipes(self.first()).map(|[a, b]| [Some(a), Some(b)])?,
                false => [None, None],
            };
            std::thread::scope(|s| {
                // Both sides at once or neither: B does not run alone when A cannot start.
                let a = crate::system::limits::spawn_scoped(s, "osm-duet-a", || {
                    self.run_in_turns(0, cpus[0], ta, pa)
                })?;
                let b = self.run_in_turns(1, cpus[1], tb, pb);
                let a = a
                    .join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("the duet's A thread panicked")));
                Ok([a?, b?])
            })
        };
        let both = |tasks: [Task; 2], in_turns: bool| both_on(cpus, tasks, in_turns);
        let overheads = match &self.overheads {
            [Some(a), Some(b)] => [a.clone(), b.clone()],
            _ => {
                status(&format!(
                    "[pair {}] {}: the harness's own cost",
                    self.pair + 1,
                    crate::progress::duration(started.elapsed())
                ));
                match both([Task::Overhead, Task::Overhead], false)? {
                    [Answer::Overhead(a), Answer::Overhead(b)] => [a, b],
                    [Answer::Interrupted, _] | [_, Answer::Interrupted] => {
                        out.interrupted = true;
                        return Ok(out);
                    }
                    [Answer::Failed(e), _] | [_, Answer::Failed(e)] => {
                        bail!("measuring the harness's own cost failed: {e}")
                    }
                    _ => bail!("a measuring process answered the wrong task; this is a bug"),
                }
            }
        };
        out.overheads = [Some(overheads[0].clone()), Some(overheads[1].clone())];
        if self.pair % YARDSTICK_EVERY == 0 {
            let [ya, yb] = both([Task::Yardstick, Task::Yardstick], false)?;
            for (side, y) in [ya, yb].into_iter().enumerate() {
                if let Answer::Yardstick(r) = y {
                    out.yardstick[side] = Some(r);
                }
            }
        }
        for &i in self.order {
            if interrupt::requested() {
                out.interrupted = true;
                return Ok(out);
            }
            if got
                .iter()
                .any(|g| g[i].skipped.is_some() || g[i].failed.is_some())
            {
                continue;
            }
            status(&format!(
                "[pair {}] {}: A and B: {}",
                self.pair + 1,
                crate::progress::duration(started.elapsed()),
                self.config.variants[i].label()
            ));
            let tasks = || {
                [
                    self.round_task(i, &overheads[0]),
                    self.round_task(i, &overheads[1]),
                ]
            };
            let [a, b] = both(tasks(), true)?;
            // A duet measures each figure again with the CPUs swapped: each side's value is the
            // geometric mean of its rounds on either CPU, so that a CPU faster than the other
            // (its host thread's neighbours, its share of the host) moves both sides alike.
            let [a, b] = if self.config.mode == Mode::Duet {
                let [a2, b2] = both_on([cpus[1], cpus[0]], tasks(), true)?;
                [crossed(a, a2), crossed(b, b2)]
            } else {
                [a, b]
            };
            let (ga, gb) = got.split_at_mut(1);
            let stop_a = keep(a, &mut ga[0][i], &mut out.iterations[i]);
            let stop_b = keep(b, &mut gb[0][i], &mut None);
            if stop_a || stop_b {
                out.interrupted = true;
                return Ok(out);
            }
        }
        Ok(out)
    }
}

/// The two pipes of a lockstep round: each side reads the token from one and writes it to the
/// other; `first` is the side that measures first (the other hands it the token when ready).
fn turn_pipes(first: usize) -> Result<[worker::TurnPipes; 2]> {
    // Close-on-exec, so that only the worker each end is meant for gets it (as fds 4 and 5).
    let pipe = || -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
        use std::os::fd::FromRawFd;
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: fds has room for the two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            bail!(
                "cannot make a pipe for lockstep: {}",
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: both descriptors are fresh and owned from here on.
        Ok(unsafe {
            (
                std::os::fd::OwnedFd::from_raw_fd(fds[0]),
                std::os::fd::OwnedFd::from_raw_fd(fds[1]),
            )
        })
    };
    let (to_a_read, to_a_write) = pipe()?;
    let (to_b_read, to_b_write) = pipe()?;
    Ok([
        worker::TurnPipes {
            read: to_a_read,
            write: to_b_write,
            second: first != 0,
        },
        worker::TurnPipes {
            read: to_b_read,
            write: to_a_write,
            second: first != 1,
        },
    ])
}

/// One side's two rounds of a figure in a duet pair, on either CPU, as one: the geometric mean of
/// their values with both rounds' samples; whatever is not a value (a skip, a failure, an
/// interruption) stands for both.
fn crossed(first: Answer, second: Answer) -> Answer {
    match (first, second) {
        (
            Answer::Value {
                value: v1,
                samples: mut s1,
                iterations,
            },
            Answer::Value {
                value: v2,
                samples: s2,
                ..
            },
        ) => {
            s1.extend(s2);
            Answer::Value {
                value: (v1 * v2).sqrt(),
                samples: s1,
                iterations,
            }
        }
        (Answer::Value { .. }, other) | (other, _) => other,
    }
}

/// Keeps one answer of a figure's round; true when the user stopped the run.
fn keep(answer: Answer, g: &mut Gathered, iterations: &mut Option<u64>) -> bool {
    match answer {
        Answer::Value {
            value,
            samples,
            iterations: its,
        } => {
            g.rounds.push(samples);
            g.this_pair = Some(value);
            iterations.get_or_insert(its);
        }
        Answer::Skipped(why) => g.skipped = Some(why),
        Answer::Failed(why) => g.failed = Some(why),
        Answer::Interrupted => return true,
        Answer::Overhead(_) | Answer::Yardstick(_) => {}
    }
    false
}
