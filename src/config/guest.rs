//! `run --guest` and `paper --guest` lowered into a guest request: the kernels, parameter sets,
//! probes and presets, with every option that means nothing for exact counts refused by name.

use crate::cli::{PaperArgs, RunArgs};
use crate::papers::{chen96_guest, guest_side, PaperId};
use crate::results::gate::budget::Budget;
use crate::suite::guest::{self, GuestProbes, GuestRequest};
use crate::usage;
use anyhow::Result;
use std::time::Duration;

/// Operations per counted window: enough for exact counts, few enough for a paper in minutes
/// (fewer where an operation is long: the guest fits its windows between timer ticks).
const ITERATIONS: u64 = 100;

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
        ("--system-aslr", m.system_aslr),
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

/// The budgets of `--fail-if-over` and `--budget-file`, each naming a probe the run counts.
pub fn budgets(args: &RunArgs) -> Result<Vec<Budget>> {
    let g = &args.guest;
    let mut all = g.fail_if_over.clone();
    if let Some(path) = &g.budget_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| usage!("--budget-file {}: cannot read it: {e}", path.display()))?;
        all.extend(
            Budget::parse_file(&text)
                .map_err(|e| usage!("--budget-file {}: {e}", path.display()))?,
        );
    }
    if all.is_empty() {
        if g.guest_junit.is_some() {
            return Err(usage!(
                "--junit with --guest writes the budgets' verdicts: give --fail-if-over or \
                 --budget-file"
            ));
        }
        return Ok(all);
    }
    let selected = crate::probes::selection::select(&args.targets)?.0;
    for b in &all {
        if selected.iter().any(|s| s.probe.id == b.probe) {
            continue;
        }
        let known = crate::probes::find(&b.probe).is_some();
        let near = crate::suggest::closest(&b.probe, selected.iter().map(|s| s.probe.id));
        return Err(usage!(
            "--fail-if-over {}: {}{}",
            b.name(),
            if known {
                format!(
                    "{} is not among the probes this run counts; add it to them",
                    b.probe
                )
            } else {
                format!("there is no probe {} (`osmeter list` names them)", b.probe)
            },
            if near.is_empty() {
                String::new()
            } else {
                format!("; did you mean {}?", near.join(", "))
            }
        ));
    }
    Ok(all)
}

/// The request of `run --guest KERNEL [PROBES...]`.
pub fn run_request(args: &RunArgs) -> Result<GuestRequest> {
    refuse_host_options(args)?;
    let g = &args.guest;
    Ok(GuestRequest {
        kernels: g.kernels.clone(),
        appends: g.append.clone(),
        probes: guest::GuestProbes::Targets(args.targets.clone()),
        iterations: guest::check_iterations(g.guest_iterations)?,
        cpu: g.guest_cpu.clone(),
        timeout: Duration::from_nanos(g.guest_timeout),
        memory_mib: guest::MEMORY_MIB,
        presets: guest::presets(&g.presets)?,
        cache_max: g.cache_max,
    })
}

/// The guest request of `paper chen-bershad93 --guest A --guest B` or `paper chen96 --guest K`:
/// the paper's probes or points in each kernel, at the paper's iterations and default timeout.
pub fn paper_request(id: PaperId, args: &PaperArgs) -> Result<GuestRequest> {
    let (probes, presets) = match id {
        PaperId::ChenBershad93 => {
            if args.guests.len() < 2 {
                return Err(crate::usage!(
                    "paper chen-bershad93 --guest sets two kernels side by side, as the paper \
                     set Ultrix beside Mach: give --guest twice (an image path or a Debian \
                     kernel package each)"
                ));
            }
            (
                GuestProbes::Targets(
                    guest_side::CHEN_BERSHAD_PROBES
                        .iter()
                        .map(|p| p.to_string())
                        .collect(),
                ),
                vec![guest_side::CHEN_BERSHAD_PRESET],
            )
        }
        PaperId::Chen96 => (GuestProbes::Points(chen96_guest::points()), Vec::new()),
        other => {
            return Err(crate::usage!(
                "--guest applies to chen-bershad93 (two kernels' MCPI side by side) and chen96 \
                 (instructions per operation counted in a guest), not to {}",
                other.key()
            ))
        }
    };
    if args.table.is_some() {
        return Err(crate::usage!(
            "--table does not apply with --guest: the guest comparison is one table of its own"
        ));
    }
    let presets: Vec<crate::memsim::config::PresetName> = presets
        .into_iter()
        .map(crate::memsim::config::PresetName)
        .collect();
    let request = GuestRequest {
        kernels: args.guests.clone(),
        appends: Vec::new(),
        probes,
        iterations: ITERATIONS,
        cpu: None,
        timeout: Duration::from_nanos(
            crate::units::duration_arg(guest::DEFAULT_TIMEOUT)
                .expect("the default timeout is valid"),
        ),
        memory_mib: guest::MEMORY_MIB,
        presets: guest::presets(&presets)?,
        cache_max: crate::capture::system::kernel_cache::size_arg(
            crate::capture::system::kernel_cache::DEFAULT_MAX,
        )
        .expect("the default bound is valid"),
    };
    Ok(request)
}
