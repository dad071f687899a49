//! The stored runs as `osmeter runs` lists them: one line per run, every stored string escaped
//! (another host may have written anything), hosts of one name told apart by machine id.

use crate::results::store::RunInfo;
use crate::text::escape_controls;
use std::fmt::Write;

/// The table of `list`, newest first as the store gave them.
pub fn render(list: &[RunInfo]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<18} {:<20} {:<8} {:<16} {:<8} {:>6}  tags",
        "id", "started", "kind", "host", "suite", "figs"
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
        let _ = writeln!(
            out,
            "{:<18} {:<20} {:<8} {:<16} {:<8} {:>6}  {}{}{}",
            cell(&r.id),
            cell(&r.started_at),
            cell(&r.kind.to_string()),
            cell(name.as_deref().unwrap_or("-")),
            cell(r.suite.as_deref().unwrap_or("-")),
            r.figures,
            tags.join(" "),
            if r.interrupted { " (interrupted)" } else { "" },
            match r.clock_offset.filter(|_| r.clock_off()) {
                Some(off) => format!(
                    " (host clock {}: placed at {} by the store's clock)",
                    crate::results::fleet::text::clock_offset_text(off),
                    cell(&r.placed_at)
                ),
                None => String::new(),
            }
        );
    }
    out
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
