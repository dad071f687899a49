//! One module per subcommand.

pub mod compare;
pub mod export;
pub mod info;
pub mod latency;
pub mod list;
pub mod memsim;
pub mod push;
pub mod report;
pub mod run;
pub mod stat;
pub mod stored;
pub mod trace;

use crate::cli::{Cli, Command};
use anyhow::Result;

/// Runs the command and returns the process exit code.
pub fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Run(args) => run::run(&args),
        Command::List(args) => list::list(args.json),
        Command::Info(args) => info::info(args.json),
        Command::Stat(args) => stat::stat(&args),
        Command::Runs(args) => stored::runs(&args),
        Command::Show(args) => stored::show(&args),
        Command::Rm(args) => stored::rm(&args),
        Command::Compare(args) => compare::compare(&args),
        Command::Export(args) => export::export(&args),
        Command::Push(args) => push::push(&args),
        Command::Report(args) => report::report(&args),
        Command::Latency(args) => latency::latency(&args),
        Command::Trace(args) => trace::trace(&args),
        Command::Memsim(args) => memsim::memsim(&args),
        Command::MeasureWorker => crate::harness::worker::serve(),
    }
}

/// True when progress lines should be drawn (stderr is a terminal).
pub fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

/// Writes results to stdout. A reader that went away (`| head`) is not an error worth a panic.
pub fn emit(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::anyhow!("cannot write the results to stdout: {e}"))
        }
        _ => Ok(()),
    }
}

/// A JSON document on stdout, pretty-printed, with a final line feed.
pub fn emit_json<T: serde::Serialize>(doc: &T) -> Result<()> {
    emit(&format!("{}\n", serde_json::to_string_pretty(doc)?))
}

/// Keeps the document of a measuring command other than `run` (stat, latency, memsim) as a stored run
/// with the system fingerprint, under `run.sections[kind]`. Returns the run id, or `None` with
/// `--no-store`. Check the tags before measuring with [`crate::config::parse_tags`] so a typo costs
/// nothing.
pub fn keep_section(
    keep: &crate::cli::KeepArgs,
    kind: &str,
    doc: serde_json::Value,
    started_at: String,
    interrupted: bool,
) -> Result<Option<String>> {
    use crate::results::model::Run;
    if keep.no_store {
        return Ok(None);
    }
    let location = crate::results::store::Location::resolve(keep.store.store.as_deref())?;
    let run = Run {
        finished_at: Some(run::now_rfc3339()),
        tags: crate::config::parse_tags(&keep.tags)?,
        fingerprint: crate::results::fingerprint::collect(None),
        interrupted,
        sections: [(kind.to_string(), doc)].into(),
        ..Run::new(run::new_run_id(), started_at)
    };
    let saved = crate::results::store::save_with_fallback(&location, &run)?;
    eprintln!("osmeter: run {} ({kind}) saved to {}", run.id, saved.store);
    Ok(Some(run.id))
}
