//! The runs of one side of a comparison: given ids (or unique prefixes), or every run with a tag.

use crate::results::keep::Tag;
use crate::results::model::Run;
use crate::results::store::{load_listed, resolve_id, RunFilter, Store};
use crate::usage;
use anyhow::Result;

/// Which runs a side holds.
#[derive(Debug, Clone, PartialEq)]
pub enum RunSet {
    /// Run ids or unique prefixes typed by a user (none: the side was not given).
    Ids(Vec<String>),
    /// Every stored run with this tag.
    Tagged(Tag),
}

impl RunSet {
    /// Loads the side's runs; `side` ("a" or "b") names it in the error of a tag nobody has.
    pub fn load(&self, store: &mut dyn Store, side: &str) -> Result<Vec<Run>> {
        match self {
            RunSet::Ids(wanted) => {
                let ids = wanted
                    .iter()
                    .map(|w| resolve_id(store, w))
                    .collect::<Result<Vec<_>>>()?;
                load_listed(store, &ids)
            }
            RunSet::Tagged(tag) => by_tag(store, tag, side),
        }
    }
}

fn by_tag(store: &mut dyn Store, tag: &Tag, side: &str) -> Result<Vec<Run>> {
    let tags = vec![tag.clone()];
    let ids: Vec<String> = store
        .list(&RunFilter {
            tags,
            ..Default::default()
        })?
        .into_iter()
        .map(|r| r.id)
        .collect();
    if ids.is_empty() {
        return Err(usage!(
            "--tag-{side} {}={}: no stored run has this tag (`osmeter runs` lists the tags)",
            tag.0,
            tag.1
        ));
    }
    // The ids come from the store itself: each is loaded as it is, without matching it against
    // every stored id as a prefix typed by a user would be, and all in one read.
    load_listed(store, &ids)
}
