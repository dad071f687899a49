//! Guests booted side by side. Each guest is deterministic whatever else runs on the host (TCG
//! with icount counts instructions, not time), so several kernels or parameter sets can boot at
//! once, one per host CPU, and give the counts they would give one after another.

use anyhow::Result;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// Runs `work` on every job, up to `width` at a time, and hands the results to `each` in the
/// jobs' order, each as soon as it and every one before it are done (so what was counted is kept
/// even if a later guest fails). After the first error no further job starts; the jobs already
/// running finish, those before the error are handed on, and the first error in order is
/// returned.
pub fn in_order<T: Sync, R: Send>(
    jobs: &[T],
    width: usize,
    work: &(dyn Fn(&T) -> Result<R> + Sync),
    each: &mut dyn FnMut(R) -> Result<()>,
) -> Result<()> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Result<R>)>();
    std::thread::scope(|scope| {
        let mut started = 0;
        for _ in 0..width.clamp(1, jobs.len().max(1)) {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            let spawned = crate::system::limits::spawn_scoped(scope, "osm-guest", move || {
                while !stop.load(Ordering::SeqCst) {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(job) = jobs.get(i) else { break };
                    let result = work(job);
                    if result.is_err() {
                        stop.store(true, Ordering::SeqCst);
                    }
                    if tx.send((i, result)).is_err() {
                        break;
                    }
                }
            });
            // The threads share the jobs: fewer than asked still run them all, none cannot.
            match spawned {
                Ok(_) => started += 1,
                Err(e) if started == 0 => return Err(e),
                Err(_) => break,
            }
        }
        drop(tx);
        let mut waiting: BTreeMap<usize, Result<R>> = BTreeMap::new();
        let mut due = 0;
        let mut outcome = Ok(());
        for (i, result) in rx {
            waiting.insert(i, result);
            while let Some(result) = waiting.remove(&due) {
                due += 1;
                if outcome.is_ok() {
                    outcome = result.and_then(&mut *each);
                    if outcome.is_err() {
                        stop.store(true, Ordering::SeqCst);
                    }
                }
            }
        }
        outcome
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_order_whatever_order_they_finish_in() {
        let jobs: Vec<u64> = (0..6).collect();
        let mut seen = Vec::new();
        in_order(
            &jobs,
            3,
            &|j: &u64| {
                // Later jobs finish first.
                std::thread::sleep(std::time::Duration::from_millis(30 - 5 * j));
                Ok(j * 10)
            },
            &mut |r| {
                seen.push(r);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, vec![0, 10, 20, 30, 40, 50]);
    }

    #[test]
    fn an_error_keeps_what_came_before_and_starts_nothing_after() {
        let jobs: Vec<u64> = (0..20).collect();
        let started = AtomicUsize::new(0);
        let mut seen = Vec::new();
        let err = in_order(
            &jobs,
            2,
            &|j: &u64| {
                started.fetch_add(1, Ordering::SeqCst);
                if *j == 3 {
                    anyhow::bail!("job 3 failed");
                }
                // Jobs that take a while, as guests do: with jobs that take no time the other
                // thread could run every one of them before the failing one says stop.
                std::thread::sleep(std::time::Duration::from_millis(5));
                Ok(*j)
            },
            &mut |r| {
                seen.push(r);
                Ok(())
            },
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "job 3 failed");
        assert_eq!(seen, vec![0, 1, 2]);
        assert!(started.load(Ordering::SeqCst) < 20);
    }
}
