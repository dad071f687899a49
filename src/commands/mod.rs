//! One module per subcommand.

pub mod compare;
pub mod info;
pub mod list;
pub mod report;
pub mod run;
pub mod stat;
pub mod stored;

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
        Command::Report(args) => report::report(&args),
    }
}

/// True when progress lines should be drawn (stderr is a terminal).
pub fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}
