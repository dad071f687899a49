//! Arguments of the commands that read stored runs: `runs`, `show`, `rm`, `compare`, `history`, `fleet`, `export`, `report`, `push`, `schema`.

use super::results_args;
use super::{percent_arg, JsonArg, StoreArg};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// Run id, or a unique prefix of one
    pub run: String,
    #[arg(long, short = 'f', value_name = "FORMAT", value_parser = results_args::format())]
    pub format: crate::results::export::Format,
    /// One row per raw sample (csv)
    #[arg(long)]
    pub samples: bool,
    /// Write to this file instead of stdout
    #[arg(long, short = 'o', value_name = "PATH")]
    pub output: Option<std::path::PathBuf>,
    /// Write DIR/osmeter.prom for node-exporter's textfile collector, replaced whole (openmetrics
    /// only)
    #[arg(long, value_name = "DIR", conflicts_with = "output")]
    pub textfile: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug, Clone)]
pub struct SchemaArgs {
    /// The kind of document (run, stat, compare, ...) [default: list the kinds]
    pub kind: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct PushArgs {
    /// Run ids, or unique prefixes
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub runs: Vec<String>,
    /// Push every run of the source store
    #[arg(long)]
    pub all: bool,
    /// Destination: a postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE URL (the password may come
    /// from $PGPASSWORD or ~/.pgpass instead) or a SQLite path
    #[arg(long, value_name = "URL|PATH", value_parser = results_args::LocationArg)]
    pub to: crate::results::store::Location,
    /// The source store
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// Runs to show (ids or unique prefixes); the first is the baseline of the comparison
    #[arg(required = true, num_args = 1.., value_name = "RUN")]
    pub runs: Vec<String>,
    /// The HTML file to write (replaced whole, never left half-written)
    #[arg(short = 'o', long = "output", value_name = "PATH", required = true)]
    pub output: PathBuf,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug, Clone, Default)]
pub struct CompareArgs {
    /// Baseline run and candidate run (ids or unique prefixes)
    #[arg(num_args = 0..=2, value_name = "RUN")]
    pub runs: Vec<String>,
    /// Baseline group: several runs pooled
    #[arg(long = "a", value_name = "RUN", num_args = 1..)]
    pub group_a: Vec<String>,
    /// Candidate group: several runs pooled
    #[arg(long = "b", value_name = "RUN", num_args = 1..)]
    pub group_b: Vec<String>,
    /// Baseline group: every stored run with this tag
    #[arg(long, value_name = "KEY=VALUE", value_parser = crate::results::keep::tag_arg)]
    pub tag_a: Option<crate::results::keep::Tag>,
    /// Candidate group: every stored run with this tag
    #[arg(long, value_name = "KEY=VALUE", value_parser = crate::results::keep::tag_arg)]
    pub tag_b: Option<crate::results::keep::Tag>,
    /// Smallest change in percent that counts as a change
    #[arg(long, value_name = "PCT", default_value_t = 3.0, value_parser = percent_arg)]
    pub threshold: f64,
    /// Exit with code 4 if any figure is significantly slower by more than PCT percent
    #[arg(long, value_name = "PCT", value_parser = percent_arg)]
    pub fail_if_slower: Option<f64>,
    /// Show every figure, not only those that changed
    #[arg(long)]
    pub all: bool,
    /// Do not learn each figure's run-to-run spread from earlier runs of the same host
    #[arg(long)]
    pub no_history: bool,
    /// Compare even when a run was measured on a busy machine (every figure is marked)
    #[arg(long)]
    pub force: bool,
    /// For every figure that changed, the difference of its profiles (`run --profile`) per
    /// operation by kernel component and by function (with --json: under "explain")
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub gate: GateArgs,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub output: JsonArg,
}

/// The verdicts as CI systems read them (see docs/comparisons-and-history.md).
#[derive(Args, Debug, Clone, Default)]
pub struct GateArgs {
    /// Also write the verdicts as JUnit XML to FILE: one test case per figure, failed where
    /// --fail-if-slower fails (without it: every figure called slower)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Print the verdicts as KTAP (the kernel's test format) instead of the table
    #[arg(long, conflicts_with = "json")]
    pub ktap: bool,
}

#[derive(Args, Debug, Clone, Default)]
pub struct HistoryArgs {
    /// The figure's key as `osmeter show RUN` prints it, e.g. syscall.null or
    /// "ipc.pipe_pingpong placement=cross"; with --kernels, the probes or groups to show
    /// [default with --kernels: every probe counted]
    #[arg(value_name = "FIGURE")]
    pub figure: Vec<String>,
    /// Each probe's exact counts per kernel version from the stored guest runs (`run --guest`),
    /// ordered by Debian version, with every change point split by kernel function
    #[arg(long, conflicts_with_all = ["fail_if_slower", "include_busy", "junit", "ktap"])]
    pub kernels: bool,
    /// With --kernels: print the timeline as CSV (one row per kernel and probe)
    #[arg(long, requires = "kernels", conflicts_with = "json")]
    pub csv: bool,
    /// Only runs from this host name
    #[arg(long)]
    pub host: Option<String>,
    /// Only runs with this tag (repeatable; all must match)
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = crate::results::keep::tag_arg)]
    pub tags: Vec<crate::results::keep::Tag>,
    /// Only runs started at or after this time (as `osmeter runs --since`)
    #[arg(long, value_name = "DATE", value_parser = crate::clock::since_arg)]
    pub since: Option<String>,
    /// Exit with code 4 if the latest change made the figure slower by more than PCT percent
    #[arg(long, value_name = "PCT", value_parser = percent_arg)]
    pub fail_if_slower: Option<f64>,
    /// Take in runs measured on a busy machine (left out otherwise)
    #[arg(long)]
    pub include_busy: bool,
    #[command(flatten)]
    pub gate: GateArgs,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug, Clone, Default)]
pub struct FleetArgs {
    /// Only these figures: a key, or a group such as syscall (repeatable)
    #[arg(long = "figure", value_name = "FIGURE")]
    pub figures: Vec<String>,
    /// Only runs with this tag (repeatable; all must match)
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = crate::results::keep::tag_arg)]
    pub tags: Vec<crate::results::keep::Tag>,
    /// Only runs started at or after this time (as `osmeter runs --since`)
    #[arg(long, value_name = "DATE", value_parser = crate::clock::since_arg)]
    pub since: Option<String>,
    /// False-discovery rate of the hosts called off (0 to 1)
    #[arg(long, value_name = "RATE", default_value_t = 0.05, value_parser = rate_arg)]
    pub alpha: f64,
    /// Smallest distance from the class median worth calling, in percent
    #[arg(long, value_name = "PCT", default_value_t = 3.0, value_parser = percent_arg)]
    pub min_effect: f64,
    /// Exit with code 4 when a host is slower than its class on some figure
    #[arg(long)]
    pub fail_if_off: bool,
    /// Also write the fleet as a self-contained HTML page (a heatmap of hosts x figures per class)
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub output: JsonArg,
}

fn rate_arg(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err("give a rate between 0 and 1, e.g. 0.05".into()),
    }
}

#[derive(Args, Debug, Clone, Default)]
pub struct RunsArgs {
    /// Only runs from this host name
    #[arg(long)]
    pub host: Option<String>,
    /// Only runs of this suite
    #[arg(long)]
    pub suite: Option<String>,
    /// Only runs with this tag (repeatable; all must match)
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = crate::results::keep::tag_arg)]
    pub tags: Vec<crate::results::keep::Tag>,
    /// Only runs started at or after this time: a date (2026-11-01), a date and time
    /// (2026-11-01T10:00, UTC unless a zone follows), today, yesterday, or a time ago (30min, 12h,
    /// 2d, 1w)
    #[arg(long, value_name = "DATE", value_parser = crate::clock::since_arg)]
    pub since: Option<String>,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug, Clone)]
pub struct ShowArgs {
    /// Run id, or a unique prefix of one
    pub run: String,
    /// Every profiled figure's functions and notes in full (`run --profile`); without it, one
    /// line per figure
    #[arg(long)]
    pub profile: bool,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug, Clone)]
pub struct RmArgs {
    /// Run ids, or unique prefixes
    #[arg(required = true)]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub store: StoreArg,
}
