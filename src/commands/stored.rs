//! `osmeter runs`, `show` and `rm`: what the store holds.

use crate::cli::{RmArgs, RunsArgs, ShowArgs};
use crate::results::keep::tag_map;
use crate::results::store::{resolve_id, Location, RunFilter};
use crate::results::{listing, table};
use crate::text::escape_controls;
use anyhow::Result;

pub fn runs(args: &RunsArgs) -> Result<i32> {
    let mut store = Location::resolve(args.store.store.as_ref())?.open_read_only()?;
    let filter = RunFilter {
        host: args.host.clone(),
        suite: args.suite.clone(),
        tags: tag_map(&args.tags).into_iter().collect(),
        since: args.since.clone(),
    };
    let list = store.list(&filter)?;
    if args.output.json {
        super::emit_json_all(&list)?;
        return Ok(0);
    }
    if list.is_empty() {
        eprintln!("osmeter: no runs in {} match", store.describe());
        return Ok(0);
    }
    super::emit(&listing::render(&list))?;
    if let Some(note) = listing::clock_note(&list) {
        eprintln!("{note}");
    }
    Ok(0)
}

pub fn show(args: &ShowArgs) -> Result<i32> {
    let mut store = Location::resolve(args.store.store.as_ref())?.open_read_only()?;
    let id = resolve_id(store.as_mut(), &args.run)?;
    let run = store.load(&id)?.ok_or_else(|| {
        anyhow::anyhow!("run {id} vanished from {} while reading", store.describe())
    })?;
    if args.output.json {
        super::emit_json(&run)?;
    } else {
        let head = format!(
            "run {} started {} ({})\n",
            escape_controls(&run.id),
            escape_controls(&run.started_at),
            escape_controls(run.suite.as_deref().unwrap_or(run.kind().as_str()))
        );
        let mut body = String::new();
        if !run.tags.is_empty() {
            let tags: Vec<String> = run
                .tags
                .iter()
                .map(|(k, v)| escape_controls(&format!("{k}={v}")).into_owned())
                .collect();
            body.push_str(&format!("tags {}\n", tags.join(" ")));
        }
        if !run.measurements.is_empty() {
            body.push_str(&table::render(&run));
            body.push_str(&crate::apps::summary::text(&run));
            body.push_str(&crate::papers::brief::text(&run, true));
        }
        for doc in run.sections.iter() {
            body.push_str(&doc.text());
        }
        match &run.profiles {
            Some(profiles) if args.profile => {
                body.push_str(&crate::results::profile::render(profiles))
            }
            Some(profiles) => body.push_str(&crate::results::profile::render_brief(
                profiles,
                Some(&run.id),
            )),
            None if args.profile => eprintln!(
                "osmeter: run {} has no profiles: measure with `run --profile` (or `stat \
                 --profile`) to keep them",
                escape_controls(&run.id)
            ),
            None => {}
        }
        super::emit(&(head + &body))?;
    }
    Ok(0)
}

pub fn rm(args: &RmArgs) -> Result<i32> {
    let mut store = Location::resolve(args.store.store.as_ref())?.open()?;
    // Resolve every id first, so a typo in the third removes nothing.
    let ids = args
        .runs
        .iter()
        .map(|r| resolve_id(store.as_mut(), r))
        .collect::<Result<Vec<_>>>()?;
    for id in ids {
        store.remove(&id)?;
        eprintln!("osmeter: removed run {id}");
    }
    Ok(0)
}
