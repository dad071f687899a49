//! `osmeter push`: copy runs from one store to another, typically from a host's own SQLite file to
//! the fleet's PostgreSQL server, leaving out runs the destination already has.

use crate::cli::PushArgs;
use crate::results::store::{resolve_id, Location};
use crate::usage;
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::HashSet;

#[derive(Debug, Default, Serialize, schemars::JsonSchema)]
pub(crate) struct Pushed {
    from: String,
    to: String,
    copied: Vec<String>,
    skipped: Vec<String>,
}

pub fn push(args: &PushArgs) -> Result<i32> {
    let from_loc = Location::resolve(args.store.store.as_ref())?;
    let to_loc = args.to.clone();
    if from_loc == to_loc {
        return Err(usage!(
            "--to names the store the runs come from ({}); give another one",
            from_loc.describe()
        ));
    }
    let mut from = from_loc.open_read_only()?;
    let wanted = if args.all {
        let mut ids = from.ids()?;
        ids.reverse(); // oldest first: an interrupted push leaves the newest to the next try
        ids
    } else {
        // Every id resolved before anything is copied: a typo in the third copies nothing.
        args.runs
            .iter()
            .map(|r| resolve_id(from.as_mut(), r))
            .collect::<Result<Vec<_>>>()?
    };
    let mut to = to_loc.open()?;
    let mut report = Pushed {
        from: from.describe(),
        to: to.describe(),
        ..Default::default()
    };
    let already: HashSet<String> = to.ids()?.into_iter().collect();
    let mut seen = HashSet::new();
    for id in wanted {
        if !seen.insert(id.clone()) {
            continue;
        }
        if already.contains(&id) {
            report.skipped.push(id);
            continue;
        }
        let run = from
            .load(&id)?
            .with_context(|| format!("run {id} vanished from {} while pushing", report.from))?;
        // Each run is its own transaction: after a failure, the same command resumes the push.
        let new = to.save(&run).with_context(|| {
            format!(
                "copying run {id} to {} failed after {} run(s) of this push were copied; \
                 those are kept, and repeating the same command copies the rest (runs already \
                 there are skipped, none is stored twice)",
                report.to,
                report.copied.len()
            )
        })?;
        if new {
            report.copied.push(id);
        } else {
            report.skipped.push(id); // another host pushed it meanwhile
        }
    }
    if args.output.json {
        super::emit_json(&report)?;
    } else {
        super::emit(&format!(
            "copied {} run{} to {}, skipped {} already there\n",
            report.copied.len(),
            if report.copied.len() == 1 { "" } else { "s" },
            report.to,
            report.skipped.len()
        ))?;
    }
    Ok(crate::error::EXIT_OK)
}
