//! `run --guest` and `paper --guest` lowered into a guest request: the kernels, parameter sets,
//! probes and presets, with every option that means nothing for exact counts refused by name.

use crate::cli::{PaperArgs, RunArgs};
use crate::papers::{chen96_guest, guest_side, PaperId};
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
    };
    Ok(request)
}
