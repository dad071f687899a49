//! Ctrl-C handling: the first SIGINT or SIGTERM asks the run to stop at the next safe point, so that
//! partner processes are reaped, scratch files removed and what was measured still printed.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Error value used to unwind a measurement that was stopped by the user.
#[derive(Debug, Clone, Copy)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted by the user")
    }
}

impl std::error::Error for Interrupted {}

extern "C" fn on_signal(_: libc::c_int) {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Installs the handler without SA_RESTART, so a blocking read in a probe returns EINTR and the
/// probe unwinds instead of waiting on a partner that the signal has already killed.
pub fn install() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut action.sa_mask);
        action.sa_flags = 0;
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
    }
}

pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// True when `err` (or its cause chain) says the user stopped the run.
pub fn is_interrupt(err: &anyhow::Error) -> bool {
    requested() || err.chain().any(|c| c.is::<Interrupted>())
}
