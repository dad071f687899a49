//! `osmeter man [COMMAND ...] | --dir DIR | --install`

use crate::cli::ManArgs;
use crate::shell_files;
use anyhow::Result;

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
            crate::console::print_bytes(page)?;
            return Ok(0);
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
