//! `osmeter stat [-r N] [-w N] [--prepare CMD] [--show-output] [--json] [-o FILE] -- CMD ARGS...
//! [::: CMD2 ARGS...]`: time and count commands over repeated runs, in turns, and set them against
//! the fastest. The commands' own output is discarded unless `--show-output` lets it through (to
//! standard error while the results are on standard output, to standard output with `-o FILE`).

use crate::cli::StatArgs;
use crate::error::{EXIT_BROKEN_PIPE, EXIT_COMMAND_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::interrupt;
use crate::results::model::Sections;
use crate::results::schema::{stamped_all, Stamped};
use crate::stat;
use anyhow::Result;

pub fn stat(args: &StatArgs) -> Result<i32> {
    let configs = crate::config::stat::commands(args)?;
    let keeper = crate::config::keeper(&args.keep)?;
    interrupt::install();
    let started_at = crate::clock::now_rfc3339();
    let (docs, profiles): (Vec<_>, Vec<_>) = stat::measure_all(&configs, args.profile)?
        .into_iter()
        .unzip();
    let several = docs.len() > 1;
    // Written before the runs are saved, but a file that cannot be written (a FIFO nobody reads,
    // a full disk) loses no run: its error comes after the save.
    let written = match (args.output_file.as_deref(), args.output.json) {
        (None, true) if several => super::emit_json_all(&docs),
        (None, true) => super::emit_json(&docs[0]),
        (file, json) => {
            let text = if json && several {
                serde_json::to_string_pretty(&stamped_all(&docs))? + "\n"
            } else if json {
                serde_json::to_string_pretty(&Stamped(&docs[0]))? + "\n"
            } else {
                let mut text: String = docs
                    .iter()
                    .zip(&profiles)
                    .map(|(doc, profile)| {
                        stat::render(doc)
                            + &profile
                                .as_ref()
                                .map(crate::results::profile::render)
                                .unwrap_or_default()
                    })
                    .collect();
                if several {
                    text.push_str(&stat::render_comparison(&docs));
                }
                text
            };
            super::emit_to(file, &text)
        }
    };
    for (doc, profile) in docs
        .iter()
        .zip(profiles)
        .filter(|(d, _)| !d.runs.is_empty())
    {
        let mut run = keeper.run_of(
            Sections::of(doc.clone()),
            started_at.clone(),
            doc.interrupted || interrupt::requested(),
        );
        run.profiles = profile;
        // `runs` lists a stat run by its command, as a tag unless one was given.
        run.tags
            .entry("command".into())
            .or_insert_with(|| crate::text::command_line(&doc.command));
        keeper.save(&run)?;
    }
    written?;
    if docs.iter().any(|d| d.interrupted) || interrupt::requested() {
        eprintln!("osmeter: interrupted; the runs above are all that was measured");
        return Ok(EXIT_INTERRUPTED);
    }
    if docs
        .iter()
        .flat_map(|d| &d.runs)
        .any(|r| r.signal == Some(libc::SIGPIPE))
    {
        // The command wrote into a pipe whose reader had gone (`... 2>&1 | head -1`): the shell's
        // code for a pipeline member ended that way, not a failure of the command.
        return Ok(EXIT_BROKEN_PIPE);
    }
    let failures: Vec<&String> = docs.iter().filter_map(|d| d.failure.as_ref()).collect();
    for f in &failures {
        eprintln!("osmeter: {f}");
    }
    Ok(if failures.is_empty() {
        EXIT_OK
    } else {
        EXIT_COMMAND_FAILED
    })
}
