//! The embedded SQLite store.

use super::schema::{self, APPLICATION};
use super::{FiguresByKey, RunFilter, RunInfo, Store, StoredFigure};
use crate::results::model::Run;
use anyhow::{anyhow, bail, Context, Result};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    /// The file passed SQLite's quick check on this connection, before its first write: the
    /// check reads every page, so making it before each of many saves (a push of thousands of
    /// runs) would read the whole store again each time.
    checked: bool,
}

/// Removes the store file this process began to make at `path` and that holds nothing (no
/// transaction of any process committed into it), SQLite's companion files of it, and the
/// directories `made` for it, deepest first, as far as they are empty.
fn remove_unmade(path: &Path, made: &[PathBuf]) {
    let empty_file = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0);
    if empty_file {
        for suffix in ["-journal", "-wal", "-shm"] {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            if std::fs::symlink_metadata(&name).is_ok_and(|m| m.is_file()) {
                let _ = std::fs::remove_file(&name);
            }
        }
        let _ = std::fs::remove_file(path);
    }
    for dir in made {
        let _ = std::fs::remove_dir(dir);
    }
}

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

fn check_header(path: &Path) -> Result<()> {
    use std::io::Read;
    let Ok(mut f) = std::fs::File::open(path) else {
        return Ok(());
    };
    let mut head = [0u8; 16];
    let n = f.read(&mut head).unwrap_or(0);
    if n == 0 {
        return Ok(()); // an empty file becomes a new store
    }
    if n < 16 || &head != SQLITE_MAGIC {
        bail!(
            "{} is not a SQLite database (left untouched); give another path with --store or {}",
            path.display(),
            super::STORE_ENV
        );
    }
    Ok(())
}

/// Refuses, as a usage error, a store path that is neither a regular file nor missing (nor a link
/// to a regular file): SQLite would read a device or a FIFO as an empty store (or hang on the
/// FIFO), write its `-journal` beside a device, and report "no runs" for /dev/zero. Nothing is
/// opened, so a FIFO cannot block here.
pub fn check_kind(path: &Path) -> Result<()> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Only a link counts: a file that another process created since is a store.
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(crate::usage!(
                    "the store {} is a symbolic link to nothing; osmeter does not create a store                      through a link: give the path of a SQLite file with --store or {}",
                    path.display(),
                    super::STORE_ENV
                ));
            }
            return Ok(());
        }
        Err(e) => return Err(anyhow!("cannot inspect the store {}: {e}", path.display())),
    };
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    let kind = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(crate::usage!(
        "{} is {kind}, not a store file: runs are kept in a regular SQLite file (one that does          not exist yet is created) or a postgres:// URL; give one with --store or {}",
        path.display(),
        super::STORE_ENV
    ))
}

/// Refuses a store this user may not write (another user's store, or one in another user's
/// directory, which SQLite would still open for reading): before measuring, not after.
pub fn check_writable(path: &Path) -> Result<()> {
    match surroundings::unwritable(path) {
        Some(why) => bail!("cannot write the store {}: {why}", path.display()),
        None => Ok(()),
    }
}

/// Refuses (a usage error) a store that another user could read through or alter: see
/// [`trust`]. For a store that is about to be created too.
pub fn check_trusted(path: &Path) -> Result<()> {
    trust::check_for_writing(path)
}

impl SqliteStore {
    /// Opens (or creates) the store for reading and writing.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        check_kind(path)?;
        trust::check_for_writing(path)?;
        let mut made = Vec::new();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            made = dir
                .ancestors()
                .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
                .map(Path::to_path_buf)
                .collect();
            std::fs::create_dir_all(dir).with_context(|| {
                format!("cannot create the store's directory {}", dir.display())
            })?;
        }
        let existed = std::fs::symlink_metadata(path).is_ok();
        check_header(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let opened = Connection::open_with_flags(integrity::literal(path), flags)
            .map_err(|e| integrity::explain(path, e.into()))
            .and_then(|conn| {
                let mut store = SqliteStore {
                    conn,
                    path: path.to_path_buf(),
                    checked: false,
                };
                match store.prepare() {
                    Ok(()) => Ok(store),
                    Err(e) => Err(integrity::explain_os(path, e, store.os_error())),
                }
            });
        if opened.is_err() && !existed {
            // A store that could not be made (a file-size limit, a full disk) leaves no empty
            // file behind to be mistaken for one, nor directories made for it.
            remove_unmade(path, &made);
        }
        opened
    }

    /// Opens the store for commands that only read (`runs`, `show`, `export`, ...): nothing is
    /// created or changed (but for the one-time upgrade of a store of an older schema), so a
    /// store this user may only read works, and a missing one reads as empty.
    pub fn open_read_only(path: &Path) -> Result<SqliteStore> {
        check_kind(path)?;
        let empty = std::fs::metadata(path)
            .map(|m| m.len() == 0)
            .unwrap_or(true);
        if empty {
            return SqliteStore::empty(path);
        }
        check_header(path)?;
        let conn = integrity::open_read_only(path)?;
        let store = SqliteStore {
            conn,
            path: path.to_path_buf(),
            checked: false,
        };
        match store.inspect().map_err(|e| integrity::explain(path, e))? {
            None => SqliteStore::empty(path),
            Some(v) if v == schema::current_version() => Ok(store),
            // Older: upgraded once, in place, as any opening for writing would.
            Some(v) => {
                drop(store);
                SqliteStore::open(path).with_context(|| {
                    format!(
                        "the store {} has schema version {v}, older than this osmeter's ({}); it \
                         is upgraded once before it is read, which needs write access to it",
                        path.display(),
                        schema::current_version()
                    )
                })
            }
        }
    }

    /// A store with no runs, in memory, named after `path` (which is not created).
    fn empty(path: &Path) -> Result<SqliteStore> {
        let mut store = SqliteStore {
            conn: Connection::open_in_memory()?,
            path: path.to_path_buf(),
            checked: false,
        };
        store.prepare()?;
        Ok(store)
    }

    /// Settles the connection and brings the schema up to date, refusing foreign or newer databases
    /// before writing anything to them.
    fn prepare(&mut self) -> Result<()> {
        // Concurrent writers wait for each other instead of failing at once, for a bounded
        // time that a signal cuts short.
        lock_wait::waiting_on(&self.path);
        self.conn.busy_handler(Some(lock_wait::busy))?;
        self.conn.pragma_update(None, "foreign_keys", "ON")?;
        let current = schema::current_version();
        if self.inspect()? == Some(current) {
            return Ok(());
        }
        // Empty or older: migrate under the write lock, checking again in case another process
        // migrated in between.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        integrity::check(&tx, &self.path)?;
        let version = match inspect_schema(&tx, &self.path)? {
            Some(v) => v,
            None => {
                tx.execute_batch(
                    "CREATE TABLE osmeter_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                )?;
                tx.execute(
                    "INSERT INTO osmeter_meta VALUES ('application', ?1)",
                    [APPLICATION],
                )?;
                tx.execute(
                    "INSERT INTO osmeter_meta VALUES ('schema_version', '0')",
                    [],
                )?;
                0
            }
        };
        for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(version as usize) {
            let to = i as i64 + 1;
            tx.execute_batch(sql)
                .and_then(|()| {
                    tx.execute_batch(schema::backend_indexes(to, schema::Backend::Sqlite))
                })
                .with_context(|| format!("migrating the store to version {to}"))?;
        }
        if version > 0 && version < schema::CLASS_SINCE {
            backfill(&tx, version)
                .with_context(|| format!("indexing the runs already in {}", self.path.display()))?;
        }
        tx.execute(
            "UPDATE osmeter_meta SET value = ?1 WHERE key = 'schema_version'",
            [current.to_string()],
        )?;
        tx.commit()?;
        // Only once the file is known to be ours: readers then never block the writer.
        self.use_wal()
    }

    /// Switches to write-ahead logging. The switch needs the file to itself, and SQLite reports a
    /// conflict between two connections switching at once as "locked" without waiting, so a
    /// freshly created store opened by several processes retries for as long as the busy timeout.
    fn use_wal(&self) -> Result<()> {
        let (since, signals) = (std::time::Instant::now(), crate::interrupt::received());
        loop {
            let mode = self
                .conn
                .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0));
            match mode {
                Ok(_) => return Ok(()),
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if matches!(
                        e.code,
                        rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                    ) && lock_wait::may_retry(since, signals) =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// SQLite's quick check of the whole file (every page read once), for a command about to
    /// measure for a long time before it saves: a damaged store is refused before, not after.
    /// Nothing is written.
    pub fn verify(&self) -> Result<()> {
        integrity::check(&self.conn, &self.path)
    }

    /// The system error number behind SQLite's last failure on this connection, if any.
    fn os_error(&self) -> Option<i32> {
        // SAFETY: the handle is valid for as long as the connection; the call only reads it.
        let errno = unsafe { rusqlite::ffi::sqlite3_system_errno(self.conn.handle()) };
        (errno != 0).then_some(errno)
    }

    fn inspect(&self) -> Result<Option<i64>> {
        inspect_schema(&self.conn, &self.path)
    }
}

fn insert_figures(tx: &Connection, run: &Run) -> Result<()> {
    let mut stmt =
        tx.prepare_cached("INSERT INTO figures VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")?;
    for f in schema::figure_rows(run) {
        stmt.execute(params![
            run.id,
            f.seq,
            f.key,
            f.group,
            f.unit,
            f.direction,
            f.value,
            f.ci_low,
            f.ci_high
        ])?;
    }
    Ok(())
}

/// Fills what migrations from `version` added from the stored documents, reading them one at a
/// time: the `figures` table (a store written before it existed), the columns of `runs` a
/// fleet's queries read, and the class of each run's machine.
fn backfill(tx: &Connection, version: i64) -> Result<()> {
    let mut docs = tx.prepare("SELECT run_id, document FROM documents")?;
    let mut rows = docs.query([])?;
    let mut fleet_columns =
        tx.prepare("UPDATE runs SET machine_id = ?2, busy = ?3, figures = ?4 WHERE id = ?1")?;
    let mut class = tx.prepare("UPDATE runs SET host_class = ?2 WHERE id = ?1")?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let document = row.get_ref(1)?.as_str()?;
        let host_class = if version < schema::FLEET_COLUMNS_SINCE {
            let run = super::read_document(&id, document)?;
            if version < schema::FIGURES_SINCE {
                insert_figures(tx, &run)?;
            }
            fleet_columns.execute(params![
                id,
                run.fingerprint.as_ref().and_then(|f| f.machine_id.clone()),
                i64::from(run.busy()),
                run.figures().len() as i64
            ])?;
            Some(run.class())
        } else {
            schema::class_of_document(document)
        };
        class.execute(params![id, host_class])?;
    }
    Ok(())
}

/// How SQLite writes what the two backends write differently (see [`schema::Dialect`]): a set
/// of ids is bound as one JSON array.
pub const DIALECT: schema::Dialect = schema::Dialect {
    placeholder: |n| format!("?{n}"),
    bytewise: "",
    one_of: |column, n| format!("{column} IN (SELECT value FROM json_each(?{n}))"),
};

/// The statement of [`Store::list`] and its arguments.
fn list_query(filter: &RunFilter) -> (String, Vec<String>) {
    schema::list_statement(filter, &DIALECT)
}

/// The schema version of an osmeter database, `None` for an empty one, an error for a database that
/// is someone else's or newer than this binary. Reads only.
fn inspect_schema(conn: &Connection, path: &Path) -> Result<Option<i64>> {
    let has_meta: bool = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'osmeter_meta'",
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )?;
    if !has_meta {
        // Anything at all (a table, a view, a trigger) or an id another program stamped in the
        // header makes the file someone else's.
        let objects: i64 =
            conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
        let app_id: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
        let user_version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if objects > 0 || app_id != 0 || user_version != 0 {
            bail!(
                "{} is a SQLite database but not osmeter's (left untouched); give another path with --store",
                path.display()
            );
        }
        return Ok(None);
    }
    let app: Option<String> = conn
        .query_row(
            "SELECT value FROM osmeter_meta WHERE key = 'application'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if app.as_deref() != Some(APPLICATION) {
        bail!(
            "{} is not an osmeter database (left untouched)",
            path.display()
        );
    }
    let v: Option<String> = conn
        .query_row(
            "SELECT value FROM osmeter_meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    // Only a damaged store or another tool's edit leaves the marker without a version; guessing
    // one could migrate it wrongly.
    let damaged = |what: String| {
        anyhow!(
            "{} is an osmeter store, but its osmeter_meta table {what}, so osmeter cannot tell \
             how to read it and leaves it untouched. If you edited it, put back what it held; \
             otherwise keep a copy, then copy what is readable into a new store with \
             `sqlite3 {} .dump | sqlite3 NEW.db` or move it aside to start afresh",
            path.display(),
            path.display()
        )
    };
    let v = v.ok_or_else(|| damaged("has no schema_version row".into()))?;
    let version = v
        .parse::<i64>()
        .map_err(|_| damaged(format!("holds schema_version {v:?}, not a number")))?;
    let current = schema::current_version();
    if version > current {
        bail!(
            "{} has schema version {version}, newer than this osmeter understands ({current}); \
             upgrade osmeter or use another store",
            path.display()
        );
    }
    // Migrating from a version no osmeter wrote would run the wrong steps on tables of another
    // version and stamp the result current.
    if version < 1 {
        return Err(damaged(format!(
            "holds schema_version {version}, a version no osmeter wrote (they run from 1 to \
             {current})"
        )));
    }
    Ok(Some(version))
}

impl Store for SqliteStore {
    fn save(&mut self, run: &Run) -> Result<bool> {
        lock_wait::waiting_on(&self.path);
        self.save_checked(run)
            .map_err(|e| integrity::explain_os(&self.path, e, self.os_error()))
    }

    fn list(&mut self, filter: &RunFilter) -> Result<Vec<RunInfo>> {
        self.list_rows(filter, true)
            .map_err(|e| integrity::explain(&self.path, e))
    }

    fn list_untagged(&mut self, filter: &RunFilter) -> Result<Vec<RunInfo>> {
        self.list_rows(filter, false)
            .map_err(|e| integrity::explain(&self.path, e))
    }

    fn load(&mut self, id: &str) -> Result<Option<Run>> {
        self.load_document(id)
            .map_err(|e| integrity::explain(&self.path, e))
    }

    fn load_many(&mut self, ids: &[&str]) -> Result<Vec<Option<Run>>> {
        self.load_documents(ids)
            .map_err(|e| integrity::explain(&self.path, e))
    }

    fn remove(&mut self, id: &str) -> Result<bool> {
        self.remove_checked(id)
            .map_err(|e| integrity::explain(&self.path, e))
    }

    fn ids(&mut self) -> Result<Vec<String>> {
        self.all_ids()
            .map_err(|e| integrity::explain(&self.path, e))
    }

    fn figure_values(&mut self, key: &str) -> Result<Vec<StoredFigure>> {
        self.figure_rows(key)
            .map_err(|e| integrity::explain(&self.path, e))
    }

    fn figure_values_of(&mut self, ids: &[&str]) -> Result<FiguresByKey> {
        self.figure_rows_of(ids)
            .map_err(|e| integrity::explain(&self.path, e))
    }

    fn figure_keys(&mut self) -> Result<Vec<String>> {
        self.distinct_figure_keys()
            .map_err(|e| integrity::explain(&self.path, e))
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

mod integrity;
mod lock_wait;
mod rows;
mod surroundings;
mod trust;

#[cfg(test)]
mod tests;
