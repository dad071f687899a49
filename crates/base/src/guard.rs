//! A shell command whose whole process tree ends when osmeter stops it or when osmeter itself
//! ends, whatever signal ended it (SIGKILL included), and that runs at normal priority without the
//! right to raise it.
//!
//! osmeter forks a guardian process, which makes itself a child subreaper and forks the command's
//! shell. Everything the command starts stays below the guardian: a process whose parent dies is
//! handed to the nearest subreaper, so double forks and `setsid` cannot escape. The guardian
//! watches a pipe whose write end only osmeter holds; when osmeter asks it to stop, or the pipe
//! reports a hang-up because osmeter is gone, it sends SIGTERM to the command's process group,
//! waits a grace period, then SIGKILLs its children round after round (each round's orphans become
//! its children) until none is left, and exits. No cgroup, root or kernel option is needed.
//!
//! The command's shell starts at SCHED_OTHER with RLIMIT_RTPRIO 0 and RLIMIT_RTTIME set as hard
//! limits, without CAP_SYS_NICE and CAP_SYS_RESOURCE (dropped from the bounding set as well) and
//! with no_new_privs, so neither it nor anything it runs (setuid programs included) can take a
//! real-time class or lift the limits.
//!
//! Between fork and exit the guardian calls only async-signal-safe system calls on stack buffers:
//! osmeter has other threads, which may hold the allocator's or std's locks at the fork.

use anyhow::{bail, Context, Result};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;
use sys::{close_all_but, for_each_child, pipe, read_i32, sleep_ms, write_i32};

pub mod command;
mod sys;

/// A running command and its guardian.
pub struct Guarded {
    guardian: libc::pid_t,
    shell: libc::pid_t,
    control: Option<OwnedFd>,
    report: OwnedFd,
    status: Option<Option<i32>>,
}

/// Everything the guardian and the shell need, built before the fork.
struct Prepared {
    sh: CString,
    // Owned here so the pointers below stay valid; read only through them.
    _argv: Vec<CString>,
    _envp: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    envp_ptrs: Vec<*const libc::c_char>,
    devnull: OwnedFd,
    rttime_us: u64,
    grace_ms: u64,
}

impl Guarded {
    /// Starts `sh -c command` under a guardian. `rttime_us` becomes the shell's hard and soft
    /// RLIMIT_RTTIME; `grace` is how long the command has to exit after SIGTERM.
    pub fn spawn(command: &str, rttime_us: u64, grace: Duration) -> Result<Guarded> {
        let prep = prepare(command, rttime_us, grace)?;
        let (control_r, control_w) = pipe()?;
        let (report_r, report_w) = pipe()?;
        // SAFETY: the child runs only `guardian`, which uses async-signal-safe calls on data
        // prepared above and never returns.
        let pid = crate::system::processes::forked(
            unsafe { libc::fork() },
            "the guardian process of the load command",
        )?;
        if pid == 0 {
            // SAFETY: in the child; see above.
            unsafe {
                guardian(
                    control_r.as_raw_fd(),
                    control_w.as_raw_fd(),
                    report_w.as_raw_fd(),
                    &prep,
                )
            }
        }
        drop(control_r);
        drop(report_w);
        let mut g = Guarded {
            guardian: pid,
            shell: 0,
            control: Some(control_w),
            report: report_r,
            status: None,
        };
        // The guardian's first report is the shell's pid, or minus the errno of a failed fork.
        match read_i32(g.report.as_raw_fd()) {
            Some(p) if p > 0 => g.shell = p,
            Some(e) => {
                let err = std::io::Error::from_raw_os_error(-e);
                g.stop();
                return Err(crate::system::processes::cannot_start(
                    "the load command's shell",
                    &err,
                ));
            }
            None => {
                g.stop();
                bail!("the load's guardian process ended before starting the command");
            }
        }
        Ok(g)
    }

    /// The command's shell (also its process group).
    pub fn shell_pid(&self) -> libc::pid_t {
        self.shell
    }

    /// The guardian process (the subreaper every descendant of the command ends up under).
    pub fn guardian_pid(&self) -> libc::pid_t {
        self.guardian
    }

    /// Ends the command and everything it started, and waits for that. Returns the shell's exit
    /// code when it had exited on its own before (with a code, not by a signal).
    pub fn stop(&mut self) -> Option<i32> {
        if let Some(done) = self.status {
            return done;
        }
        // Closing our end is the request: the guardian sees the hang-up.
        self.control.take();
        let raw = read_i32(self.report.as_raw_fd());
        let mut st = 0;
        // SAFETY: reaping our own child.
        while unsafe { libc::waitpid(self.guardian, &mut st, 0) } < 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
        let code = raw
            .filter(|&s| s >= 0 && libc::WIFEXITED(s))
            .map(|s| libc::WEXITSTATUS(s));
        self.status = Some(code);
        code
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        self.stop();
    }
}

fn prepare(command: &str, rttime_us: u64, grace: Duration) -> Result<Prepared> {
    let cstr = |b: &[u8]| CString::new(b).context("the load command holds a NUL byte");
    let sh = cstr(b"/bin/sh")?;
    let argv = vec![sh.clone(), cstr(b"-c")?, cstr(command.as_bytes())?];
    let envp = crate::programs::envp();
    let mut argv_ptrs: Vec<_> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let mut envp_ptrs: Vec<_> = envp.iter().map(|a| a.as_ptr()).collect();
    envp_ptrs.push(std::ptr::null());
    let devnull = std::fs::File::open("/dev/null").context("cannot open /dev/null")?;
    Ok(Prepared {
        sh,
        _argv: argv,
        _envp: envp,
        argv_ptrs,
        envp_ptrs,
        devnull: devnull.into(),
        rttime_us,
        grace_ms: grace.as_millis() as u64,
    })
}

// ---- below: the guardian and the shell, after fork --------------------------------------------

const CAP_SYS_NICE: u32 = 23;
const CAP_SYS_RESOURCE: u32 = 24;

/// The guardian's whole life. Never returns.
unsafe fn guardian(control: RawFd, control_w: RawFd, report: RawFd, prep: &Prepared) -> ! {
    libc::close(control_w);
    // Keep stdio, the control and report pipes and /dev/null; nothing else osmeter had open (a
    // socket, the other end of a pipe) may be kept alive by the guardian.
    let devnull = prep.devnull.as_raw_fd();
    close_all_but(&[control, report, devnull]);
    // Out of osmeter's process group: a signal to osmeter's job (kill -9 %1) must not take the
    // guardian with it; the terminal's signals are for osmeter to pass on.
    libc::setpgid(0, 0);
    for sig in [
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGPIPE,
    ] {
        libc::signal(sig, libc::SIG_IGN);
    }
    libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    // What `ps -o comm` and top show for it.
    libc::prctl(libc::PR_SET_NAME, c"osmeter-guard".as_ptr(), 0, 0, 0);
    let me = libc::getpid();
    let shell = libc::fork();
    if shell == 0 {
        shell_child(me, control, report, prep);
    }
    let first = if shell < 0 {
        -std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EAGAIN)
    } else {
        // Also set here, so the group exists whichever of the two runs first.
        libc::setpgid(shell, shell);
        shell
    };
    write_i32(report, first);
    let mut shell_status: i32 = -1;
    if shell > 0 {
        // Until osmeter asks (a byte or the hang-up of its end), reap whatever ends meanwhile.
        loop {
            reap(shell, &mut shell_status);
            let mut p = libc::pollfd {
                fd: control,
                events: libc::POLLIN,
                revents: 0,
            };
            let n = libc::poll(&mut p, 1, 200);
            if n > 0 {
                break;
            }
        }
        if shell_status == -1 {
            libc::kill(-shell, libc::SIGTERM);
            let mut waited = 0;
            while waited < prep.grace_ms && shell_status == -1 {
                sleep_ms(10);
                waited += 10;
                reap(shell, &mut shell_status);
            }
        }
        kill_all_children(shell, &mut shell_status);
    }
    write_i32(report, shell_status);
    libc::_exit(0);
}

/// Reaps every child that has ended, noting the shell's status.
unsafe fn reap(shell: libc::pid_t, shell_status: &mut i32) -> bool {
    loop {
        let mut st = 0;
        let pid = libc::waitpid(-1, &mut st, libc::WNOHANG);
        if pid == shell {
            *shell_status = st;
        }
        if pid <= 0 {
            // 0: children left, none ended; -1 with ECHILD: no children at all.
            return pid < 0;
        }
    }
}

/// SIGKILLs the guardian's children until it has none: each round's orphans are handed to the
/// guardian (it is their subreaper) and killed in the next.
unsafe fn kill_all_children(shell: libc::pid_t, shell_status: &mut i32) {
    let me = libc::getpid();
    for _ in 0..10_000 {
        libc::kill(-shell, libc::SIGKILL);
        let killed = for_each_child(me, |pid| {
            libc::kill(pid, libc::SIGKILL);
        });
        sleep_ms(1);
        if reap(shell, shell_status) && killed == 0 {
            return;
        }
    }
}

/// The command's shell, between fork and exec. Never returns.
unsafe fn shell_child(guardian: libc::pid_t, control: RawFd, report: RawFd, prep: &Prepared) -> ! {
    libc::setpgid(0, 0);
    // Dies with the guardian if the guardian itself is killed.
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    if libc::getppid() != guardian {
        libc::_exit(127);
    }
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    for sig in 1..32 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
    normal_priority(prep.rttime_us);
    // Input from nowhere; output to osmeter's stderr, so its stdout stays the results alone.
    libc::dup2(prep.devnull.as_raw_fd(), 0);
    libc::dup2(2, 1);
    for fd in [control, report, prep.devnull.as_raw_fd()] {
        if fd > 2 {
            libc::close(fd);
        }
    }
    libc::execve(
        prep.sh.as_ptr(),
        prep.argv_ptrs.as_ptr(),
        prep.envp_ptrs.as_ptr(),
    );
    libc::_exit(127);
}

/// SCHED_OTHER, no real-time priority allowed, RLIMIT_RTTIME fixed, and no capability or setuid
/// program that could undo any of it.
unsafe fn normal_priority(rttime_us: u64) {
    let param = libc::sched_param { sched_priority: 0 };
    libc::sched_setscheduler(0, libc::SCHED_OTHER, &param);
    let zero = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    libc::setrlimit(libc::RLIMIT_RTPRIO, &zero);
    let rt = libc::rlimit {
        rlim_cur: rttime_us,
        rlim_max: rttime_us,
    };
    libc::setrlimit(libc::RLIMIT_RTTIME, &rt);
    // Without CAP_SETPCAP (not root) these fail, and there is nothing to drop.
    for cap in [CAP_SYS_NICE, CAP_SYS_RESOURCE] {
        libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0);
    }
    libc::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL,
        0,
        0,
        0,
    );
    drop_capabilities(&[CAP_SYS_NICE, CAP_SYS_RESOURCE]);
    libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Removes `caps` (all below 32) from this process's effective, permitted and inheritable sets.
unsafe fn drop_capabilities(caps: &[u32]) {
    const VERSION_3: u32 = 0x2008_0522;
    let mut header = CapHeader {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    if libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) != 0 {
        return;
    }
    let mask = caps.iter().fold(0u32, |m, &c| m | 1 << c);
    data[0].effective &= !mask;
    data[0].permitted &= !mask;
    data[0].inheritable &= !mask;
    libc::syscall(libc::SYS_capset, &mut header, data.as_ptr());
}

#[cfg(test)]
mod tests;
