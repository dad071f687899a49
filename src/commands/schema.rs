//! `osmeter schema [KIND]`: the JSON Schema of each kind of document osmeter writes.
//!
//! Every kind is listed here, where every layer's types can be named; a kind's version is raised
//! on a change that breaks old readers (see crate::results::schema).

use crate::cli::SchemaArgs;
use crate::results::schema::{find, SchemaKind};
use anyhow::Result;

// The results layer's own kinds (run, runs, compare-exact, history, fleet) are named in
// crate::results::schema, beside the trait: a kind of that layer's type is that layer's to name
// (memsim's, memsim and trace-info, in crate::memsim::document).
crate::results::described! {
    crate::stat::StatDoc => "stat", 1;
    super::compare::CompareDoc<'_> => "compare", 1;
    super::push::Pushed => "push", 1;
    super::info::InfoDoc<'_> => "info", 1;
    super::list::ListDoc => "list", 1;
    crate::papers::view::PaperDoc => "paper", 1;
    crate::papers::plan::Listing => "papers", 1;
    crate::papers::guest_side::McpiRow => "paper-mcpi-row", 1;
    crate::papers::chen96_guest::CountRow => "paper-count-row", 1;
    crate::suite::guest::bisect::BisectDoc => "bisect", 1;
    crate::suite::guest::bisect::GuestCheckDoc => "guest-check", 1;
}

/// Every kind of JSON document osmeter writes, and which commands write it.
pub fn kinds() -> Vec<SchemaKind> {
    use crate::results::model::Run;
    vec![
        SchemaKind::of::<Run>(
            "run --json, latency --json, ab --json, run --guest --json, show --json, \
             export --format json (the document of every kind of stored run)",
        ),
        SchemaKind::of::<crate::results::store::RunInfo>("runs --json (an array of these)"),
        SchemaKind::of::<crate::stat::StatDoc>(
            "stat --json and stat -o FILE.json (an array of these for commands compared with :::)",
        ),
        SchemaKind::of::<crate::memsim::document::MemsimDoc>("memsim --json"),
        SchemaKind::of::<crate::memsim::trace::summary::TraceSummary>("trace info --json"),
        SchemaKind::of::<super::compare::CompareDoc>("compare --json [--explain]"),
        SchemaKind::of::<crate::results::compare::exact::ExactComparison>(
            "compare --json of two guest runs (exact counts)",
        ),
        SchemaKind::of::<crate::results::history::FigureHistory>("history --json"),
        SchemaKind::of::<crate::results::kernel_timeline::KernelTimeline>(
            "history --kernels --json",
        ),
        SchemaKind::of::<crate::results::fleet::FleetReport>("fleet --json"),
        SchemaKind::of::<crate::suite::guest::bisect::BisectDoc>("bisect --json"),
        SchemaKind::of::<crate::suite::guest::bisect::GuestCheckDoc>("guest-check --json"),
        SchemaKind::of::<super::push::Pushed>("push --json"),
        SchemaKind::of::<super::info::InfoDoc>("info --json"),
        SchemaKind::of::<super::list::ListDoc>("list --json"),
        SchemaKind::of::<crate::papers::view::PaperDoc>("paper NAME --json"),
        SchemaKind::of::<crate::papers::plan::Listing>("paper --json (an array of these)"),
        SchemaKind::of::<crate::papers::guest_side::McpiRow>(
            "paper chen-bershad93 --guest K --json (an array of these)",
        ),
        SchemaKind::of::<crate::papers::chen96_guest::CountRow>(
            "paper chen96 --guest K --json (an array of these)",
        ),
    ]
}

pub fn schema(args: &SchemaArgs) -> Result<i32> {
    let kinds = kinds();
    let Some(name) = &args.kind else {
        let mut out = String::from("kind             schema (`osmeter schema KIND` prints it)\n");
        for k in &kinds {
            out.push_str(&format!(
                "{:<16} {}\n{:<16}   written by {}\n",
                k.name,
                k.uri(),
                "",
                k.written_by
            ));
        }
        super::emit(&out)?;
        return Ok(crate::error::EXIT_OK);
    };
    let kind = find(&kinds, name)?;
    let text = serde_json::to_string_pretty(&kind.schema())? + "\n";
    super::emit_unwrapped(&text)?;
    Ok(crate::error::EXIT_OK)
}
