//! The store's schema and its migrations, shared by SQLite and PostgreSQL (plain SQL both accept).
//! `runs` holds one narrow row per run (what lists and filters read), `documents` the whole run
//! document, `run_tags` and `figures` one row per tag and per figure for queries.

/// Marker proving a database is osmeter's, kept in `osmeter_meta`.
pub const APPLICATION: &str = "osmeter";

/// How a backend writes what differs between the two in the statements below.
pub struct Dialect {
    /// The n-th placeholder (from 1): `?1` or `$1`.
    pub placeholder: fn(usize) -> String,
    /// Put after a text column that is compared or ordered, so that times and ids compare byte
    /// by byte as the ordering indexes sort (PostgreSQL's `COLLATE "C"`; SQLite already does).
    pub bytewise: &'static str,
    /// The condition that a column holds one of the ids bound as the n-th argument, in one
    /// statement however many they are: SQLite reads them from a JSON array
    /// (`IN (SELECT value FROM json_each(?n))`), PostgreSQL from a text array (`= ANY($n)`).
    pub one_of: fn(&str, usize) -> String,
}

/// The tags of the runs whose ids are bound as argument 1 (see [`Dialect::one_of`]).
pub fn tags_statement(dialect: &Dialect) -> String {
    format!(
        "SELECT run_id, key, value FROM run_tags WHERE {}",
        (dialect.one_of)("run_id", 1)
    )
}

/// The documents of the runs whose ids are bound as argument 1, in any order.
pub fn documents_statement(dialect: &Dialect) -> String {
    format!(
        "SELECT run_id, document FROM documents WHERE {}",
        (dialect.one_of)("run_id", 1)
    )
}

/// The value of every figure of the runs whose ids are bound as argument 1, in one statement (a
/// fleet's view reads those of the runs it lists, not every stored value of every figure). Each
/// run's figures come in the order the run states them, as the primary key `(run_id, seq)` that
/// serves the statement keeps them.
pub fn figures_of_runs_statement(dialect: &Dialect) -> String {
    format!(
        "SELECT run_id, key, unit, direction, value, ci_low, ci_high FROM figures WHERE {} \
         ORDER BY run_id, seq",
        (dialect.one_of)("run_id", 1)
    )
}

/// The statement of `Store::list` and its arguments, in `dialect`: the narrow `runs` rows that
/// the filter keeps, newest placed first.
pub fn list_statement(filter: &super::RunFilter, dialect: &Dialect) -> (String, Vec<String>) {
    let ph = dialect.placeholder;
    let c = dialect.bytewise;
    let mut sql = String::from(
        "SELECT r.id, r.kind, r.started_at, r.host, r.suite, r.tool_version, r.interrupted,
                r.figures, r.received_at, r.clock_offset, r.placed_at, r.machine_id, r.busy,
                r.host_class
         FROM runs r WHERE 1 = 1",
    );
    let mut args: Vec<String> = Vec::new();
    if let Some(h) = &filter.host {
        args.push(h.clone());
        sql.push_str(&format!(" AND r.host = {}", ph(args.len())));
    }
    if let Some(s) = &filter.suite {
        args.push(s.clone());
        sql.push_str(&format!(" AND r.suite = {}", ph(args.len())));
    }
    if let Some(s) = &filter.since {
        args.push(s.clone());
        sql.push_str(&format!(" AND r.placed_at{c} >= {}", ph(args.len())));
    }
    for (k, v) in &filter.tags {
        args.push(k.clone());
        args.push(v.clone());
        sql.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = r.id AND t.key = {} AND t.value = {})",
            ph(args.len() - 1),
            ph(args.len())
        ));
    }
    sql.push_str(&format!(" ORDER BY r.placed_at{c} DESC, r.id{c} DESC"));
    (sql, args)
}

/// Migrations in order; migration i takes the schema from version i to i + 1.
pub const MIGRATIONS: &[&str] = &[
    // 0 -> 1: runs with their document, tags, and per-measurement rows for queries.
    "CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        started_at TEXT NOT NULL,
        host TEXT,
        suite TEXT,
        tool_version TEXT NOT NULL,
        interrupted INTEGER NOT NULL,
        document TEXT NOT NULL
    );
    CREATE INDEX runs_started_at ON runs (started_at);
    CREATE TABLE run_tags (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE TABLE measurements (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        probe TEXT NOT NULL,
        params TEXT NOT NULL,
        unit TEXT NOT NULL,
        status TEXT NOT NULL,
        median DOUBLE PRECISION,
        ci_low DOUBLE PRECISION,
        ci_high DOUBLE PRECISION,
        cv DOUBLE PRECISION,
        PRIMARY KEY (run_id, seq)
    );
    CREATE INDEX measurements_probe ON measurements (probe);",
    // 1 -> 2: one row per figure of every kind of run (filled from the stored documents by
    // `FIGURES_SINCE`), for listing and for queries over a fleet.
    "CREATE TABLE figures (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        key TEXT NOT NULL,
        grp TEXT NOT NULL,
        unit TEXT NOT NULL,
        direction TEXT NOT NULL,
        value DOUBLE PRECISION NOT NULL,
        ci_low DOUBLE PRECISION,
        ci_high DOUBLE PRECISION,
        PRIMARY KEY (run_id, seq)
    );
    CREATE INDEX figures_key ON figures (key);",
    // 2 -> 3: what a fleet's questions filter and order by, without reading documents: when the
    // store received each run and how far the host's clock was off then, the place in time that
    // follows from both, the machine id beside the host name, whether the machine was busy, and
    // how many figures the run states. Filled from the stored documents by `FLEET_COLUMNS_SINCE`;
    // the indexes that order by time are each backend's own (`backend_indexes`).
    "ALTER TABLE runs ADD COLUMN received_at TEXT;
    ALTER TABLE runs ADD COLUMN clock_offset DOUBLE PRECISION;
    ALTER TABLE runs ADD COLUMN placed_at TEXT;
    ALTER TABLE runs ADD COLUMN machine_id TEXT;
    ALTER TABLE runs ADD COLUMN busy INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN figures INTEGER NOT NULL DEFAULT 0;
    UPDATE runs SET placed_at = started_at;
    CREATE INDEX run_tags_key_value ON run_tags (key, value);",
    // 3 -> 4: the run documents in a table of their own. A quick suite's document is some 200 KiB;
    // in SQLite every column after it in a row is reached only by walking the document's overflow
    // pages, so listing ten thousand runs read gigabytes. `runs` keeps what lists and filters need.
    "CREATE TABLE documents (
        run_id TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
        document TEXT NOT NULL
    );
    INSERT INTO documents (run_id, document) SELECT id, document FROM runs;
    ALTER TABLE runs DROP COLUMN document;",
    // 4 -> 5: the class of the run's machine (see `Run::class`), so that a fleet's view sorts its
    // hosts into classes from the listing, without reading a document per host. Filled from the
    // stored documents (`CLASS_SINCE`); left empty where a document is not even JSON, and such
    // a run's class is then read from its document when it is needed, as before. SQLite also
    // gains an index that serves `figures_of_runs_statement` (`backend_indexes`).
    "ALTER TABLE runs ADD COLUMN host_class TEXT;",
];

/// The version that added the columns of migration 2 -> 3: a store migrated from below it fills
/// `machine_id`, `busy` and `figures` from the documents it holds (`received_at` and
/// `clock_offset` stay unknown, and such runs are placed at their host's start time).
pub const FLEET_COLUMNS_SINCE: i64 = 3;

/// The version that added `runs.host_class`: a store migrated from below it fills the column
/// from the documents it holds.
pub const CLASS_SINCE: i64 = 5;

/// The class of the machine that took a stored run (see [`Run::class`]), from its document's
/// fingerprint alone: the rest of the document (some 200 KiB) is skipped, not built, so that
/// upgrading a fleet's store reads ten thousand documents in seconds. `None` for a document
/// that cannot be read.
///
/// [`Run::class`]: crate::results::model::Run::class
pub fn class_of_document(document: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Head {
        fingerprint: Option<crate::results::fingerprint::Fingerprint>,
    }
    let head: Head = serde_json::from_str(document).ok()?;
    Some(crate::results::model::machine_class(
        head.fingerprint.as_ref(),
    ))
}

/// Which database a statement is for, where the two differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Indexes of migration `version - 1 -> version` that differ between the backends: those that
/// must sort as the queries do, byte by byte, which is SQLite's default and, in PostgreSQL,
/// `COLLATE "C"` whatever the server's locale (an index in another collation cannot serve those
/// queries); and those only one backend gains from.
pub fn backend_indexes(version: i64, backend: Backend) -> &'static str {
    match (version, backend) {
        (3, Backend::Sqlite) => {
            "CREATE INDEX runs_placed_at ON runs (placed_at);
             CREATE INDEX runs_host_placed_at ON runs (host, placed_at);"
        }
        (3, Backend::Postgres) => {
            "CREATE INDEX runs_placed_at ON runs (placed_at COLLATE \"C\");
             CREATE INDEX runs_host_placed_at ON runs (host, placed_at COLLATE \"C\");"
        }
        // Every column `figures_of_runs_statement` reads, in its order: SQLite then reads a run's
        // values from the index alone instead of looking up each row in the table, which halves
        // the statement on ten thousand runs. PostgreSQL keeps a run's rows together in the
        // table already, and gains nothing from it.
        (5, Backend::Sqlite) => {
            "CREATE INDEX figures_run_values
                 ON figures (run_id, seq, key, unit, direction, value, ci_low, ci_high);"
        }
        _ => "",
    }
}

/// How far a host's clock may be from the store's before its start times are not trusted to
/// place its runs among other hosts' (a run is then placed by the store's clock instead).
pub const CLOCK_TOLERANCE_S: f64 = 300.0;

/// Where a run stands in time, as the store saw it: its host's start time, or, when the host's
/// clock was off by more than [`CLOCK_TOLERANCE_S`] at saving (`offset`: host minus store,
/// seconds), that start time moved onto the store's clock.
pub fn placed_at(started_at: &str, offset: Option<f64>) -> String {
    match (offset, crate::clock::parse_stamp(started_at)) {
        (Some(off), Some(start)) if off.abs() > CLOCK_TOLERANCE_S => {
            crate::clock::rfc3339(start - off.round() as i64)
        }
        _ => started_at.to_string(),
    }
}

/// The columns of `runs` a save fills beside the document.
pub struct RunColumns {
    pub received_at: String,
    pub clock_offset: Option<f64>,
    pub placed_at: String,
    pub machine_id: Option<String>,
    pub busy: bool,
    pub figures: i64,
    pub host_class: String,
}

impl RunColumns {
    /// `store_now` and `host_now`: seconds since the epoch on the store's and this host's clocks.
    pub fn of(run: &crate::results::model::Run, store_now: f64, host_now: f64) -> RunColumns {
        let offset = host_now - store_now;
        RunColumns {
            received_at: crate::clock::rfc3339(store_now.floor() as i64),
            clock_offset: Some(offset),
            placed_at: placed_at(&run.started_at, Some(offset)),
            machine_id: run.fingerprint.as_ref().and_then(|f| f.machine_id.clone()),
            busy: run.busy(),
            figures: run.figures().len() as i64,
            host_class: run.class(),
        }
    }
}

/// This host's clock, in seconds since the epoch.
pub fn host_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The version that added the `figures` table: a store migrated from below it fills the table
/// from the documents it already holds.
pub const FIGURES_SINCE: i64 = 2;

/// One row of the `figures` table.
pub struct FigureRow {
    pub seq: i32,
    pub key: String,
    pub group: String,
    pub unit: &'static str,
    pub direction: &'static str,
    pub value: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

/// How the `figures` table writes a figure's direction.
pub fn direction_text(direction: crate::results::figure::Direction) -> &'static str {
    use crate::results::figure::Direction;
    match direction {
        Direction::Lower => "lower",
        Direction::Higher => "higher",
    }
}

/// The rows of a run's figures.
pub fn figure_rows(run: &crate::results::model::Run) -> Vec<FigureRow> {
    run.figures()
        .into_iter()
        .zip(0..)
        .map(|(f, seq)| FigureRow {
            seq,
            unit: f.unit.symbol(),
            direction: direction_text(f.direction),
            value: f.value,
            ci_low: f.interval.map(|i| i[0]),
            ci_high: f.interval.map(|i| i[1]),
            key: f.key,
            group: f.group,
        })
        .collect()
}

/// Schema version this binary writes.
pub fn current_version() -> i64 {
    MIGRATIONS.len() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_moved_onto_the_stores_clock_only_past_the_tolerance() {
        let start = "2026-11-01T15:00:00Z";
        // Five hours ahead: the run started at 10:00 by the store's clock.
        assert_eq!(placed_at(start, Some(5.0 * 3600.0)), "2026-11-01T10:00:00Z");
        // Ninety minutes behind, across midnight.
        assert_eq!(
            placed_at("2026-11-01T23:30:00Z", Some(-5400.0)),
            "2026-11-02T01:00:00Z"
        );
        // Within the tolerance, unknown, or a start that is no time: the host's own start.
        assert_eq!(placed_at(start, Some(CLOCK_TOLERANCE_S)), start);
        assert_eq!(placed_at(start, Some(-100.0)), start);
        assert_eq!(placed_at(start, None), start);
        assert_eq!(placed_at("whenever", Some(1e6)), "whenever");
    }

    #[test]
    fn the_columns_of_a_save_say_how_far_the_host_was_off() {
        let mut run = crate::results::model::Run::new("r".into(), "2026-11-01T15:00:00Z".into());
        run.fingerprint = Some(crate::results::fingerprint::Fingerprint {
            machine_id: Some("0011223344556677".into()),
            ..Default::default()
        });
        // The store's clock at 2026-11-01T10:00:30.7Z, the host's five hours and a second ahead.
        let store_now = 1_793_527_230.7;
        let cols = RunColumns::of(&run, store_now, store_now + 18_001.0);
        assert_eq!(cols.received_at, "2026-11-01T10:00:30Z");
        assert!((cols.clock_offset.unwrap() - 18_001.0).abs() < 1e-6);
        assert_eq!(cols.placed_at, "2026-11-01T09:59:59Z");
        assert_eq!(cols.machine_id.as_deref(), Some("0011223344556677"));
        assert_eq!((cols.busy, cols.figures), (false, 0));
        assert_eq!(cols.host_class, "? x? | ? | ?");
    }
}
