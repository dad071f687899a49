//! Real-time threads in the test process that take a CPU away from osmeter's measuring threads,
//! for known answers about lateness: the measured CPU and the hogs that sit on it.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

static CPU: Mutex<()> = Mutex::new(());

/// Held by each test of a binary that measures on `last_cpu()` or hogs it, so that one test's
/// hog is not another's noise (the tests of one binary run in parallel).
pub fn exclusive() -> MutexGuard<'static, ()> {
    CPU.lock().unwrap_or_else(|e| e.into_inner())
}

/// The highest CPU this process may run on (the tests measure there).
pub fn last_cpu() -> usize {
    // SAFETY: cpu_set_t is plain data filled by the kernel.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
        (0..libc::CPU_SETSIZE as usize)
            .rev()
            .find(|&c| libc::CPU_ISSET(c, &set))
            .unwrap_or(0)
    }
}

/// Pins the calling thread to `cpu` at SCHED_FIFO `priority`.
fn take(cpu: usize, priority: i32) {
    // SAFETY: pinning and switching the class of the calling thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        let p = libc::sched_param {
            sched_priority: priority,
        };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &p);
    }
}

fn spin(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// A thread named osm-hog that holds `cpu` at SCHED_FIFO 80 for `ms`, after `after_ms`.
pub fn hog(cpu: usize, after_ms: u64, ms: u64) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("osm-hog".into())
        .spawn(move || {
            std::thread::sleep(Duration::from_millis(after_ms));
            take(cpu, 80);
            spin(Duration::from_millis(ms));
        })
        .unwrap()
}

/// A thread at SCHED_FIFO 95 on `cpu` that spins 600 us of every 1.1 ms until `stop`: a thread
/// of the high class (FIFO 90) woken during a spin waits for its end.
pub fn periodic_hog(cpu: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("osm-phog".into())
        .spawn(move || {
            take(cpu, 95);
            while !stop.load(Ordering::Relaxed) {
                spin(Duration::from_micros(600));
                std::thread::sleep(Duration::from_micros(500));
            }
        })
        .unwrap()
}
