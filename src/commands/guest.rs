//! `osmeter run --guest KERNEL`: arguments to a guest request (config/guest.rs), one call, a
//! side-by-side table, one kept run per kernel and parameter set; and `guest-inside`, its part
//! inside the guest.

use crate::cli::{GuestInsideArgs, RunArgs};
use crate::error::{EXIT_OK, EXIT_RUNTIME, EXIT_THRESHOLD};
use crate::results::gate::{budget, Outcome};
use crate::results::guest::{render_side_by_side, GuestDoc};
use crate::results::model::{Run, Status};
use crate::suite::guest;
use anyhow::Result;

pub fn run(args: &RunArgs) -> Result<i32> {
    let request = crate::config::guest::run_request(args)?;
    let budgets = crate::config::guest::budgets(args)?;
    if args.guest.dry_run {
        super::emit(&guest::dry_run(&request)?)?;
        return Ok(EXIT_OK);
    }
    let keeper = crate::config::keeper(&args.keep)?;
    let (runs, mut failed, outcome) = guest::count_and_keep(&request, &keeper, None);
    if !runs.is_empty() {
        show(&runs, &failed, args.output.json)?;
    }
    outcome?;
    // With nothing counted, the first kernel's failure is the command's, with its console.
    if runs.is_empty() && !failed.is_empty() {
        return Err(failed.swap_remove(0).error);
    }
    let counted = runs
        .iter()
        .filter_map(|r| r.sections.get::<crate::results::guest::GuestDoc>())
        .any(|d| d.probes.iter().any(|p| p.status == Status::Ok));
    if !counted {
        eprintln!("osmeter: no probe could be counted in the guest; the reasons are above");
        return Ok(EXIT_RUNTIME);
    }
    if budgets.is_empty() {
        return Ok(EXIT_OK);
    }
    let docs: Vec<&GuestDoc> = runs.iter().filter_map(|r| r.sections.get()).collect();
    let mut gate = budget::of_guests(&docs, &budgets);
    // A kernel that gave no counts cannot show that it keeps to the budgets.
    gate.cases
        .extend(failed.iter().map(|f| crate::results::gate::Case {
            group: f.label.clone(),
            name: "boot".into(),
            outcome: Outcome::Error,
            message: format!("did not boot: {}", f.line()),
        }));
    if let Some(path) = &args.guest.guest_junit {
        super::write_output_file(
            path,
            crate::results::gate::junit::render(&gate).as_bytes(),
            "the JUnit report",
            "--junit",
        )?;
    }
    let verdict = budget::render(&gate);
    // With --json stdout holds one document; the verdict goes beside it.
    if args.output.json {
        eprintln!("{}", verdict.trim_end());
    } else {
        super::emit(&format!("\n{verdict}"))?;
    }
    let held = gate.cases.iter().all(|c| c.outcome == Outcome::Passed);
    Ok(if held { EXIT_OK } else { EXIT_THRESHOLD })
}

fn show(runs: &[Run], failed: &[guest::NotCounted], json: bool) -> Result<()> {
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
    let not_counted: String = failed
        .iter()
        .map(|f| format!("did not boot: {}\n", f.line()))
        .collect();
    // One version in several flavours or parameter sets is a side by side; several versions a
    // history, told in steps between neighbours.
    let steps = if crate::results::guest_sides::one_version(&docs) {
        crate::results::guest_sides::render(&docs)
    } else {
        crate::results::guest_steps::render(&docs)
    };
    super::emit(&format!(
        "{}\n{}\n{}{not_counted}{}{steps}",
        render_side_by_side(&docs),
        ids.join("\n"),
        if not_counted.is_empty() { "" } else { "\n" },
        if steps.is_empty() { "" } else { "\n" }
    ))
}

pub fn inside(args: &GuestInsideArgs) -> Result<i32> {
    guest::inside::run(&guest::plan::Plan::read(&args.plan)?, &args.report)?;
    Ok(EXIT_OK)
}
