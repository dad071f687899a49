//! `osmeter paper chen-bershad93 --guest A --guest B` and `paper chen96 --guest K`: the papers'
//! system-against-system comparisons with kernels counted in a QEMU guest (`run --guest`), each
//! guest kept as a guest run under the paper's name.

use crate::cli::PaperArgs;
use crate::papers::data::Paper;
use crate::papers::{chen96_guest, guest_side, PaperId};
use crate::results::guest::GuestDoc;
use crate::suite::guest;
use anyhow::Result;

pub fn paper(id: PaperId, paper: &Paper, args: &PaperArgs) -> Result<i32> {
    let request = crate::config::guest::paper_request(id, args)?;
    let keeper = crate::config::keeper(&args.keep)?;
    let (runs, failed, outcome) = guest::count_and_keep(&request, &keeper, Some(id.key()));
    outcome?;
    // A paper sets its kernels side by side: one missing leaves no table to show.
    if let Some(f) = failed.into_iter().next() {
        return Err(f.error);
    }
    let docs: Vec<&GuestDoc> = runs
        .iter()
        .filter_map(|r| r.sections.get::<crate::results::guest::GuestDoc>())
        .collect();
    match id {
        PaperId::ChenBershad93 => {
            let rows = guest_side::chen_bershad_rows(paper, &docs);
            if args.output.json {
                super::emit_json_all(&rows)?;
            } else {
                super::emit(&guest_side::render_chen_bershad(&rows, &docs))?;
            }
        }
        _ => {
            let rows = chen96_guest::rows(&docs);
            if args.output.json {
                super::emit_json_all(&rows)?;
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
