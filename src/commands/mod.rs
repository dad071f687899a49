//! One module per subcommand.

pub mod compare;
pub mod completions;
pub mod export;
pub mod history;
pub mod info;
pub mod latency;
pub mod list;
pub mod man;
pub mod memsim;
pub mod paper;
pub mod push;
pub mod report;
pub mod run;
pub mod stat;
pub mod stored;
pub mod trace;

use crate::cli::{Cli, Command};
use crate::results::keep::Keeper;
use anyhow::Result;

/// Runs the command and returns the process exit code.
pub fn dispatch(cli: Cli) -> Result<i32> {
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
        Command::Export(args) => export::export(&args),
        Command::History(args) => history::history(&args),
        Command::Push(args) => push::push(&args),
        Command::Report(args) => report::report(&args),
        Command::Latency(args) => latency::latency(&args),
        Command::Trace(args) => trace::trace(&args),
        Command::Memsim(args) => memsim::memsim(&args),
        Command::MeasureWorker => crate::harness::worker::serve(),
        Command::Paper(args) => paper::paper(&args),
        Command::CpuMix(args) => {
            crate::probes::cpu::run_counted_cycles(args.cycles);
            Ok(0)
        }
    }
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

/// Writes results to `path` (atomically: replaced whole, never left half-written), or to stdout.
pub fn emit_to(path: Option<&std::path::Path>, text: &str) -> Result<()> {
    match path {
        Some(p) => crate::files::write_atomic(p, text.as_bytes()),
        None => emit(text),
    }
}

/// The program `name` names, as the command runner will find it (a path when it holds a `/`,
/// else the first match on PATH), checked to be an executable file before anything starts: a
/// command `stat` or `trace` cannot start is a usage error (exit 2), told the same way by both.
pub fn startable(name: &str) -> Result<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let executable = |p: &std::path::Path| {
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: access reads a NUL-terminated path and has no other effect.
        p.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
    };
    if name.is_empty() {
        return Err(crate::usage!(
            "the command to run is empty: give a program after --"
        ));
    }
    if name.contains('/') {
        let path = std::path::PathBuf::from(name);
        if executable(&path) {
            return Ok(path);
        }
        let why = match std::fs::metadata(&path) {
            Err(e) => format!("{e}; check the path"),
            Ok(m) if m.is_dir() => "it is a directory".to_string(),
            Ok(_) => "it is not executable; make it so (chmod +x) or run it through its \
                      interpreter"
                .to_string(),
        };
        return Err(crate::usage!("cannot start `{name}`: {why}"));
    }
    let dirs = std::env::var_os("PATH").unwrap_or_default();
    let found: Vec<_> = std::env::split_paths(&dirs)
        .map(|d| d.join(name))
        .filter(|p| p.is_file())
        .collect();
    if let Some(p) = found.iter().find(|p| executable(p)) {
        return Ok(p.clone());
    }
    Err(match found.first() {
        Some(p) => crate::usage!(
            "cannot start `{name}`: {} is not executable; make it so (chmod +x) or run it \
             through its interpreter",
            p.display()
        ),
        None => crate::usage!(
            "cannot start `{name}`: no such program on PATH; check the name, and that it is \
             installed"
        ),
    })
}

/// The validated keep path of a measuring command: checked before anything is measured.
pub fn keeper(keep: &crate::cli::KeepArgs) -> Result<Keeper> {
    Keeper::new(&keep.tags, keep.no_store, keep.store.store.as_deref())
}
