//! Bounded and interruptible waits on the server. A session that holds `LOCK TABLE runs IN ACCESS
//! EXCLUSIVE MODE` used to hang a save until it let go, Ctrl-C ignored (the client sleeps in a
//! socket read that signals do not end). Each connection now sets a lock and a statement timeout
//! (unless the URL's options set their own), and a signal during a save cancels the statement on
//! the server, so the run goes to the local store at once.

use ::postgres::error::SqlState;
use ::postgres::Client;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long a statement waits for a lock another session holds.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(30);
/// How long any one statement may run: saves and fleet queries take well under a second.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(300);

/// Sets the session's timeouts, leaving those the URL's `options` chose.
pub fn set_timeouts(client: &mut Client, url_options: Option<&str>) -> anyhow::Result<()> {
    let chosen = |name: &str| url_options.is_some_and(|o| o.contains(name));
    let mut sql = String::new();
    if !chosen("lock_timeout") {
        sql += &format!("SET lock_timeout = '{}s';", LOCK_TIMEOUT.as_secs());
    }
    if !chosen("statement_timeout") {
        sql += &format!(
            "SET statement_timeout = '{}s';",
            STATEMENT_TIMEOUT.as_secs()
        );
    }
    if !sql.is_empty() {
        client.batch_execute(&sql)?;
    }
    Ok(())
}

/// Runs `work` on `client`, cancelling its statement on the server when a stopping signal arrives
/// meanwhile. Returns what `work` returned and whether a signal cancelled it.
pub fn cancelled_by_signals<T>(
    client: &mut Client,
    work: impl FnOnce(&mut Client) -> T,
) -> (T, bool) {
    let token = client.cancel_token();
    let before = crate::interrupt::received();
    let done = AtomicBool::new(false);
    let cancelled = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        // Without the watcher (no thread may start) a signal does not cancel the statement, and
        // statement_timeout still ends it.
        let _ = std::thread::Builder::new()
            .name("osm-pg-cancel".into())
            .spawn_scoped(s, || {
                while !done.load(Ordering::SeqCst) {
                    if crate::interrupt::received() != before {
                        cancelled.store(true, Ordering::SeqCst);
                        let _ = token.cancel_query(::postgres::NoTls);
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
        let out = work(client);
        done.store(true, Ordering::SeqCst);
        out
    });
    (out, cancelled.load(Ordering::SeqCst))
}

/// What to say about a statement the server stopped: a lost connection (the server went down), a
/// lock held too long, a statement that ran too long, or a signal; None for other errors.
pub fn explain(err: &anyhow::Error, by_signal: bool, server: &str) -> Option<String> {
    let pg = err
        .chain()
        .find_map(|c| c.downcast_ref::<::postgres::Error>());
    let code = pg.and_then(|e| e.code().cloned());
    let lost = pg.is_some_and(|e| e.is_closed())
        || matches!(
            code,
            Some(
                SqlState::ADMIN_SHUTDOWN | SqlState::CRASH_SHUTDOWN | SqlState::CANNOT_CONNECT_NOW
            )
        );
    if lost {
        return Some(format!(
            "PostgreSQL at {server} ended the connection before the run was saved (the server \
             shut down or restarted); the server keeps nothing of an unfinished save, so saving \
             it again once the server is back stores it once"
        ));
    }
    match code {
        Some(SqlState::QUERY_CANCELED) if by_signal => Some(format!(
            "waiting for PostgreSQL at {server} was stopped by a signal"
        )),
        Some(SqlState::LOCK_NOT_AVAILABLE) => Some(format!(
            "another session on PostgreSQL at {server} kept osmeter's tables locked for {} s \
             (lock_timeout; pg_locks shows who holds them)",
            LOCK_TIMEOUT.as_secs()
        )),
        Some(SqlState::QUERY_CANCELED) => Some(format!(
            "PostgreSQL at {server} did not finish the statement within its statement_timeout \
             ({} s unless the URL's options set another)",
            STATEMENT_TIMEOUT.as_secs()
        )),
        _ => None,
    }
}
