//! `osmeter export RUN --format F`.

use crate::cli::ExportArgs;
use crate::results::export::{exporter, ExportOptions, FORMATS};
use crate::results::store::{resolve_id, Location};
use crate::usage;
use anyhow::{Context, Result};
use std::io::Write;

/// Writes `bytes` to `path` through a temporary file in the same directory, so a failure never leaves
/// a half-written file behind.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".osmeter-")
        .tempfile_in(dir)
        .with_context(|| {
            format!(
                "cannot write {}: cannot create a file in {}",
                path.display(),
                dir.display()
            )
        })?;
    tmp.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}

pub fn export(args: &ExportArgs) -> Result<i32> {
    let exp = exporter(&args.format).ok_or_else(|| {
        usage!(
            "unknown format {:?}: choose one of {}",
            args.format,
            FORMATS.join(", ")
        )
    })?;
    let mut store = Location::resolve(args.store.store.as_deref())?.open_read_only()?;
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
        Some(path) => write_atomically(path, &buf)?,
        None => std::io::stdout().write_all(&buf)?,
    }
    Ok(0)
}
