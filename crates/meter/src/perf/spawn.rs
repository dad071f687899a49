//! Starting a command with its counters open before it executes its first instruction.
//!
//! The forked child stops before exec and waits on a pipe. `Command::spawn` itself blocks until the
//! child has exec'd (it learns of exec failures that way), so the counters are opened by a helper
//! thread: the child sends its pid through a second pipe, the helper opens the events on it with
//! enable_on_exec and then lets it go. Counting therefore starts exactly at exec.

use super::CounterSet;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::Instant;

/// A started command and the counters that follow it and every process it forks.
pub struct CountedChild {
    pub child: Child,
    pub counters: CounterSet,
    /// Taken just before the child was released to exec: the start of its wall time.
    pub started: Instant,
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Runs in the forked child, before exec: only async-signal-safe calls, no allocation.
fn hold_in_child(pid_r: RawFd, pid_w: RawFd, go_r: RawFd, go_w: RawFd) -> io::Result<()> {
    // SAFETY: plain system calls on descriptors this process inherited; buffers are on the stack.
    unsafe {
        // Without these the child would keep its own release pipe open and never see EOF if the
        // parent died before releasing it.
        libc::close(pid_r);
        libc::close(go_w);
        let pid = libc::getpid().to_ne_bytes();
        if libc::write(pid_w, pid.as_ptr().cast(), pid.len()) != pid.len() as isize {
            return Err(io::Error::last_os_error());
        }
        libc::close(pid_w);
        let mut byte = 0u8;
        loop {
            match libc::read(go_r, (&mut byte as *mut u8).cast(), 1) {
                1 => break,
                // The parent went away without releasing us: do not run uncounted.
                0 => return Err(io::Error::from_raw_os_error(libc::ECANCELED)),
                _ if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {}
                _ => return Err(io::Error::last_os_error()),
            }
        }
        libc::close(go_r);
    }
    Ok(())
}

/// Starts `cmd` with [`CounterSet::open_for_process`] counting it from its exec. The error is the
/// one `Command::spawn` gives (command not found, not executable, ...).
pub fn spawn_counted(mut cmd: Command) -> io::Result<CountedChild> {
    let (pid_r, pid_w) = pipe()?;
    let (go_r, go_w) = pipe()?;
    let raw = (
        pid_r.as_raw_fd(),
        pid_w.as_raw_fd(),
        go_r.as_raw_fd(),
        go_w.as_raw_fd(),
    );
    // SAFETY: the hook only makes async-signal-safe system calls (see hold_in_child).
    unsafe {
        cmd.pre_exec(move || hold_in_child(raw.0, raw.1, raw.2, raw.3));
    }
    std::thread::scope(|s| {
        let helper = std::thread::Builder::new()
            .name("osm-count-exec".into())
            .spawn_scoped(s, move || -> Option<(CounterSet, Instant)> {
                let mut pid = [0u8; 4];
                // EOF here means no child was forked; spawn reports why.
                File::from(pid_r).read_exact(&mut pid).ok()?;
                let counters = CounterSet::open_for_process(libc::pid_t::from_ne_bytes(pid));
                let started = Instant::now();
                let _ = File::from(go_w).write_all(b"g");
                Some((counters, started))
            });
        // No thread to count from: the command is not started (it would run uncounted).
        let helper = helper.map_err(|e| {
            io::Error::other(format!(
                "{:#}",
                osmeter_base::system::limits::cannot_start(
                    "the thread that counts the command",
                    &e
                )
            ))
        })?;
        let spawned = cmd.spawn();
        // The helper sees EOF on the pid pipe once this end is closed and the child has exec'd.
        drop(pid_w);
        drop(go_r);
        let opened = helper.join().unwrap_or(None);
        let child = spawned?;
        let (counters, started) = opened.ok_or_else(|| {
            io::Error::other("the child started without reporting its process id")
        })?;
        Ok(CountedChild {
            child,
            counters,
            started,
        })
    })
}
