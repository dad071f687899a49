//! Getting traces: valgrind's lackey for the user-mode references of a command, and QEMU with
//! osmeter's plugin for the whole system (user and kernel, physical addresses).

pub mod system;
pub mod valgrind;

use crate::progress::{duration, Counter, Ticker};
use crate::units::count_label;

/// The progress line of a capture: `waiting` until the first reference arrives, then
/// "trace: 12.3M references captured (30M/s), 9.0 s", the rate counted from the first reference
/// so the start-up (a guest's boot, valgrind's own start) does not dilute it.
pub fn progress(captured: Counter, waiting: &'static str) -> Ticker {
    let mut first: Option<std::time::Duration> = None;
    Ticker::start(move |elapsed| {
        let n = captured.get();
        if n == 0 {
            return format!("trace: {waiting}, {}", duration(elapsed));
        }
        let since = elapsed - *first.get_or_insert(elapsed);
        format!(
            "trace: {} references captured ({}/s), {}",
            count_label(n as f64),
            count_label(n as f64 / since.as_secs_f64().max(0.25)),
            duration(elapsed)
        )
    })
}
