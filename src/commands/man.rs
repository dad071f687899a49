//! `osmeter man [COMMAND ...] | --dir DIR | --install`

use crate::cli::ManArgs;
use crate::shell_files;
use anyhow::Result;

/// A page to a terminal is rendered and paged by man-db (`man -l -`), as `man` would show it; to
/// a pipe or a file it stays roff, for `man -l FILE` or a packager.
fn show(page: &[u8]) -> Result<i32> {
    use std::io::{IsTerminal, Write};
    if !std::io::stdout().is_terminal() {
        crate::console::print_bytes(page)?;
        return Ok(0);
    }
    let Ok(man) = crate::programs::startable("man") else {
        crate::console::print_bytes(page)?;
        eprintln!(
            "osmeter: that is the page's roff source: `man` is missing to render it \
             (apt-get install man-db)"
        );
        return Ok(0);
    };
    let mut child = crate::programs::command(&man)
        .args(["-l", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", man.display()))?;
    // A pager the user quits early closes the pipe: that is no error.
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(page);
    }
    let status = child.wait()?;
    Ok(if status.success() { 0 } else { 1 })
}

pub fn man(args: &ManArgs) -> Result<i32> {
    let pages = shell_files::man_pages()?;
    let dir = match (&args.dir, args.install) {
        (Some(dir), _) => dir.clone(),
        (None, true) => shell_files::man_install_dir()?,
        (None, false) => {
            let name = std::iter::once("osmeter")
                .chain(args.command.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join("-");
            let Some((_, page)) = pages.iter().find(|(file, _)| *file == format!("{name}.1"))
            else {
                return Err(crate::usage!(
                    "there is no subcommand `{}`; `osmeter --help` lists them",
                    args.command.join(" ")
                ));
            };
            return show(page);
        }
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create the directory {}: {e}", dir.display()))?;
    for (file, page) in &pages {
        crate::files::write_atomic(&dir.join(file), page)?;
    }
    eprintln!(
        "osmeter: wrote {} man pages to {}",
        pages.len(),
        dir.display()
    );
    if args.install {
        match shell_files::man_lookup_advice(&dir) {
            None => eprintln!("osmeter: `man osmeter` finds them"),
            Some(advice) => eprintln!("osmeter: {advice}"),
        }
    }
    Ok(0)
}
