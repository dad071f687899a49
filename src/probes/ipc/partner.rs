//! Partners of two-party probes: a forked child process or a pinned thread, both started before
//! timing and gone when the workload is dropped.

use crate::interrupt;
use anyhow::{anyhow, bail, Context, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::mpsc;
use std::thread::JoinHandle;

/// Exit statuses a child uses to say why it stopped before its loop began.
const CHILD_PIN_FAILED: i32 = 2;
const CHILD_ORPHANED: i32 = 3;

/// Error for a failed read or write in a timed loop. Kept out of line so the loop stays small.
#[cold]
#[inline(never)]
pub fn io_failure(rc: isize, what: &str) -> anyhow::Error {
    if rc == 0 {
        return anyhow!("{what}: the partner closed its end (did it exit?)");
    }
    let err = std::io::Error::last_os_error();
    if err.kind() == std::io::ErrorKind::Interrupted && interrupt::requested() {
        return anyhow::Error::new(interrupt::Interrupted);
    }
    anyhow!("{what} failed: {err}")
}

/// True when a failed call was only interrupted by a signal that did not ask the run to stop, so the
/// call should be retried.
pub fn retry_after_signal() -> bool {
    std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        && !interrupt::requested()
}

/// A pair of descriptors from pipe2(O_CLOEXEC): (read end, write end).
pub fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid two-element out-array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("pipe2");
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A forked child process, killed and reaped on drop.
pub struct ChildProcess {
    pid: libc::pid_t,
}

impl ChildProcess {
    /// Forks a child pinned to `cpu` that keeps only the descriptors in `keep` (plus 0-2) open,
    /// then runs `body` and exits. Returns once the child is pinned and about to run `body`.
    ///
    /// The child of a multi-threaded parent may only make async-signal-safe calls, so `body` must
    /// not allocate, lock or print: raw system calls on the kept descriptors and on memory set up
    /// before the fork only.
    pub fn spawn<F: FnOnce()>(cpu: usize, keep: &[RawFd], body: F) -> Result<ChildProcess> {
        let (ready_r, ready_w) = pipe()?;
        let mut kept: Vec<RawFd> = keep.to_vec();
        kept.push(ready_w.as_raw_fd());
        kept.sort_unstable();
        kept.dedup();
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the child below only makes raw system calls and calls `body`, which is required
        // to do the same, before _exit.
        let pid = crate::system::processes::forked(unsafe { libc::fork() }, "the partner process")?;
        if pid == 0 {
            // SAFETY: in the child; see above.
            unsafe { child_setup(parent, cpu, &kept, ready_w.as_raw_fd()) };
            body();
            // SAFETY: leave without running the parent's atexit handlers or destructors.
            unsafe { libc::_exit(0) };
        }
        let child = ChildProcess { pid };
        drop(ready_w);
        let mut status = 0u8;
        // SAFETY: reading one byte into a local.
        let n = unsafe { libc::read(ready_r.as_raw_fd(), (&mut status as *mut u8).cast(), 1) };
        if n != 1 {
            let why = match child.reap_status() {
                Some(CHILD_PIN_FAILED) => format!("it could not be pinned to CPU {cpu}"),
                Some(CHILD_ORPHANED) => "its parent thread had already exited".to_string(),
                Some(code) => format!("it exited with status {code}"),
                None => "it was killed".to_string(),
            };
            bail!("the partner process did not start: {why}");
        }
        Ok(child)
    }

    #[cfg(test)]
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Waits for the child's exit after it failed to start, returning its exit code.
    fn reap_status(&self) -> Option<i32> {
        let mut status = 0;
        // SAFETY: waiting for our own child; status is a valid out-pointer.
        while unsafe { libc::waitpid(self.pid, &mut status, 0) } < 0 {
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return None;
            }
        }
        libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status))
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        // SAFETY: pid is our own child, not yet reaped (reap_status only runs on a failed spawn,
        // and then kill and waitpid below fail harmlessly with ESRCH/ECHILD).
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            let mut status = 0;
            while libc::waitpid(self.pid, &mut status, 0) < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
            }
        }
    }
}

/// Runs first in a forked child: dies with the parent, pins itself, drops inherited descriptors and
/// reports readiness through `ready`. Raw system calls only.
unsafe fn child_setup(parent: libc::pid_t, cpu: usize, kept: &[RawFd], ready: RawFd) {
    // The death signal follows the thread that forked; every probe builds and drops its workload
    // on the same thread, so that thread's exit means the workload is gone.
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    if libc::getppid() != parent {
        libc::_exit(CHILD_ORPHANED);
    }
    let mut set: libc::cpu_set_t = std::mem::zeroed();
    libc::CPU_SET(cpu, &mut set);
    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
        libc::_exit(CHILD_PIN_FAILED);
    }
    // Descriptors inherited from the rest of the process (other probes, other tests) would keep
    // their pipes open after their owners close them, so close everything not kept.
    let mut next: libc::c_uint = 3;
    for &fd in kept {
        let fd = fd as libc::c_uint;
        if fd > next {
            libc::syscall(libc::SYS_close_range, next, fd - 1, 0);
        }
        next = next.max(fd + 1);
    }
    libc::syscall(libc::SYS_close_range, next, libc::c_uint::MAX, 0);
    let ok = 0u8;
    libc::write(ready, (&ok as *const u8).cast(), 1);
}

/// A partner thread pinned to a CPU with every signal blocked (so Ctrl-C lands on the measuring
/// thread, whose blocking call then returns EINTR). Joined on drop after `stop` has been called.
pub struct PinnedThread {
    handle: Option<JoinHandle<()>>,
}

impl PinnedThread {
    /// Starts `body` on a new thread pinned to `cpu`; returns once the thread is pinned.
    pub fn spawn<F: FnOnce() + Send + 'static>(cpu: usize, body: F) -> Result<PinnedThread> {
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name(format!("osmeter-partner-{cpu}"))
            .spawn(move || {
                // SAFETY: set is a local, fully initialised signal set.
                unsafe {
                    let mut set: libc::sigset_t = std::mem::zeroed();
                    libc::sigfillset(&mut set);
                    libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                }
                let pinned = crate::meter::placement::pin_current_thread(cpu);
                let ok = pinned.is_ok();
                let _ = tx.send(pinned);
                if ok {
                    body();
                }
            })
            .map_err(|e| crate::system::limits::cannot_start("the partner thread", &e))?;
        let mut t = PinnedThread {
            handle: Some(handle),
        };
        match rx.recv() {
            Ok(Ok(())) => Ok(t),
            Ok(Err(e)) => {
                t.join();
                Err(e.context("the partner thread could not be pinned"))
            }
            Err(_) => {
                t.join();
                bail!("the partner thread exited before it started")
            }
        }
    }

    /// Waits for the thread; the owner must first make its body return.
    pub fn join(&mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for PinnedThread {
    fn drop(&mut self) {
        self.join();
    }
}
