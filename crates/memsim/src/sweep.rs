//! Several machines over one read of a trace. With more than one thread, a reader thread decodes
//! batches of references while worker threads, each owning some of the machines, simulate them:
//! even a single machine gets decoding and simulation overlapped on two cores.

use super::curve::{CurveResult, CurveSim, CurveSpec};
use super::interval::{IntervalResult, Intervals, Observed};
use super::machine::{Machine, MachineConfig, Stats};
use super::trace::packed::{Batch, Refs};
use super::trace::{Ref, RefSource, TraceMeta};
use anyhow::Result;
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;

/// References per batch: small enough that the batches in flight (128 KB each at 8 bytes a
/// packed reference, 1 MB in all) stay in the second-level caches, big enough that handing one
/// over is rare. A worker that sleeps between batches is woken through the kernel each time:
/// with three threads on two cores (a machine, its 3C twin and the reader), 4096 references a
/// batch spent a tenth of the time in wake-ups, and the ds5000-200 ran 15 % slower.
const BATCH: usize = 1 << 14;
/// Batches in flight between the reader and the workers; the reader waits when all are out.
const IN_FLIGHT: usize = 8;

pub struct SweepResult {
    pub stats: Vec<Stats>,
    pub refs: u64,
    pub seconds: f64,
    pub meta: TraceMeta,
    /// Miss-ratio curves asked for in `Extras`, in order.
    pub curves: Vec<CurveResult>,
    /// Per-interval statistics of each requested machine, when `Extras::interval` is set.
    pub intervals: Vec<IntervalResult>,
}

/// What a pass computes besides the machines' totals.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    pub curves: Vec<CurveSpec>,
    /// References per interval.
    pub interval: Option<u64>,
    /// The most intervals one machine keeps (what fits in memory), or None for no bound.
    pub max_intervals: Option<u64>,
}

/// Something fed the references of one read of a trace, batch by batch: a machine, or a machine
/// with attribution around it. Sweeps hand out any number of them over the threads.
pub(crate) trait Simulator: Send {
    type Output: Send;
    fn run(&mut self, batch: Refs<'_>);
    fn finish(self) -> Self::Output;
    /// Whether it reads the packed words themselves; the others take each reference whole, and
    /// a thread feeding several of those unpacks a batch once for all of them.
    fn reads_words(&self) -> bool {
        false
    }
}

impl Simulator for Machine {
    type Output = Stats;
    fn run(&mut self, batch: Refs<'_>) {
        Machine::run_packed(self, batch)
    }
    fn reads_words(&self) -> bool {
        Machine::reads_words(self)
    }
    fn finish(mut self) -> Stats {
        self.stats()
    }
}

impl Observed for Machine {
    fn snapshot(&mut self) -> Stats {
        self.stats()
    }
    fn name(&self) -> String {
        self.cfg.name.clone()
    }
}

/// Two kinds of simulator fed by one pass.
pub(crate) enum Either<A, B> {
    Left(A),
    Right(B),
}

impl<A: Simulator, B: Simulator> Simulator for Either<A, B> {
    type Output = Either<A::Output, B::Output>;
    fn run(&mut self, batch: Refs<'_>) {
        match self {
            Either::Left(a) => a.run(batch),
            Either::Right(b) => b.run(batch),
        }
    }
    fn reads_words(&self) -> bool {
        match self {
            Either::Left(a) => a.reads_words(),
            Either::Right(b) => b.reads_words(),
        }
    }
    fn finish(self) -> Self::Output {
        match self {
            Either::Left(a) => Either::Left(a.finish()),
            Either::Right(b) => Either::Right(b.finish()),
        }
    }
}

/// Simulates every configuration on the source's references, on up to `threads` threads (one of
/// them reading the trace).
pub fn simulate(
    src: &mut dyn RefSource,
    cfgs: &[MachineConfig],
    threads: usize,
) -> Result<SweepResult> {
    simulate_with(src, cfgs, &Extras::default(), threads)
}

/// `simulate`, with miss-ratio curves and per-interval statistics computed in the same pass.
pub fn simulate_with(
    src: &mut dyn RefSource,
    cfgs: &[MachineConfig],
    extras: &Extras,
    threads: usize,
) -> Result<SweepResult> {
    let start = std::time::Instant::now();
    let twins = classifier_twins(cfgs, threads);
    let mut machines: Vec<Intervals<Machine>> = cfgs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let c = if twins.contains(&i) {
                MachineConfig {
                    three_c: false,
                    ..c.clone()
                }
            } else {
                c.clone()
            };
            Intervals::new(Machine::new(&c), extras.interval).at_most(extras.max_intervals)
        })
        .collect();
    machines.extend(
        twins
            .iter()
            .map(|&i| Intervals::new(Machine::classifier(&cfgs[i]), None)),
    );
    let (outputs, curves, refs) = drive_beside(src, machines, &extras.curves, threads)?;
    let (mut stats, mut intervals): (Vec<Stats>, Vec<Option<IntervalResult>>) =
        outputs.into_iter().unzip();
    intervals.truncate(cfgs.len());
    let classified = stats.split_off(cfgs.len());
    for (&i, twin) in twins.iter().zip(&classified) {
        take_classes(&mut stats[i], twin, &cfgs[i].name);
    }
    Ok(SweepResult {
        stats,
        refs,
        seconds: start.elapsed().as_secs_f64(),
        meta: src.meta(),
        curves,
        intervals: intervals.into_iter().flatten().collect(),
    })
}

/// The machines whose 3C classification runs beside them on a twin (`Machine::classifier`) with
/// a core of its own, when the pass has a core for every machine and twin. The classification's
/// fully associative shadow is touched on every first-level access and costs a machine a fifth
/// of its time or more; the first level's accesses and misses never depend on the TLB, the write
/// buffer or the levels below, so a twin that simulates the first level alone classifies them
/// alike. Machines with lower levels keep their own shadows: those levels are classified too.
fn classifier_twins(cfgs: &[MachineConfig], threads: usize) -> Vec<usize> {
    let candidates: Vec<usize> = (0..cfgs.len())
        .filter(|&i| cfgs[i].three_c && cfgs[i].lower.is_empty())
        .collect();
    if cfgs.len() + candidates.len() > threads {
        return Vec::new();
    }
    candidates
}

/// Puts the twin's miss classes into the machine's counts. The two saw the same first-level
/// accesses and misses, or the twin's premise is broken: that is a bug, said loudly.
fn take_classes(stats: &mut Stats, twin: &Stats, name: &str) {
    for (m, t) in stats.mode.iter_mut().zip(&twin.mode) {
        for (mine, theirs) in [(&mut m.l1i, &t.l1i), (&mut m.l1d, &t.l1d)] {
            assert_eq!(
                (mine.accesses, mine.misses),
                (theirs.accesses, theirs.misses),
                "{name}: the 3C twin saw other first-level accesses or misses; this is a bug"
            );
            mine.classes = theirs.classes;
        }
    }
}

/// `drive` with the curves' simulations beside `sims` in the same pass.
pub(crate) fn drive_beside<S: Simulator>(
    src: &mut dyn RefSource,
    sims: Vec<S>,
    curves: &[CurveSpec],
    threads: usize,
) -> Result<(Vec<S::Output>, Vec<CurveResult>, u64)> {
    let all = sims
        .into_iter()
        .map(Either::Left)
        .chain(curves.iter().map(|c| Either::Right(CurveSim::new(c))))
        .collect();
    let (outputs, refs) = drive(src, all, threads)?;
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    for o in outputs {
        match o {
            Either::Left(a) => mine.push(a),
            Either::Right(c) => theirs.push(c),
        }
    }
    Ok((mine, theirs, refs))
}

/// Feeds every simulator the whole source once; returns their outputs in order and the number of
/// references read.
pub(crate) fn drive<S: Simulator>(
    src: &mut dyn RefSource,
    sims: Vec<S>,
    threads: usize,
) -> Result<(Vec<S::Output>, u64)> {
    if threads <= 1 || sims.is_empty() {
        one_thread(src, sims)
    } else {
        // The reader is mostly waiting once the workers are the bottleneck, so every core
        // gets a worker when there are simulators enough.
        let workers = threads.min(sims.len());
        pipelined(src, sims, workers)
    }
}

fn one_thread<S: Simulator>(
    src: &mut dyn RefSource,
    mut sims: Vec<S>,
) -> Result<(Vec<S::Output>, u64)> {
    let mut batch = Batch::with_capacity(BATCH);
    let mut whole = Vec::new();
    let mut refs = 0u64;
    loop {
        batch.clear();
        if src.next_packed(&mut batch, BATCH)? == 0 {
            break;
        }
        refs += batch.len() as u64;
        feed(&mut sims, &batch, &mut whole);
    }
    Ok((sims.into_iter().map(S::finish).collect(), refs))
}

/// Simulator `i` goes to worker `i % workers`.
fn pipelined<S: Simulator>(
    src: &mut dyn RefSource,
    sims: Vec<S>,
    workers: usize,
) -> Result<(Vec<S::Output>, u64)> {
    // Each worker's simulators and their places in `sims`.
    let mut groups: Vec<(Vec<usize>, Vec<S>)> =
        (0..workers).map(|_| (Vec::new(), Vec::new())).collect();
    for (i, s) in sims.into_iter().enumerate() {
        groups[i % workers].0.push(i);
        groups[i % workers].1.push(s);
    }
    let mut refs = 0u64;
    // Polling pays only while every thread of the pass has a core of its own: beside a thread
    // that needs the core, it takes that thread's time (a 16-machine sweep on two workers and
    // the reader ran a tenth slower).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let poll = if workers < cores {
        POLL
    } else {
        std::time::Duration::ZERO
    };
    let outputs = std::thread::scope(|scope| -> Result<Vec<S::Output>> {
        // Every worker hands each batch back when done; the last hand-back frees it for reuse.
        let (give_back, returned) = channel::<Arc<Batch>>();
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for (places, mut mine) in groups {
            let (tx, rx) = channel::<Arc<Batch>>();
            senders.push(tx);
            let give_back = give_back.clone();
            let started = crate::system::limits::spawn_scoped(scope, "osm-simulate", move || {
                let mut whole = Vec::new();
                while let Ok(batch) = recv_soon(&rx, poll) {
                    feed(&mut mine, &batch, &mut whole);
                    // The reader may be gone after an error; then nothing is reused.
                    let _ = give_back.send(batch);
                }
                places
                    .into_iter()
                    .zip(mine.into_iter().map(S::finish))
                    .collect::<Vec<_>>()
            });
            match started {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // The workers started end once their channels close; `--threads 1` needs
                    // no thread.
                    drop(senders);
                    for h in handles {
                        let _ = h.join();
                    }
                    return Err(anyhow::anyhow!(
                        "{e:#}; or give `--threads 1`, which simulates on osmeter's own thread"
                    ));
                }
            }
        }
        drop(give_back);
        let read = read_into(src, &senders, &returned, &mut refs, poll);
        drop(senders);
        let mut all = Vec::new();
        for h in handles {
            all.extend(
                h.join()
                    .map_err(|_| anyhow::anyhow!("a simulation thread panicked"))?,
            );
        }
        read?;
        all.sort_by_key(|(i, _)| *i);
        Ok(all.into_iter().map(|(_, o)| o).collect())
    })?;
    Ok((outputs, refs))
}

/// Runs every simulator on `batch`. When two or more take references whole, the batch is
/// unpacked once into `whole` for all of them.
fn feed<S: Simulator>(sims: &mut [S], batch: &Batch, whole: &mut Vec<Ref>) {
    let view = batch.view();
    let unpacking = sims.iter().filter(|s| !s.reads_words()).count() >= 2;
    let view = if unpacking {
        whole.clear();
        view.unpack_into(whole);
        view.with_whole(whole)
    } else {
        view
    };
    for s in sims {
        s.run(view);
    }
}

/// Decodes batches and sends each to every worker, reusing batches the workers are done with.
fn read_into(
    src: &mut dyn RefSource,
    senders: &[std::sync::mpsc::Sender<Arc<Batch>>],
    returned: &Receiver<Arc<Batch>>,
    refs: &mut u64,
    poll: std::time::Duration,
) -> Result<()> {
    let mut made = 0;
    loop {
        let mut batch = if made < IN_FLIGHT {
            made += 1;
            Batch::with_capacity(BATCH)
        } else {
            loop {
                // Each worker returns its handle; only the last one unwraps.
                let Ok(handle) = recv_soon(returned, poll) else {
                    // Every worker is gone: one panicked, and its join says so.
                    return Ok(());
                };
                if let Ok(v) = Arc::try_unwrap(handle) {
                    break v;
                }
            }
        };
        batch.clear();
        if src.next_packed(&mut batch, BATCH)? == 0 {
            return Ok(());
        }
        *refs += batch.len() as u64;
        let batch = Arc::new(batch);
        for tx in senders {
            // A worker that is gone panicked; its join reports it.
            let _ = tx.send(Arc::clone(&batch));
        }
    }
}

/// How long a thread of a pass polls for the next batch before it sleeps. A batch takes tens of
/// microseconds to decode or simulate, so the other thread usually has one ready within that;
/// sleeping and being woken for every batch cost a twentieth of the pass's CPU time in the kernel
/// (on a 2-core VM, 0.29 s of system time against 0.08 s polling, for 172 M references).
const POLL: std::time::Duration = std::time::Duration::from_micros(50);

/// `rx.recv()`, polling for up to `poll` first.
fn recv_soon<T>(
    rx: &Receiver<T>,
    poll: std::time::Duration,
) -> Result<T, std::sync::mpsc::RecvError> {
    if poll.is_zero() {
        return rx.recv();
    }
    let start = std::time::Instant::now();
    loop {
        for _ in 0..64 {
            match rx.try_recv() {
                Ok(v) => return Ok(v),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    return Err(std::sync::mpsc::RecvError)
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
            }
        }
        // Not sched_yield: beside other busy processes, a thread that yields gives up its share of
        // the CPU again and again (the pass took 3.5 times as long beside two CPU hogs).
        if start.elapsed() > poll {
            return rx.recv();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsim::config::preset;
    use crate::memsim::trace::synth::Synth;

    #[test]
    fn one_pass_on_threads_equals_separate_runs() {
        let cfgs: Vec<MachineConfig> = ["ds5000-200", "ds5000-200-2way", "pentium"]
            .iter()
            .map(|n| preset(n).unwrap())
            .collect();
        for threads in [2, 3] {
            let together = simulate(&mut Synth::new(300_000, 5), &cfgs, threads).unwrap();
            assert_eq!(together.refs, 300_000);
            for (c, s) in cfgs.iter().zip(&together.stats) {
                let alone =
                    simulate(&mut Synth::new(300_000, 5), std::slice::from_ref(c), 1).unwrap();
                assert_eq!(&alone.stats[0], s, "{}", c.name);
                let piped =
                    simulate(&mut Synth::new(300_000, 5), std::slice::from_ref(c), 2).unwrap();
                assert_eq!(&piped.stats[0], s, "{} alone on a worker", c.name);
            }
        }
    }
}
