//! The one way a measuring command keeps its run. The tags and the store are checked before
//! anything is measured, so that a typo in a tag, a store path that is a directory or cannot be
//! written, or a PostgreSQL server that cannot be reached costs nothing: the first two are refused
//! at once, the third is reported at once with the local store the run will go to instead.

use crate::results::model::{Run, Sections};
use crate::results::store::sqlite::SqliteStore;
use crate::results::store::{save_with_fallback_to, Location};
use anyhow::Result;
use std::collections::BTreeMap;

/// Where and how a run will be kept, validated.
pub struct Keeper {
    tags: BTreeMap<String, String>,
    /// `None` with `--no-store`.
    target: Option<Target>,
}

struct Target {
    location: Location,
    /// Where a run goes when a PostgreSQL store cannot take it.
    fallback: Option<Location>,
}

impl Keeper {
    /// Whether the run will be stored (not under `--no-store`).
    pub fn keeps(&self) -> bool {
        self.target.is_some()
    }

    /// Checks the tags and opens the store once (creating a new SQLite store, connecting to a
    /// PostgreSQL one). `store` is `--store` (else $OSMETER_STORE, else the local default).
    pub fn new(tags: &[Tag], no_store: bool, store: Option<&Location>) -> Result<Keeper> {
        let tags = tag_map(tags);
        if no_store {
            return Ok(Keeper { tags, target: None });
        }
        let location = Location::resolve(store)?;
        let fallback = match &location {
            Location::Postgres(_) => Some(Location::default_local()?),
            Location::Sqlite(_) => None,
        };
        if let Err(e) = check(&location) {
            match &fallback {
                // The run can still be kept: say so now, not after an hour of measuring.
                Some(local) => eprintln!(
                    "osmeter: warning: {e:#}\nosmeter: the run will be saved to {} unless {} \
                     can be reached when it ends",
                    local.describe(),
                    location.describe()
                ),
                None => {
                    return Err(e.context(format!(
                        "the store {} cannot be used; give --store with a writable path, or \
                         --no-store",
                        location.describe()
                    )))
                }
            }
        }
        Ok(Keeper {
            tags,
            target: Some(Target { location, fallback }),
        })
    }

    pub fn tags(&self) -> &BTreeMap<String, String> {
        &self.tags
    }

    /// Where runs are kept; None with `--no-store`.
    pub fn location(&self) -> Option<&Location> {
        self.target.as_ref().map(|t| &t.location)
    }

    /// A run holding the document of a command other than `run`, with this system's fingerprint.
    pub fn run_of(&self, sections: Sections, started_at: String, interrupted: bool) -> Run {
        Run {
            finished_at: Some(crate::clock::now_rfc3339()),
            tags: self.tags.clone(),
            fingerprint: Some(crate::results::fingerprint::collect(None)),
            interrupted,
            sections,
            ..Run::new(crate::clock::new_run_id(), started_at)
        }
    }

    /// Keeps the run (nothing with `--no-store`) and says where on stderr. Returns whether it was
    /// stored.
    pub fn save(&self, run: &Run) -> Result<bool> {
        let Some(target) = &self.target else {
            return Ok(false);
        };
        let fallback = target.fallback.clone().map(Ok);
        let saved = save_with_fallback_to(&target.location, fallback, run);
        if crate::interrupt::requested() {
            // A terminal that hung up meanwhile would make the line below panic.
            crate::interrupt::leave_hung_up_terminal();
        }
        let saved = saved?;
        eprintln!(
            "osmeter: run {} ({}) saved to {}",
            run.id,
            run.kind(),
            saved.store
        );
        Ok(true)
    }

    /// [`Keeper::run_of`] then [`Keeper::save`].
    pub fn keep(&self, sections: Sections, started_at: String, interrupted: bool) -> Result<bool> {
        self.save(&self.run_of(sections, started_at, interrupted))
    }
}

/// Whether a run could be saved to `location` now. A SQLite store that exists is opened and given
/// SQLite's quick check (which refuses a foreign or damaged file before anything is measured, and
/// leaves it untouched); a directory, device, FIFO or socket is refused as one; a store that does not exist yet is not
/// created (a command that fails must leave nothing behind): its nearest existing directory must
/// take a new file. A PostgreSQL store is connected to.
fn check(location: &Location) -> Result<()> {
    let Location::Sqlite(path) = location else {
        return location.open().map(drop);
    };
    crate::results::store::sqlite::check_kind(path)?;
    crate::results::store::sqlite::check_trusted(path)?;
    if path.exists() {
        SqliteStore::open(path)?.verify()?;
        return crate::results::store::sqlite::check_writable(path);
    }
    let mut dir = path.parent().unwrap_or(std::path::Path::new("."));
    while !dir.as_os_str().is_empty() && !dir.exists() {
        dir = dir.parent().unwrap_or(std::path::Path::new("."));
    }
    let dir = if dir.as_os_str().is_empty() {
        std::path::Path::new(".")
    } else {
        dir
    };
    if !dir.is_dir() {
        anyhow::bail!(
            "cannot create the store {}: {} is not a directory",
            path.display(),
            dir.display()
        );
    }
    tempfile::Builder::new()
        .prefix(".osmeter-check-")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot create the store {}: cannot write in {} ({})",
                path.display(),
                dir.display(),
                e.kind()
            )
        })
}

/// `key=value` labels; keys are short identifiers so they can be filtered on.
/// One `KEY=VALUE` tag, read by clap (a bad one is a usage error naming the option).
pub fn tag_arg(text: &str) -> std::result::Result<Tag, String> {
    let (k, v) = text
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE, e.g. kernel=6.6-patched, not {text:?}"))?;
    if k.is_empty()
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return Err(format!(
            "the key of {text:?} must be letters, digits, '_', '-' or '.'"
        ));
    }
    Ok((k.to_string(), v.to_string()))
}

/// A run's tag: key and value.
pub type Tag = (String, String);

/// Tags by key; of a key given twice the last value counts.
pub fn tag_map(tags: &[Tag]) -> BTreeMap<String, String> {
    tags.iter().cloned().collect()
}
