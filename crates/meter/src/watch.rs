//! Who else used the measuring CPU while a run measured: a thread of the parent process, kept off
//! the measuring CPU, reads every task's CPU time a few times a second and charges what each one
//! used since the last look to the CPU it is on. osmeter's own processes (the measuring ones and
//! their partners) are left out: their use of the CPU is the measurement.
//!
//! Ticks are USER_HZ (10 ms): over a run of seconds that resolves a task that took a few percent.

use super::look::{self, CpuTicks, Task};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Time between two looks at the tasks: often enough that a task rarely moves between CPUs
/// unseen, seldom enough that the looks (a few ms of the other CPU) cost little.
pub const PERIOD: Duration = Duration::from_millis(250);

/// A process that used the measuring CPU during the run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Taker {
    pub pid: u32,
    pub command: String,
    /// CPU time it used on the measuring CPU, in ms.
    pub cpu_ms: f64,
}

/// What the watch saw over the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Watched {
    pub seconds: f64,
    /// CPU time other processes used on the measuring CPU, in ms.
    pub others_ms: f64,
    /// The processes that used most of it, most first.
    pub takers: Vec<Taker>,
    /// Other tasks runnable on the measuring CPU, on average over the looks.
    pub runnable: f64,
    /// The measuring CPU's own accounting over the run (/proc/stat), when readable.
    pub cpu_ticks: Option<CpuTicks>,
}

/// Most processes named as takers.
const TAKERS: usize = 5;

/// The watching thread; [`Watch::finish`] stops it and returns what it saw.
pub struct Watch {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Watched>>,
}

impl Watch {
    /// Starts watching `cpu`, from a thread that runs on the other usable CPUs when there are any.
    pub fn start(cpu: usize) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let own = std::process::id();
        let handle = std::thread::Builder::new()
            .name("osmeter-watch".into())
            .spawn(move || {
                let others: Vec<usize> = super::placement::usable_cpus()
                    .into_iter()
                    .filter(|&c| c != cpu)
                    .collect();
                if !others.is_empty() {
                    // Best effort: on the measuring CPU the looks would be a disturbance of their own.
                    let _ = super::placement::set_affinity(&others);
                }
                watch(cpu, own, &flag)
            })
            .ok();
        Watch { stop, handle }
    }

    pub fn finish(mut self) -> Watched {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Running totals between looks.
#[derive(Default)]
struct Tally {
    last: BTreeMap<u32, u64>,
    /// Ticks charged to the measuring CPU, by process.
    by_process: BTreeMap<u32, (String, u64)>,
    runnable: u64,
    looks: u64,
}

impl Tally {
    /// Charges each task what it used since the last look to the CPU it is on now.
    fn add(&mut self, tasks: &[Task], own: u32, cpu: usize) {
        let ours = look::own_tree(tasks, own);
        let names: BTreeMap<u32, &str> = tasks
            .iter()
            .filter(|t| t.tid == t.tgid)
            .map(|t| (t.tgid, t.comm.as_str()))
            .collect();
        let mut now = BTreeMap::new();
        for t in tasks {
            now.insert(t.tid, t.ticks);
            if ours.contains(&t.tgid) || t.cpu != cpu {
                continue;
            }
            if t.state == 'R' {
                self.runnable += 1;
            }
            let used = self
                .last
                .get(&t.tid)
                .map_or(0, |&before| t.ticks.saturating_sub(before));
            if used > 0 {
                let name = names.get(&t.tgid).copied().unwrap_or(&t.comm);
                let entry = self
                    .by_process
                    .entry(t.tgid)
                    .or_insert_with(|| (name.to_string(), 0));
                entry.1 += used;
            }
        }
        self.last = now;
        self.looks += 1;
    }

    fn result(&self, seconds: f64, cpu_ticks: Option<CpuTicks>) -> Watched {
        let ms = 1000.0 / osmeter_base::system::ticks_per_second();
        let mut takers: Vec<Taker> = self
            .by_process
            .iter()
            .map(|(&pid, (command, ticks))| Taker {
                pid,
                command: command.clone(),
                cpu_ms: *ticks as f64 * ms,
            })
            .collect();
        takers.sort_by(|a, b| b.cpu_ms.total_cmp(&a.cpu_ms).then(a.pid.cmp(&b.pid)));
        // Folded from +0.0: an empty f64 sum is -0.0, which a quiet run printed as "-0 %".
        let others_ms = takers.iter().map(|t| t.cpu_ms).fold(0.0, |a, b| a + b);
        takers.truncate(TAKERS);
        Watched {
            seconds,
            others_ms,
            takers,
            // The first look only sets the baseline of the ticks, but its runnable tasks count.
            runnable: self.runnable as f64 / self.looks.max(1) as f64,
            cpu_ticks,
        }
    }
}

fn ticks_of(cpu: usize) -> Option<CpuTicks> {
    look::cpu_ticks()
        .into_iter()
        .find(|(c, _)| *c == cpu)
        .map(|(_, t)| t)
}

fn watch(cpu: usize, own: u32, stop: &AtomicBool) -> Watched {
    let started = Instant::now();
    let first = ticks_of(cpu);
    let mut tally = Tally::default();
    loop {
        tally.add(&look::scan_tasks(), own, cpu);
        let next = Instant::now() + PERIOD;
        while Instant::now() < next {
            if stop.load(Ordering::Relaxed) {
                tally.add(&look::scan_tasks(), own, cpu);
                let delta = first.zip(ticks_of(cpu)).map(|(a, b)| CpuTicks {
                    busy: b.busy.saturating_sub(a.busy),
                    total: b.total.saturating_sub(a.total),
                    steal: b.steal.saturating_sub(a.steal),
                });
                return tally.result(started.elapsed().as_secs_f64(), delta);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(tid: u32, tgid: u32, ppid: u32, ticks: u64, cpu: usize, state: char) -> Task {
        Task {
            tid,
            tgid,
            ppid,
            comm: format!("c{tgid}"),
            state,
            ticks,
            cpu,
        }
    }

    #[test]
    fn use_is_charged_to_the_cpu_a_task_is_on_and_osmeter_is_left_out() {
        let mut t = Tally::default();
        // 10 is osmeter, 11 its worker; 20 a stranger with two threads; 30 on the other CPU.
        let at = |ticks: u64| {
            vec![
                task(10, 10, 1, ticks, 1, 'S'),
                task(11, 11, 10, ticks, 1, 'R'),
                task(20, 20, 1, ticks, 1, 'R'),
                task(21, 20, 1, ticks / 2, 1, 'R'),
                task(30, 30, 1, ticks, 0, 'R'),
            ]
        };
        t.add(&at(100), 10, 1);
        t.add(&at(150), 10, 1);
        let w = t.result(1.0, None);
        let ms = 1000.0 / osmeter_base::system::ticks_per_second();
        assert_eq!(w.takers.len(), 1, "{w:?}");
        assert_eq!(w.takers[0].pid, 20);
        assert_eq!(w.takers[0].command, "c20");
        assert_eq!(w.takers[0].cpu_ms, 75.0 * ms);
        assert_eq!(w.others_ms, 75.0 * ms);
        // Two runnable strangers on CPU 1 at each look.
        assert_eq!(w.runnable, 2.0);
        // Nobody else: no time, and a positive zero (a quiet run printed "-0 %").
        let quiet = Tally::default().result(1.0, None);
        assert!(quiet.others_ms == 0.0 && quiet.others_ms.is_sign_positive());
    }

    #[test]
    fn a_spinning_child_of_this_process_counts_as_its_own() {
        let cpu = *super::super::placement::usable_cpus().last().unwrap();
        let mut child = osmeter_base::programs::command("taskset")
            .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("taskset and sh");
        let watch = Watch::start(cpu);
        std::thread::sleep(Duration::from_millis(800));
        let w = watch.finish();
        let _ = child.kill();
        let _ = child.wait();
        // This process spawned it: it is osmeter's own here, and not named.
        assert!(
            w.takers.iter().all(|t| t.pid != child.id()),
            "{:?}",
            w.takers
        );
        assert!(w.seconds > 0.5 && w.cpu_ticks.is_some(), "{w:?}");
    }
}
