//! `osmeter stat [-r N] [--json] [-o FILE] -- CMD ARGS...`: time and count a command over repeated
//! runs. The command's own output never mixes with osmeter's results: with the results on standard
//! output, the command's standard output goes to standard error; with `-o FILE`, it passes through.

use crate::cli::StatArgs;
use crate::error::{EXIT_BROKEN_PIPE, EXIT_COMMAND_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::interrupt;
use crate::results::model::Sections;
use crate::stat::{self, CommandOutput, StatConfig};
use anyhow::Result;

pub fn stat(args: &StatArgs) -> Result<i32> {
    if let Some(program) = args.command.first() {
        crate::programs::startable(program)?;
    }
    let output = if args.output_file.is_some() {
        CommandOutput::Inherit
    } else {
        CommandOutput::ToStderr
    };
    let config = StatConfig::new(args.command.clone(), args.repeat, output)?;
    if let Some(path) = &args.output_file {
        crate::files::check_writable(path)?;
    }
    let keeper = super::keeper(&args.keep)?;
    interrupt::install();
    let started_at = crate::clock::now_rfc3339();
    let doc = stat::measure(&config)?;
    let profiles = match args.profile && !doc.interrupted && doc.failure.is_none() {
        true => Some(stat::profile(&config)?),
        false => None,
    };
    let text = if args.output.json {
        serde_json::to_string_pretty(&doc)? + "\n"
    } else {
        stat::render(&doc)
            + &profiles
                .as_ref()
                .map(crate::results::profile::render)
                .unwrap_or_default()
    };
    super::emit_to(args.output_file.as_deref(), &text)?;
    if !doc.runs.is_empty() {
        let mut run = keeper.run_of(
            Sections {
                stat: Some(doc.clone()),
                ..Default::default()
            },
            started_at,
            doc.interrupted || interrupt::requested(),
        );
        run.profiles = profiles;
        keeper.save(&run)?;
    }
    if doc.interrupted || interrupt::requested() {
        eprintln!("osmeter: interrupted; the runs above are all that was measured");
        return Ok(EXIT_INTERRUPTED);
    }
    if doc.runs.iter().any(|r| r.signal == Some(libc::SIGPIPE)) {
        // The command wrote into a pipe whose reader had gone (`... 2>&1 | head -1`): the shell's
        // code for a pipeline member ended that way, not a failure of the command.
        return Ok(EXIT_BROKEN_PIPE);
    }
    if let Some(f) = &doc.failure {
        eprintln!("osmeter: {f}");
        return Ok(EXIT_COMMAND_FAILED);
    }
    Ok(EXIT_OK)
}
