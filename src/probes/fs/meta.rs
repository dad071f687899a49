//! Work that changes the file system: the temporary-file cycle, the small-file workload, file
//! creation, and synchronous overwrites.

use super::ext4::DelayedReuse;
use super::{cstring, open_dir, os_error, pattern, read_exact, write_all, WorkDir};
use crate::harness::Workload;
use crate::results::model::ClaimCheck;
use anyhow::{bail, Result};
use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;

const CREATE_FLAGS: libc::c_int = libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY;

pub(super) fn create(dir: RawFd, name: &CStr) -> Result<RawFd> {
    // SAFETY: name is NUL-terminated; dir is an open directory.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), CREATE_FLAGS, 0o644) };
    if fd < 0 {
        return Err(os_error("openat(O_CREAT)"));
    }
    Ok(fd)
}

fn open_read(dir: RawFd, name: &CStr) -> Result<RawFd> {
    // SAFETY: as in create.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), libc::O_RDONLY) };
    if fd < 0 {
        return Err(os_error("openat"));
    }
    Ok(fd)
}

/// Closes a descriptor opened by this module; a failing close (possible after a write error on
/// some file systems) is reported.
fn close(fd: RawFd) -> Result<()> {
    // SAFETY: fd was opened by the caller and is closed exactly once.
    if unsafe { libc::close(fd) } != 0 {
        return Err(os_error("close"));
    }
    Ok(())
}

pub(super) fn unlink(dir: RawFd, name: &CStr) -> Result<()> {
    // SAFETY: as in create.
    if unsafe { libc::unlinkat(dir, name.as_ptr(), 0) } != 0 {
        return Err(os_error("unlinkat"));
    }
    Ok(())
}

/// Write `data` to a new file `name`, optionally fsync it, close it.
fn create_write_close(dir: RawFd, name: &CStr, data: &[u8], fsync: bool) -> Result<()> {
    let fd = create(dir, name)?;
    let mut r = write_all(fd, data);
    // SAFETY: fd is open.
    if r.is_ok() && fsync && unsafe { libc::fsync(fd) } != 0 {
        r = Err(os_error("fsync"));
    }
    let c = close(fd);
    r.and(c)
}

fn open_read_close(dir: RawFd, name: &CStr, buf: &mut [u8]) -> Result<()> {
    let fd = open_read(dir, name)?;
    let r = read_exact(fd, buf);
    let c = close(fd);
    r.and(c)
}

pub(super) struct CreateDelete {
    name: CString,
    data: Vec<u8>,
    buf: Vec<u8>,
    fsync: bool,
    dir: WorkDir,
    /// Whether the file system may hold freed inodes back (see [`super::ext4`]).
    reuse: Option<DelayedReuse>,
}

impl CreateDelete {
    pub(super) fn new(scratch: &Path, size: u64, fsync: bool) -> Result<CreateDelete> {
        if size > 64 << 20 {
            bail!("size must be at most 64 MiB, not {size}");
        }
        Ok(CreateDelete {
            name: cstring("tmp")?,
            data: pattern(size as usize),
            buf: vec![0; size as usize],
            fsync,
            dir: WorkDir::new(scratch, "create_delete-")?,
            reuse: DelayedReuse::of(scratch),
        })
    }

    #[cfg(test)]
    pub(super) fn dir_path(&self) -> &Path {
        self.dir.path()
    }

    #[cfg(test)]
    pub(super) fn read_back(&self) -> &[u8] {
        &self.buf
    }
}

impl Workload for CreateDelete {
    fn run(&mut self, iters: u64) -> Result<()> {
        let dir = self.dir.fd();
        for _ in 0..iters {
            create_write_close(dir, &self.name, &self.data, self.fsync)?;
            open_read_close(dir, &self.name, &mut self.buf)?;
            unlink(dir, &self.name)?;
        }
        Ok(())
    }

    fn checks(&self) -> Vec<ClaimCheck> {
        self.reuse
            .iter()
            .filter_map(|r| r.check(self.dir.fd()))
            .collect()
    }
}

/// Directories the small-file workload spreads its files over, as in Chen et al.
pub(super) const SMALL_DIRS: usize = 32;
/// Size of each small file.
pub(super) const SMALL_SIZE: usize = 8 << 10;

pub(super) struct SmallFiles {
    names: Vec<CString>,
    data: Vec<u8>,
    buf: Vec<u8>,
    dir: WorkDir,
    reuse: Option<DelayedReuse>,
}

impl SmallFiles {
    pub(super) fn new(scratch: &Path, files: u64) -> Result<SmallFiles> {
        if files == 0 || files > 1 << 16 {
            bail!("files must be between 1 and 65536, not {files}");
        }
        let dir = WorkDir::new(scratch, "small_files-")?;
        for d in 0..SMALL_DIRS {
            std::fs::create_dir(dir.path().join(format!("d{d:02}")))?;
        }
        let names = (0..files as usize)
            .map(|i| cstring(&format!("d{:02}/f{i:05}", i % SMALL_DIRS)))
            .collect::<Result<Vec<_>>>()?;
        Ok(SmallFiles {
            names,
            data: pattern(SMALL_SIZE),
            buf: vec![0; SMALL_SIZE],
            dir,
            reuse: DelayedReuse::of(scratch),
        })
    }

    #[cfg(test)]
    pub(super) fn dir_path(&self) -> &Path {
        self.dir.path()
    }

    #[cfg(test)]
    pub(super) fn read_back(&self) -> &[u8] {
        &self.buf
    }
}

impl Workload for SmallFiles {
    fn run(&mut self, iters: u64) -> Result<()> {
        let dir = self.dir.fd();
        for _ in 0..iters {
            for n in &self.names {
                create_write_close(dir, n, &self.data, false)?;
            }
            for n in &self.names {
                open_read_close(dir, n, &mut self.buf)?;
            }
            for n in &self.names {
                unlink(dir, n)?;
            }
        }
        Ok(())
    }

    // One operation is a whole workload (tens of ms at full size): a few make a sample.
    fn max_iters(&self) -> u64 {
        8
    }

    fn checks(&self) -> Vec<ClaimCheck> {
        self.reuse
            .iter()
            .filter_map(|r| r.check(self.dir.fd()))
            .collect()
    }
}

/// Files created by one metadata operation, as in Chen et al.
pub(super) const METADATA_FILES: usize = 128;
/// Empty directories ready for one sample; one operation fills one of them.
pub(super) const METADATA_DIRS: usize = 64;

pub(super) struct Metadata {
    dirs: Vec<OwnedFd>,
    names: Vec<CString>,
    /// Directories filled by the last sample, emptied again in `finish`.
    filled: usize,
    _dir: WorkDir,
    reuse: Option<DelayedReuse>,
}

impl Metadata {
    pub(super) fn new(scratch: &Path) -> Result<Metadata> {
        let dir = WorkDir::new(scratch, "metadata-")?;
        let dirs = (0..METADATA_DIRS)
            .map(|i| {
                let p = dir.path().join(format!("m{i:02}"));
                std::fs::create_dir(&p)?;
                open_dir(&p)
            })
            .collect::<Result<Vec<_>>>()?;
        let names = (0..METADATA_FILES)
            .map(|i| cstring(&format!("z{i:03}")))
            .collect::<Result<Vec<_>>>()?;
        Ok(Metadata {
            dirs,
            names,
            filled: 0,
            _dir: dir,
            reuse: DelayedReuse::of(scratch),
        })
    }

    #[cfg(test)]
    pub(super) fn dir_path(&self) -> &Path {
        self._dir.path()
    }
}

impl Workload for Metadata {
    fn prepare(&mut self, iters: u64) -> Result<()> {
        if iters as usize > self.dirs.len() {
            bail!("at most {} operations per sample", self.dirs.len());
        }
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<()> {
        // Set first so a sample that fails half-way is still cleaned up (missing names are
        // skipped).
        self.filled = iters as usize;
        for d in &self.dirs[..iters as usize] {
            for n in &self.names {
                close(create(d.as_raw_fd(), n)?)?;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        for d in &self.dirs[..self.filled] {
            for n in &self.names {
                // SAFETY: n is NUL-terminated; d is an open directory.
                if unsafe { libc::unlinkat(d.as_raw_fd(), n.as_ptr(), 0) } != 0
                    && std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOENT)
                {
                    return Err(os_error("unlinkat"));
                }
            }
        }
        self.filled = 0;
        Ok(())
    }

    fn max_iters(&self) -> u64 {
        self.dirs.len() as u64
    }

    fn checks(&self) -> Vec<ClaimCheck> {
        self.reuse
            .iter()
            .filter_map(|r| r.check(self._dir.fd()))
            .collect()
    }
}

pub(super) struct WriteFsync {
    file: OwnedFd,
    data: Vec<u8>,
    _dir: WorkDir,
}

impl WriteFsync {
    pub(super) fn new(scratch: &Path, size: u64) -> Result<WriteFsync> {
        if size == 0 || size > 64 << 20 {
            bail!("size must be between 1 byte and 64 MiB, not {size}");
        }
        let dir = WorkDir::new(scratch, "write_fsync-")?;
        let data = pattern(size as usize);
        // The blocks exist and are on the device before timing starts, so each operation is an
        // overwrite rather than an allocation.
        let file = super::create_file(dir.fd(), &cstring("data")?, &data)?;
        Ok(WriteFsync {
            file,
            data,
            _dir: dir,
        })
    }
}

impl Workload for WriteFsync {
    fn run(&mut self, iters: u64) -> Result<()> {
        let fd = self.file.as_raw_fd();
        for _ in 0..iters {
            // SAFETY: data is a live buffer of the given length; fd is open.
            let n = unsafe { libc::pwrite(fd, self.data.as_ptr().cast(), self.data.len(), 0) };
            if n != self.data.len() as isize {
                return Err(if n < 0 {
                    os_error("pwrite")
                } else {
                    anyhow::anyhow!("pwrite wrote {n} of {} bytes", self.data.len())
                });
            }
            // SAFETY: fd is open.
            if unsafe { libc::fsync(fd) } != 0 {
                return Err(os_error("fsync"));
            }
        }
        Ok(())
    }
}
