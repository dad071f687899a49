//! `osmeter run --guest KERNEL`: arguments to a guest request, one call, a side-by-side table,
//! one kept run per kernel and parameter set; and `guest-inside`, its part inside the guest.

use crate::cli::{GuestInsideArgs, RunArgs};
use crate::error::{EXIT_OK, EXIT_RUNTIME};
use crate::results::guest::{render_side_by_side, GuestDoc};
use crate::results::model::{Run, Sections, Status};
use crate::suite::guest::{self, GuestRequest};
use crate::usage;
use anyhow::Result;
use std::time::Duration;

/// Options of a measured run that mean nothing for exact counts in a guest: refused by name, so
/// that nobody believes they took effect.
fn refuse_host_options(args: &RunArgs) -> Result<()> {
    let m = &args.measure;
    let given = [
        ("--repeat", m.repeat.is_some()),
        ("--rounds", m.rounds.is_some()),
        ("--seed", m.seed.is_some()),
        ("--min-time", m.min_time.is_some()),
        ("--cpu", m.cpu.is_some()),
        ("--dir", m.dir.is_some()),
        ("--fifo", m.fifo.is_some()),
        ("--fs", m.fs.is_some()),
        ("--install", m.install),
        ("--set", !args.sets.is_empty()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, on)| *on) {
        return Err(usage!(
            "{flag} does not apply to --guest: counts in the guest are exact (no rounds or \
             samples), the guest has one CPU and a tmpfs, and probes run at their quick-scale \
             parameters; drop {flag}"
        ));
    }
    Ok(())
}

pub fn run(args: &RunArgs) -> Result<i32> {
    refuse_host_options(args)?;
    let g = &args.guest;
    let request = GuestRequest {
        kernels: g.kernels.clone(),
        appends: g.append.clone(),
        probes: guest::GuestProbes::Targets(args.targets.clone()),
        iterations: guest::check_iterations(g.guest_iterations)?,
        cpu: g.guest_cpu.clone(),
        timeout: Duration::from_nanos(g.guest_timeout),
        memory_mib: guest::MEMORY_MIB,
        presets: guest::presets(&g.presets)?,
    };
    let (runs, outcome) = count_and_keep(&request, &args.keep, None)?;
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

/// Counts in each guest of `request` and keeps one run per guest as soon as it is counted (in
/// `suite` when a paper asked for it). Returns the runs kept and how the guests ended: runs of
/// guests before a failure are kept.
pub fn count_and_keep(
    request: &GuestRequest,
    keep: &crate::cli::KeepArgs,
    suite: Option<&str>,
) -> Result<(Vec<Run>, Result<()>)> {
    let keeper = crate::config::keeper(keep)?;
    let mut runs: Vec<Run> = Vec::new();
    let outcome = guest::run(request, &mut |doc: GuestDoc, started_at: String| {
        let mut run = keeper.run_of(Sections::of(doc.clone()), started_at, false);
        run.suite = suite.map(str::to_string);
        run.tags.insert("kernel".into(), doc.kernel.clone());
        run.tags.insert(
            "append".into(),
            if doc.append.is_empty() {
                "none".into()
            } else {
                doc.append.clone()
            },
        );
        keeper.save(&run)?;
        runs.push(run);
        Ok(())
    });
    Ok((runs, outcome))
}

fn show(runs: &[Run], json: bool) -> Result<()> {
    if json {
        return match runs {
            [one] => super::emit_json(one),
            many => super::emit_json(&many),
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
