//! Several machines over one read of a trace. With more than one thread, a reader thread decodes
//! batches of references while worker threads, each owning some of the machines, simulate them:
//! even a single machine gets decoding and simulation overlapped on two cores.

use super::machine::{Machine, MachineConfig, Stats};
use super::trace::{Ref, RefSource, TraceMeta};
use anyhow::Result;
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;

/// References per batch: small enough that a batch (40 bytes a reference) stays in the cache
/// of the core that decoded it until a worker reads it, big enough that handing it over is rare.
const BATCH: usize = 1 << 14;
/// Batches in flight between the reader and the workers; the reader waits when all are out.
const IN_FLIGHT: usize = 8;

pub struct SweepResult {
    pub stats: Vec<Stats>,
    pub refs: u64,
    pub seconds: f64,
    pub meta: TraceMeta,
}

/// Simulates every configuration on the source's references, on up to `threads` threads (one of
/// them reading the trace).
pub fn simulate(
    src: &mut dyn RefSource,
    cfgs: &[MachineConfig],
    threads: usize,
) -> Result<SweepResult> {
    let start = std::time::Instant::now();
    let (stats, refs) = if threads <= 1 || cfgs.is_empty() {
        one_thread(src, cfgs)?
    } else {
        // The reader is mostly waiting once the workers are the bottleneck, so every core
        // gets a worker when there are machines enough.
        pipelined(src, cfgs, threads.min(cfgs.len()))?
    };
    Ok(SweepResult {
        stats,
        refs,
        seconds: start.elapsed().as_secs_f64(),
        meta: src.meta(),
    })
}

fn one_thread(src: &mut dyn RefSource, cfgs: &[MachineConfig]) -> Result<(Vec<Stats>, u64)> {
    let mut machines: Vec<Machine> = cfgs.iter().map(Machine::new).collect();
    let mut batch = Vec::with_capacity(BATCH);
    let mut refs = 0u64;
    loop {
        batch.clear();
        if src.next_batch(&mut batch, BATCH)? == 0 {
            break;
        }
        refs += batch.len() as u64;
        for m in &mut machines {
            m.run(&batch);
        }
    }
    Ok((machines.iter_mut().map(Machine::stats).collect(), refs))
}

/// Machine `i` goes to worker `i % workers`.
fn pipelined(
    src: &mut dyn RefSource,
    cfgs: &[MachineConfig],
    workers: usize,
) -> Result<(Vec<Stats>, u64)> {
    let mut refs = 0u64;
    let stats = std::thread::scope(|scope| -> Result<Vec<Stats>> {
        // Every worker hands each batch back when done; the last hand-back frees it for reuse.
        let (give_back, returned) = channel::<Arc<Vec<Ref>>>();
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for w in 0..workers {
            let (tx, rx) = channel::<Arc<Vec<Ref>>>();
            senders.push(tx);
            let mine: Vec<(usize, MachineConfig)> = cfgs
                .iter()
                .enumerate()
                .filter(|(i, _)| i % workers == w)
                .map(|(i, c)| (i, c.clone()))
                .collect();
            let give_back = give_back.clone();
            handles.push(scope.spawn(move || {
                let mut machines: Vec<(usize, Machine)> =
                    mine.iter().map(|(i, c)| (*i, Machine::new(c))).collect();
                while let Ok(batch) = rx.recv() {
                    for (_, m) in &mut machines {
                        m.run(&batch);
                    }
                    // The reader may be gone after an error; then nothing is reused.
                    let _ = give_back.send(batch);
                }
                machines
                    .into_iter()
                    .map(|(i, mut m)| (i, m.stats()))
                    .collect::<Vec<_>>()
            }));
        }
        drop(give_back);
        let read = read_into(src, &senders, &returned, &mut refs);
        drop(senders);
        let mut all: Vec<(usize, Stats)> = Vec::new();
        for h in handles {
            all.extend(
                h.join()
                    .map_err(|_| anyhow::anyhow!("a simulation thread panicked"))?,
            );
        }
        read?;
        all.sort_by_key(|(i, _)| *i);
        Ok(all.into_iter().map(|(_, s)| s).collect())
    })?;
    Ok((stats, refs))
}

/// Decodes batches and sends each to every worker, reusing batches the workers are done with.
fn read_into(
    src: &mut dyn RefSource,
    senders: &[std::sync::mpsc::Sender<Arc<Vec<Ref>>>],
    returned: &Receiver<Arc<Vec<Ref>>>,
    refs: &mut u64,
) -> Result<()> {
    let mut made = 0;
    loop {
        let mut batch = if made < IN_FLIGHT {
            made += 1;
            Vec::with_capacity(BATCH)
        } else {
            loop {
                // Each worker returns its handle; only the last one unwraps.
                let Ok(handle) = returned.recv() else {
                    // Every worker is gone: one panicked, and its join says so.
                    return Ok(());
                };
                if let Ok(v) = Arc::try_unwrap(handle) {
                    break v;
                }
            }
        };
        batch.clear();
        if src.next_batch(&mut batch, BATCH)? == 0 {
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
