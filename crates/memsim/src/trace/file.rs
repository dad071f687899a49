//! Writing trace files: plain, zstd- or gzip-compressed, atomically (nothing appears under the name
//! unless the whole trace was written), for conversions and for live captures alike.

use super::binary::TraceWriter;
use super::{RefSource, FLAG_INCOMPLETE};
use crate::progress::Counter;
use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

/// Plain or compressed output.
pub enum Sink {
    Plain(std::fs::File),
    Zstd(zstd::stream::write::Encoder<'static, std::fs::File>),
    /// For tools that read gzip and not zstd (drmemtrace's older releases).
    Gzip(flate2::write::GzEncoder<std::fs::File>),
}

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Plain(f) => f.write(b),
            Sink::Zstd(z) => z.write(b),
            Sink::Gzip(g) => g.write(b),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Plain(f) => f.flush(),
            Sink::Zstd(z) => z.flush(),
            Sink::Gzip(g) => g.flush(),
        }
    }
}

/// The zstd level of conversions and exports; live captures use 1 (see `write_trace_at_level`).
pub const ZSTD_LEVEL: i32 = 3;

impl Sink {
    /// Writes into `file` (the atomic file that will be `path`), zstd-compressed when `zstd` is
    /// set or the name ends in `.zst`, gzip-compressed when the name ends in `.gz`.
    pub fn create(
        file: &crate::files::AtomicFile,
        path: &Path,
        zstd: bool,
        level: i32,
    ) -> Result<Sink> {
        let gzip = path.extension().is_some_and(|e| e == "gz");
        if gzip && zstd {
            anyhow::bail!(
                "{} ends in .gz but --zstd asks for zstd: name it .zst, or leave --zstd out for gzip",
                path.display()
            );
        }
        Ok(if gzip {
            // zstd level 1 is what a live capture asks for, to keep up: gzip's fastest then too.
            let gz_level = if level <= 1 {
                flate2::Compression::fast()
            } else {
                flate2::Compression::default()
            };
            Sink::Gzip(flate2::write::GzEncoder::new(file.reopen()?, gz_level))
        } else if wants_zstd(path, zstd) {
            Sink::Zstd(zstd::stream::write::Encoder::new(file.reopen()?, level)?)
        } else {
            Sink::Plain(file.reopen()?)
        })
    }

    pub fn finish(self) -> Result<()> {
        match self {
            Sink::Plain(_) => Ok(()),
            Sink::Zstd(z) => {
                z.finish().context("finishing zstd compression")?;
                Ok(())
            }
            Sink::Gzip(g) => {
                g.finish().context("finishing gzip compression")?;
                Ok(())
            }
        }
    }
}

fn wants_zstd(path: &Path, flag: bool) -> bool {
    flag || path.extension().is_some_and(|e| e == "zst")
}

/// Copies a source into a new trace file; nothing appears under `out` unless it all worked.
pub fn write_trace(src: &mut dyn RefSource, out: &Path, zstd: bool, flags: u8) -> Result<u64> {
    write_trace_at_level(src, out, zstd, flags, ZSTD_LEVEL, None)
}

/// The same, with a zstd level of the caller's choosing: a live capture wants level 1, which
/// compresses a trace about as well at twice the speed, so it keeps up with the source. The
/// references written are added to `written` as they go, for a progress line.
pub fn write_trace_at_level(
    src: &mut dyn RefSource,
    out: &Path,
    zstd: bool,
    flags: u8,
    level: i32,
    written: Option<&Counter>,
) -> Result<u64> {
    let file = crate::files::AtomicFile::create(out)?;
    let sink = Sink::create(&file, out, zstd, level)?;
    let cannot_write = || format!("cannot write {}", out.display());
    let mut w = TraceWriter::new(sink, flags | src.meta().flags).with_context(cannot_write)?;
    super::for_each_batch(src, |batch| {
        for r in batch {
            w.write(r).with_context(cannot_write)?;
        }
        if let Some(count) = written {
            count.add(batch.len() as u64);
        }
        Ok(())
    })?;
    let n = w.count();
    let late = src.meta().flags & FLAG_INCOMPLETE;
    w.finish(late)
        .and_then(Sink::finish)
        .with_context(cannot_write)?;
    file.commit()?;
    Ok(n)
}

/// Writes the trace at `input` to `output` in ChampSim's or drmemtrace's format, and says what it
/// wrote; nothing appears at `output` unless it all worked.
pub fn export_as(
    input: &Path,
    output: &Path,
    from: Option<super::Format>,
    to: super::ExportFormat,
    zstd: bool,
) -> Result<String> {
    let mut src = super::open(input, from)?;
    let file = crate::files::AtomicFile::create(output)?;
    let mut sink = Sink::create(&file, output, zstd, ZSTD_LEVEL)?;
    let what = if to == super::ExportFormat::Champsim {
        let c = super::champsim::export(src.as_mut(), &mut sink)
            .with_context(|| format!("exporting {} to {}", input.display(), output.display()))?;
        format!(
            "{} instructions ({} loads, {} stores; {} data references beyond the record's 4 loads and 2 stores left out)",
            c.instructions, c.loads, c.stores, c.dropped
        )
    } else {
        let c = super::drmem::export(src.as_mut(), &mut sink)
            .with_context(|| format!("exporting {} to {}", input.display(), output.display()))?;
        format!(
            "{} references in {} entries ({} kernel sections, {} physical-address pairs)",
            c.references, c.entries, c.kernel_sections, c.physical_pairs
        )
    };
    sink.finish()
        .with_context(|| format!("cannot write {}", output.display()))?;
    file.commit()?;
    Ok(what)
}
