//! Partner processes for two-party network probes: forked, pinned, stripped of descriptors they do
//! not need, and killed and reaped when the workload goes.

use anyhow::{bail, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A forked child serving one end of a connection. Dropping it kills and reaps it.
pub(super) struct Partner {
    pid: libc::pid_t,
}

/// Most descriptors a partner keeps besides standard input, output and error.
const MAX_KEEP: usize = 4;

impl Partner {
    /// Forks a child pinned to `cpu` that closes every descriptor above 2 except those in `keep`,
    /// runs `body` and exits with its return value.
    ///
    /// The child is a copy of a process that may have other threads (a test harness, for one),
    /// whose locks it inherits in whatever state they were. So `body` must not allocate, lock or
    /// panic: only system calls on buffers and descriptors prepared before the fork.
    pub(super) fn spawn<F: FnOnce() -> i32>(
        cpu: usize,
        keep: &[RawFd],
        body: F,
    ) -> Result<Partner> {
        if keep.len() > MAX_KEEP {
            bail!("a partner keeps at most {MAX_KEEP} descriptors");
        }
        let mut kept = [RawFd::MAX; MAX_KEEP];
        kept[..keep.len()].copy_from_slice(keep);
        kept.sort_unstable();
        // The child reports on this pipe that it is set up (or why not), so measuring starts
        // only once the partner is running where it should.
        let mut ends = [0 as RawFd; 2];
        // SAFETY: ends is a valid out-array of two descriptors.
        if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            bail!("pipe failed: {}", std::io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just created and are owned here only.
        let (ready_r, ready_w) =
            unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the child only makes system calls on memory it already owns, then _exits
        // without returning into the caller's frames.
        let pid = crate::system::processes::forked(unsafe { libc::fork() }, "the partner process")?;
        if pid == 0 {
            // SAFETY: plain system calls on stack values and inherited descriptors.
            unsafe { child_setup(parent, cpu, &kept, ready_w.as_raw_fd()) };
            // A panic must never unwind into the parent's code running in this copy.
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(101);
            // SAFETY: leaves the child at once, without running the parent's destructors.
            unsafe { libc::_exit(code) };
        }
        let partner = Partner { pid };
        drop(ready_w);
        let mut status = 0u8;
        // SAFETY: one byte into a stack value.
        let n = unsafe { libc::read(ready_r.as_raw_fd(), (&mut status as *mut u8).cast(), 1) };
        match (n, status) {
            (1, READY) => Ok(partner),
            (1, _) => bail!(
                "the partner process could not be pinned to CPU {cpu}: check the CPUs this \
                 process may use (taskset, cgroup cpuset)"
            ),
            (0, _) => bail!("the partner process died while starting"),
            _ if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {
                Err(anyhow::anyhow!(crate::interrupt::Interrupted))
            }
            _ => bail!(
                "waiting for the partner process failed: {}",
                std::io::Error::last_os_error()
            ),
        }
    }

    #[cfg(test)]
    pub(super) fn pid(&self) -> libc::pid_t {
        self.pid
    }
}

impl Drop for Partner {
    fn drop(&mut self) {
        // SAFETY: pid is our own child, not yet reaped (only this Drop reaps it).
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            while libc::waitpid(self.pid, std::ptr::null_mut(), 0) < 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
        }
    }
}

const READY: u8 = 0;
const PIN_FAILED: u8 = 1;

/// Everything the child does before its body: die with its parent, pin itself, report, and drop
/// the descriptors it was not given.
///
/// # Safety
/// Only in a freshly forked child; `ready` is the write end of the set-up pipe.
unsafe fn child_setup(parent: libc::pid_t, cpu: usize, kept: &[RawFd], ready: RawFd) {
    // Dies with the thread that forked it, even if that thread is killed outright.
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    if libc::getppid() != parent {
        libc::_exit(0);
    }
    let mut set: libc::cpu_set_t = std::mem::zeroed();
    libc::CPU_SET(cpu, &mut set);
    let pinned = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0;
    let status = if pinned { READY } else { PIN_FAILED };
    libc::write(ready, (&status as *const u8).cast(), 1);
    if !pinned {
        libc::_exit(1);
    }
    close_all_but(kept);
}

/// Closes every descriptor from 3 up except those in `keep` (sorted; unused slots hold
/// RawFd::MAX). Without this the partner would hold copies of the measuring process's files and
/// sockets, and of other workloads' ends, which would then not see end-of-file when it dies.
///
/// # Safety
/// Only for a freshly forked child that owns no Rust objects wrapping the closed descriptors.
unsafe fn close_all_but(keep: &[RawFd]) {
    let mut low: u32 = 3;
    for &k in keep {
        if k == RawFd::MAX || k < low as RawFd {
            continue;
        }
        if k as u32 > low {
            libc::syscall(libc::SYS_close_range, low, k as u32 - 1, 0);
        }
        low = k as u32 + 1;
    }
    libc::syscall(libc::SYS_close_range, low, u32::MAX, 0);
}

/// True once `pid` names no process at all (not even a zombie).
#[cfg(test)]
pub(super) fn gone(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::kill(pid, 0) };
    rc < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}
