//! The store's rows read and written: a run saved with its figures and tags under the write lock,
//! runs listed, loaded and removed, figures read by key or by run.

use super::*;

impl SqliteStore {
    /// Saves under the write lock, after checking the file (once per connection): a damaged store
    /// is never written to.
    pub(super) fn save_checked(&mut self, run: &Run) -> Result<bool> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        if !self.checked {
            integrity::check(&tx, &self.path)?;
            self.checked = true;
        }
        let exists: bool = tx
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [&run.id], |_| Ok(()))
            .optional()?
            .is_some();
        if exists {
            return Ok(false);
        }
        // The store's clock is this host's: the offset is nil, and kept so that the run reads
        // the same as one a server received.
        let now = schema::host_now();
        let cols = schema::RunColumns::of(run, now, now);
        tx.execute(
            "INSERT INTO runs (id, kind, started_at, host, suite, tool_version, interrupted,
                               received_at, clock_offset, placed_at, machine_id, busy, figures,
                               host_class)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                run.id,
                run.kind().as_str(),
                run.started_at,
                run.host(),
                run.suite,
                run.tool_version,
                run.interrupted as i64,
                cols.received_at,
                cols.clock_offset,
                cols.placed_at,
                cols.machine_id,
                i64::from(cols.busy),
                cols.figures,
                cols.host_class,
            ],
        )?;
        tx.execute(
            "INSERT INTO documents (run_id, document) VALUES (?1, ?2)",
            params![run.id, serde_json::to_string(run)?],
        )?;
        for (k, v) in &run.tags {
            tx.execute(
                "INSERT INTO run_tags VALUES (?1, ?2, ?3)",
                params![run.id, k, v],
            )?;
        }
        for (seq, m) in run.measurements.iter().enumerate() {
            let s = m.summary.as_ref();
            tx.execute(
                "INSERT INTO measurements VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    run.id,
                    seq as i64,
                    m.probe,
                    serde_json::to_string(&m.params)?,
                    m.unit.symbol(),
                    serde_json::to_value(m.status)?.as_str().unwrap_or("?"),
                    s.map(|s| s.median),
                    s.map(|s| s.ci95[0]),
                    s.map(|s| s.ci95[1]),
                    s.map(|s| s.cv),
                ],
            )?;
        }
        insert_figures(&tx, run)?;
        tx.commit()?;
        Ok(true)
    }

    pub(super) fn list_rows(&mut self, filter: &RunFilter, tagged: bool) -> Result<Vec<RunInfo>> {
        let (sql, args) = list_query(filter);
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args.iter()), |r| {
            Ok(RunInfo {
                id: r.get(0)?,
                kind: r.get(1)?,
                started_at: r.get(2)?,
                host: r.get(3)?,
                suite: r.get(4)?,
                tool_version: r.get(5)?,
                interrupted: r.get::<_, i64>(6)? != 0,
                figures: r.get::<_, i64>(7)? as usize,
                received_at: r.get(8)?,
                clock_offset: r.get(9)?,
                placed_at: r.get(10)?,
                machine_id: r.get(11)?,
                busy: r.get::<_, i64>(12)? != 0,
                host_class: r.get(13)?,
                tags: BTreeMap::new(),
            })
        })?;
        let mut out = rows.collect::<rusqlite::Result<Vec<_>>>()?;
        if !tagged {
            return Ok(out);
        }
        // The tags of every listed run in one statement (the ids as one JSON array), rather than
        // one statement per run.
        let ids: Vec<&str> = out.iter().map(|r| r.id.as_str()).collect();
        let mut tag_stmt = self.conn.prepare(&schema::tags_statement(&DIALECT))?;
        let tags = tag_stmt
            .query_map([serde_json::to_string(&ids)?], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        crate::store::attach_tags(&mut out, tags);
        Ok(out)
    }

    pub(super) fn remove_checked(&mut self, id: &str) -> Result<bool> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        integrity::check(&tx, &self.path)?;
        let n = tx.execute("DELETE FROM runs WHERE id = ?1", [id])?;
        tx.commit()?;
        Ok(n > 0)
    }

    pub(super) fn figure_rows(&mut self, key: &str) -> Result<Vec<StoredFigure>> {
        let mut stmt = self.conn.prepare(
            "SELECT run_id, unit, direction, value, ci_low, ci_high FROM figures WHERE key = ?1",
        )?;
        let rows = stmt
            .query_map([key], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, f64>(3)?,
                    (r.get(4)?, r.get(5)?),
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut out: Vec<StoredFigure> = Vec::with_capacity(rows.len());
        for (id, unit, dir, v, ci) in rows {
            let figure = StoredFigure::from_row(id, &unit, &dir, v, ci, out.last())?;
            out.push(figure);
        }
        Ok(out)
    }

    pub(super) fn distinct_figure_keys(&mut self) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare("SELECT DISTINCT key FROM figures")?;
        let keys = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(keys)
    }

    pub(super) fn all_ids(&mut self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM runs ORDER BY placed_at DESC, id DESC")?;
        let ids = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(ids)
    }

    pub(super) fn load_document(&mut self, id: &str) -> Result<Option<Run>> {
        let doc: Option<String> = self
            .conn
            .query_row(
                "SELECT document FROM documents WHERE run_id = ?1",
                [id],
                |r| r.get(0),
            )
            .optional()?;
        doc.map(|d| crate::store::read_document(id, &d)).transpose()
    }

    pub(super) fn load_documents(&mut self, ids: &[&str]) -> Result<Vec<Option<Run>>> {
        let mut stmt = self.conn.prepare(&schema::documents_statement(&DIALECT))?;
        let found = stmt
            .query_map([serde_json::to_string(ids)?], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<rusqlite::Result<Vec<(String, String)>>>()?;
        crate::store::documents_in_order(ids, found)
    }

    pub(super) fn figure_rows_of(&mut self, ids: &[&str]) -> Result<FiguresByKey> {
        let mut stmt = self
            .conn
            .prepare(&schema::figures_of_runs_statement(&DIALECT))?;
        let mut rows = stmt.query([serde_json::to_string(ids)?])?;
        let mut filing = crate::store::values::Filing::new(ids);
        while let Some(r) = rows.next()? {
            let text = |i| r.get_ref(i).and_then(|v| Ok(v.as_bytes()?));
            filing.file((
                text(0)?,
                text(1)?,
                text(2)?,
                text(3)?,
                r.get(4)?,
                (r.get(5)?, r.get(6)?),
            ))?;
        }
        Ok(filing.finish())
    }
}
