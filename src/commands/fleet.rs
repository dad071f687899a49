//! `osmeter fleet`: the hosts of a shared store that are off their class, and since when.

use crate::cli::FleetArgs;
use crate::error::{EXIT_OK, EXIT_THRESHOLD};
use crate::results::fleet::{self, text, FleetQuery};
use crate::results::keep::tag_map;
use crate::results::store::{Location, RunFilter};
use anyhow::Result;

pub fn fleet(args: &FleetArgs) -> Result<i32> {
    let query = FleetQuery {
        filter: RunFilter {
            host: None,
            suite: None,
            tags: tag_map(&args.tags).into_iter().collect(),
            since: args.since.clone(),
        },
        figures: args.figures.clone(),
        alpha: args.alpha,
        min_effect: args.min_effect / 100.0,
    };
    let mut store = Location::resolve(args.store.store.as_ref())?.open_read_only()?;
    let report = fleet::fleet(store.as_mut(), &query)?;
    if args.output.json {
        super::emit_json(&report)?;
    } else {
        super::emit(&text::render(&report))?;
    }
    if let Some(path) = &args.html {
        crate::files::write_atomic(path, fleet::html::render(&report).as_bytes())?;
        eprintln!("osmeter: fleet page written to {}", path.display());
    }
    let slower = report.outliers().filter(|(_, c)| c.slower).count();
    if args.fail_if_off && slower > 0 {
        eprintln!("osmeter: {slower} host x figure pair(s) slower than their class");
        return Ok(EXIT_THRESHOLD);
    }
    Ok(EXIT_OK)
}
