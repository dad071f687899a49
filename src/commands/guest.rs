//! `osmeter run --guest KERNEL`: arguments to a guest request (config/guest.rs), one call, a
//! side-by-side table, one kept run per kernel and parameter set; and `guest-inside`, its part
//! inside the guest.

use crate::cli::{GuestInsideArgs, RunArgs};
use crate::error::{EXIT_OK, EXIT_RUNTIME};
use crate::results::guest::{render_side_by_side, GuestDoc};
use crate::results::model::{Run, Status};
use crate::suite::guest;
use anyhow::Result;

pub fn run(args: &RunArgs) -> Result<i32> {
    let request = crate::config::guest::run_request(args)?;
    let keeper = crate::config::keeper(&args.keep)?;
    let (runs, outcome) = guest::count_and_keep(&request, &keeper, None);
    if !runs.is_empty() {
        show(&runs, args.output.json)?;
    }
    outcome?;
    let counted = runs
        .iter()
        .filter_map(|r| r.sections.get::<crate::results::guest::GuestDoc>())
        .any(|d| d.probes.iter().any(|p| p.status == Status::Ok));
    if !counted {
        eprintln!("osmeter: no probe could be counted in the guest; the reasons are above");
        return Ok(EXIT_RUNTIME);
    }
    Ok(EXIT_OK)
}

fn show(runs: &[Run], json: bool) -> Result<()> {
    if json {
        return match runs {
            [one] => super::emit_json(one),
            many => super::emit_json_all(many),
        };
    }
    let docs: Vec<&GuestDoc> = runs
        .iter()
        .filter_map(|r| r.sections.get::<crate::results::guest::GuestDoc>())
        .collect();
    let ids: Vec<String> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| format!("[{}] run {}", i + 1, r.id))
        .collect();
    super::emit(&format!(
        "{}\n{}\n",
        render_side_by_side(&docs),
        ids.join("\n")
    ))
}

pub fn inside(args: &GuestInsideArgs) -> Result<i32> {
    guest::inside::run(&guest::plan::Plan::read(&args.plan)?, &args.report)?;
    Ok(EXIT_OK)
}
