//! The PostgreSQL store, where a fleet meets: the same tables, versions and refusals as the SQLite
//! store, with server-side locking so any number of hosts can write at once.

mod pgpass;
mod target;
pub mod tls;
mod waits;

use super::schema::{self, APPLICATION};
use super::{FiguresByKey, RunFilter, RunInfo, Store, StoredFigure};
use crate::results::model::Run;
use ::postgres::error::SqlState;
use ::postgres::types::ToSql;
use ::postgres::{Client, GenericClient};
use anyhow::{anyhow, bail, Context, Result};
use std::collections::BTreeMap;
pub use target::Target;

/// Key of the transaction-scoped advisory lock taken while creating or migrating the tables, so two
/// hosts starting at once on an empty database do not both try ("osmeter" in ASCII).
const MIGRATION_LOCK: i64 = 0x006f_736d_6574_6572;

pub struct PostgresStore {
    client: Client,
    target: Target,
}

/// Checks the URL's syntax without connecting; the error never repeats the URL.
pub fn check_url(url: &str) -> Result<Target> {
    target::parse(url).map(|(_, t)| t)
}

impl PostgresStore {
    pub fn open(url: &str) -> Result<PostgresStore> {
        let (config, target) = target::parse(url)?;
        let mut client = target::connect(&config, &target)?;
        waits::set_timeouts(&mut client, config.get_options())
            .with_context(|| format!("setting the session's timeouts on {}", target.describe()))?;
        let mut store = PostgresStore { client, target };
        store.prepare()?;
        Ok(store)
    }

    /// Brings the schema up to date, refusing foreign or newer databases before writing anything.
    fn prepare(&mut self) -> Result<()> {
        let current = schema::current_version();
        let where_ = self.target.describe();
        if inspect_schema(&mut self.client, &where_)? == Some(current) {
            return Ok(());
        }
        let mut tx = self.client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        // Again under the lock: another host may have migrated while this one waited.
        let version = match inspect_schema(&mut tx, &where_)? {
            Some(v) => v,
            None => {
                tx.batch_execute(
                    "CREATE TABLE osmeter_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                )
                .map_err(|e| explain_create(e, &self.target))?;
                tx.execute(
                    "INSERT INTO osmeter_meta VALUES ('application', $1), ('schema_version', '0')",
                    &[&APPLICATION],
                )?;
                0
            }
        };
        for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(version as usize) {
            let to = i as i64 + 1;
            tx.batch_execute(sql)
                .and_then(|()| {
                    tx.batch_execute(schema::backend_indexes(to, schema::Backend::Postgres))
                })
                .map_err(|e| explain_create(e, &self.target))
                .with_context(|| format!("migrating {where_} to schema version {to}"))?;
        }
        if version > 0 && version < schema::CLASS_SINCE {
            backfill(&mut tx, version, &where_)?;
        }
        tx.execute(
            "UPDATE osmeter_meta SET value = $1 WHERE key = 'schema_version'",
            &[&current.to_string()],
        )?;
        tx.commit()
            .with_context(|| format!("creating osmeter's tables in {where_}"))?;
        Ok(())
    }
}

/// Runs whose documents one statement of the upgrade reads at a time: each is some 200 KiB.
const BACKFILL_CHUNK: usize = 100;

/// Fills what migrations from `version` added from the stored documents, a chunk at a time (see
/// the SQLite store's twin).
fn backfill(tx: &mut ::postgres::Transaction, version: i64, where_: &str) -> Result<()> {
    let ids: Vec<String> = tx
        .query("SELECT run_id FROM documents", &[])?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let docs = schema::documents_statement(&DIALECT);
    for chunk in ids.chunks(BACKFILL_CHUNK) {
        for row in tx.query(&docs, &[&chunk])? {
            let (id, document): (&str, &str) = (row.get(0), row.get(1));
            let host_class = if version < schema::FLEET_COLUMNS_SINCE {
                let run =
                    super::read_document(id, document).with_context(|| format!("in {where_}"))?;
                if version < schema::FIGURES_SINCE {
                    insert_figures(tx, &run)?;
                }
                tx.execute(
                    "UPDATE runs SET machine_id = $2, busy = $3, figures = $4 WHERE id = $1",
                    &[
                        &id,
                        &run.fingerprint.as_ref().and_then(|f| f.machine_id.clone()),
                        &i32::from(run.busy()),
                        &(run.figures().len() as i32),
                    ],
                )?;
                Some(run.class())
            } else {
                schema::class_of_document(document)
            };
            tx.execute(
                "UPDATE runs SET host_class = $2 WHERE id = $1",
                &[&id, &host_class],
            )?;
        }
    }
    Ok(())
}

/// Most likely cause of a failed CREATE: the user may not create tables in the schema.
fn explain_create(e: ::postgres::Error, target: &Target) -> anyhow::Error {
    if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
        anyhow!(
            "user {:?} may not create tables in database {:?} on {} ({}); make the user the \
             database's owner, or GRANT CREATE ON SCHEMA public TO {}",
            target.user,
            target.dbname,
            target.server,
            e.as_db_error()
                .map(|d| d.message())
                .unwrap_or("permission denied"),
            target.user
        )
    } else {
        anyhow::Error::new(e)
    }
}

/// The schema version of an osmeter database, `None` for an empty one, an error for a database that
/// is someone else's or newer than this binary. Reads only; looks at the schema that unqualified
/// names resolve to (normally `public`, or the one set with `options=-csearch_path=...`).
fn inspect_schema(c: &mut impl GenericClient, where_: &str) -> Result<Option<i64>> {
    // One statement, so one snapshot: another host committing its tables meanwhile is seen either
    // entirely or not at all, never as "tables but no osmeter_meta".
    let row = c.query_one(
        "SELECT count(*) FILTER (WHERE c.relname = 'osmeter_meta'), count(*)
         FROM pg_catalog.pg_class c
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
        &[],
    )?;
    let (has_meta, tables): (i64, i64) = (row.get(0), row.get(1));
    if has_meta == 0 {
        if tables > 0 {
            bail!(
                "{where_} already holds tables that are not osmeter's (left untouched); give \
                 osmeter a database of its own, or a schema of its own with \
                 ?options=-csearch_path%3DSCHEMA in the URL"
            );
        }
        return Ok(None);
    }
    let app: Option<String> = c
        .query_opt(
            "SELECT value FROM osmeter_meta WHERE key = 'application'",
            &[],
        )?
        .map(|r| r.get(0));
    if app.as_deref() != Some(APPLICATION) {
        bail!("{where_} is not an osmeter database (left untouched)");
    }
    let v: String = c
        .query_opt(
            "SELECT value FROM osmeter_meta WHERE key = 'schema_version'",
            &[],
        )?
        .map(|r| r.get(0))
        .ok_or_else(|| {
            anyhow!(
                "{where_} is an osmeter store, but its osmeter_meta table has no schema_version \
                 row, so osmeter cannot tell how to read it and leaves it untouched; put the row \
                 back if it was edited, or give another database"
            )
        })?;
    let version = v
        .parse::<i64>()
        .map_err(|_| anyhow!("bad schema_version {v:?} in {where_}"))?;
    let current = schema::current_version();
    if version > current {
        bail!(
            "{where_} has schema version {version}, newer than this osmeter understands \
             ({current}); upgrade osmeter or use another store"
        );
    }
    // Migrating from a version no osmeter wrote would run the wrong steps on tables of another
    // version and stamp the result current.
    if version < 1 {
        bail!(
            "{where_} is an osmeter store, but its osmeter_meta table holds schema_version \
             {version}, a version no osmeter wrote (they run from 1 to {current}), so osmeter \
             cannot tell how to read it and leaves it untouched; put back the version its tables \
             belong to if it was edited, or give another database"
        );
    }
    Ok(Some(version))
}

impl Store for PostgresStore {
    fn save(&mut self, run: &Run) -> Result<bool> {
        let (saved, by_signal) = waits::cancelled_by_signals(&mut self.client, |c| save_in(c, run));
        saved.map_err(
            |e| match waits::explain(&e, by_signal, &self.target.server) {
                Some(why) => anyhow!("{why}"),
                None => e,
            },
        )
    }

    fn list(&mut self, filter: &RunFilter) -> Result<Vec<RunInfo>> {
        let mut out = self.list_untagged(filter)?;
        let ids: Vec<&str> = out.iter().map(|r| r.id.as_str()).collect();
        let tags: Vec<(String, String, String)> = self
            .client
            .query(&schema::tags_statement(&DIALECT), &[&ids])?
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2)))
            .collect();
        super::attach_tags(&mut out, tags);
        Ok(out)
    }

    fn list_untagged(&mut self, filter: &RunFilter) -> Result<Vec<RunInfo>> {
        let (sql, texts) = list_statement(filter);
        let args: Vec<&(dyn ToSql + Sync)> =
            texts.iter().map(|t| t as &(dyn ToSql + Sync)).collect();
        Ok(self
            .client
            .query(&sql, &args)?
            .iter()
            .map(|r| RunInfo {
                id: r.get(0),
                kind: r.get(1),
                started_at: r.get(2),
                host: r.get(3),
                suite: r.get(4),
                tool_version: r.get(5),
                interrupted: r.get::<_, i32>(6) != 0,
                figures: r.get::<_, i32>(7) as usize,
                received_at: r.get(8),
                clock_offset: r.get(9),
                placed_at: r.get(10),
                machine_id: r.get(11),
                busy: r.get::<_, i32>(12) != 0,
                host_class: r.get(13),
                tags: BTreeMap::new(),
            })
            .collect())
    }

    fn load(&mut self, id: &str) -> Result<Option<Run>> {
        let doc: Option<String> = self
            .client
            .query_opt("SELECT document FROM documents WHERE run_id = $1", &[&id])?
            .map(|r| r.get(0));
        doc.map(|d| super::read_document(id, &d)).transpose()
    }

    fn load_many(&mut self, ids: &[&str]) -> Result<Vec<Option<Run>>> {
        let found = self
            .client
            .query(&schema::documents_statement(&DIALECT), &[&ids])?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        super::documents_in_order(ids, found)
    }

    fn remove(&mut self, id: &str) -> Result<bool> {
        Ok(self
            .client
            .execute("DELETE FROM runs WHERE id = $1", &[&id])?
            > 0)
    }

    fn ids(&mut self) -> Result<Vec<String>> {
        Ok(self
            .client
            .query(
                "SELECT id FROM runs ORDER BY placed_at COLLATE \"C\" DESC, id COLLATE \"C\" DESC",
                &[],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn figure_values(&mut self, key: &str) -> Result<Vec<StoredFigure>> {
        self.client
            .query(
                "SELECT run_id, unit, direction, value, ci_low, ci_high FROM figures WHERE key = $1",
                &[&key],
            )?
            .iter()
            .try_fold(Vec::new(), |mut out: Vec<StoredFigure>, r| {
                let figure = StoredFigure::from_row(
                    r.get(0),
                    r.get(1),
                    r.get(2),
                    r.get(3),
                    (r.get(4), r.get(5)),
                    out.last(),
                )?;
                out.push(figure);
                Ok(out)
            })
    }

    fn figure_values_of(&mut self, ids: &[&str]) -> Result<FiguresByKey> {
        use ::postgres::fallible_iterator::FallibleIterator;
        // Filed as the rows arrive, while the server still sends the rest.
        let mut rows = self.client.query_raw(
            &schema::figures_of_runs_statement(&DIALECT),
            [&ids as &(dyn ToSql + Sync)],
        )?;
        let mut filing = super::values::Filing::new(ids);
        while let Some(r) = rows.next()? {
            let text = |i| r.get::<_, TextBytes>(i).0;
            filing.file((
                text(0),
                text(1),
                text(2),
                text(3),
                r.get(4),
                (r.get(5), r.get(6)),
            ))?;
        }
        Ok(filing.finish())
    }

    fn figure_keys(&mut self) -> Result<Vec<String>> {
        Ok(self
            .client
            .query("SELECT DISTINCT key FROM figures", &[])?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn describe(&self) -> String {
        self.target.describe()
    }
}

/// A text column's bytes as the server sent them, not yet checked to be UTF-8: the filing of a
/// fleet's values checks only the text it has not met before.
struct TextBytes<'a>(&'a [u8]);

impl<'a> ::postgres::types::FromSql<'a> for TextBytes<'a> {
    fn from_sql(
        _: &::postgres::types::Type,
        raw: &'a [u8],
    ) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(TextBytes(raw))
    }

    fn accepts(ty: &::postgres::types::Type) -> bool {
        <&str as ::postgres::types::FromSql>::accepts(ty)
    }
}

/// The statement of [`Store::list`] and its arguments (public for the tests that check its plan).
/// COLLATE "C": times and ids compare byte by byte, as in SQLite, whatever the server's locale,
/// and as the ordering indexes sort.
pub fn list_statement(filter: &RunFilter) -> (String, Vec<String>) {
    schema::list_statement(filter, &DIALECT)
}

/// How PostgreSQL writes what the two backends write differently (see [`schema::Dialect`]): a
/// set of ids is bound as one text array.
pub const DIALECT: schema::Dialect = schema::Dialect {
    placeholder: |n| format!("${n}"),
    bytewise: " COLLATE \"C\"",
    one_of: |column, n| format!("{column} = ANY(${n})"),
};

/// The figures of one run, in one `unnest` insert.
fn insert_figures(tx: &mut impl GenericClient, run: &Run) -> Result<()> {
    let rows = schema::figure_rows(run);
    let seq: Vec<i32> = rows.iter().map(|f| f.seq).collect();
    let key: Vec<&str> = rows.iter().map(|f| f.key.as_str()).collect();
    let grp: Vec<&str> = rows.iter().map(|f| f.group.as_str()).collect();
    let unit: Vec<&str> = rows.iter().map(|f| f.unit).collect();
    let direction: Vec<&str> = rows.iter().map(|f| f.direction).collect();
    let value: Vec<f64> = rows.iter().map(|f| f.value).collect();
    let ci_low: Vec<Option<f64>> = rows.iter().map(|f| f.ci_low).collect();
    let ci_high: Vec<Option<f64>> = rows.iter().map(|f| f.ci_high).collect();
    tx.execute(
        "INSERT INTO figures (run_id, seq, key, grp, unit, direction, value, ci_low, ci_high)
         SELECT $1, seq, key, grp, unit, direction, value, ci_low, ci_high
         FROM unnest($2::int4[], $3::text[], $4::text[], $5::text[], $6::text[], $7::float8[],
                     $8::float8[], $9::float8[])
              AS f (seq, key, grp, unit, direction, value, ci_low, ci_high)",
        &[
            &run.id, &seq, &key, &grp, &unit, &direction, &value, &ci_low, &ci_high,
        ],
    )?;
    Ok(())
}

/// The measurements of one run, column by column, for one `unnest` insert.
#[derive(Default)]
struct MeasurementColumns {
    seq: Vec<i32>,
    probe: Vec<String>,
    params: Vec<String>,
    unit: Vec<String>,
    status: Vec<String>,
    median: Vec<Option<f64>>,
    ci_low: Vec<Option<f64>>,
    ci_high: Vec<Option<f64>>,
    cv: Vec<Option<f64>>,
}

/// Saves a run in one transaction (see [`Store::save`]).
fn save_in(client: &mut Client, run: &Run) -> Result<bool> {
    let document = serde_json::to_string(run)?;
    let mut tx = client.transaction()?;
    // The server's clock beside this host's, read together: their difference is how far this
    // host's clock is off (the round trip, well under the tolerance, aside).
    let server_now: f64 = tx
        .query_one("SELECT extract(epoch FROM clock_timestamp())::float8", &[])?
        .get(0);
    let cols = schema::RunColumns::of(run, server_now, schema::host_now());
    // A concurrent save of the same id waits here for the other to commit, then inserts nothing.
    let inserted = tx.execute(
        "INSERT INTO runs (id, kind, started_at, host, suite, tool_version, interrupted,
                           received_at, clock_offset, placed_at, machine_id, busy, figures,
                           host_class)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
         ON CONFLICT (id) DO NOTHING",
        &[
            &run.id,
            &run.kind().as_str(),
            &run.started_at,
            &run.host(),
            &run.suite,
            &run.tool_version,
            &i32::from(run.interrupted),
            &cols.received_at,
            &cols.clock_offset,
            &cols.placed_at,
            &cols.machine_id,
            &i32::from(cols.busy),
            &(cols.figures as i32),
            &cols.host_class,
        ],
    )?;
    if inserted == 0 {
        return Ok(false); // dropping the transaction rolls it back
    }
    tx.execute(
        "INSERT INTO documents (run_id, document) VALUES ($1, $2)",
        &[&run.id, &document],
    )?;
    // One statement per table rather than one per row: a fleet's server may be far away.
    let (keys, values): (Vec<&str>, Vec<&str>) = run
        .tags
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .unzip();
    tx.execute(
        "INSERT INTO run_tags (run_id, key, value)
         SELECT $1, k, v FROM unnest($2::text[], $3::text[]) AS t (k, v)",
        &[&run.id, &keys, &values],
    )?;
    let mut cols = MeasurementColumns::default();
    for (seq, m) in run.measurements.iter().enumerate() {
        let s = m.summary.as_ref();
        cols.seq
            .push(i32::try_from(seq).context("too many measurements in one run")?);
        cols.probe.push(m.probe.clone());
        cols.params.push(serde_json::to_string(&m.params)?);
        cols.unit.push(m.unit.symbol().to_string());
        cols.status.push(
            serde_json::to_value(m.status)?
                .as_str()
                .unwrap_or("?")
                .to_string(),
        );
        cols.median.push(s.map(|s| s.median));
        cols.ci_low.push(s.map(|s| s.ci95[0]));
        cols.ci_high.push(s.map(|s| s.ci95[1]));
        cols.cv.push(s.map(|s| s.cv));
    }
    let args: [&(dyn ToSql + Sync); 10] = [
        &run.id,
        &cols.seq,
        &cols.probe,
        &cols.params,
        &cols.unit,
        &cols.status,
        &cols.median,
        &cols.ci_low,
        &cols.ci_high,
        &cols.cv,
    ];
    tx.execute(
        "INSERT INTO measurements
             (run_id, seq, probe, params, unit, status, median, ci_low, ci_high, cv)
         SELECT $1, seq, probe, params, unit, status, median, ci_low, ci_high, cv
         FROM unnest($2::int4[], $3::text[], $4::text[], $5::text[], $6::text[],
                     $7::float8[], $8::float8[], $9::float8[], $10::float8[])
              AS m (seq, probe, params, unit, status, median, ci_low, ci_high, cv)",
        &args,
    )?;
    insert_figures(&mut tx, run)?;
    tx.commit()?;
    Ok(true)
}
