//! Several machines over one read of a trace: the reading thread hands each batch of references to
//! worker threads that each own some of the machines.

use super::machine::{Machine, MachineConfig, Stats};
use super::trace::{Ref, RefSource, TraceMeta};
use anyhow::Result;
use std::sync::mpsc::sync_channel;
use std::sync::Arc;

const BATCH: usize = 1 << 16;

pub struct SweepResult {
    pub stats: Vec<Stats>,
    pub refs: u64,
    pub seconds: f64,
    pub meta: TraceMeta,
}

/// Simulates every configuration on the source's references, on up to `threads` threads.
pub fn simulate(
    src: &mut dyn RefSource,
    cfgs: &[MachineConfig],
    threads: usize,
) -> Result<SweepResult> {
    let start = std::time::Instant::now();
    let workers = threads.clamp(1, cfgs.len().max(1));
    let mut refs = 0u64;
    let stats = if workers == 1 {
        let mut machines: Vec<Machine> = cfgs.iter().map(Machine::new).collect();
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            batch.clear();
            if src.next_batch(&mut batch, BATCH)? == 0 {
                break;
            }
            refs += batch.len() as u64;
            for m in &mut machines {
                for r in &batch {
                    m.access(r);
                }
            }
        }
        machines.iter_mut().map(Machine::stats).collect()
    } else {
        std::thread::scope(|scope| -> Result<Vec<Stats>> {
            let mut senders = Vec::new();
            let mut handles = Vec::new();
            for w in 0..workers {
                let (tx, rx) = sync_channel::<Arc<Vec<Ref>>>(4);
                senders.push(tx);
                let mine: Vec<(usize, MachineConfig)> = cfgs
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % workers == w)
                    .map(|(i, c)| (i, c.clone()))
                    .collect();
                handles.push(scope.spawn(move || {
                    let mut machines: Vec<(usize, Machine)> =
                        mine.iter().map(|(i, c)| (*i, Machine::new(c))).collect();
                    while let Ok(batch) = rx.recv() {
                        for (_, m) in &mut machines {
                            for r in batch.iter() {
                                m.access(r);
                            }
                        }
                    }
                    machines
                        .into_iter()
                        .map(|(i, mut m)| (i, m.stats()))
                        .collect::<Vec<_>>()
                }));
            }
            let read = (|| -> Result<()> {
                loop {
                    let mut batch = Vec::with_capacity(BATCH);
                    if src.next_batch(&mut batch, BATCH)? == 0 {
                        return Ok(());
                    }
                    refs += batch.len() as u64;
                    let batch = Arc::new(batch);
                    for tx in &senders {
                        // A worker that is gone panicked; its join reports it.
                        let _ = tx.send(Arc::clone(&batch));
                    }
                }
            })();
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
        })?
    };
    Ok(SweepResult {
        stats,
        refs,
        seconds: start.elapsed().as_secs_f64(),
        meta: src.meta(),
    })
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
        let together = simulate(&mut Synth::new(300_000, 5), &cfgs, 2).unwrap();
        assert_eq!(together.refs, 300_000);
        for (c, s) in cfgs.iter().zip(&together.stats) {
            let alone = simulate(&mut Synth::new(300_000, 5), std::slice::from_ref(c), 1).unwrap();
            assert_eq!(&alone.stats[0], s, "{}", c.name);
        }
    }
}
