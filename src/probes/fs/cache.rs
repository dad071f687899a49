//! Work served from the page cache and the name cache: block reads of a cached file, whole reads of
//! recently written files, and path lookup in open/close.

use super::{create_file, cstring, os_error, pattern, read_exact, WorkDir};
use crate::harness::Workload;
use anyhow::{bail, Result};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

/// Block size of Ousterhout's cached-read benchmark.
pub(super) const BLOCK: usize = 16 << 10;

/// File size of Chen et al.'s buffer-cache test.
pub(super) const FILE_128K: usize = 128 << 10;

pub(super) struct ReadCached {
    file: OwnedFd,
    buf: Vec<u8>,
    size: u64,
    offset: u64,
    // Last, so the file is closed before its directory goes.
    _dir: WorkDir,
}

impl ReadCached {
    pub(super) fn new(scratch: &Path, size: u64) -> Result<ReadCached> {
        if size == 0 || size % BLOCK as u64 != 0 {
            bail!("file_size must be a positive multiple of {BLOCK} bytes, not {size}");
        }
        let dir = WorkDir::new(scratch, "read_cached-")?;
        let name = cstring("data")?;
        // Written in 1 MiB pieces so a large file does not need a buffer of its own size.
        let chunk = pattern(1 << 20);
        let file = create_file(dir.fd(), &name, &[])?;
        let mut left = size as usize;
        while left > 0 {
            let n = left.min(chunk.len());
            super::write_all(file.as_raw_fd(), &chunk[..n])?;
            left -= n;
        }
        // SAFETY: file is open.
        if unsafe { libc::fsync(file.as_raw_fd()) } != 0 {
            return Err(os_error("fsync"));
        }
        let mut w = ReadCached {
            file,
            buf: vec![0; BLOCK],
            size,
            offset: 0,
            _dir: dir,
        };
        // One pass to make sure every page is in the cache before anything is timed.
        w.run(size / BLOCK as u64)?;
        Ok(w)
    }

    #[cfg(test)]
    pub(super) fn last_block(&self) -> &[u8] {
        &self.buf
    }
}

impl Workload for ReadCached {
    fn run(&mut self, iters: u64) -> Result<()> {
        let fd = self.file.as_raw_fd();
        for _ in 0..iters {
            // SAFETY: buf holds BLOCK bytes; fd is open for the life of self.
            let n = unsafe {
                libc::pread(
                    fd,
                    self.buf.as_mut_ptr().cast(),
                    BLOCK,
                    self.offset as libc::off_t,
                )
            };
            if n != BLOCK as isize {
                return Err(short(n, "pread"));
            }
            self.offset += BLOCK as u64;
            if self.offset >= self.size {
                self.offset = 0;
            }
        }
        Ok(())
    }

    fn bytes_per_op(&self) -> Option<u64> {
        Some(BLOCK as u64)
    }
}

fn short(n: isize, what: &str) -> anyhow::Error {
    if n < 0 {
        os_error(what)
    } else {
        anyhow::anyhow!("{what} returned {n} bytes, fewer than asked")
    }
}

pub(super) struct Read128k {
    names: Vec<CString>,
    buf: Vec<u8>,
    next: usize,
    dir: WorkDir,
}

impl Read128k {
    pub(super) fn new(scratch: &Path, files: u64) -> Result<Read128k> {
        if files == 0 || files > 4096 {
            bail!("files must be between 1 and 4096, not {files}");
        }
        let dir = WorkDir::new(scratch, "read_128k-")?;
        let data = pattern(FILE_128K);
        let names = (0..files)
            .map(|i| cstring(&format!("f{i:04}")))
            .collect::<Result<Vec<_>>>()?;
        for n in &names {
            create_file(dir.fd(), n, &data)?;
        }
        Ok(Read128k {
            names,
            buf: vec![0; FILE_128K],
            next: 0,
            dir,
        })
    }

    #[cfg(test)]
    pub(super) fn dir_path(&self) -> &Path {
        self.dir.path()
    }

    #[cfg(test)]
    pub(super) fn last_file(&self) -> &[u8] {
        &self.buf
    }
}

impl Workload for Read128k {
    fn run(&mut self, iters: u64) -> Result<()> {
        let dir = self.dir.fd();
        for _ in 0..iters {
            let name = &self.names[self.next];
            // SAFETY: name is NUL-terminated; dir is open for the life of self.
            let fd = unsafe { libc::openat(dir, name.as_ptr(), libc::O_RDONLY) };
            if fd < 0 {
                return Err(os_error("openat"));
            }
            let r = read_exact(fd, &mut self.buf);
            // SAFETY: fd was opened above and is closed exactly once.
            unsafe { libc::close(fd) };
            r?;
            self.next += 1;
            if self.next == self.names.len() {
                self.next = 0;
            }
        }
        Ok(())
    }

    fn bytes_per_op(&self) -> Option<u64> {
        Some(FILE_128K as u64)
    }
}

pub(super) struct OpenClose {
    path: CString,
    dir: WorkDir,
}

impl OpenClose {
    pub(super) fn new(scratch: &Path, depth: u64) -> Result<OpenClose> {
        if !(1..=26).contains(&depth) {
            bail!("depth must be between 1 and 26, not {depth}");
        }
        let dir = WorkDir::new(scratch, "open_close-")?;
        let rel = lookup_path(depth);
        let full = dir.path().join(&rel);
        std::fs::create_dir_all(full.parent().unwrap_or(dir.path()))?;
        std::io::Write::write_all(&mut crate::scratch::create_new(&full)?, b"x")?;
        Ok(OpenClose {
            path: cstring(&rel)?,
            dir,
        })
    }
}

/// `depth` components: single-letter directories, then the file `foo` (depth 4 gives `a/b/c/foo`).
pub(super) fn lookup_path(depth: u64) -> String {
    let mut s = String::new();
    for c in (b'a'..).take(depth as usize - 1) {
        s.push(c as char);
        s.push('/');
    }
    s.push_str("foo");
    s
}

impl Workload for OpenClose {
    fn run(&mut self, iters: u64) -> Result<()> {
        let dir = self.dir.fd();
        for _ in 0..iters {
            // SAFETY: path is NUL-terminated; dir is open for the life of self.
            let fd = unsafe { libc::openat(dir, self.path.as_ptr(), libc::O_RDONLY) };
            if fd < 0 {
                return Err(os_error("openat"));
            }
            // SAFETY: fd was opened above.
            unsafe { libc::close(fd) };
        }
        Ok(())
    }
}
