//! `osmeter export RUN --format F`.

use crate::cli::ExportArgs;
use crate::results::export::{refusal, ExportOptions};
use crate::results::store::{resolve_id, Location};
use anyhow::Result;
use std::io::IsTerminal;

pub fn export(args: &ExportArgs) -> Result<i32> {
    let exp = args.format.exporter();
    let mut store = Location::resolve(args.store.store.as_ref())?.open_read_only()?;
    let id = resolve_id(store.as_mut(), &args.run)?;
    let run = store
        .load(&id)?
        .ok_or_else(|| anyhow::anyhow!("run {id} vanished while reading"))?;
    // A run of a kind that cannot hold the format is a request to correct, not a failure.
    if let Some(why) = refusal(args.format, &run) {
        return Err(crate::usage!("{why}"));
    }
    if exp.binary() && args.output.is_none() && std::io::stdout().is_terminal() {
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
    match &args.output {
        Some(path) => crate::files::write_atomic(path, &buf)?,
        None => crate::console::print_bytes(&buf)?,
    }
    Ok(0)
}
