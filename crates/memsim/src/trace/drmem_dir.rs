//! A drmemtrace run directory read as one trace.
//!
//! drmemtrace writes a directory per traced process (`drmemtrace.APP.PID.NNNN.dir`) whose `trace/`
//! subdirectory holds one file per thread: `.trace` (plain entries), `.trace.gz` or `.trace.zst`
//! (the same, compressed), or `.trace.zip` (an archive of members, each a piece of the thread's
//! entry stream, which read one after another in name order make the whole stream).
//!
//! A thread's stream carries a timestamp marker every so often and nothing finer, so threads are
//! interleaved at that grain, as drmemtrace's own serial analysers do: each thread's references
//! run up to its next timestamp marker; then the thread whose pending timestamp is smallest goes
//! on (the lower thread id on a tie). References before a thread's first timestamp go first.

use super::drmem::{DrmemReader, Stop};
use super::{Format, Ref, RefSource, TraceMeta};
use crate::progress::Counter;
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// The file-name endings of per-thread trace files, and how each is opened.
const SUFFIXES: [&str; 4] = [".trace", ".trace.gz", ".trace.zst", ".trace.zip"];

/// Opens the run directory `dir` (or its `trace/` subdirectory) as one merged trace.
pub fn open(
    dir: &Path,
    format: Option<Format>,
    read: Option<Counter>,
) -> Result<Box<dyn RefSource + Send>> {
    if let Some(f) = format.filter(|f| *f != Format::Drmemtrace) {
        bail!(
            "{} is a directory, read only as a drmemtrace run; --from {} does not apply (leave --from out)",
            dir.display(),
            f.name()
        );
    }
    let files = thread_files(dir)?;
    let mut threads = Vec::with_capacity(files.len());
    for path in files {
        let stream = open_thread(&path, read.clone())?;
        let reader =
            DrmemReader::new(stream).with_context(|| format!("reading {}", path.display()))?;
        threads.push(Thread {
            tid: reader.thread().unwrap_or(u64::MAX),
            reader,
            path,
            next: 0,
            done: false,
        });
    }
    Ok(Box::new(DrmemDir::new(threads)))
}

/// The per-thread trace files of a run directory, in name order.
pub fn thread_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let sub = dir.join("trace");
    let at = if sub.is_dir() { sub } else { dir.to_path_buf() };
    let mut files = Vec::new();
    let list = std::fs::read_dir(&at)
        .with_context(|| format!("cannot list directory {}", at.display()))?;
    for e in list {
        let e = e.with_context(|| format!("cannot list directory {}", at.display()))?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if SUFFIXES.iter().any(|s| name.ends_with(s)) && e.path().is_file() {
            files.push(e.path());
        }
    }
    if files.is_empty() {
        bail!(
            "{} holds no drmemtrace thread files: expected a drmemtrace run directory, with files \
             ending in {} in it or in its trace/ subdirectory (a run that has only raw/ files \
             needs DynamoRIO's raw2trace first)",
            dir.display(),
            SUFFIXES.join(", ")
        );
    }
    files.sort();
    Ok(files)
}

/// One thread file's entry stream, decompressed.
fn open_thread(path: &Path, read: Option<Counter>) -> Result<Box<dyn BufRead + Send>> {
    if path.to_string_lossy().ends_with(".zip") {
        let chunks = super::drmem_zip::ZipChunks::open(path, read)?;
        Ok(Box::new(BufReader::with_capacity(super::BUF, chunks)))
    } else {
        // Plain, gzip and zstd are told apart by their first bytes.
        super::open_raw(path, read)
    }
}

struct Thread {
    reader: DrmemReader<Box<dyn BufRead + Send>>,
    path: PathBuf,
    tid: u64,
    /// The timestamp that starts the thread's next run of references (0 before its first).
    next: u64,
    done: bool,
}

/// The threads of a run as one source.
pub struct DrmemDir {
    threads: Vec<Thread>,
    /// The thread whose run is being read, when a batch filled up in the middle of it.
    current: Option<usize>,
    meta: TraceMeta,
}

impl DrmemDir {
    fn new(threads: Vec<Thread>) -> DrmemDir {
        let flags = threads.iter().fold(0, |f, t| f | t.reader.meta().flags);
        DrmemDir {
            threads,
            current: None,
            meta: TraceMeta { flags },
        }
    }

    /// The thread to read next: the smallest pending timestamp, then the lowest thread id, then
    /// the first file.
    fn pick(&self) -> Option<usize> {
        self.threads
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.done)
            .min_by_key(|(i, t)| (t.next, t.tid, *i))
            .map(|(i, _)| i)
    }
}

impl RefSource for DrmemDir {
    fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<usize> {
        let before = out.len();
        while out.len() - before < max {
            let Some(i) = self.current.or_else(|| self.pick()) else {
                break;
            };
            self.current = Some(i);
            let t = &mut self.threads[i];
            let (room, from) = (max - (out.len() - before), out.len());
            let stop = t
                .reader
                .next_segment(out, room)
                .with_context(|| format!("reading {}", t.path.display()))?;
            if self.meta.physical() && !t.reader.meta().physical() {
                // Another thread's file maps pages and this one does not: its addresses stand for
                // themselves, as they do for a page no marker mapped.
                for r in &mut out[from..] {
                    r.paddr.get_or_insert(r.vaddr);
                }
            }
            match stop {
                Stop::Full => {}
                Stop::Timestamp(stamp) => {
                    t.next = stamp;
                    self.current = None;
                }
                Stop::End => {
                    t.done = true;
                    self.current = None;
                }
            }
        }
        Ok(out.len() - before)
    }

    fn meta(&self) -> TraceMeta {
        self.meta
    }
}

#[cfg(test)]
#[path = "drmem_dir_tests.rs"]
mod tests;
