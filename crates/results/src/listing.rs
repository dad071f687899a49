//! The stored runs as `osmeter runs` lists them: one line per run, every stored string escaped
//! (another host may have written anything), hosts of one name told apart by machine id.

use crate::results::store::RunInfo;
use crate::text::escape_controls;
use std::fmt::Write;

/// The table of `list`, newest first as the store gave them, fitted to the terminal's width (a
/// narrow one takes the tags into a block of their own, under the runs' ids).
pub fn render(list: &[RunInfo]) -> String {
    use crate::columns::{Align, Table};
    let mut table = Table::new(
        &["id", "started", "kind", "host", "suite", "figs", "tags"],
        &[
            Align::Left,
            Align::Left,
            Align::Left,
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Left,
        ],
        1,
    );
    // Every stored string one cell: another host may have written anything (see crate::text).
    let cell = |s: &str| escape_controls(s).into_owned();
    // Two machines of one name are told apart by their machine ids.
    let names = crate::results::fleet::host_names(list);
    for (r, name) in list.iter().zip(&names) {
        let tags: Vec<String> = r
            .tags
            .iter()
            .map(|(k, v)| format!("{}={}", cell(k), cell(v)))
            .collect();
        let mut last = tags.join(" ");
        if r.interrupted {
            last.push_str(" (interrupted)");
        }
        // Busy runs are left out of compare and history unless asked for: say which they are.
        if r.busy {
            last.push_str(" (busy)");
        }
        if let Some(off) = r.clock_offset.filter(|_| r.clock_off()) {
            let _ = write!(
                last,
                " (host clock {}: placed at {} by the store's clock)",
                crate::results::fleet::text::clock_offset_text(off),
                cell(&r.placed_at)
            );
        }
        table.push(vec![
            cell(&r.id),
            cell(&r.started_at),
            cell(&r.kind.to_string()),
            cell(name.as_deref().unwrap_or("-")),
            cell(r.suite.as_deref().unwrap_or("-")),
            r.figures.to_string(),
            last.trim_start().to_string(),
        ]);
    }
    table.render(crate::columns::width())
}

/// What to say when runs came from a host whose clock was off.
pub fn clock_note(list: &[RunInfo]) -> Option<String> {
    let skewed = list.iter().filter(|r| r.clock_off()).count();
    (skewed > 0).then(|| {
        format!(
            "osmeter: {skewed} run(s) came from a host whose clock was off by more than {} min \
             when the store received them: they are listed, and --since judged, by the store's \
             clock rather than the host's start time",
            crate::results::store::schema::CLOCK_TOLERANCE_S / 60.0
        )
    })
}
