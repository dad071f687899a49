//! File system: reads served from the page cache, path lookup, the life of a temporary file, the
//! small-file and metadata workloads of Chen et al. 1996, and synchronous writes.
//!
//! Every workload works inside its own directory under the run's scratch directory; the directory
//! and everything in it is removed when the workload is dropped.

mod cache;
mod ext4;
mod ground;
#[cfg(test)]
mod ground_tests;
mod meta;
#[cfg(test)]
mod tests;

use super::util::{param_bool, param_u64};
use super::{Built, Origin, ProbeDef, ProbeEnv, Scale};
use crate::params;
use crate::results::model::{Params, Unit};
use anyhow::{anyhow, bail, Context, Result};
use ground::{Fresh, Ground, Grounded};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

// The small-file workload comes last in the table, but a run interleaves the rounds of every probe:
// on ext4 without a journal, where the kernel will not reuse an inode for minutes after its
// deletion, the probes that create files say so on their figures (see `ext4`).
pub const PROBES: &[ProbeDef] = &[
    ProbeDef {
        id: "fs.read_cached",
        summary: "one 16 KB read (pread) of a file already in the page cache, cycling through the file",
        params: "file_size: bytes in the file read over and over (a multiple of 16 KB)",
        unit: Unit::BytesPerSecond,
        origins: &[Origin::Ousterhout89],
        // 4 MiB fits the last-level cache of most current CPUs; 64 MiB is past it on most, which
        // is the case Ousterhout measured (data copied from memory, not from a CPU cache).
        variants: |s| {
            let sizes: &[u64] = match s {
                Scale::Quick => &[4 << 20],
                Scale::Full => &[4 << 20, 64 << 20],
            };
            sizes.iter().map(|n| params![("file_size", *n)]).collect()
        },
        build: |env, p| {
            on(env, Fresh::Ext4, "fs.read_cached", p, |dir| {
                cache::ReadCached::new(dir, param_u64(p, "file_size")?)
            })
        },
    },
    ProbeDef {
        id: "fs.read_128k",
        summary: "open, read whole, close one of a set of recently written 128 KB files (page cache), cycling",
        params: "files: how many 128 KB files are cycled through",
        unit: Unit::BytesPerSecond,
        origins: &[Origin::Chen96],
        variants: |_| vec![params![("files", 32)]],
        build: |env, p| {
            on(env, Fresh::Ext4, "fs.read_128k", p, |dir| {
                cache::Read128k::new(dir, param_u64(p, "files")?)
            })
        },
    },
    ProbeDef {
        id: "fs.open_close",
        summary: "openat read-only then close of an existing file, relative to an open directory",
        params: "depth: path components looked up (1 = \"foo\", 4 = \"a/b/c/foo\", 16 = 15 directories deep)",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Ousterhout89],
        variants: |s| {
            let depths: &[u64] = match s {
                Scale::Quick => &[1, 4],
                Scale::Full => &[1, 4, 16],
            };
            depths.iter().map(|d| params![("depth", *d)]).collect()
        },
        build: |env, p| {
            on(env, Fresh::Tmpfs, "fs.open_close", p, |dir| {
                cache::OpenClose::new(dir, param_u64(p, "depth")?)
            })
        },
    },
    ProbeDef {
        id: "fs.create_delete",
        summary: "temporary file: create, write size bytes, (fsync,) close, open, read them, close, unlink",
        params: "size: bytes written and read back (0, 10 KB, 100 KB); fsync: fsync before the first close",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Ousterhout89],
        variants: |s| {
            let points: &[(u64, bool)] = match s {
                Scale::Quick => &[(0, false), (100 << 10, false), (0, true)],
                Scale::Full => &[
                    (0, false),
                    (10 << 10, false),
                    (100 << 10, false),
                    (0, true),
                    (10 << 10, true),
                    (100 << 10, true),
                ],
            };
            points
                .iter()
                .map(|(size, fsync)| params![("size", *size), ("fsync", *fsync)])
                .collect()
        },
        build: |env, p| {
            on(env, Fresh::Ext4, "fs.create_delete", p, |dir| {
                meta::CreateDelete::new(dir, param_u64(p, "size")?, param_bool(p, "fsync")?)
            })
        },
    },
    ProbeDef {
        id: "fs.metadata",
        summary: "create 128 zero-length files (open O_CREAT|O_EXCL, close) in an empty directory; \
                  unlinked untimed",
        params: "",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Chen96],
        variants: |_| vec![params!()],
        build: |env, p| on(env, Fresh::Ext4, "fs.metadata", p, meta::Metadata::new),
    },
    ProbeDef {
        id: "fs.write_fsync",
        summary: "pwrite of size bytes at offset 0 of an existing file, then fsync",
        params: "size: bytes overwritten before each fsync",
        unit: Unit::Nanoseconds,
        origins: &[Origin::LEBench, Origin::Osmeter],
        variants: |s| {
            let sizes: &[u64] = match s {
                Scale::Quick => &[4096],
                Scale::Full => &[4096, 64 << 10],
            };
            sizes.iter().map(|n| params![("size", *n)]).collect()
        },
        build: |env, p| {
            on(env, Fresh::Ext4, "fs.write_fsync", p, |dir| {
                meta::WriteFsync::new(dir, param_u64(p, "size")?)
            })
        },
    },
    ProbeDef {
        id: "fs.small_files",
        summary: "whole small-file workload as one operation: create+write, read back, then delete files \
                  of 8 KB spread over 32 directories (ns per whole workload)",
        params: "files: 8 KB files in the workload",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Chen96],
        variants: |s| match s {
            Scale::Quick => vec![params![("files", 512)]],
            Scale::Full => vec![params![("files", 8192)]],
        },
        build: |env, p| {
            on(env, Fresh::Ext4, "fs.small_files", p, |dir| {
                meta::SmallFiles::new(dir, param_u64(p, "files")?)
            })
        },
    },
];

/// Builds a workload with `make` in its round's file system (see [`ground`]): a fresh one of the
/// kind given, big enough for what the variant writes, or the scratch directory's own.
fn on<W: crate::harness::Workload + 'static>(
    env: &ProbeEnv,
    fresh: Fresh,
    probe: &str,
    params: &Params,
    make: impl FnOnce(&Path) -> Result<W>,
) -> Result<Built> {
    let disk = crate::probes::footprint::of(probe, params).disk;
    let ground = Ground::for_round(env, fresh, disk);
    Ok(Built::Ready(Box::new(Grounded::build(ground, make)?)))
}

/// A workload's own directory under the scratch directory, held open so that names are looked up
/// relative to it (openat) and the length of the scratch path does not enter the figures.
struct WorkDir {
    fd: OwnedFd,
    dir: tempfile::TempDir,
}

impl WorkDir {
    fn new(scratch: &Path, prefix: &str) -> Result<WorkDir> {
        let dir = crate::scratch::private_dir(scratch, prefix)?;
        let fd = open_dir(dir.path())?;
        Ok(WorkDir { fd, dir })
    }

    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

fn open_dir(path: &Path) -> Result<OwnedFd> {
    let c = cstring(path.to_str().context("scratch path is not UTF-8")?)?;
    // SAFETY: c is a valid NUL-terminated string.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(os_error(&format!("open of directory {}", path.display())));
    }
    // SAFETY: fd was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| anyhow!("path {s:?} contains a NUL byte"))
}

/// The last OS error, naming the call. Only built on failure paths, so the timed loops stay free of
/// allocation while they succeed.
fn os_error(what: &str) -> anyhow::Error {
    anyhow!("{what} failed: {}", std::io::Error::last_os_error())
}

/// Bytes that are not all zero, so no layer can treat the data as a hole.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 + 1).collect()
}

/// Writes all of `buf`, continuing after short writes.
fn write_all(fd: RawFd, buf: &[u8]) -> Result<()> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer and length describe the unwritten tail of buf.
        let n = unsafe { libc::write(fd, buf[done..].as_ptr().cast(), buf.len() - done) };
        if n <= 0 {
            return Err(os_error("write"));
        }
        done += n as usize;
    }
    Ok(())
}

/// Reads exactly `buf.len()` bytes; a file that ends early is an error.
fn read_exact(fd: RawFd, buf: &mut [u8]) -> Result<()> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer and length describe the unfilled tail of buf.
        let n = unsafe { libc::read(fd, buf[done..].as_mut_ptr().cast(), buf.len() - done) };
        if n < 0 {
            return Err(os_error("read"));
        }
        if n == 0 {
            bail!("file ended after {done} of {} bytes", buf.len());
        }
        done += n as usize;
    }
    Ok(())
}

/// Creates `name` in `dir` (a new file, never through a link) holding `data`, flushed to the
/// device so that later timed work does not pay for it.
fn create_file(dir: RawFd, name: &std::ffi::CStr, data: &[u8]) -> Result<OwnedFd> {
    // SAFETY: name is NUL-terminated; dir is an open directory.
    let fd = unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_RDWR | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        return Err(os_error(&format!("create of {name:?}")));
    }
    // SAFETY: fd was just opened.
    let file = unsafe { OwnedFd::from_raw_fd(fd) };
    write_all(fd, data)?;
    // SAFETY: fd is open.
    if unsafe { libc::fsync(fd) } != 0 {
        return Err(os_error("fsync"));
    }
    Ok(file)
}
