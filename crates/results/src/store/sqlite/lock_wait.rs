//! Waiting for another process's lock on a SQLite store: bounded, announced, and cut short by a
//! signal. SQLite's own busy timeout sleeps through signals, so a store held by a `BEGIN
//! EXCLUSIVE` in another process used to hold a finished run hostage for 30 s, Ctrl-C ignored.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a writer waits for another process to release the store. A save takes milliseconds;
/// a lock held this long is not going away soon, and the run is kept elsewhere instead.
pub const LOCK_WAIT: Duration = Duration::from_secs(30);

/// After this long the wait is announced, so the user knows why nothing happens.
const ANNOUNCE_AFTER: Duration = Duration::from_secs(1);

/// Why the last wait on this thread gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaveUp {
    /// The other process held the lock for all of [`LOCK_WAIT`].
    TimedOut,
    /// A signal (Ctrl-C, SIGTERM, SIGHUP, ...) arrived while waiting.
    Signalled,
}

/// One wait: when it began, the stopping signals received before it, whether it was announced.
#[derive(Clone, Copy)]
struct Wait {
    since: Instant,
    signals_before: u32,
    announced: bool,
}

thread_local! {
    static STORE: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
    static WAIT: Cell<Option<Wait>> = const { Cell::new(None) };
    static GAVE_UP: Cell<Option<GaveUp>> = const { Cell::new(None) };
}

/// Names the store this thread's connection waits on, for the announcement.
pub fn waiting_on(path: &Path) {
    STORE.with(|s| *s.borrow_mut() = Some(path.to_path_buf()));
}

/// Why the last wait gave up (None when it did not); reading it clears it.
pub fn take_gave_up() -> Option<GaveUp> {
    GAVE_UP.with(|g| g.take())
}

/// SQLite's busy handler: called with the number of times it was called for this lock so far;
/// true means "try again".
pub fn busy(attempt: i32) -> bool {
    let now = Instant::now();
    let mut wait = match WAIT.with(Cell::get) {
        Some(w) if attempt > 0 => w,
        _ => Wait {
            since: now,
            signals_before: crate::interrupt::received(),
            announced: false,
        },
    };
    let gave_up = if crate::interrupt::received() != wait.signals_before {
        Some(GaveUp::Signalled)
    } else if now.duration_since(wait.since) >= LOCK_WAIT {
        Some(GaveUp::TimedOut)
    } else {
        None
    };
    if let Some(why) = gave_up {
        GAVE_UP.with(|g| g.set(Some(why)));
        WAIT.with(|w| w.set(None));
        return false;
    }
    if !wait.announced && now.duration_since(wait.since) >= ANNOUNCE_AFTER {
        wait.announced = true;
        let store = STORE.with(|s| s.borrow().as_ref().map(|p| p.display().to_string()));
        eprintln!(
            "osmeter: the store {} is locked by another process; waiting up to {} s for it \
             (Ctrl-C stops waiting and keeps the run elsewhere)",
            store.as_deref().unwrap_or("(unnamed)"),
            LOCK_WAIT.as_secs()
        );
    }
    WAIT.with(|w| w.set(Some(wait)));
    // Short steps, so that a signal is seen at once (the sleep itself ends early on one).
    std::thread::sleep(Duration::from_millis(20));
    true
}

/// Whether a caller that retries by itself (the switch to WAL) may go on: the same bounds.
pub fn may_retry(since: Instant, signals_before: u32) -> bool {
    since.elapsed() < LOCK_WAIT && crate::interrupt::received() == signals_before
}

/// What to tell the user about a store that stayed locked.
pub fn explain(path: &Path, why: GaveUp) -> String {
    match why {
        GaveUp::TimedOut => format!(
            "another process kept it locked for {} s (`fuser {}` names that process)",
            LOCK_WAIT.as_secs(),
            path.display()
        ),
        GaveUp::Signalled => {
            "another process held it locked, and a signal stopped the wait".to_string()
        }
    }
}
