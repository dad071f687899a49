//! Exit codes and the one error kind that changes them.

/// Success.
pub const EXIT_OK: i32 = 0;
/// Something failed while running (a probe's set-up, a file that could not be written, ...).
pub const EXIT_RUNTIME: i32 = 1;
/// The command line asked for something invalid.
pub const EXIT_USAGE: i32 = 2;
/// A command run by `osmeter stat` failed or exited non-zero.
pub const EXIT_COMMAND_FAILED: i32 = 3;
/// `compare --fail-if-slower PCT` found a figure slower by more than PCT; `run --guest
/// --fail-if-over` a count over its budget (or a budgeted count not taken): a user-set threshold
/// crossed, whichever.
pub const EXIT_THRESHOLD: i32 = 4;
/// `latency --fail-over LATENCY`: a wake was later than that.
pub const EXIT_LATENCY_OVER: i32 = 5;
/// `compare`: a run was measured on a busy machine, so no figure was compared (`--force` does).
pub const EXIT_BUSY: i32 = 6;
/// `stat`'s command was killed by SIGPIPE: its output went to a reader that had gone (`| head`),
/// and 128 + SIGPIPE is what a shell reports for a pipeline member that ended so.
pub const EXIT_BROKEN_PIPE: i32 = 141;
/// Stopped by Ctrl-C after printing what was measured (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: i32 = 130;

/// An invalid request from the user: reported with exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Shorthand: `return Err(usage!("..."))`.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => { $crate::error::usage_error(::std::format!($($arg)*)) };
}

/// The error `usage!` builds, a function so that the macro's callers need not name anyhow.
pub fn usage_error(message: String) -> anyhow::Error {
    anyhow::Error::new(UsageError(message))
}

/// Exit code for an error that reached `main`.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    if err.chain().any(|c| c.is::<UsageError>()) {
        EXIT_USAGE
    } else if crate::interrupt::is_interrupt(err) {
        EXIT_INTERRUPTED
    } else {
        EXIT_RUNTIME
    }
}
