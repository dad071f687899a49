//! `osmeter export RUN --format F`.

use crate::cli::ExportArgs;
use crate::results::export::{refusal, ExportOptions, Format};
use crate::results::store::{resolve_id, Location};
use anyhow::Result;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// The file node-exporter's textfile collector reads in `--textfile DIR` (it reads `*.prom` only,
/// so the atomic writer's temporary file beside it is never half read).
pub const TEXTFILE: &str = "osmeter.prom";

pub fn export(args: &ExportArgs) -> Result<i32> {
    let exp = args.format.exporter();
    let output = match &args.textfile {
        Some(dir) => Some(textfile(dir, args.format)?),
        None => args.output.clone(),
    };
    let mut store = Location::resolve(args.store.store.as_ref())?.open_read_only()?;
    let id = resolve_id(store.as_mut(), &args.run)?;
    let run = store
        .load(&id)?
        .ok_or_else(|| anyhow::anyhow!("run {id} vanished while reading"))?;
    // A run of a kind that cannot hold the format is a request to correct, not a failure.
    if let Some(why) = refusal(args.format, &run) {
        return Err(crate::usage!("{why}"));
    }
    if exp.binary() && output.is_none() && std::io::stdout().is_terminal() {
        return Err(crate::usage!(
            "{} is binary: write it to a file with -o FILE, or redirect stdout",
            exp.name()
        ));
    }
    let mut buf = Vec::new();
    exp.write(
        &run,
        &ExportOptions {
            samples: args.samples,
        },
        &mut buf,
    )?;
    match &output {
        Some(path) => crate::files::write_atomic(path, &buf)?,
        None => crate::console::print_bytes(&buf)?,
    }
    Ok(0)
}

/// Where `--textfile DIR` writes, once DIR is known to be a directory and the format metrics.
fn textfile(dir: &Path, format: Format) -> Result<PathBuf> {
    if format != Format::Openmetrics {
        return Err(crate::usage!(
            "--textfile writes metrics for node-exporter: use it with --format openmetrics"
        ));
    }
    if !dir.is_dir() {
        return Err(crate::usage!(
            "--textfile {}: not a directory; give the directory node-exporter's \
             --collector.textfile.directory names",
            crate::text::escape_controls(&dir.display().to_string())
        ));
    }
    Ok(dir.join(TEXTFILE))
}
