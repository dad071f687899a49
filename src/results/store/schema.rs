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
];

/// Schema version this binary writes.
pub fn current_version() -> i64 {
    MIGRATIONS.len() as i64
}
