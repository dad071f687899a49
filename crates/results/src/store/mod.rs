//! Where runs are kept: an embedded SQLite file by default, or a PostgreSQL server shared by a fleet.
//! Both hold the same schema (see [`schema`]): one narrow row per run, its document apart, and one row
//! per tag, measurement and figure for queries.

#[cfg(feature = "fleet")]
pub mod postgres;
pub mod schema;
pub mod sqlite;
mod values;

pub use values::{FiguresByKey, RunValue};

use crate::results::model::Run;
use crate::usage;
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::PathBuf;

/// Environment variable naming the store (a path or a postgres:// URL) when `--store` is not given.
pub use crate::programs::STORE_ENV;

/// One line of `osmeter runs`.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct RunInfo {
    pub id: String,
    pub kind: String,
    pub started_at: String,
    pub host: Option<String>,
    pub suite: Option<String>,
    pub tool_version: String,
    /// Figures the run states (of any kind).
    pub figures: usize,
    pub interrupted: bool,
    pub tags: std::collections::BTreeMap<String, String>,
    /// When the store received the run, on the store's clock (unknown for runs stored before
    /// osmeter kept it).
    pub received_at: Option<String>,
    /// How far the host's clock was ahead of the store's when the run arrived, in seconds.
    pub clock_offset: Option<f64>,
    /// Where the run stands in time among all hosts' runs: `started_at`, or, from a host whose
    /// clock was off by more than [`schema::CLOCK_TOLERANCE_S`], its start on the store's clock.
    /// Lists are ordered and `--since` is judged by it.
    pub placed_at: String,
    /// The host's machine id (a keyed hash, see the fingerprint), which tells apart hosts that
    /// share a name.
    pub machine_id: Option<String>,
    /// The machine was judged busy during the run.
    pub busy: bool,
    /// The class of the run's machine (see [`Run::class`]), kept at saving; unknown only for a
    /// run whose document could not be read when the store was upgraded to keep it. Not printed
    /// by `runs`.
    #[serde(skip)]
    pub host_class: Option<String>,
}

impl RunInfo {
    /// The host's clock was off by more than the tolerance when the store received the run, so
    /// the run is placed by the store's clock.
    pub fn clock_off(&self) -> bool {
        self.clock_offset
            .is_some_and(|o| o.abs() > schema::CLOCK_TOLERANCE_S)
    }
}

/// Filters of `osmeter runs`; every given one must match.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub host: Option<String>,
    pub suite: Option<String>,
    pub tags: Vec<(String, String)>,
    /// RFC 3339 time or date; runs placed at or after it (see [`RunInfo::placed_at`]).
    pub since: Option<String>,
}

pub trait Store {
    /// Saves a run in one transaction. Saving a run whose id is already stored changes nothing and
    /// returns false.
    fn save(&mut self, run: &Run) -> Result<bool>;
    /// Stored runs, newest first.
    fn list(&mut self, filter: &RunFilter) -> Result<Vec<RunInfo>>;
    /// [`Store::list`] without the runs' tags, one statement fewer: a fleet's view filters by
    /// tag but shows none.
    fn list_untagged(&mut self, filter: &RunFilter) -> Result<Vec<RunInfo>>;
    /// The whole run document.
    fn load(&mut self, id: &str) -> Result<Option<Run>>;
    /// The documents of the runs `ids`, in that order (`None` for an id not stored), read in one
    /// statement rather than one round trip each.
    fn load_many(&mut self, ids: &[&str]) -> Result<Vec<Option<Run>>>;
    fn remove(&mut self, id: &str) -> Result<bool>;
    /// Every stored run id, for prefix matching and suggestions.
    fn ids(&mut self) -> Result<Vec<String>>;
    /// Every stored value of the figure `key`, from the `figures` table (no run document is read,
    /// so a fleet's history stays cheap to fetch).
    fn figure_values(&mut self, key: &str) -> Result<Vec<StoredFigure>>;
    /// The values of every figure of the runs `ids` (and of no other run), by figure key, in one
    /// statement; each value names its run by its place in `ids`, and under each key a run's
    /// values come in the order the run states them.
    fn figure_values_of(&mut self, ids: &[&str]) -> Result<FiguresByKey>;
    /// Every figure key the store holds, once each, for suggestions.
    fn figure_keys(&mut self) -> Result<Vec<String>>;
    /// Where the store is, for messages.
    fn describe(&self) -> String;
}

/// Gives each listed run its tags, from the `(run id, key, value)` rows of
/// [`schema::tags_statement`].
fn attach_tags(runs: &mut [RunInfo], rows: impl IntoIterator<Item = (String, String, String)>) {
    let mut tags: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>> =
        Default::default();
    for (id, key, value) in rows {
        tags.entry(id).or_default().insert(key, value);
    }
    for info in runs {
        info.tags = tags.remove(&info.id).unwrap_or_default();
    }
}

/// A stored document read back as its run; an unreadable one is an error that names the run.
fn read_document(id: &str, document: &str) -> Result<Run> {
    serde_json::from_str(document).with_context(|| format!("run {id} in the store is unreadable"))
}

/// Documents read back in the order of `ids`, from `(id, document)` pairs in any order. They are
/// parsed on every CPU at once: `compare --tag-a/--tag-b` over a fleet reads hundreds of
/// documents of some 200 KiB each, and parsing them is most of its time.
fn documents_in_order(ids: &[&str], found: Vec<(String, String)>) -> Result<Vec<Option<Run>>> {
    let by_id: std::collections::HashMap<String, String> = found.into_iter().collect();
    let read = |id: &&str| by_id.get(*id).map(|d| read_document(id, d)).transpose();
    crate::parallel::by_parts(ids, |part| part.iter().map(read).collect())
        .into_iter()
        .collect()
}

/// One run's value of one figure, as the `figures` table holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredFigure {
    pub run_id: String,
    pub unit: crate::units::Unit,
    pub direction: crate::results::figure::Direction,
    pub value: f64,
    pub interval: Option<[f64; 2]>,
}

impl StoredFigure {
    /// A row read back: the unit and direction as [`schema::figure_rows`] wrote them, taken
    /// from `previous` (the figure's value read before, if any) when they read the same.
    fn from_row(
        run_id: String,
        unit: &str,
        direction: &str,
        value: f64,
        ci: (Option<f64>, Option<f64>),
        previous: Option<&StoredFigure>,
    ) -> Result<StoredFigure> {
        let (unit, direction) = match previous {
            Some(p)
                if values::same_kind(
                    p.unit,
                    p.direction,
                    unit.as_bytes(),
                    direction.as_bytes(),
                ) =>
            {
                (p.unit, p.direction)
            }
            _ => values::unit_and_direction(&run_id, unit, direction)?,
        };
        Ok(StoredFigure {
            run_id,
            unit,
            direction,
            value,
            interval: values::interval(ci),
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Location {
    /// `--store` if given, else $OSMETER_STORE, else [`Location::default_local`]. A malformed
    /// postgres:// URL in $OSMETER_STORE is a usage error here, before anything is measured.
    pub fn resolve(flag: Option<&Location>) -> Result<Location> {
        if let Some(given) = flag {
            return Ok(given.clone());
        }
        match std::env::var(STORE_ENV).ok().filter(|s| !s.is_empty()) {
            Some(text) => Location::parse(&text).map_err(|e| usage!("${STORE_ENV}: {e}")),
            None => Location::default_local(),
        }
    }

    /// A SQLite path or a postgres:// URL (checked without connecting; the error never repeats
    /// the URL, which may hold a password). The value parser of `--store` and `push --to`.
    pub fn parse(text: &str) -> std::result::Result<Location, String> {
        if text.is_empty() {
            return Err("an empty store path: give a SQLite file or a postgres:// URL".into());
        }
        if is_postgres_url(text) {
            check_postgres_url(text)?;
            return Ok(Location::Postgres(text.to_string()));
        }
        Ok(Location::Sqlite(PathBuf::from(text)))
    }

    /// `$XDG_DATA_HOME/osmeter/runs.db` (`~/.local/share/osmeter/runs.db`), whatever
    /// $OSMETER_STORE says: where a run goes when the shared store cannot take it.
    pub fn default_local() -> Result<Location> {
        let base = crate::files::xdg::base_dir(
            "XDG_DATA_HOME",
            ".local/share",
            "give --store PATH (or $OSMETER_STORE)",
        )?;
        Ok(Location::Sqlite(base.join("osmeter").join("runs.db")))
    }

    pub fn open(&self) -> Result<Box<dyn Store>> {
        match self {
            Location::Sqlite(path) => Ok(Box::new(sqlite::SqliteStore::open(path)?)),
            Location::Postgres(url) => open_postgres(url),
        }
    }

    /// Opens the store for a command that only reads: a SQLite file is neither created nor
    /// changed (a missing one reads as empty), so a store this user may only read still works.
    pub fn open_read_only(&self) -> Result<Box<dyn Store>> {
        match self {
            Location::Sqlite(path) => Ok(Box::new(sqlite::SqliteStore::open_read_only(path)?)),
            Location::Postgres(url) => open_postgres(url),
        }
    }

    /// Where the store is, safe to print (a URL's password left out), without opening it.
    pub fn describe(&self) -> String {
        match self {
            Location::Sqlite(path) => path.display().to_string(),
            Location::Postgres(url) => describe_postgres(url),
        }
    }
}

// The PostgreSQL store is the `fleet` feature (on by default): without it a postgres:// URL is
// still recognised, so that the user hears how to get the store instead of a SQLite file created
// under a name that looks like a URL.
#[cfg(feature = "fleet")]
fn check_postgres_url(url: &str) -> std::result::Result<(), String> {
    postgres::check_url(url)
        .map(drop)
        .map_err(|e| format!("{e:#}"))
}

#[cfg(feature = "fleet")]
fn open_postgres(url: &str) -> Result<Box<dyn Store>> {
    Ok(Box::new(postgres::PostgresStore::open(url)?))
}

#[cfg(feature = "fleet")]
fn describe_postgres(url: &str) -> String {
    postgres::check_url(url)
        .map(|t| t.describe())
        .unwrap_or_else(|_| "a PostgreSQL server (malformed URL)".to_string())
}

/// Why a postgres:// URL cannot be used by an osmeter built without the `fleet` feature.
#[cfg(not(feature = "fleet"))]
const WITHOUT_FLEET: &str = "this osmeter was built without the `fleet` feature, which holds the \
    PostgreSQL store: build it with the default features (`cargo build --release`), or give a \
    SQLite file";

#[cfg(not(feature = "fleet"))]
fn check_postgres_url(_url: &str) -> std::result::Result<(), String> {
    Err(WITHOUT_FLEET.to_string())
}

#[cfg(not(feature = "fleet"))]
fn open_postgres(_url: &str) -> Result<Box<dyn Store>> {
    Err(usage!("{WITHOUT_FLEET}"))
}

#[cfg(not(feature = "fleet"))]
fn describe_postgres(_url: &str) -> String {
    "a PostgreSQL server (not reachable without the `fleet` feature)".to_string()
}

fn is_postgres_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// Where [`save_with_fallback_to`] kept a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Saved {
    /// The store, as [`Store::describe`] gives it.
    pub store: String,
    /// False when the store already held a run with this id (nothing was written).
    pub new: bool,
}

/// Saves a run to `location`. When that is a PostgreSQL server that cannot take it (unreachable,
/// wrong password, refused database), the run is saved to `fallback` (the local default store)
/// instead and the error says so, and how to send it on later with `osmeter push`: a measurement
/// is never lost because the network was down. A SQLite store that fails after measuring (a full
/// or read-only disk, a lock held too long, a planted link) gets the same treatment with the
/// places of [`rescue`].
pub fn save_with_fallback_to(
    location: &Location,
    fallback: Option<Result<Location>>,
    run: &Run,
) -> Result<Saved> {
    let err = match save_to(location, run) {
        Ok(saved) => return Ok(saved),
        Err(e) => e,
    };
    let local = match (location, fallback) {
        (Location::Postgres(_), Some(fallback)) => fallback.and_then(|f| {
            if &f == location {
                anyhow::bail!("it is the same store");
            }
            save_to(&f, run)
        }),
        (Location::Postgres(_), None) => return Err(err),
        (Location::Sqlite(path), _) => rescue(path, run),
    };
    // The cause first, then where the run went: the cause is what the user has to fix.
    match (local, location) {
        (Ok(saved), Location::Postgres(_)) => Err(anyhow::anyhow!(
            "{err:#}\nosmeter: run {id} was saved to {local} instead; once the server can be \
             reached, `osmeter push {id} --store {local} --to URL` (URL: the same postgres:// \
             address) sends it there",
            id = run.id,
            local = saved.store,
        )),
        (Ok(saved), Location::Sqlite(path)) => Err(anyhow::anyhow!(
            "{err:#}\nosmeter: run {id} was saved to {local} instead; once {store} can be \
             written again, `osmeter push {id} --store {local} --to {store}` moves it there",
            id = run.id,
            local = saved.store,
            store = path.display(),
        )),
        (Err(local_err), _) => Err(anyhow::anyhow!(
            "{err:#}\nosmeter: run {} could not be saved elsewhere either ({local_err:#}); the \
             figures printed above are the only copy",
            run.id,
        )),
    }
}

/// Where a run goes when the SQLite store `failed` cannot take it, in order: the local default
/// store (unless that is the one that failed), then a new store in a private directory made in
/// the temporary directory, then one in /dev/shm (memory: a full disk does not stop it).
fn rescue(failed: &std::path::Path, run: &Run) -> Result<Saved> {
    let same = |p: &std::path::Path| {
        p == failed
            || matches!(
                (p.canonicalize(), failed.canonicalize()),
                (Ok(a), Ok(b)) if a == b
            )
    };
    let mut tried = Vec::new();
    if let Ok(Location::Sqlite(local)) = Location::default_local() {
        if !same(&local) {
            match save_to(&Location::Sqlite(local.clone()), run) {
                Ok(saved) => return Ok(saved),
                Err(e) => tried.push(format!("{}: {e:#}", local.display())),
            }
        }
    }
    let shm = std::path::Path::new("/dev/shm");
    let mut dirs = vec![std::env::temp_dir()];
    if shm.is_dir() && !dirs.iter().any(|d| d == shm) {
        dirs.push(shm.to_path_buf());
    }
    for dir in dirs {
        match rescue_in(&dir, run) {
            Ok(saved) => return Ok(saved),
            Err(e) => tried.push(format!("{}: {e:#}", dir.display())),
        }
    }
    anyhow::bail!("{}", tried.join("; "))
}

/// A new store for one run in a fresh private directory of `dir` (no other user can plant
/// SQLite's companion files beside it); the directory goes again if the save fails.
fn rescue_in(dir: &std::path::Path, run: &Run) -> Result<Saved> {
    let private = crate::scratch::private_dir(dir, "rescued-by-osmeter-")?;
    let saved = save_to(&Location::Sqlite(private.path().join("runs.db")), run)?;
    let _ = private.keep();
    Ok(saved)
}

fn save_to(location: &Location, run: &Run) -> Result<Saved> {
    let mut store = location.open()?;
    let new = store
        .save(run)
        .with_context(|| format!("saving run {} to {}", run.id, store.describe()))?;
    Ok(Saved {
        store: store.describe(),
        new,
    })
}

/// The documents of runs the store named (listed or resolved ids), in their order, read in one
/// statement; a run removed meanwhile is an error.
pub fn load_listed(store: &mut dyn Store, ids: &[String]) -> Result<Vec<Run>> {
    let wanted: Vec<&str> = ids.iter().map(String::as_str).collect();
    let found = store.load_many(&wanted)?;
    found
        .into_iter()
        .zip(ids)
        .map(|(run, id)| {
            run.ok_or_else(|| {
                anyhow::anyhow!("run {id} vanished from {} while reading", store.describe())
            })
        })
        .collect()
}

/// Finds the one stored run an id or unique id prefix names; otherwise an error listing the closest.
pub fn resolve_id(store: &mut dyn Store, wanted: &str) -> Result<String> {
    // The empty prefix would name every run, and `rm ""` remove them all.
    if wanted.is_empty() {
        return Err(usage!(
            "an empty run id names no run; give an id or the start of one (`osmeter runs` lists them)"
        ));
    }
    let ids = store.ids()?;
    if ids.iter().any(|i| i == wanted) {
        return Ok(wanted.to_string());
    }
    let matches: Vec<&String> = ids.iter().filter(|i| i.starts_with(wanted)).collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => {
            // A mistyped prefix is compared with the ids cut to its length, then named in full.
            let cut = |id: &str| id.get(..wanted.len()).unwrap_or(id).to_string();
            let prefixes: Vec<String> = ids.iter().map(|i| cut(i)).collect();
            let near_prefixes =
                crate::suggest::closest(wanted, prefixes.iter().map(String::as_str));
            let near: Vec<&str> = ids
                .iter()
                .filter(|i| near_prefixes.contains(&cut(i).as_str()))
                .take(3)
                .map(String::as_str)
                .collect();
            let hint = if ids.is_empty() {
                "the store holds no run yet (give --store for another one, or keep one with \
                 `osmeter run`)"
                    .to_string()
            } else if near.is_empty() {
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
