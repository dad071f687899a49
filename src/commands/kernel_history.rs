//! `osmeter history --kernels [PROBE...]`: each probe's exact counts per kernel version from the
//! stored guest runs, ordered by Debian version, with the change points split by kernel function.

use crate::cli::HistoryArgs;
use crate::error::EXIT_OK;
use crate::results::guest::GuestDoc;
use crate::results::keep::tag_map;
use crate::results::kernel_timeline::text;
use crate::results::model::Run;
use crate::results::store::{Location, RunFilter, Store};
use crate::usage;
use anyhow::Result;

/// The stored guest runs the filters let through, newest first.
pub fn guest_runs(store: &mut dyn Store, filter: &RunFilter) -> Result<Vec<Run>> {
    let ids: Vec<String> = store
        .list(filter)?
        .into_iter()
        .filter(|r| r.kind == "guest")
        .map(|r| r.id)
        .collect();
    let wanted: Vec<&str> = ids.iter().map(String::as_str).collect();
    Ok(store.load_many(&wanted)?.into_iter().flatten().collect())
}

pub fn history(args: &HistoryArgs) -> Result<i32> {
    let filter = RunFilter {
        host: args.host.clone(),
        suite: None,
        tags: tag_map(&args.tags).into_iter().collect(),
        since: args.since.clone(),
    };
    let mut store = Location::resolve(args.store.store.as_ref())?.open_read_only()?;
    let runs = guest_runs(store.as_mut(), &filter)?;
    if runs.is_empty() {
        return Err(usage!(
            "history --kernels: the store holds no guest run{}; count some first, e.g. osmeter \
             run --guest 'linux-image-6.12.*-cloud-amd64' syscall",
            if filter.host.is_some() || !filter.tags.is_empty() || filter.since.is_some() {
                " that --host, --tag and --since let through"
            } else {
                ""
            }
        ));
    }
    let t = crate::suite::guest::timeline_html::timeline(&runs, &args.figure);
    if t.series.is_empty() {
        return Err(unknown_points(&runs, &args.figure));
    }
    if args.output.json {
        super::emit_json(&t)?;
    } else if args.csv {
        super::emit_unwrapped(&text::csv(&t))?;
    } else {
        super::emit(&text::render(&t))?;
    }
    Ok(EXIT_OK)
}

/// The usage error for probes no stored guest run counted, naming the nearest that one did.
fn unknown_points(runs: &[Run], asked: &[String]) -> anyhow::Error {
    let mut counted: Vec<String> = runs
        .iter()
        .filter_map(|r| r.sections.get::<GuestDoc>())
        .flat_map(|d| d.probes.iter().filter(|p| p.per_op.is_some()))
        .map(|p| p.probe.clone())
        .collect();
    counted.sort();
    counted.dedup();
    let first = asked.first().map(String::as_str).unwrap_or("");
    let near = crate::suggest::closest(first, counted.iter().map(String::as_str));
    usage!(
        "history --kernels {}: no stored guest run counted {}; {}",
        asked.join(" "),
        if asked.len() == 1 {
            "it"
        } else {
            "any of them"
        },
        if near.is_empty() {
            format!(
                "the guest runs hold {}",
                if counted.is_empty() {
                    "no counted probe".to_string()
                } else {
                    counted.join(", ")
                }
            )
        } else {
            format!("did you mean {}?", near.join(", "))
        }
    )
}
