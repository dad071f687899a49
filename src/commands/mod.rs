//! One module per subcommand.

pub mod ab;
pub mod bisect;
pub mod compare;
pub mod completions;
pub mod export;
pub mod fleet;
pub mod gate;
pub mod guest;
pub mod guest_check;
pub mod history;
pub mod info;
pub mod kernel_history;
pub mod latency;
pub mod list;
pub mod man;
pub mod memsim;
pub mod paper;
pub mod paper_guest;
pub mod push;
pub mod report;
pub mod run;
pub mod schema;
pub mod stat;
pub mod stored;
pub mod trace;
pub mod trace_capture;

use crate::cli::{Cli, Command};
use anyhow::Result;

/// Runs the command and returns the process exit code.
pub fn dispatch(cli: Cli) -> Result<i32> {
    crate::columns::set_wide(cli.wide);
    crate::columns::fit_to_terminal();
    match cli.command {
        Command::Run(args) => run::run(&args),
        Command::List(args) => list::list(args.json),
        Command::Info(args) => info::info(args.json),
        Command::Completions(args) => completions::completions(&args),
        Command::Man(args) => man::man(&args),
        Command::Stat(args) => stat::stat(&args),
        Command::Runs(args) => stored::runs(&args),
        Command::Show(args) => stored::show(&args),
        Command::Rm(args) => stored::rm(&args),
        Command::Compare(args) => compare::compare(&args),
        Command::Ab(args) => ab::ab(&args),
        Command::Export(args) => export::export(&args),
        Command::Schema(args) => schema::schema(&args),
        Command::History(args) => history::history(&args),
        Command::Bisect(args) => bisect::bisect(&args),
        Command::GuestCheck(args) => guest_check::check(&args),
        Command::Fleet(args) => fleet::fleet(&args),
        Command::Push(args) => push::push(&args),
        Command::Report(args) => report::report(&args),
        Command::Latency(args) => latency::latency(&args),
        Command::Trace(args) => trace::trace(&args),
        Command::Memsim(args) => memsim::memsim(&args),
        Command::MeasureWorker => crate::suite::worker::serve(),
        Command::Paper(args) => paper::paper(&args),
        Command::GuestInside(args) => guest::inside(&args),
        Command::CompleteNames { kind } => crate::shell_files::names::print(kind),
        Command::CpuMix(args) => {
            crate::probes::cpu::run_counted_cycles(args.cycles);
            Ok(0)
        }
    }
}

/// Writes text results to stdout (see [`crate::console::print_bytes`]: a closed pipe is not an
/// error). Stored strings in them are escaped field by field where they are laid out; this is the
/// net under that: no control character but a line feed or tab reaches the terminal.
/// Lines too wide for the terminal are wrapped as prose (tables fit themselves, see
/// [`crate::columns`]); `--wide` leaves them whole.
pub fn emit(text: &str) -> Result<()> {
    emit_unwrapped(&crate::columns::fit_prose(text, crate::columns::width()))
}

/// Writes an output file whole or not at all; a failure names the file, why, and the option that
/// chooses another (`what` is what the file holds: "the report", "the JUnit report").
pub fn write_output_file(
    path: &std::path::Path,
    bytes: &[u8],
    what: &str,
    option: &str,
) -> Result<()> {
    crate::files::write_atomic(path, bytes).map_err(|e| {
        match e.downcast_ref::<crate::files::WriteError>() {
            Some(w) => anyhow::anyhow!(
                "cannot write {what} to {}: {}; choose a writable path with {option}",
                w.path.display(),
                w.why
            ),
            None => e,
        }
    })
}

/// Text as it is, never wrapped: a document for a machine to read (KTAP), where a line is a
/// record, and [`emit`]'s own output once fitted.
pub fn emit_unwrapped(text: &str) -> Result<()> {
    if crate::interrupt::requested() {
        crate::interrupt::leave_hung_up_terminal();
    }
    crate::console::print_bytes(crate::text::escape_controls_keep_lines(text).as_bytes())
}

/// A JSON document on stdout, pretty-printed, with a final line feed (never wrapped), headed by
/// the `"$schema"` its kind follows.
pub fn emit_json<T: crate::results::schema::Described>(doc: &T) -> Result<()> {
    emit_json_value(&crate::results::schema::Stamped(doc))
}

/// A JSON array of documents, each headed by its `"$schema"`.
pub fn emit_json_all<T: crate::results::schema::Described>(docs: &[T]) -> Result<()> {
    emit_json_value(&crate::results::schema::stamped_all(docs))
}

fn emit_json_value<T: serde::Serialize>(doc: &T) -> Result<()> {
    let json = format!("{}\n", serde_json::to_string_pretty(doc)?);
    // serde leaves bidirectional controls raw, which the net of emit_unwrapped would escape in a
    // way JSON does not read.
    emit_unwrapped(&crate::text::escape_bidi_in_json(&json))
}

/// Keeps `run`, then prints it with `print`. Kept first, so that output that cannot be written
/// (a full disk behind `> file`, /dev/full) loses no measurement: the error then says the run was
/// kept and how to see it. Printed even when keeping fails, so that the figures are not lost
/// either; the keeping error is the one returned then.
pub fn keep_then_print(
    keeper: &crate::results::keep::Keeper,
    run: &crate::results::model::Run,
    print: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let kept = keeper.save(run);
    let printed = print();
    match (kept, printed) {
        (Err(e), _) => Err(e),
        (Ok(true), Err(e)) => Err(anyhow::anyhow!(
            "{e:#}; the run was kept all the same as {id}: `osmeter show {id}` prints it, \
             `osmeter export {id} --format json` gives it whole",
            id = run.id
        )),
        (Ok(false), Err(e)) => Err(anyhow::anyhow!(
            "{e:#}; with --no-store the run was not kept either: measure again with an output \
             that can be written, or without --no-store"
        )),
        (Ok(_), Ok(())) => Ok(()),
    }
}

/// Writes results to `path` (atomically: replaced whole, never left half-written), or to stdout.
pub fn emit_to(path: Option<&std::path::Path>, text: &str) -> Result<()> {
    match path {
        Some(p) => crate::files::write_atomic(p, text.as_bytes()),
        None => emit(text),
    }
}
