//! Every flag, defined once.

use clap::{Args, Parser, Subcommand};

pub mod guest_args;
pub mod measure_args;
pub mod memsim_args;
pub mod results_args;
pub mod stored_args;
pub mod tool_args;

pub use guest_args::{BisectArgs, GuestArgs, GuestBootArgs, GuestCheckArgs, GuestInsideArgs};
pub use measure_args::{AbArgs, CpuMixArgs, LatencyArgs, MeasureArgs, RunArgs, StatArgs};
pub use stored_args::{
    CompareArgs, ExportArgs, FleetArgs, GateArgs, HistoryArgs, PushArgs, ReportArgs, RmArgs,
    RunsArgs, SchemaArgs, ShowArgs,
};
pub use tool_args::{CompletionsArgs, ManArgs, MemsimArgs, PaperArgs, TraceAction, TraceArgs};

#[derive(Parser, Debug)]
#[command(
    name = "osmeter",
    version,
    about = "Measures how well this Linux kernel serves programs, and where the time goes",
    after_help = "Exit codes: 0 success, 1 runtime error, 2 usage error, 3 the command under `stat` failed, \
                  4 `compare`/`history --fail-if-slower` threshold crossed, 5 `latency --fail-over` exceeded, \
                  6 `compare` refused a run measured on a busy machine, 130 interrupted."
)]
pub struct Cli {
    /// Print every table on one line per row, however wide (by default tables fit the terminal:
    /// COLUMNS, else its width, else 100 columns; cut into stacked blocks of columns)
    #[arg(long, global = true)]
    pub wide: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run probes or suites (default: the quick suite) and print a table
    Run(RunArgs),
    /// List probes and suites with one-line summaries
    List(JsonArg),
    /// Describe this system and which features work here, and why not
    Info(JsonArg),
    /// Print a shell completion script, or install it where the shell finds it
    Completions(CompletionsArgs),
    /// Print a man page (osmeter, or one subcommand), or write every page to a directory
    Man(ManArgs),
    /// Time a command and count its events, user and kernel apart, over repeated runs
    Stat(StatArgs),
    /// Wakeup latency of periodic threads per priority class and wake path, under load
    Latency(LatencyArgs),
    /// Capture a memory-reference trace of a command (valgrind lackey), or convert, inspect or
    /// synthesise traces
    Trace(TraceArgs),
    /// Simulate memory systems (caches, write buffer, TLB) on a reference trace
    Memsim(MemsimArgs),
    /// List the stored runs, newest first
    Runs(RunsArgs),
    /// Show one stored run
    Show(ShowArgs),
    /// Remove stored runs
    Rm(RmArgs),
    /// Compare two runs, or two groups of runs, with statistics
    Compare(CompareArgs),
    /// Measure two set-ups of the same probes in the same minutes (A and B interleaved, in
    /// lockstep on one CPU, or at once on two) and judge them on the pairs' ratios
    Ab(AbArgs),
    /// A figure over the stored runs, with the points where it changed (E-Divisive means)
    History(HistoryArgs),
    /// Which hosts of a shared store are off their class's median, on which figures, since when
    Fleet(FleetArgs),
    /// Write a stored run as json, csv, markdown or openmetrics
    Export(ExportArgs),
    /// Write a self-contained HTML report of stored runs (the first is the baseline)
    Report(ReportArgs),
    /// Print the JSON Schema of a kind of document osmeter writes (no KIND: list the kinds)
    Schema(SchemaArgs),
    /// Copy stored runs to another store (typically a shared postgres:// one), skipping runs
    /// already there
    Push(PushArgs),
    /// Measures one task for `osmeter run` in a fresh process (started by osmeter itself)
    #[command(name = "measure-worker", hide = true)]
    MeasureWorker,
    /// A seed paper's tables with today's figures beside them (no NAME: list the papers)
    Paper(PaperArgs),
    /// (internal) Run the reference mix inside the region callgrind counts
    #[command(name = "cpu-mix", hide = true)]
    CpuMix(CpuMixArgs),
    /// (internal) Count probes inside a guest of `run --guest`
    #[command(name = "guest-inside", hide = true)]
    GuestInside(GuestInsideArgs),
    /// (internal) The names a shell completion offers: probes, groups and suites, or run ids
    #[command(name = "complete-names", hide = true)]
    CompleteNames {
        #[arg(value_enum)]
        kind: crate::shell_files::names::NameKind,
    },
    /// The first kernel whose exact count of a probe differs from a good kernel's, in log2 boots
    Bisect(BisectArgs),
    /// Count one probe in one kernel against an expected count, with `git bisect run`'s exit
    /// codes: 0 good, 1 bad, 125 cannot test (255 stops the bisection: a mistake in the command)
    #[command(name = "guest-check")]
    GuestCheck(GuestCheckArgs),
}

/// How a measuring command's result is kept.
#[derive(Args, Debug, Clone, Default)]
pub struct KeepArgs {
    /// Label the result (repeatable), e.g. --tag kernel=6.6-patched
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = crate::results::keep::tag_arg)]
    pub tags: Vec<crate::results::keep::Tag>,
    /// Print the results without keeping them in the store
    #[arg(long)]
    pub no_store: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug, Clone, Default)]
pub struct StoreArg {
    /// Where runs are kept: a SQLite file or a postgres:// URL [default: $OSMETER_STORE, else
    /// $XDG_DATA_HOME/osmeter/runs.db]
    #[arg(long, value_name = "PATH|URL", value_parser = results_args::LocationArg)]
    pub store: Option<crate::results::store::Location>,
}

#[derive(Args, Debug, Clone, Copy, Default)]
pub struct JsonArg {
    /// Print one JSON document instead of a table
    #[arg(long)]
    pub json: bool,
}

/// The separator of several commands after `osmeter stat --`.
pub const STAT_SEPARATOR: &str = ":::";

/// A percentage from 0 up to 100 (`--threshold`, `--fail-if-slower`).
fn percent_arg(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| "not a number: give a percentage between 0 and 100, e.g. 5".to_string())?;
    if (0.0..100.0).contains(&v) {
        Ok(v)
    } else {
        Err("give a percentage between 0 and 100".into())
    }
}

fn whole(text: &str) -> Result<usize, String> {
    text.trim()
        .parse()
        .map_err(|_| "not a whole number".to_string())
}

/// Samples per round (`run --repeat`): 1 to [`crate::suite::MAX_REPEAT`].
fn samples_arg(text: &str) -> Result<usize, String> {
    use crate::suite::MAX_REPEAT;
    match whole(text)? {
        0 => Err("at least one sample is needed (try --repeat 5)".into()),
        n @ 1..=MAX_REPEAT => Ok(n),
        _ => Err(format!(
            "give at most {MAX_REPEAT} samples a round (--rounds adds rounds, --min-time \
             lengthens each sample)"
        )),
    }
}

/// Runs of the command (`stat -r`): 1 to [`crate::suite::MAX_REPEAT`].
fn command_runs_arg(text: &str) -> Result<usize, String> {
    use crate::suite::MAX_REPEAT;
    match whole(text)? {
        0 => Err("at least 1 run is needed (the number of times the command is run)".into()),
        n @ 1..=MAX_REPEAT => Ok(n),
        _ => Err(format!("give at most {MAX_REPEAT} runs of the command")),
    }
}

/// Discarded samples per round (`--warmup`): 0 to [`crate::suite::MAX_WARMUP`].
fn warmup_arg(text: &str) -> Result<usize, String> {
    use crate::suite::MAX_WARMUP;
    match whole(text)? {
        n @ 0..=MAX_WARMUP => Ok(n),
        _ => Err(format!(
            "give 0 to {MAX_WARMUP} warm-up samples (they are run and thrown away in every round)"
        )),
    }
}

/// Rounds per figure (`--rounds`): 1 to [`crate::suite::MAX_ROUNDS`].
fn rounds_arg(text: &str) -> Result<usize, String> {
    use crate::suite::{DEFAULT_ROUNDS, MAX_ROUNDS};
    match whole(text)? {
        n @ 1..=MAX_ROUNDS => Ok(n),
        _ => Err(format!(
            "give 1 to {MAX_ROUNDS} rounds (2 or more for intervals from the spread between \
             rounds; the default is {DEFAULT_ROUNDS})"
        )),
    }
}

/// Simulation threads (`memsim --threads`): at least one.
fn threads_arg(text: &str) -> Result<usize, String> {
    match whole(text)? {
        0 => Err("give at least 1 thread (or leave --threads out for one per usable CPU)".into()),
        n => Ok(n),
    }
}
