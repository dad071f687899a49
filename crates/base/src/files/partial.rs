//! Temporary files of the atomic writer (`.osmeter-partial-*`) never outlive the process that
//! writes them, whatever ends it.
//!
//! - A signal that would end osmeter at once (SIGTERM, SIGHUP, SIGINT, ... in a command that
//!   installs no handler of its own: export, report, trace synth, trace convert) first removes the
//!   files being written, then ends the process by that same signal, as its default would (a shell
//!   reports 128 + the signal's number). A command that handles signals itself (stat, trace, run)
//!   keeps its handler: it stops at its next safe point and commits or drops its files there.
//! - SIGKILL cannot be caught. Each writer holds an advisory lock on its file while writing, so
//!   the next writer into the same directory knows a file nobody holds is a leftover and removes it.

use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::time::Duration;

/// The prefix of every temporary file of the writer.
pub const PREFIX: &str = ".osmeter-partial-";

/// Files being written at once, at most (more are written, unprotected by the handler).
const SLOTS: usize = 32;

/// Paths of the files being written, as NUL-terminated strings for unlink in a signal handler.
static PENDING: [AtomicPtr<libc::c_char>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// A younger leftover may be a writer's file between its creation and its lock.
const SWEEP_AFTER: Duration = Duration::from_secs(60);

/// A file being written; unregistered when dropped (after it was renamed or removed).
pub struct Pending(Option<usize>);

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(slot) = self.0 {
            // The string is left allocated on purpose: a signal handler on another thread may
            // be reading it at this moment. A few bytes per file a process writes.
            PENDING[slot].store(std::ptr::null_mut(), Ordering::SeqCst);
        }
    }
}

/// Locks `file` (the temporary file at `path`) as being written, and has it removed if a signal
/// ends osmeter before it is renamed or dropped.
pub fn register(path: &Path, file: &std::fs::File) -> Pending {
    // SAFETY: flock on a descriptor we own; failing leaves the file sweepable after a minute,
    // which a writer alive that long would not want, so it is tried but not required.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    install_handler();
    let Ok(c) = CString::new(path.as_os_str().as_encoded_bytes()) else {
        return Pending(None);
    };
    let raw = c.into_raw();
    for (i, slot) in PENDING.iter().enumerate() {
        if slot
            .compare_exchange(
                std::ptr::null_mut(),
                raw,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
        {
            return Pending(Some(i));
        }
    }
    // SAFETY: `raw` came from into_raw above and was stored nowhere.
    drop(unsafe { CString::from_raw(raw) });
    Pending(None)
}

extern "C" fn on_signal(signal: libc::c_int) {
    remove_pending();
    // SAFETY: signal and raise are async-signal-safe. The signal is blocked while this handler
    // runs, so it is delivered, at its default action, right after it returns.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// Unlinks every file being written. Async-signal-safe.
fn remove_pending() {
    for slot in &PENDING {
        let p = slot.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: a NUL-terminated string that is never freed.
            unsafe { libc::unlink(p) };
        }
    }
}

/// Installs [`on_signal`] once, for every stopping signal that still has its default action: one
/// that osmeter handles (crate::interrupt) or that was ignored (`nohup`) is left as it is.
fn install_handler() {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    // SAFETY: sigaction with zeroed structures and a handler that is async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut action.sa_mask);
        for &signal in crate::interrupt::STOPPING_SIGNALS {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut old);
            if old.sa_sigaction == libc::SIG_DFL {
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    }
}

/// Removes the temporary files in `dir` that a writer killed outright (SIGKILL, a power cut) left:
/// this user's, older than a minute, and locked by nobody. Each one removed is named on stderr.
pub fn sweep(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .as_encoded_bytes()
            .starts_with(PREFIX.as_bytes())
        {
            continue;
        }
        let path = entry.path();
        if is_leftover(&path, me) && std::fs::remove_file(&path).is_ok() {
            eprintln!(
                "osmeter: removed {}, a partial file left by an osmeter that was killed while \
                 writing it",
                crate::text::escape_controls(&path.display().to_string())
            );
        }
    }
}

fn is_leftover(path: &Path, me: libc::uid_t) -> bool {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    // Never through a link, never blocking on a FIFO someone named like ours.
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    let Ok(meta) = file.metadata() else {
        return false;
    };
    let old = meta
        .modified()
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age >= SWEEP_AFTER);
    // SAFETY: flock on a descriptor we own; the lock goes with it when `file` is dropped.
    let unheld = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    meta.is_file() && meta.uid() == me && old && unheld
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aged(path: &Path) {
        let old = std::time::SystemTime::now() - Duration::from_secs(120);
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(old).unwrap();
    }

    #[test]
    fn only_old_files_nobody_holds_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(format!("{PREFIX}dead"));
        let young = dir.path().join(format!("{PREFIX}young"));
        let held = dir.path().join(format!("{PREFIX}held"));
        let other = dir.path().join("notes.txt");
        for p in [&dead, &young, &held, &other] {
            std::fs::write(p, "x").unwrap();
        }
        for p in [&dead, &held, &other] {
            aged(p);
        }
        let holder = std::fs::File::open(&held).unwrap();
        let _pending = register(&held, &holder);
        sweep(dir.path());
        assert!(!dead.exists());
        assert!(young.exists() && held.exists() && other.exists());
    }
}
