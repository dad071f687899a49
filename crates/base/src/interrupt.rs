//! Stopping cleanly on a signal: the first SIGINT, SIGTERM, SIGHUP, SIGQUIT or any other signal
//! that would otherwise end the process at once asks the run to stop at the next safe point, so
//! that partner processes are reaped, scratch files removed, settings restored and what was
//! measured still printed and kept. Job-control signals (SIGTSTP, SIGCONT, ...) and SIGPIPE (which
//! Rust ignores) keep their usual meaning.
//!
//! Helper processes (the measured command, valgrind, fuse2fs, ...) are tied to osmeter's life with
//! [`die_with_parent`]: even SIGKILL, which no handler sees, takes them with it.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);
/// The first signal that asked to stop, for messages.
static FIRST_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Every stopping signal received so far: a wait that began after the first one (saving the run)
/// is cut short by the next one.
static RECEIVED: AtomicU32 = AtomicU32::new(0);
/// Who sent the first stopping signal: a process id, or 0 for the kernel (a resource limit) or
/// when the kernel did not say.
static FIRST_SENDER: AtomicI32 = AtomicI32::new(0);
/// A write of this process went past its file-size limit (RLIMIT_FSIZE): the kernel's SIGXFSZ
/// for it is no request to stop, the write itself fails with EFBIG and says so.
static FILE_TOO_LARGE: AtomicBool = AtomicBool::new(false);

/// Every signal whose default action ends the process and that another process or the terminal
/// may send: each is handled as Ctrl-C. (SIGKILL and SIGSTOP cannot be caught; synchronous faults
/// such as SIGSEGV must keep their default.)
pub const STOPPING_SIGNALS: &[libc::c_int] = &[
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGXCPU,
    libc::SIGXFSZ,
];

/// Error value used to unwind a measurement that was stopped by the user.
#[derive(Debug, Clone, Copy)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted by the user")
    }
}

impl std::error::Error for Interrupted {}

extern "C" fn on_signal(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel hands a valid siginfo to an SA_SIGINFO handler; si_pid is read only for
    // the codes that carry a sender. getpid is async-signal-safe.
    let sender = unsafe {
        match info.as_ref() {
            Some(i) if i.si_code == libc::SI_USER || i.si_code == libc::SI_QUEUE => i.si_pid(),
            _ => 0,
        }
    };
    // SAFETY: as above.
    if signal == libc::SIGXFSZ && (sender == 0 || sender == unsafe { libc::getpid() }) {
        FILE_TOO_LARGE.store(true, Ordering::SeqCst);
        return;
    }
    if FIRST_SIGNAL
        .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
    {
        FIRST_SENDER.store(sender, Ordering::SeqCst);
    }
    RECEIVED.fetch_add(1, Ordering::SeqCst);
    REQUESTED.store(true, Ordering::SeqCst);
    if signal == libc::SIGHUP {
        leave_hung_up_terminal();
    }
}

/// Points standard input, output and error that lead to a hung-up terminal (writes fail with EIO)
/// at /dev/null: what osmeter prints after the terminal went away (the table, where the run was
/// saved) must neither fail nor panic before the run is saved. Async-signal-safe, errno kept.
pub fn leave_hung_up_terminal() {
    // SAFETY: write, open, dup2 and close are async-signal-safe; errno is restored on the way out.
    unsafe {
        let errno = libc::__errno_location();
        let saved = *errno;
        for fd in 0..=2 {
            let probe = [0u8; 1];
            if libc::write(fd, probe.as_ptr().cast(), 0) < 0 && *errno == libc::EIO {
                let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
                if null >= 0 {
                    libc::dup2(null, fd);
                    libc::close(null);
                }
            }
        }
        *errno = saved;
    }
}

/// Installs the handler for every signal of [`STOPPING_SIGNALS`] without SA_RESTART, so a
/// blocking read in a probe returns EINTR and the probe unwinds instead of waiting on a partner
/// that the signal has already killed. SIGHUP stays ignored when it was (`nohup osmeter ...`);
/// the others are caught even then (a shell starts background jobs with SIGINT and SIGQUIT
/// ignored, and those must still stop cleanly when sent on purpose).
pub fn install() {
    let action = handler();
    // SAFETY: the handler only touches atomics, which is async-signal-safe.
    unsafe {
        for &signal in STOPPING_SIGNALS {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut old);
            if old.sa_sigaction == libc::SIG_IGN && signal == libc::SIGHUP {
                continue;
            }
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Catches the kernel's SIGXFSZ alone (what `install` does for it), for commands that do not stop
/// on signals: a write past the file-size limit then fails with EFBIG, which names the limit,
/// instead of killing osmeter halfway through a file with no word. Children get the default
/// action back at exec, as for every caught signal.
pub fn catch_file_size_limit() {
    let action = handler();
    // SAFETY: as in `install`; the handler only touches atomics.
    unsafe { libc::sigaction(libc::SIGXFSZ, &action, std::ptr::null_mut()) };
}

/// The action that runs `on_signal`, without SA_RESTART, with the sender (SA_SIGINFO), so a
/// signal another process sent is told from the user's Ctrl-C and the kernel's own SIGXFSZ from
/// a request to stop.
fn handler() -> libc::sigaction {
    // SAFETY: a zeroed sigaction is a valid value to fill; sigemptyset fills its mask.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal
            as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
            as usize;
        libc::sigemptyset(&mut action.sa_mask);
        action.sa_flags = libc::SA_SIGINFO;
        action
    }
}

pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// How many stopping signals arrived so far.
pub fn received() -> u32 {
    RECEIVED.load(Ordering::SeqCst)
}

/// The first stopping signal that arrived, if any.
pub fn first_signal() -> Option<libc::c_int> {
    Some(FIRST_SIGNAL.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// The process that sent the first stopping signal; None for the kernel (a resource limit such as
/// RLIMIT_CPU's SIGXCPU) or a sender the kernel did not name.
pub fn first_sender() -> Option<i32> {
    Some(FIRST_SENDER.load(Ordering::SeqCst)).filter(|&p| p > 0)
}

/// Whether a write of this process went past its file-size limit (RLIMIT_FSIZE) and the kernel
/// sent SIGXFSZ for it.
pub fn file_too_large() -> bool {
    FILE_TOO_LARGE.load(Ordering::SeqCst)
}

/// What stopped the command, for messages: "Ctrl-C" for SIGINT, else the signal's name.
pub fn what_stopped() -> String {
    match first_signal() {
        // The kernel's, at the soft CPU-time limit: no one asked, the limit did.
        Some(libc::SIGXCPU) if first_sender().is_none() => {
            "SIGXCPU (the CPU-time limit, RLIMIT_CPU, `ulimit -t`)".to_string()
        }
        signal => name_of(signal.unwrap_or(libc::SIGINT)),
    }
}

/// The name of a signal for messages: "Ctrl-C" for SIGINT, "SIGTERM", ..., "signal N".
pub fn name_of(signal: libc::c_int) -> String {
    let names = [
        (libc::SIGKILL, "SIGKILL"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGUSR2, "SIGUSR2"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGVTALRM, "SIGVTALRM"),
        (libc::SIGPROF, "SIGPROF"),
        (libc::SIGXCPU, "SIGXCPU"),
        (libc::SIGXFSZ, "SIGXFSZ"),
    ];
    if signal == libc::SIGINT {
        return "Ctrl-C".to_string();
    }
    names
        .iter()
        .find(|(s, _)| *s == signal)
        .map_or_else(|| format!("signal {signal}"), |(_, n)| n.to_string())
}

/// True when `err` (or its cause chain) says the user stopped the run.
pub fn is_interrupt(err: &anyhow::Error) -> bool {
    requested() || err.chain().any(|c| c.is::<Interrupted>())
}

/// Makes the child that `cmd` starts receive SIGKILL when the thread that starts it ends (with
/// osmeter, whatever ended it), and refuse to start when osmeter is already gone. Call it from a
/// thread that outlives the child: the kernel ties the signal to the starting thread.
pub fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: prctl and getppid are async-signal-safe and touch no memory of the parent.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // The parent may have died before the prctl: then nobody would kill this child.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stopping_signal_is_named() {
        for &signal in STOPPING_SIGNALS {
            assert!(!name_of(signal).starts_with("signal "), "{signal}");
        }
        assert_eq!(name_of(libc::SIGHUP), "SIGHUP");
    }
}
