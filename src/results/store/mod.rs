//! Where runs are kept: an embedded SQLite file by default, or a PostgreSQL server shared by a fleet.
//! Both hold the same schema: one row per run with the whole run document, its tags, and one row per
//! measurement for queries.

pub mod schema;
pub mod sqlite;

use crate::results::model::Run;
use crate::usage;
use anyhow::Result;
use serde::Serialize;
use std::path::PathBuf;

/// Environment variable naming the store (a path or a postgres:// URL) when `--store` is not given.
pub const STORE_ENV: &str = "OSMETER_STORE";

/// One line of `osmeter runs`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunInfo {
    pub id: String,
    pub kind: String,
    pub started_at: String,
    pub host: Option<String>,
    pub suite: Option<String>,
    pub tool_version: String,
    pub measurements: usize,
    pub interrupted: bool,
    pub tags: std::collections::BTreeMap<String, String>,
}

/// Filters of `osmeter runs`; every given one must match.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub host: Option<String>,
    pub suite: Option<String>,
    pub tags: Vec<(String, String)>,
    /// RFC 3339 time or date; runs that started at or after it.
    pub since: Option<String>,
}

pub trait Store {
    /// Saves a run in one transaction. Saving a run whose id is already stored changes nothing and
    /// returns false.
    fn save(&mut self, run: &Run) -> Result<bool>;
    /// Stored runs, newest first.
    fn list(&mut self, filter: &RunFilter) -> Result<Vec<RunInfo>>;
    /// The whole run document.
    fn load(&mut self, id: &str) -> Result<Option<Run>>;
    fn remove(&mut self, id: &str) -> Result<bool>;
    /// Every stored run id, for prefix matching and suggestions.
    fn ids(&mut self) -> Result<Vec<String>>;
    /// Where the store is, for messages.
    fn describe(&self) -> String;
}

#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Location {
    /// `--store` if given, else $OSMETER_STORE, else `$XDG_DATA_HOME/osmeter/runs.db`
    /// (`~/.local/share/osmeter/runs.db`).
    pub fn resolve(flag: Option<&str>) -> Result<Location> {
        let text = match flag {
            Some(t) => Some(t.to_string()),
            None => std::env::var(STORE_ENV).ok().filter(|s| !s.is_empty()),
        };
        match text {
            Some(t) if t.starts_with("postgres://") || t.starts_with("postgresql://") => {
                Ok(Location::Postgres(t))
            }
            Some(t) => Ok(Location::Sqlite(PathBuf::from(t))),
            None => {
                let base = std::env::var_os("XDG_DATA_HOME")
                    .filter(|s| !s.is_empty())
                    .map(PathBuf::from)
                    .or_else(|| {
                        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share"))
                    })
                    .ok_or_else(|| {
                        usage!("neither XDG_DATA_HOME nor HOME is set: give --store PATH")
                    })?;
                Ok(Location::Sqlite(base.join("osmeter").join("runs.db")))
            }
        }
    }

    pub fn open(&self) -> Result<Box<dyn Store>> {
        match self {
            Location::Sqlite(path) => Ok(Box::new(sqlite::SqliteStore::open(path)?)),
            Location::Postgres(_) => Err(usage!(
                "PostgreSQL stores are not supported by this build yet; use a SQLite path with --store"
            )),
        }
    }
}

/// Finds the one stored run an id or unique id prefix names; otherwise an error listing the closest.
pub fn resolve_id(store: &mut dyn Store, wanted: &str) -> Result<String> {
    let ids = store.ids()?;
    if ids.iter().any(|i| i == wanted) {
        return Ok(wanted.to_string());
    }
    let matches: Vec<&String> = ids.iter().filter(|i| i.starts_with(wanted)).collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => {
            let near = crate::config::closest(wanted, ids.iter().map(String::as_str));
            let hint = if near.is_empty() {
                "`osmeter runs` lists what is stored".to_string()
            } else {
                format!("did you mean {}?", near.join(", "))
            };
            Err(usage!("no run {wanted:?} in {}: {hint}", store.describe()))
        }
        many => Err(usage!(
            "{wanted:?} matches {} runs ({}); give more of the id",
            many.len(),
            many.iter()
                .take(5)
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}
