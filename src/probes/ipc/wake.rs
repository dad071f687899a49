//! Thread-to-thread wake round trips: the measuring thread wakes a pinned partner thread and sleeps
//! until the partner wakes it back, through a futex or through eventfds.

use super::partner::{io_failure, retry_after_signal, PinnedThread};
use crate::harness::Workload;
use crate::interrupt;
use anyhow::{anyhow, bail, Context, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

/// How long the measuring thread waits for a reply before declaring the partner lost.
const REPLY_TIMEOUT_S: libc::time_t = 10;

fn futex_wake(word: &AtomicU32) {
    // SAFETY: word is a live, aligned 32-bit atomic; FUTEX_WAKE only reads its address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// Sleeps while `word` still holds `seen`. Returns the raw result (0, or -1 with errno).
fn futex_wait(word: &AtomicU32, seen: u32, timeout: Option<&libc::timespec>) -> libc::c_long {
    let t = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: word is a live, aligned 32-bit atomic; t is null or points to a live timespec.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            seen,
            t,
        )
    }
}

struct FutexWords {
    /// Sequence number of the last request, written by the measuring thread.
    ping: AtomicU32,
    /// Sequence number of the last reply, written by the partner.
    pong: AtomicU32,
    stop: AtomicBool,
    /// Set by the partner as its last act, so tests can see it ended.
    exited: AtomicBool,
}

/// One operation: publish a new request, FUTEX_WAKE the partner, FUTEX_WAIT until it answers.
pub struct FutexRoundTrip {
    words: Arc<FutexWords>,
    seq: u32,
    partner: PinnedThread,
}

impl FutexRoundTrip {
    pub fn new(partner_cpu: usize) -> Result<FutexRoundTrip> {
        let words = Arc::new(FutexWords {
            ping: AtomicU32::new(0),
            pong: AtomicU32::new(0),
            stop: AtomicBool::new(false),
            exited: AtomicBool::new(false),
        });
        let w = Arc::clone(&words);
        let partner = PinnedThread::spawn(partner_cpu, move || {
            let mut last = 0u32;
            loop {
                let now = w.ping.load(Ordering::Acquire);
                if w.stop.load(Ordering::Acquire) {
                    break;
                }
                if now == last {
                    // EAGAIN (the word moved on) and EINTR both just mean: look again.
                    futex_wait(&w.ping, last, None);
                    continue;
                }
                last = now;
                w.pong.store(now, Ordering::Release);
                futex_wake(&w.pong);
            }
            w.exited.store(true, Ordering::Release);
        })?;
        let mut rt = FutexRoundTrip {
            words,
            seq: 0,
            partner,
        };
        rt.run(1)
            .context("first exchange with the partner thread")?;
        Ok(rt)
    }

    #[cfg(test)]
    pub fn exited_flag(&self) -> impl Fn() -> bool {
        let w = Arc::clone(&self.words);
        move || w.exited.load(Ordering::Acquire)
    }
}

impl Workload for FutexRoundTrip {
    fn run(&mut self, iters: u64) -> Result<()> {
        let w = &*self.words;
        let timeout = libc::timespec {
            tv_sec: REPLY_TIMEOUT_S,
            tv_nsec: 0,
        };
        for _ in 0..iters {
            self.seq = self.seq.wrapping_add(1);
            let want = self.seq;
            w.ping.store(want, Ordering::Release);
            futex_wake(&w.ping);
            loop {
                let got = w.pong.load(Ordering::Acquire);
                if got == want {
                    break;
                }
                if futex_wait(&w.pong, got, Some(&timeout)) < 0 {
                    let err = std::io::Error::last_os_error();
                    match err.raw_os_error() {
                        Some(libc::EAGAIN) => {}
                        Some(libc::EINTR) if !interrupt::requested() => {}
                        Some(libc::EINTR) => bail!(interrupt::Interrupted),
                        Some(libc::ETIMEDOUT) => {
                            bail!("the partner thread did not answer within {REPLY_TIMEOUT_S} s")
                        }
                        _ => return Err(anyhow!("FUTEX_WAIT failed: {err}")),
                    }
                }
            }
        }
        Ok(())
    }
}

impl Drop for FutexRoundTrip {
    fn drop(&mut self) {
        self.words.stop.store(true, Ordering::Release);
        // Moving the word guarantees the partner's FUTEX_WAIT either returns or never sleeps.
        self.words.ping.fetch_add(1, Ordering::AcqRel);
        futex_wake(&self.words.ping);
        self.partner.join();
    }
}

fn eventfd() -> Result<OwnedFd> {
    // SAFETY: no pointers involved.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).context("eventfd");
    }
    // SAFETY: just created, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn signal_eventfd(fd: RawFd) -> isize {
    let one = 1u64;
    // SAFETY: eight bytes from a local.
    unsafe { libc::write(fd, (&one as *const u64).cast(), 8) }
}

fn wait_eventfd(fd: RawFd) -> isize {
    let mut v = 0u64;
    // SAFETY: eight bytes into a local.
    unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) }
}

/// One operation: write the partner's eventfd, block reading our own until the partner writes it.
pub struct EventfdRoundTrip {
    to_partner: OwnedFd,
    from_partner: OwnedFd,
    stop: Arc<AtomicBool>,
    /// Set by the partner as its last act, so tests can see it ended.
    #[cfg_attr(not(test), allow(dead_code))]
    exited: Arc<AtomicBool>,
    partner: PinnedThread,
}

impl EventfdRoundTrip {
    pub fn new(partner_cpu: usize) -> Result<EventfdRoundTrip> {
        let to_partner = eventfd()?;
        let from_partner = eventfd()?;
        let stop = Arc::new(AtomicBool::new(false));
        let exited = Arc::new(AtomicBool::new(false));
        let (req, rep) = (to_partner.as_raw_fd(), from_partner.as_raw_fd());
        let (s, e) = (Arc::clone(&stop), Arc::clone(&exited));
        // The partner uses the raw descriptors; they stay open until it has been joined in Drop.
        let partner = PinnedThread::spawn(partner_cpu, move || {
            loop {
                if wait_eventfd(req) != 8 {
                    continue; // EINTR; signals are blocked here, so only in theory
                }
                if s.load(Ordering::Acquire) {
                    break;
                }
                signal_eventfd(rep);
            }
            e.store(true, Ordering::Release);
        })?;
        let mut rt = EventfdRoundTrip {
            to_partner,
            from_partner,
            stop,
            exited,
            partner,
        };
        rt.run(1)
            .context("first exchange with the partner thread")?;
        Ok(rt)
    }

    #[cfg(test)]
    pub fn exited_flag(&self) -> impl Fn() -> bool {
        let e = Arc::clone(&self.exited);
        move || e.load(Ordering::Acquire)
    }
}

impl Workload for EventfdRoundTrip {
    fn run(&mut self, iters: u64) -> Result<()> {
        let (req, rep) = (self.to_partner.as_raw_fd(), self.from_partner.as_raw_fd());
        for _ in 0..iters {
            let n = signal_eventfd(req);
            if n != 8 {
                return Err(io_failure(n, "write to the partner's eventfd"));
            }
            loop {
                let n = wait_eventfd(rep);
                if n == 8 {
                    break;
                }
                if !(n < 0 && retry_after_signal()) {
                    return Err(io_failure(n, "read of the partner's eventfd"));
                }
            }
        }
        Ok(())
    }
}

impl Drop for EventfdRoundTrip {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        signal_eventfd(self.to_partner.as_raw_fd());
        self.partner.join();
    }
}
