//! Signals: the cost of changing a disposition, and of sending a signal to oneself and running its
//! handler.

use super::syscall::no_params;
use super::{Built, Origin, ProbeDef};
use crate::harness::Workload;
use crate::results::model::Unit;
use anyhow::{bail, Context, Result};
use std::sync::atomic::{AtomicU64, Ordering};

pub const PROBES: &[ProbeDef] = &[
    ProbeDef {
        id: "signal.install",
        summary:
            "sigaction() installing a handler for SIGUSR2, alternating between two handlers so \
                  every call changes the disposition",
        params: "",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Lmbench],
        variants: no_params,
        build: |_, _| Ok(Built::Ready(Box::new(Install::new()?))),
    },
    ProbeDef {
        id: "signal.deliver",
        summary:
            "SIGUSR1 sent to the own thread with tgkill and handled: send, delivery, a handler \
                  that counts, and sigreturn",
        params: "",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Lmbench, Origin::LEBench],
        variants: no_params,
        build: |_, _| Ok(Built::Ready(Box::new(Deliver::new()?))),
    },
];

/// The two probes use different signals so that one's restored disposition never lands while the
/// other is running (tests run both at once).
const INSTALL_SIGNAL: libc::c_int = libc::SIGUSR2;
const DELIVER_SIGNAL: libc::c_int = libc::SIGUSR1;

static INSTALL_HITS: AtomicU64 = AtomicU64::new(0);
static DELIVERED: AtomicU64 = AtomicU64::new(0);

extern "C" fn install_handler_a(_: libc::c_int) {
    INSTALL_HITS.fetch_add(1, Ordering::Relaxed);
}

extern "C" fn install_handler_b(_: libc::c_int) {
    INSTALL_HITS.fetch_add(2, Ordering::Relaxed);
}

extern "C" fn deliver_handler(_: libc::c_int) {
    DELIVERED.fetch_add(1, Ordering::Relaxed);
}

fn action(handler: extern "C" fn(libc::c_int)) -> libc::sigaction {
    // SAFETY: sigaction is plain data; every field used is set below.
    let mut a: libc::sigaction = unsafe { std::mem::zeroed() };
    a.sa_sigaction = handler as usize;
    a.sa_flags = libc::SA_RESTART;
    // SAFETY: a valid signal set inside a.
    unsafe { libc::sigemptyset(&mut a.sa_mask) };
    a
}

/// Reads the current disposition of `sig`, to restore it on drop.
fn current(sig: libc::c_int) -> Result<libc::sigaction> {
    // SAFETY: old is a valid out-pointer; a null new action only queries.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
        return Err(std::io::Error::last_os_error()).context("sigaction (query)");
    }
    Ok(old)
}

fn restore(sig: libc::c_int, old: &libc::sigaction) {
    // SAFETY: old was filled by the kernel for this signal.
    unsafe { libc::sigaction(sig, old, std::ptr::null_mut()) };
}

struct Install {
    actions: [libc::sigaction; 2],
    next: usize,
    previous: libc::sigaction,
}

impl Install {
    fn new() -> Result<Install> {
        Ok(Install {
            actions: [action(install_handler_a), action(install_handler_b)],
            next: 0,
            previous: current(INSTALL_SIGNAL)?,
        })
    }
}

impl Workload for Install {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            let a = &self.actions[self.next];
            self.next ^= 1;
            // SAFETY: a is a fully initialised action; the old action is not asked for.
            if unsafe { libc::sigaction(INSTALL_SIGNAL, a, std::ptr::null_mut()) } != 0 {
                bail!("sigaction failed: {}", std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

impl Drop for Install {
    fn drop(&mut self) {
        restore(INSTALL_SIGNAL, &self.previous);
    }
}

struct Deliver {
    pid: libc::pid_t,
    /// The thread that runs the samples; refreshed in prepare() in case it is not the builder.
    tid: libc::pid_t,
    delivered_before: u64,
    sent: u64,
    previous: libc::sigaction,
}

impl Deliver {
    fn new() -> Result<Deliver> {
        let previous = current(DELIVER_SIGNAL)?;
        // SAFETY: a fully initialised action for a catchable signal.
        if unsafe {
            libc::sigaction(
                DELIVER_SIGNAL,
                &action(deliver_handler),
                std::ptr::null_mut(),
            )
        } != 0
        {
            return Err(std::io::Error::last_os_error()).context("sigaction (install)");
        }
        let mut d = Deliver {
            pid: 0,
            tid: 0,
            delivered_before: 0,
            sent: 0,
            previous,
        };
        d.target_this_thread()?;
        Ok(d)
    }

    /// Aims the signal at the calling thread and makes sure that thread does not block it.
    fn target_this_thread(&mut self) -> Result<()> {
        // SAFETY: no pointers besides the local set.
        unsafe {
            self.pid = libc::getpid();
            self.tid = libc::gettid();
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, DELIVER_SIGNAL);
            if libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) != 0 {
                bail!("cannot unblock SIGUSR1 in the measuring thread");
            }
        }
        Ok(())
    }
}

impl Workload for Deliver {
    fn prepare(&mut self, _iters: u64) -> Result<()> {
        self.target_this_thread()?;
        self.delivered_before = DELIVERED.load(Ordering::Relaxed);
        self.sent = 0;
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            // A signal a thread sends to itself is delivered on the way out of this call, so the
            // handler has run by the time tgkill returns.
            // SAFETY: plain integers.
            let rc = unsafe { libc::syscall(libc::SYS_tgkill, self.pid, self.tid, DELIVER_SIGNAL) };
            if rc != 0 {
                bail!("tgkill failed: {}", std::io::Error::last_os_error());
            }
        }
        self.sent += iters;
        Ok(())
    }

    /// Every signal sent must have run the handler, or the figure timed something else.
    fn finish(&mut self) -> Result<()> {
        let ran = DELIVERED.load(Ordering::Relaxed) - self.delivered_before;
        if ran < self.sent {
            bail!(
                "{} SIGUSR1 signals were sent but the handler ran {ran} times",
                self.sent
            );
        }
        Ok(())
    }
}

impl Drop for Deliver {
    fn drop(&mut self) {
        restore(DELIVER_SIGNAL, &self.previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Mutex;

    /// Dispositions are process-wide: tests that change them take turns.
    static DISPOSITIONS: Mutex<()> = Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        DISPOSITIONS.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn handler_of(sig: libc::c_int) -> usize {
        current(sig).unwrap().sa_sigaction
    }

    #[test]
    fn every_probe_builds_and_runs() {
        let _s = serial();
        crate::probes::testing::exercise(PROBES, 100, crate::probes::testing::all);
    }

    #[test]
    fn every_delivery_runs_the_handler_once() {
        let _s = serial();
        let mut d = Deliver::new().unwrap();
        d.prepare(1000).unwrap();
        let before = DELIVERED.load(Ordering::Relaxed);
        d.run(1000).unwrap();
        assert_eq!(DELIVERED.load(Ordering::Relaxed) - before, 1000);
        d.finish().unwrap();
    }

    #[test]
    fn install_alternates_and_drop_restores() {
        let _s = serial();
        let before = handler_of(INSTALL_SIGNAL);
        let mut w = Install::new().unwrap();
        w.run(1).unwrap();
        assert_eq!(
            handler_of(INSTALL_SIGNAL),
            action(install_handler_a).sa_sigaction
        );
        w.run(1).unwrap();
        assert_eq!(
            handler_of(INSTALL_SIGNAL),
            action(install_handler_b).sa_sigaction
        );
        drop(w);
        assert_eq!(handler_of(INSTALL_SIGNAL), before);

        let before = handler_of(DELIVER_SIGNAL);
        drop(Deliver::new().unwrap());
        assert_eq!(handler_of(DELIVER_SIGNAL), before);
    }

    #[test]
    fn a_blocked_signal_is_caught_by_finish() {
        let _s = serial();
        let mut d = Deliver::new().unwrap();
        d.prepare(10).unwrap();
        // SAFETY: local set; the test thread blocks SIGUSR1 for a moment and unblocks it after.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, DELIVER_SIGNAL);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            d.run(10).unwrap();
            assert!(d.finish().is_err());
            // Unblocking delivers the one pending signal before the handler is restored.
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}
