//! A cap on how long a real-time thread may run without blocking (RLIMIT_RTTIME), shared by every
//! part of osmeter that raises a thread to SCHED_FIFO.
//!
//! The kernel counts, per real-time thread, the CPU time since it last blocked. Past the soft limit it
//! sends SIGXCPU (and raises the soft limit by a second, so it can be sent again); past the hard limit
//! it sends SIGKILL. A measuring thread at SCHED_FIFO 98 that loops by mistake would otherwise keep a
//! CPU away from everything else, interrupts' bottom halves and the terminal included.

use std::sync::atomic::{AtomicBool, Ordering};

static TRIPPED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigxcpu(_: libc::c_int) {
    TRIPPED.store(true, Ordering::SeqCst);
}

/// What the limit does when it is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnLimit {
    /// The default action of SIGXCPU: the process ends. For threads that block every period, where
    /// reaching the limit can only be a bug.
    Terminate,
    /// SIGXCPU is caught and [`take_tripped`] turns true, so a measurement can stop at its next
    /// check and keep what it has; the hard limit still kills the process if it does not stop.
    Notify,
}

/// The process's RLIMIT_RTTIME lowered for as long as this value lives; the old limit comes back on
/// drop (as far as the process may still raise it: an unprivileged process cannot raise a lowered
/// hard limit, which is harmless because the limit only ever applies to real-time threads).
pub struct RtTimeLimit {
    old: Option<libc::rlimit>,
    applied: Option<libc::rlimit>,
}

impl RtTimeLimit {
    /// Lowers the soft limit to `soft_us`, and the hard limit to `hard_us` when given (never above
    /// what it already is). Fails silently, like the protection it is: without it the run still works.
    pub fn set(soft_us: u64, hard_us: Option<u64>, on_limit: OnLimit) -> RtTimeLimit {
        let mut old = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: plain get/set of this process's limit with valid pointers.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_RTTIME, &mut old) != 0 {
                return RtTimeLimit {
                    old: None,
                    applied: None,
                };
            }
        }
        let hard = hard_us.map_or(old.rlim_max, |h| h.max(soft_us).min(old.rlim_max));
        let new = libc::rlimit {
            rlim_cur: soft_us.min(hard),
            rlim_max: hard,
        };
        if on_limit == OnLimit::Notify {
            install_handler();
        }
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_RTTIME, &new) } != 0 {
            return RtTimeLimit {
                old: None,
                applied: None,
            };
        }
        RtTimeLimit {
            old: Some(old),
            applied: Some(new),
        }
    }

    /// The soft limit in force, microseconds (None when it could not be set).
    pub fn soft_us(&self) -> Option<u64> {
        self.applied.map(|l| l.rlim_cur)
    }

    /// Puts the soft limit back where it was set: each SIGXCPU moves it a second further.
    pub fn rearm(&self) {
        if let Some(l) = self.applied {
            // SAFETY: as above; `l` is within the hard limit already in force.
            unsafe { libc::setrlimit(libc::RLIMIT_RTTIME, &l) };
        }
    }
}

impl Drop for RtTimeLimit {
    fn drop(&mut self) {
        let Some(old) = self.old else { return };
        // SAFETY: as above.
        unsafe {
            if libc::setrlimit(libc::RLIMIT_RTTIME, &old) != 0 {
                // The hard limit could not be raised again: restore the soft one as far as it goes.
                let mut now = old;
                libc::getrlimit(libc::RLIMIT_RTTIME, &mut now);
                now.rlim_cur = old.rlim_cur.min(now.rlim_max);
                libc::setrlimit(libc::RLIMIT_RTTIME, &now);
            }
        }
    }
}

fn install_handler() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigxcpu as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut action.sa_mask);
        action.sa_flags = 0;
        libc::sigaction(libc::SIGXCPU, &action, std::ptr::null_mut());
    }
}

/// True once after a real-time thread of this process reached the soft limit (with
/// [`OnLimit::Notify`]); reading it clears it.
pub fn take_tripped() -> bool {
    TRIPPED.swap(false, Ordering::SeqCst)
}

/// Whether the soft limit was reached, without clearing it.
pub fn tripped() -> bool {
    TRIPPED.load(Ordering::SeqCst)
}

/// The longest `--min-time` of a run at SCHED_FIFO. A sample never sleeps, and calibration may make
/// one up to about twice the minimum, so this keeps every sample well inside [`sample_limits_us`].
pub const FIFO_MAX_SAMPLE_NS: u64 = 1_000_000_000;
/// The most CPU time a measuring worker at SCHED_FIFO may take without sleeping: SIGXCPU (the
/// sample is cut and what was measured kept) at the soft limit, SIGKILL one second later.
pub const FIFO_SOFT_LIMIT_MAX_US: u64 = 3_000_000;

/// RLIMIT_RTTIME (soft, hard), microseconds, for a measuring worker at SCHED_FIFO whose samples last
/// at least `min_sample_ns`: three times the sample, at least two seconds, and never more than
/// [`FIFO_SOFT_LIMIT_MAX_US`] (hard: one second more), whatever the sample length asked for; a
/// longer sample is refused before the run starts (see [`FIFO_MAX_SAMPLE_NS`]).
pub fn sample_limits_us(min_sample_ns: u64) -> (u64, u64) {
    let soft = (min_sample_ns / 1000)
        .saturating_mul(3)
        .clamp(2_000_000, FIFO_SOFT_LIMIT_MAX_US);
    (soft, soft + 1_000_000)
}

/// Blocks the calling thread for a moment. The kernel starts a real-time thread's RLIMIT_RTTIME
/// count afresh when it wakes from a block, so a measuring loop calls this between samples (never
/// inside one) and only a single runaway sample can reach the limit.
pub fn block_briefly() {
    // Long enough that the timer cannot expire before the thread has gone to sleep.
    std::thread::sleep(std::time::Duration::from_micros(200));
}

/// RLIMIT_RTTIME of the process `pid`, as /proc/PID/limits shows it (soft, hard; None = unlimited).
pub fn read_limit(pid: u32) -> Option<(Option<u64>, Option<u64>)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = text
        .lines()
        .find(|l| l.starts_with("Max realtime timeout"))?;
    let mut fields = line["Max realtime timeout".len()..].split_whitespace();
    let parse = |f: Option<&str>| -> Option<Option<u64>> {
        match f? {
            "unlimited" => Some(None),
            n => n.parse().ok().map(Some),
        }
    };
    Some((parse(fields.next())?, parse(fields.next())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current() -> libc::rlimit {
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: valid out-pointer.
        unsafe { libc::getrlimit(libc::RLIMIT_RTTIME, &mut l) };
        l
    }

    /// Lowering and restoring the limit happens in a child process, so the test binary's own limit
    /// (shared by every test thread) is never touched. The child neither allocates nor takes locks.
    #[test]
    fn limit_is_lowered_then_restored_and_the_soft_one_notifies() {
        // SAFETY: the child only makes system calls and touches atomics before _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = (|| {
                let before = current();
                let guard = RtTimeLimit::set(300_000, Some(900_000), OnLimit::Notify);
                let during = current();
                if during.rlim_cur != 300_000 || during.rlim_max != 900_000.min(before.rlim_max) {
                    return 2;
                }
                if guard.soft_us() != Some(300_000) {
                    return 2;
                }
                // SIGXCPU is caught, not fatal.
                // SAFETY: signalling ourselves.
                unsafe { libc::raise(libc::SIGXCPU) };
                if !take_tripped() || tripped() {
                    return 3;
                }
                drop(guard);
                let after = current();
                // Root gets the old hard limit back; others keep the lowered one but the old soft.
                if after.rlim_cur != before.rlim_cur.min(after.rlim_max) {
                    return 4;
                }
                0
            })();
            // SAFETY: ends the child without running the test harness's exit handlers.
            unsafe { libc::_exit(code) };
        }
        assert!(pid > 0);
        let mut status = 0;
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status), "child died: {status:#x}");
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "2: not lowered, 3: no notice, 4: not restored"
        );
    }

    #[test]
    fn a_fifo_worker_never_runs_more_than_four_seconds_without_sleeping() {
        assert_eq!(sample_limits_us(5_000_000), (2_000_000, 3_000_000));
        assert_eq!(sample_limits_us(FIFO_MAX_SAMPLE_NS), (3_000_000, 4_000_000));
        for ns in [0, 700_000_000, 10_000_000_000, u64::MAX] {
            let (soft, hard) = sample_limits_us(ns);
            assert!(
                soft <= FIFO_SOFT_LIMIT_MAX_US && hard <= 4_000_000,
                "{ns}: {soft} {hard}"
            );
            assert!(soft >= 2_000_000 && hard > soft);
        }
        // The longest sample allowed, with calibration's overshoot, stays under the soft limit.
        assert!(2 * FIFO_MAX_SAMPLE_NS / 1000 < sample_limits_us(FIFO_MAX_SAMPLE_NS).0);
    }

    #[test]
    fn limits_file_is_read() {
        let (soft, hard) = read_limit(std::process::id()).expect("own limits readable");
        if let (Some(s), Some(h)) = (soft, hard) {
            assert!(s <= h);
        }
    }
}
