//! What is at an output path, and so how it may be written. A regular file (or nothing yet) is
//! replaced whole through a temporary file; anything else must never be replaced (`-o /dev/null` run
//! as root once turned /dev/null into a regular file), so it is written in place as a stream or
//! refused with the reason.

use super::fail;
use anyhow::Result;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a FIFO output waits for a reader before osmeter gives up on it (a shell's `>` would
/// wait for ever; a forgotten reader should cost seconds, not a hung run).
pub const FIFO_READER_WAIT: Duration = Duration::from_secs(10);

/// Where the bytes of an output go.
#[derive(Debug, PartialEq, Eq)]
pub enum Destination {
    /// A regular file, or a name nothing has yet: written beside it and renamed over it. For a
    /// symbolic link to a regular file this is the link's final target, so the link stays a link
    /// and its target is replaced whole.
    Replace(PathBuf),
    /// A character device (a terminal, /dev/null, /dev/full) or a FIFO: opened and written as a
    /// stream, never truncated, created or replaced.
    Device(PathBuf),
    /// One of this process's open descriptors (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`):
    /// written through a duplicate, so a pipe, socket or `>>` file gets the bytes as the shell set
    /// it up, at its offset.
    Descriptor(i32),
}

/// Decides how `target` is written, or why it cannot be.
pub fn classify(target: &Path) -> Result<Destination> {
    if let Some(fd) = descriptor_named(target) {
        // SAFETY: F_GETFL only reads the descriptor's flags.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 || flags & libc::O_ACCMODE == libc::O_RDONLY {
            return Err(fail(
                target,
                format!("descriptor {fd} of osmeter is not open for writing; redirect it (e.g. `{fd}>FILE`) or give a file name"),
            ));
        }
        return Ok(Destination::Descriptor(fd));
    }
    let link = match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return new_file(target);
        }
        Err(e) => return Err(fail(target, e.to_string())),
        Ok(m) => m,
    };
    let is_link = link.file_type().is_symlink();
    let meta = if is_link {
        refuse_planted_link(target, &link)?;
        match std::fs::metadata(target) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(fail(
                    target,
                    format!(
                        "it is a symbolic link to {}, which does not exist; remove the link or give the path it should point to",
                        std::fs::read_link(target).unwrap_or_default().display()
                    ),
                ))
            }
            Err(e) => return Err(fail(target, format!("cannot follow its symbolic link: {e}"))),
        }
    } else {
        link
    };
    let kind = meta.file_type();
    if kind.is_file() {
        if !is_link {
            return Ok(Destination::Replace(target.to_path_buf()));
        }
        let real = std::fs::canonicalize(target)
            .map_err(|e| fail(target, format!("cannot follow its symbolic link: {e}")))?;
        return Ok(Destination::Replace(real));
    }
    if kind.is_char_device() || kind.is_fifo() {
        return Ok(Destination::Device(target.to_path_buf()));
    }
    let what = if kind.is_dir() {
        return Err(fail(target, "it is a directory; give a file name"));
    } else if kind.is_block_device() {
        "a block device (a disk: writing there would overwrite what it holds)"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "neither a file, a device nor a FIFO"
    };
    Err(fail(
        target,
        format!("it is {what}; osmeter writes output only to regular files, character devices (a terminal, /dev/null), FIFOs and its own descriptors (/dev/stdout); give a file name"),
    ))
}

fn new_file(target: &Path) -> Result<Destination> {
    let dir = parent(target);
    if !dir.is_dir() {
        return Err(fail(
            target,
            format!("the directory {} does not exist", dir.display()),
        ));
    }
    Ok(Destination::Replace(target.to_path_buf()))
}

/// The directory a file name lives in ("." for a bare name).
pub fn parent(target: &Path) -> &Path {
    match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The kernel's protected_symlinks rule, which renaming over a link's target would bypass: a link
/// in a sticky world-writable directory (/tmp) is followed only when its owner is the follower or
/// the directory's owner; otherwise another user may have planted it to aim osmeter's output at
/// a file of the follower's.
fn refuse_planted_link(target: &Path, link: &std::fs::Metadata) -> Result<()> {
    let Ok(dir) = std::fs::metadata(parent(target)) else {
        return Ok(());
    };
    let shared = dir.mode() & 0o1002 == 0o1002;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if shared && link.uid() != me && link.uid() != dir.uid() {
        return Err(fail(
            target,
            format!(
                "it is a symbolic link owned by uid {} in a directory every user may write to; following it could overwrite a file of yours that someone else chose; remove the link or give another path",
                link.uid()
            ),
        ));
    }
    Ok(())
}

/// The descriptor a path names, when it names one of this process's own: `/dev/stdout`,
/// `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`, `/proc/thread-self/fd/N`, `/proc/PID/fd/N`.
fn descriptor_named(path: &Path) -> Option<i32> {
    let text = path.to_str()?;
    match text {
        "/dev/stdout" => return Some(1),
        "/dev/stderr" => return Some(2),
        _ => {}
    }
    let pid = std::process::id().to_string();
    let rest = text
        .strip_prefix("/dev/fd/")
        .or_else(|| text.strip_prefix("/proc/self/fd/"))
        .or_else(|| text.strip_prefix("/proc/thread-self/fd/"))
        .or_else(|| {
            text.strip_prefix("/proc/")?
                .strip_prefix(&pid)?
                .strip_prefix("/fd/")
        })?;
    rest.parse().ok()
}

/// Whether a stream destination could be written now, without opening it: opening a FIFO and
/// closing it again would hand its reader an end of file.
pub fn check_stream(target: &Path, dest: &Destination) -> Result<()> {
    if let Destination::Device(path) = dest {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| fail(target, "the path holds a NUL byte"))?;
        // SAFETY: c is a NUL-terminated path; access only reads it.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
            return Err(fail(target, format!("{}", std::io::Error::last_os_error())));
        }
    }
    Ok(())
}

/// Opens a stream destination for writing (see [`Destination`]).
pub fn open_stream(target: &Path, dest: &Destination) -> Result<std::fs::File> {
    match dest {
        Destination::Descriptor(fd) => {
            // SAFETY: fcntl duplicates a descriptor classify found open; the copy is owned here.
            let copy = unsafe { libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 3) };
            if copy < 0 {
                return Err(fail(target, std::io::Error::last_os_error().to_string()));
            }
            // SAFETY: copy is a fresh descriptor nothing else owns.
            Ok(std::fs::File::from(unsafe { OwnedFd::from_raw_fd(copy) }))
        }
        Destination::Device(path) => open_device(target, path),
        Destination::Replace(_) => unreachable!("a replaced file is not opened as a stream"),
    }
}

/// Opens a device or FIFO without blocking, so a FIFO nobody reads is waited for a bounded time
/// ([`FIFO_READER_WAIT`]) rather than for ever; writes then block as usual.
fn open_device(target: &Path, path: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::FileTypeExt as _;
    let fifo = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    let deadline = Instant::now() + FIFO_READER_WAIT;
    let mut said = false;
    loop {
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path);
        match opened {
            Ok(file) => {
                use std::os::fd::AsRawFd;
                // SAFETY: clearing O_NONBLOCK on a descriptor owned by `file`.
                unsafe {
                    let fd = file.as_raw_fd();
                    let flags = libc::fcntl(fd, libc::F_GETFL);
                    libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
                }
                return Ok(file);
            }
            // ENXIO: a FIFO with no reader yet.
            Err(e) if fifo && e.raw_os_error() == Some(libc::ENXIO) && Instant::now() < deadline => {
                if !said {
                    eprintln!(
                        "osmeter: waiting up to {} s for a reader of the FIFO {}",
                        FIFO_READER_WAIT.as_secs(),
                        target.display()
                    );
                    said = true;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) if fifo && e.raw_os_error() == Some(libc::ENXIO) => {
                return Err(fail(
                    target,
                    format!("it is a FIFO and nothing opened it for reading within {} s; start its reader first", FIFO_READER_WAIT.as_secs()),
                ))
            }
            Err(e) => return Err(fail(target, e.to_string())),
        }
    }
}
