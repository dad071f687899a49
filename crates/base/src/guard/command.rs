//! A measured program (the command of `stat`, valgrind under `trace`) whose whole process tree ends
//! with osmeter, SIGKILL included, while its rusage stays exactly what the kernel counted for it.
//!
//! A parent-death signal reaches only the direct child: `sh -c 'sleep 300 & sleep 300'` leaves its
//! sleeps behind when osmeter is killed. Only an ancestor that outlives osmeter can collect what the
//! command leaves (a child subreaper), so the program runs below a guardian, as a load command does
//! (see the parent module), but here the guardian is only a bystander to the measurement:
//! - osmeter opens the counters on the held program and takes the start time itself, then lets it
//!   exec, as `stat` did when it was osmeter's own child;
//! - the guardian waits for it with wait4 and sends back its status, its rusage (the program and
//!   the descendants it reaped, the same figures osmeter's own wait4 gave) and the time of its end
//!   taken right after wait4 returned; the guardian's own time is counted nowhere;
//! - the program stays in osmeter's process group, so the terminal's Ctrl-C and Ctrl-Z reach it as
//!   before; the guardian has a group of its own, so a `kill -9 %1` of osmeter's job spares it.
//!
//! When the program ends, whatever it left running (a background job, a daemon) is ended too: it
//! would otherwise run on, unmeasured, beside the next run. When osmeter goes away before that (a
//! hang-up on the control pipe), the guardian SIGKILLs the program and everything below it.

use super::sys::{close_all_but, for_each_child, pipe, read_i32, write_i32};
use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

/// Where the program's standard output or error goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// osmeter's own.
    Inherit,
    /// /dev/null.
    Null,
    /// osmeter's standard error (for standard output: results alone stay on osmeter's stdout).
    Stderr,
    /// This descriptor of osmeter's (a pipe's write end that osmeter reads from).
    Fd(RawFd),
}

/// A pipe (read end, write end), both close-on-exec, for a [`Stream::Fd`] that osmeter reads.
pub fn output_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    pipe().map_err(|e| io::Error::other(format!("{e:#}")))
}

/// How the program ended, as the guardian's wait4 saw it.
#[derive(Clone, Copy)]
pub struct Ended {
    /// The wait status (`WIFEXITED`, `WTERMSIG`, ...).
    pub status: i32,
    /// The program's rusage and that of the descendants it reaped.
    pub rusage: libc::rusage,
    /// CLOCK_MONOTONIC right after wait4 returned.
    pub at: libc::timespec,
}

/// What the guardian sends once the program has ended: one write, shorter than PIPE_BUF.
#[repr(C)]
#[derive(Clone, Copy)]
struct Report {
    status: i32,
    rusage: libc::rusage,
    at: libc::timespec,
}

/// A program held before its exec, then running, under its guardian.
pub struct GuardedChild {
    guardian: libc::pid_t,
    pid: libc::pid_t,
    /// Signals reach the program through it, never a reused pid (absent before Linux 5.3).
    pidfd: Option<OwnedFd>,
    control: Option<OwnedFd>,
    report: OwnedFd,
    go: Option<OwnedFd>,
    exec_error: Option<OwnedFd>,
    ended: Option<Ended>,
}

/// Everything the guardian and the program need, built before the fork.
struct Prepared {
    // Owned here so the pointers below stay valid; read only through them.
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    _envp: Vec<CString>,
    envp_ptrs: Vec<*const libc::c_char>,
    stdout: Stream,
    stderr: Stream,
    fd3: RawFd,
    pgid: libc::pid_t,
}

impl GuardedChild {
    /// Starts a guardian that forks the program (`argv[0]` found on PATH as execvp does, and run
    /// by /bin/sh when the kernel cannot execute it), in osmeter's environment less its secrets (see
    /// [`crate::programs::command`]), and holds it before exec until
    /// [`GuardedChild::release`]. Standard input is osmeter's; `fd3`, if given, becomes the
    /// program's descriptor 3.
    pub fn spawn<S: AsRef<OsStr>>(
        argv: &[S],
        stdout: Stream,
        stderr: Stream,
        fd3: Option<RawFd>,
    ) -> io::Result<GuardedChild> {
        let argv = argv
            .iter()
            .map(|a| CString::new(a.as_ref().as_bytes()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "an argument holds a NUL"))?;
        if argv.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no program"));
        }
        let mut argv_ptrs: Vec<_> = argv.iter().map(|a| a.as_ptr()).collect();
        argv_ptrs.push(std::ptr::null());
        let envp = crate::programs::envp();
        let mut envp_ptrs: Vec<_> = envp.iter().map(|a| a.as_ptr()).collect();
        envp_ptrs.push(std::ptr::null());
        let prep = Prepared {
            _argv: argv,
            argv_ptrs,
            _envp: envp,
            envp_ptrs,
            stdout,
            stderr,
            fd3: fd3.unwrap_or(-1),
            // SAFETY: getpgrp cannot fail.
            pgid: unsafe { libc::getpgrp() },
        };
        let err = |e: anyhow::Error| io::Error::other(format!("{e:#}"));
        let (control_r, control_w) = pipe().map_err(err)?;
        let (report_r, report_w) = pipe().map_err(err)?;
        let (go_r, go_w) = pipe().map_err(err)?;
        let (exec_r, exec_w) = pipe().map_err(err)?;
        // SAFETY: the child runs only `guardian`, which makes async-signal-safe calls on data
        // prepared above and never returns.
        let guardian_pid = unsafe { libc::fork() };
        if guardian_pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if guardian_pid == 0 {
            let fds = Fds {
                control: control_r.as_raw_fd(),
                report: report_w.as_raw_fd(),
                go: go_r.as_raw_fd(),
                exec_error: exec_w.as_raw_fd(),
            };
            // SAFETY: in the child; see above.
            unsafe { guardian(fds, &prep) }
        }
        drop((control_r, report_w, go_r, exec_w));
        let mut child = GuardedChild {
            guardian: guardian_pid,
            pid: 0,
            pidfd: None,
            control: Some(control_w),
            report: report_r,
            go: Some(go_w),
            exec_error: Some(exec_r),
            ended: None,
        };
        // The guardian's first word is the program's pid, or minus the errno of a failed fork.
        match read_i32(child.report.as_raw_fd()) {
            Some(p) if p > 0 => child.pid = p,
            Some(e) => return Err(io::Error::from_raw_os_error(-e)),
            None => return Err(io::Error::other("the guardian process ended at once")),
        }
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.pid, 0) };
        // SAFETY: a fresh descriptor that nobody else owns.
        child.pidfd = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
        Ok(child)
    }

    /// The guardian's pid.
    pub fn guardian(&self) -> libc::pid_t {
        self.guardian
    }

    /// The program's pid (held before its exec until [`GuardedChild::release`]).
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Lets the program exec; returns CLOCK_MONOTONIC taken just before, the start of its wall
    /// time, or why exec failed (not found, not executable, ...).
    pub fn release(&mut self) -> io::Result<libc::timespec> {
        let start = monotonic_now();
        let go = self
            .go
            .take()
            .ok_or_else(|| io::Error::other("released twice"))?;
        // SAFETY: one byte from a local to a descriptor we own.
        if unsafe { libc::write(go.as_raw_fd(), b"g".as_ptr().cast(), 1) } != 1 {
            return Err(io::Error::other("the program ended before it was started"));
        }
        drop(go);
        // The program writes exec's errno here; a successful exec closes the pipe (close-on-exec).
        let exec_error = self.exec_error.take().expect("exec pipe until released");
        match read_i32(exec_error.as_raw_fd()) {
            Some(errno) => Err(io::Error::from_raw_os_error(errno)),
            None => Ok(start),
        }
    }

    /// Sends `signal` to the program (not to what it started), unless it has ended.
    pub fn signal(&self, signal: libc::c_int) {
        match &self.pidfd {
            // SAFETY: a pidfd we own, a signal number, no siginfo.
            Some(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    signal,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                );
            },
            None if self.ended.is_none() => {
                // SAFETY: signalling a process of our own tree.
                unsafe { libc::kill(self.pid, signal) };
            }
            None => {}
        }
    }

    /// Asks the guardian to end the program and everything it started now (SIGKILL); its end is
    /// then reported as a kill.
    pub fn stop(&self) {
        if let Some(control) = &self.control {
            // SAFETY: one byte from a static to a descriptor we own.
            unsafe { libc::write(control.as_raw_fd(), b"s".as_ptr().cast(), 1) };
        }
    }

    /// Waits for the program's end. `on_wake` is called when a signal interrupts the wait and
    /// every 100 ms meanwhile (to pass Ctrl-C on, then to [`GuardedChild::stop`] a program
    /// that does not heed it).
    pub fn wait(&mut self, on_wake: impl FnMut(&GuardedChild)) -> io::Result<Ended> {
        self.wait_waking(100, on_wake)
    }

    /// [`GuardedChild::wait`], waking every `every_ms` milliseconds (a sampler's ring is drained
    /// more often than a Ctrl-C needs passing on).
    pub fn wait_waking(
        &mut self,
        every_ms: i32,
        mut on_wake: impl FnMut(&GuardedChild),
    ) -> io::Result<Ended> {
        if let Some(ended) = self.ended {
            return Ok(ended);
        }
        let mut report = std::mem::MaybeUninit::<Report>::zeroed();
        let size = std::mem::size_of::<Report>();
        let mut got = 0;
        while got < size {
            let mut p = libc::pollfd {
                fd: self.report.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd on the stack.
            if unsafe { libc::poll(&mut p, 1, every_ms) } <= 0 {
                on_wake(self);
                continue;
            }
            // SAFETY: reading into the unfilled tail of `report`, which is plain old data.
            let n = unsafe {
                libc::read(
                    self.report.as_raw_fd(),
                    report.as_mut_ptr().cast::<u8>().add(got).cast(),
                    size - got,
                )
            };
            if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                on_wake(self);
                continue;
            }
            if n <= 0 {
                return Err(io::Error::other(format!(
                    "the guardian of pid {} ended without saying how the program ended",
                    self.pid
                )));
            }
            got += n as usize;
        }
        // SAFETY: every byte was written by the guardian from a `Report`.
        let report = unsafe { report.assume_init() };
        let ended = Ended {
            status: report.status,
            rusage: report.rusage,
            at: report.at,
        };
        self.ended = Some(ended);
        Ok(ended)
    }
}

impl Drop for GuardedChild {
    /// Ends the program and what it left, if anything still runs, and reaps the guardian.
    fn drop(&mut self) {
        self.go.take();
        // Closing our end is the request: the guardian sees the hang-up.
        self.control.take();
        let mut st = 0;
        // SAFETY: reaping our own child.
        while unsafe { libc::waitpid(self.guardian, &mut st, 0) } < 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
    }
}

/// Nanoseconds from `start` to `end` (CLOCK_MONOTONIC), 0 if `end` is earlier.
pub fn nanos_between(start: libc::timespec, end: libc::timespec) -> u64 {
    let ns = |t: libc::timespec| t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128;
    (ns(end) - ns(start)).max(0) as u64
}

fn monotonic_now() -> libc::timespec {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a local.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t
}

// ---- below: the guardian and the program, after fork ------------------------------------------

/// The guardian's ends of the pipes (and the program's, which it passes on).
#[derive(Clone, Copy)]
struct Fds {
    control: RawFd,
    report: RawFd,
    go: RawFd,
    exec_error: RawFd,
}

extern "C" fn on_child(_: libc::c_int) {}

/// The guardian's whole life. Never returns.
unsafe fn guardian(fds: Fds, prep: &Prepared) -> ! {
    // A group of its own first: a signal to osmeter's job must not take the guardian with it.
    libc::setpgid(0, 0);
    // SIGCHLD stays blocked except inside ppoll below, which it then interrupts: the program's
    // end is seen at once, and never lost between the check and the wait.
    let mut chld: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut chld);
    libc::sigaddset(&mut chld, libc::SIGCHLD);
    libc::sigprocmask(libc::SIG_BLOCK, &chld, std::ptr::null_mut());
    let mut action: libc::sigaction = std::mem::zeroed();
    action.sa_sigaction = on_child as extern "C" fn(libc::c_int) as usize;
    libc::sigaction(libc::SIGCHLD, &action, std::ptr::null_mut());
    libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    libc::prctl(libc::PR_SET_NAME, c"osmeter-guard".as_ptr(), 0, 0, 0);
    let stream_fd = |s: Stream| match s {
        Stream::Fd(fd) => fd,
        _ => -1,
    };
    close_all_but(&[
        fds.control,
        fds.report,
        fds.go,
        fds.exec_error,
        prep.fd3,
        stream_fd(prep.stdout),
        stream_fd(prep.stderr),
    ]);
    let me = libc::getpid();
    let pid = libc::fork();
    if pid == 0 {
        program(me, fds, prep);
    }
    // The program's ends are the program's alone: osmeter must see exec close them.
    libc::close(fds.go);
    libc::close(fds.exec_error);
    if prep.fd3 >= 0 {
        libc::close(prep.fd3);
    }
    let first = if pid < 0 {
        -std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EAGAIN)
    } else {
        pid
    };
    write_i32(fds.report, first);
    // osmeter's signals are osmeter's to handle; the guardian ends only when osmeter is gone.
    for sig in 1..32 {
        if ![libc::SIGKILL, libc::SIGSTOP, libc::SIGCHLD, libc::SIGCONT].contains(&sig)
            && ![libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE].contains(&sig)
        {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
    if pid > 0 {
        let mut report: Option<Report> = None;
        loop {
            reap(pid, &mut report);
            if report.is_some() {
                break;
            }
            let mut p = libc::pollfd {
                fd: fds.control,
                events: libc::POLLIN,
                revents: 0,
            };
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            // A byte or a hang-up: osmeter wants it ended, or is gone.
            if libc::ppoll(&mut p, 1, std::ptr::null(), &none) > 0 {
                break;
            }
        }
        if report.is_none() {
            libc::kill(pid, libc::SIGKILL);
        }
        end_tree(me, pid, &mut report);
        if let Some(r) = report {
            let bytes = std::slice::from_raw_parts(
                (&r as *const Report).cast::<u8>(),
                std::mem::size_of::<Report>(),
            );
            libc::write(fds.report, bytes.as_ptr().cast(), bytes.len());
        }
    }
    libc::_exit(0);
}

/// Reaps every child that has ended; the program's end (status, rusage, time) goes to `report`.
/// True when no child is left.
unsafe fn reap(program: libc::pid_t, report: &mut Option<Report>) -> bool {
    loop {
        let mut st = 0;
        let mut ru: libc::rusage = std::mem::zeroed();
        let pid = libc::wait4(-1, &mut st, libc::WNOHANG, &mut ru);
        if pid == program {
            let mut at: libc::timespec = std::mem::zeroed();
            libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut at);
            *report = Some(Report {
                status: st,
                rusage: ru,
                at,
            });
        }
        if pid <= 0 {
            return pid < 0;
        }
    }
}

/// SIGKILLs the guardian's children until none is left (or for about ten seconds at most): each
/// round's orphans are handed to the guardian (their subreaper) and killed in the next. The
/// program's own end, if it comes here, still goes to `report`.
unsafe fn end_tree(me: libc::pid_t, program: libc::pid_t, report: &mut Option<Report>) {
    for _ in 0..10_000 {
        if reap(program, report) {
            return;
        }
        // Children not found in /proc (none ended yet since the kill) are waited for the same
        // way, round after round, never blocking: osmeter waits for this guardian.
        for_each_child(me, |pid| {
            libc::kill(pid, libc::SIGKILL);
        });
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        libc::nanosleep(&ts, std::ptr::null_mut());
    }
}

/// The program, between fork and exec. Never returns.
unsafe fn program(guardian: libc::pid_t, fds: Fds, prep: &Prepared) -> ! {
    libc::close(fds.control);
    libc::close(fds.report);
    // Back into osmeter's process group: the terminal's signals reach it as they reach osmeter.
    libc::setpgid(0, prep.pgid);
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    if libc::getppid() != guardian {
        libc::_exit(127);
    }
    // What std::process::Command gives a child: an empty signal mask and SIGPIPE (which Rust
    // ignores) at its default; handlers are reset by exec itself.
    let mut none: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut none);
    libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    libc::signal(libc::SIGCHLD, libc::SIG_DFL);
    // The two pipes out of the way of descriptor 3 (close-on-exec, as they were).
    let go = libc::fcntl(fds.go, libc::F_DUPFD_CLOEXEC, 10);
    let exec_error = libc::fcntl(fds.exec_error, libc::F_DUPFD_CLOEXEC, 10);
    if go < 0 || exec_error < 0 {
        libc::_exit(127);
    }
    libc::close(fds.go);
    libc::close(fds.exec_error);
    for (fd, stream) in [(1, prep.stdout), (2, prep.stderr)] {
        let ok = match stream {
            Stream::Inherit => true,
            Stream::Stderr => fd == 2 || libc::dup2(2, fd) == fd,
            Stream::Fd(from) => libc::dup2(from, fd) == fd,
            Stream::Null => {
                let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                null >= 0 && libc::dup2(null, fd) == fd && libc::close(null) == 0
            }
        };
        if !ok {
            fail(exec_error);
        }
    }
    if prep.fd3 == 3 {
        if libc::fcntl(3, libc::F_SETFD, 0) != 0 {
            fail(exec_error);
        }
    } else if prep.fd3 >= 0 && libc::dup2(prep.fd3, 3) != 3 {
        fail(exec_error);
    }
    // Held until osmeter has opened the counters; its end going away means: do not run at all.
    let mut byte = 0u8;
    loop {
        match libc::read(go, (&mut byte as *mut u8).cast(), 1) {
            1 => break,
            n if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {}
            _ => libc::_exit(127),
        }
    }
    libc::close(go);
    libc::execvpe(
        prep.argv_ptrs[0],
        prep.argv_ptrs.as_ptr(),
        prep.envp_ptrs.as_ptr(),
    );
    fail(exec_error)
}

/// Tells osmeter why the program cannot start (errno), and ends.
unsafe fn fail(exec_error: RawFd) -> ! {
    write_i32(
        exec_error,
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO),
    );
    libc::_exit(127)
}

#[cfg(test)]
mod tests;
