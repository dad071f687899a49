//! The store's schema and its migrations, shared by SQLite and PostgreSQL (plain SQL both accept).

/// Marker proving a database is osmeter's, kept in `osmeter_meta`.
pub const APPLICATION: &str = "osmeter";

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
];

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

/// The rows of a run's figures.
pub fn figure_rows(run: &crate::results::model::Run) -> Vec<FigureRow> {
    use crate::results::figure::Direction;
    run.figures()
        .into_iter()
        .zip(0..)
        .map(|(f, seq)| FigureRow {
            seq,
            unit: f.unit.symbol(),
            direction: match f.direction {
                Direction::Lower => "lower",
                Direction::Higher => "higher",
            },
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
