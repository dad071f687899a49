//! Guest runs kept as they are counted: one run per kernel and parameter set, tagged with both.

use super::{Boot, GuestRequest, NotCounted};
use crate::results::guest::GuestDoc;
use crate::results::keep::Keeper;
use crate::results::model::{Run, Sections};
use anyhow::Result;

/// Counts in each guest of `request` and keeps one run per guest as soon as it is counted (in
/// `suite` when a paper asked for it). Returns the runs kept, the kernels that gave no counts, and
/// how the sweep ended: runs of guests before an error that stopped it are kept.
pub fn count_and_keep(
    request: &GuestRequest,
    keeper: &Keeper,
    suite: Option<&str>,
) -> (Vec<Run>, Vec<NotCounted>, Result<()>) {
    let mut runs: Vec<Run> = Vec::new();
    let mut failed: Vec<NotCounted> = Vec::new();
    let outcome = super::run(request, &mut |boot: Boot| {
        let (doc, started_at): (GuestDoc, String) = match boot {
            Boot::Counted(doc, at) => (*doc, at),
            Boot::NotCounted(n) => {
                failed.push(n);
                return Ok(());
            }
        };
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
    (runs, failed, outcome)
}
