//! A damaged or unwritable store, said plainly: what is wrong with which file and what to do.
//! Writes are refused on a file SQLite's own check finds damaged, so a bad page is never made
//! worse; errors met while reading say the same thing instead of SQLite's terse words.

use anyhow::{anyhow, Result};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Runs SQLite's quick check (every page read once; the indexes are not compared with their
/// tables) and refuses a store where it finds anything wrong.
pub(super) fn check(conn: &Connection, path: &Path) -> Result<()> {
    let found = (|| -> rusqlite::Result<Vec<String>> {
        let mut stmt = conn.prepare("PRAGMA quick_check")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.take(3).collect()
    })();
    match found {
        Ok(rows) if rows.len() == 1 && rows[0] == "ok" => Ok(()),
        Ok(rows) => {
            // Rows read like "*** in database main ***\nPage 5: ..."; the banner says nothing.
            let found: Vec<&str> = rows
                .iter()
                .flat_map(|r| r.lines())
                .filter(|l| !l.starts_with("***") && !l.trim().is_empty())
                .collect();
            Err(damaged(path, &found.join("; ")))
        }
        Err(e) => Err(explain(path, e.into())),
    }
}

/// Opens `path` for commands that only read: never created, never written by osmeter. A store in
/// write-ahead-log mode needs its shared-memory file, which a user who may not write the
/// directory cannot create; such a store is then read as an immutable snapshot (runs being saved
/// at that very moment may not be seen).
pub(super) fn open_read_only(path: &Path) -> Result<Connection> {
    // Read-write when the file allows it (SQLite falls back to reading only when it does not):
    // a connection opened strictly read-only leaves the -wal and -shm files behind on close,
    // while the last writable one folds them in and removes them.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn =
        Connection::open_with_flags(literal(path), flags).map_err(|e| explain(path, e.into()))?;
    match conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    }) {
        Ok(_) => {
            // Nothing this connection runs may change the store.
            conn.pragma_update(None, "query_only", true)
                .map_err(|e| explain(path, e.into()))?;
            return Ok(conn);
        }
        Err(e) if !matches!(code(&e), Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen)) => {
            return Err(explain(path, e.into()))
        }
        Err(_) => {}
    }
    drop(conn);
    let uri = format!("file:{}?immutable=1", uri_path(path));
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)
        .map_err(|e| explain(path, e.into()))
}

/// `path` as SQLite must be given it to open that very file. The bundled SQLite reads any name
/// starting with "file:" as a URI (`file:x.db?mode=memory` would keep the runs in memory and lose
/// them), whatever the open flags say; "./file:..." is the same file and no URI.
pub(super) fn literal(path: &Path) -> std::borrow::Cow<'_, Path> {
    use std::os::unix::ffi::OsStrExt;
    if path.as_os_str().as_bytes().starts_with(b"file:") {
        Path::new(".").join(path).into()
    } else {
        path.into()
    }
}

/// `path` with everything but unreserved characters and `/` percent-encoded, for a file: URI.
fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = String::new();
    for &b in abs.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn code(e: &rusqlite::Error) -> Option<ErrorCode> {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.code),
        _ => None,
    }
}

/// Turns SQLite's errors about the file itself (damaged, not writable, cannot be opened) into
/// what happened to which store and what to do; other errors pass unchanged.
pub(super) fn explain(path: &Path, err: anyhow::Error) -> anyhow::Error {
    explain_os(path, err, None)
}

/// [`explain`], knowing the system error number SQLite saw last (`os_error`), which tells a full
/// disk from a read-only one where SQLite says "disk I/O error" for both.
pub(super) fn explain_os(path: &Path, err: anyhow::Error, os_error: Option<i32>) -> anyhow::Error {
    let Some(sqlite) = err
        .chain()
        .find_map(|c| c.downcast_ref::<rusqlite::Error>())
    else {
        return err;
    };
    // Text that is not UTF-8 where osmeter only ever writes JSON: a page was overwritten.
    if matches!(
        sqlite,
        rusqlite::Error::Utf8Error(..) | rusqlite::Error::FromSqlConversionFailure(..)
    ) {
        return damaged(path, &format!("unreadable text: {sqlite}"));
    }
    let code = code(sqlite);
    if matches!(
        code,
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    ) {
        if let Some(why) = super::lock_wait::take_gave_up() {
            return anyhow!(
                "cannot write the store {}: {}",
                path.display(),
                super::lock_wait::explain(path, why)
            );
        }
    }
    if matches!(
        code,
        Some(
            ErrorCode::ReadOnly
                | ErrorCode::CannotOpen
                | ErrorCode::PermissionDenied
                | ErrorCode::SystemIoFailure
                | ErrorCode::DiskFull
        )
    ) {
        if let Some(why) = super::surroundings::problem(path, os_error) {
            return anyhow!(
                "cannot write the store {}: {why} (SQLite said: {sqlite})",
                path.display()
            );
        }
    }
    match code {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
            damaged(path, &sqlite.to_string())
        }
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            anyhow!(
                "cannot write the store {} ({sqlite}; {}): save to a store of your own with \
                 --store PATH or $OSMETER_STORE, or ask its owner for write access to the file \
                 and its directory",
                path.display(),
                ownership(path)
            )
        }
        _ => err,
    }
}

fn damaged(path: &Path, found: &str) -> anyhow::Error {
    let p = path.display();
    anyhow!(
        "the store {p} is damaged ({found}); osmeter leaves it untouched. Keep a copy of it, \
         then copy what is readable into a new store with `sqlite3 {p} .dump | sqlite3 NEW.db` \
         and use NEW.db (--store or $OSMETER_STORE), or move {p} aside to start afresh"
    )
}

/// Who may write the store and its directory, for the message about a store this user cannot
/// write.
fn ownership(path: &Path) -> String {
    let describe = |p: &Path| match std::fs::metadata(p) {
        Ok(m) => format!(
            "{} belongs to uid {} with mode {:o}",
            p.display(),
            m.uid(),
            m.mode() & 0o7777
        ),
        Err(e) => format!("{}: {e}", p.display()),
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    format!("{}, {}; this is uid {me}", describe(path), describe(dir))
}
