//! `osmeter report RUN... -o FILE`: stored runs as one self-contained HTML page.

use crate::cli::ReportArgs;
use crate::error::EXIT_OK;
use crate::results::model::Run;
use crate::results::report;
use crate::results::store::{load_listed, resolve_id, Location};
use anyhow::Result;

pub fn report(args: &ReportArgs) -> Result<i32> {
    let mut store = Location::resolve(args.store.store.as_ref())?.open_read_only()?;
    // Resolve every id before loading anything, so a typo is reported at once.
    let mut ids: Vec<String> = Vec::new();
    for wanted in &args.runs {
        let id = resolve_id(store.as_mut(), wanted)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let runs: Vec<Run> = load_listed(store.as_mut(), &ids)?;
    let page = report::render(&runs, &sections())?;
    super::write_output_file(&args.output, page.as_bytes(), "the report", "-o")?;
    eprintln!(
        "osmeter: report of {} run(s) written to {} ({} KiB)",
        runs.len(),
        args.output.display(),
        page.len().div_ceil(1024)
    );
    Ok(EXIT_OK)
}

/// Every section of the page, in page order: each domain's own among the general ones of the
/// results toolkit.
pub fn sections() -> Vec<Box<dyn report::Section>> {
    use crate::papers::html::ThenAndNow;
    use crate::papers::PaperId;
    report::page_sections(
        vec![
            Box::new(crate::apps::html::Apps),
            Box::new(crate::stat::html::Stat),
            Box::new(crate::latency::html::Latency),
            Box::new(crate::memsim::html::Memsim),
            Box::new(crate::ab::html::Ab),
            Box::new(crate::suite::guest::timeline_html::KernelLines),
        ],
        vec![
            Box::new(ThenAndNow(PaperId::Ousterhout89)),
            Box::new(ThenAndNow(PaperId::Chen96)),
            Box::new(ThenAndNow(PaperId::ChenBershad93)),
            Box::new(ThenAndNow(PaperId::CotaRobles99)),
        ],
    )
}
