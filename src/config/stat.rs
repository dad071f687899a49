//! `osmeter stat`'s arguments checked and lowered: each command after `--` (split at `:::`) with
//! its repeats, warm-up, preparation and where its output goes, before anything runs.

use crate::cli::{StatArgs, STAT_SEPARATOR};
use crate::stat::{CommandOutput, StatConfig};
use anyhow::Result;

/// One configuration per command, each command startable and the output file writable.
pub fn commands(args: &StatArgs) -> Result<Vec<StatConfig>> {
    let commands = split_commands(&args.command)?;
    for argv in &commands {
        crate::programs::startable(&argv[0])?;
    }
    let output = match (args.show_output, args.output_file.is_some()) {
        (false, _) => CommandOutput::Discard,
        (true, true) => CommandOutput::Inherit,
        (true, false) => CommandOutput::ToStderr,
    };
    let configs = commands
        .into_iter()
        .map(|argv| {
            StatConfig::new(argv, args.repeat, output)?
                .with_warmup(args.warmup)?
                .with_prepare(args.prepare.clone())
        })
        .collect::<Result<Vec<_>>>()?;
    if let Some(path) = &args.output_file {
        crate::files::check_writable(path)?;
    }
    Ok(configs)
}

/// The commands after `--`, split at `:::`; each must name a program.
fn split_commands(words: &[String]) -> Result<Vec<Vec<String>>> {
    let commands: Vec<Vec<String>> = words
        .split(|w| w == STAT_SEPARATOR)
        .map(<[String]>::to_vec)
        .collect();
    if let Some(i) = commands.iter().position(|c| c.is_empty()) {
        return Err(crate::usage!(
            "command {} of {} after `--` is empty: write `osmeter stat -- CMD1 ::: CMD2`, with a \
             command on each side of `{STAT_SEPARATOR}`",
            i + 1,
            commands.len()
        ));
    }
    Ok(commands)
}
