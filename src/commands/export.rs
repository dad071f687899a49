//! `osmeter export RUN --format F`.

use crate::cli::ExportArgs;
use crate::results::export::ExportOptions;
use crate::results::store::{resolve_id, Location};
use anyhow::Result;

pub fn export(args: &ExportArgs) -> Result<i32> {
    let exp = args.format.exporter();
    let mut store = Location::resolve(args.store.store.as_ref())?.open_read_only()?;
    let id = resolve_id(store.as_mut(), &args.run)?;
    let run = store
        .load(&id)?
        .ok_or_else(|| anyhow::anyhow!("run {id} vanished while reading"))?;
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
