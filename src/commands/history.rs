//! `osmeter history FIGURE`: one figure over the stored runs, with its change points.

use crate::cli::HistoryArgs;
use crate::error::{EXIT_OK, EXIT_THRESHOLD};
use crate::results::history::{self, text, HistoryQuery};
use crate::results::keep::tag_map;
use crate::results::store::{Location, RunFilter};
use anyhow::Result;

pub fn history(args: &HistoryArgs) -> Result<i32> {
    if args.kernels {
        return super::kernel_history::history(args);
    }
    let figure = match args.figure.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(crate::usage!(
                "history needs a FIGURE, e.g. osmeter history syscall.null (or --kernels for \
                 the guest runs' counts per kernel version)"
            ))
        }
        many => {
            return Err(crate::usage!(
                "history takes one FIGURE, not {} ({}); quote a key with parameters, e.g. \
                 \"ipc.pipe_pingpong placement=cross\"",
                many.len(),
                many.join(", ")
            ))
        }
    };
    let query = HistoryQuery {
        figure,
        filter: RunFilter {
            host: args.host.clone(),
            suite: None,
            tags: tag_map(&args.tags).into_iter().collect(),
            since: args.since.clone(),
        },
        include_busy: args.include_busy,
    };
    let mut store = Location::resolve(args.store.store.as_ref())?.open_read_only()?;
    let h = history::history(store.as_mut(), &query)?;
    let gate = crate::results::gate::of_history(&h, args.fail_if_slower);
    let ktap = super::gate::write(&args.gate, &gate)?;
    if args.output.json {
        super::emit_json(&h)?;
    } else if let Some(ktap) = &ktap {
        super::emit_unwrapped(ktap)?;
    } else {
        super::emit(&text::render(&h))?;
    }
    let Some(pct) = args.fail_if_slower else {
        return Ok(EXIT_OK);
    };
    if let Some(c) = h.slower_than(pct) {
        eprintln!(
            "osmeter: {} became slower by more than {pct} % from run {} ({} -> {}, speed-up {:.3})",
            h.figure,
            c.run,
            crate::units::format(c.before, h.unit),
            crate::units::format(c.after, h.unit),
            c.speedup
        );
        return Ok(EXIT_THRESHOLD);
    }
    if h.points.len() < 2 * h.method.min_runs {
        eprintln!(
            "osmeter: --fail-if-slower: {} run(s) of {} are too few to find a change ({} needed); \
             passing",
            h.points.len(),
            h.figure,
            2 * h.method.min_runs
        );
    }
    Ok(EXIT_OK)
}
