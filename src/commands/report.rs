//! `osmeter report RUN... -o FILE`: stored runs as one self-contained HTML page.

use crate::cli::ReportArgs;
use crate::error::EXIT_OK;
use crate::results::model::Run;
use crate::results::report;
use crate::results::store::{resolve_id, Location};
use anyhow::{Context as _, Result};
use std::io::Write as _;
use std::path::Path;

pub fn report(args: &ReportArgs) -> Result<i32> {
    let mut store = Location::resolve(args.store.store.as_deref())?.open_read_only()?;
    // Resolve every id before loading anything, so a typo is reported at once.
    let mut ids: Vec<String> = Vec::new();
    for wanted in &args.runs {
        let id = resolve_id(store.as_mut(), wanted)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let runs: Vec<Run> = ids
        .iter()
        .map(|id| {
            store.load(id)?.ok_or_else(|| {
                anyhow::anyhow!("run {id} vanished from {} while reading", store.describe())
            })
        })
        .collect::<Result<_>>()?;
    let page = report::render(&runs)?;
    write_whole(&args.output, page.as_bytes()).with_context(|| {
        format!(
            "cannot write the report to {}; choose a writable path with -o",
            args.output.display()
        )
    })?;
    eprintln!(
        "osmeter: report of {} run(s) written to {} ({} KiB)",
        runs.len(),
        args.output.display(),
        page.len().div_ceil(1024)
    );
    Ok(EXIT_OK)
}

/// Writes to a temporary file beside `path` and renames it into place, so a failure (full disk,
/// missing directory, a directory in the way) leaves neither a partial report nor a stray file.
fn write_whole(path: &Path, data: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if path.is_dir() {
        anyhow::bail!("it is a directory");
    }
    if !dir.is_dir() {
        anyhow::bail!("the directory {} does not exist", dir.display());
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".osmeter-report-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| {
            // tempfile appends its random file name (` at path "..."`); the reader needs only the
            // directory and the system's reason.
            let text = e.to_string();
            let why = text.split(" at path ").next().unwrap_or(&text).to_string();
            anyhow::anyhow!("cannot create a file in {}: {why}", dir.display())
        })?;
    tmp.write_all(data)?;
    // A report is for sharing: readable by others, as a file made by a plain write would be.
    use std::os::unix::fs::PermissionsExt as _;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
