//! `osmeter paper chen-bershad93 --guest A --guest B` and `paper chen96 --guest K`: the papers'
//! system-against-system comparisons with kernels counted in a QEMU guest (`run --guest`), each
//! guest kept as a guest run under the paper's name.

use crate::cli::PaperArgs;
use crate::papers::data::Paper;
use crate::papers::{chen96_guest, guest_side, PaperId};
use crate::results::guest::GuestDoc;
use crate::suite::guest::{self, GuestProbes, GuestRequest};
use anyhow::Result;
use std::time::Duration;

/// Operations per counted window: enough for exact counts, few enough for a paper in minutes
/// (fewer where an operation is long: the guest fits its windows between timer ticks).
const ITERATIONS: u64 = 100;

pub fn paper(id: PaperId, paper: &Paper, args: &PaperArgs) -> Result<i32> {
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
    let (runs, outcome) = super::guest::count_and_keep(&request, &args.keep, Some(id.key()))?;
    outcome?;
    let docs: Vec<&GuestDoc> = runs
        .iter()
        .filter_map(|r| r.sections.get::<crate::results::guest::GuestDoc>())
        .collect();
    match id {
        PaperId::ChenBershad93 => {
            let rows = guest_side::chen_bershad_rows(paper, &docs);
            if args.output.json {
                super::emit_json(&rows)?;
            } else {
                super::emit(&guest_side::render_chen_bershad(&rows, &docs))?;
            }
        }
        _ => {
            let rows = chen96_guest::rows(&docs);
            if args.output.json {
                super::emit_json(&rows)?;
            } else {
                super::emit(&chen96_guest::render(
                    &rows,
                    crate::meter::perf::hardware_pmu_present(),
                ))?;
            }
        }
    }
    let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    eprintln!("osmeter: guest run(s) {}", ids.join(", "));
    Ok(crate::error::EXIT_OK)
}
