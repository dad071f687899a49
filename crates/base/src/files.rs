//! Output files: written whole or not at all, with the same permissions whatever writes them.

mod destination;
pub mod partial;
pub mod xdg;

use anyhow::Result;
pub use destination::{classify, parent, Destination, FIFO_READER_WAIT};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why an output file could not be written: `path` and the reason, so a caller can say what the
/// file was for ("cannot write the report to ...").
#[derive(Debug)]
pub struct WriteError {
    pub path: PathBuf,
    pub why: String,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot write {}: {}", self.path.display(), self.why)
    }
}

impl std::error::Error for WriteError {}

fn fail(path: &Path, why: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(WriteError {
        path: path.to_path_buf(),
        why: why.into(),
    })
}

/// An output file. A regular file (or a name nothing has yet) is written through a temporary file
/// in its directory and renamed over it by [`AtomicFile::commit`]: a reader never sees half a file,
/// and a failure (or a drop without commit) leaves nothing behind and the old file as it was; the
/// finished file gets mode 0644 less the user's umask, as a file made by `>` in a shell would.
///
/// Nothing else at the path is ever replaced (see [`destination`]):
/// - a symbolic link to a regular file stays a link, and its final target is replaced whole as
///   above (unless the link is planted by another user in a shared directory such as /tmp, which
///   is refused as the kernel's protected_symlinks would);
/// - a character device (a terminal, /dev/null, /dev/full) or a FIFO is opened and written as a
///   stream, neither truncated nor created; a FIFO's reader is waited for a few seconds;
/// - `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` and `/proc/self/fd/N` write to osmeter's own
///   descriptor, as the shell set it up;
/// - a directory, block device, socket or dangling link is refused with the reason.
///
/// A stream cannot be taken back: one that fails half-way keeps what was written before.
pub struct AtomicFile {
    target: PathBuf,
    out: Output,
}

enum Output {
    Replace {
        into: PathBuf,
        temp: tempfile::NamedTempFile,
        // After `temp`: unregistered once the file is renamed or removed.
        _pending: partial::Pending,
    },
    Stream(std::fs::File),
}

impl AtomicFile {
    pub fn create(target: &Path) -> Result<AtomicFile> {
        let out = match destination::classify(target)? {
            Destination::Replace(into) => {
                // What an osmeter killed outright left here while writing.
                partial::sweep(destination::parent(&into));
                let temp = temp_beside(target, &into)?;
                let pending = partial::register(temp.path(), temp.as_file());
                Output::Replace {
                    temp,
                    into,
                    _pending: pending,
                }
            }
            stream => Output::Stream(destination::open_stream(target, &stream)?),
        };
        Ok(AtomicFile {
            target: target.to_path_buf(),
            out,
        })
    }

    /// The file being written.
    pub fn file(&self) -> &std::fs::File {
        match &self.out {
            Output::Replace { temp, .. } => temp.as_file(),
            Output::Stream(f) => f,
        }
    }

    /// A second handle on the file being written (for writers that own their file).
    pub fn reopen(&self) -> Result<std::fs::File> {
        Ok(match &self.out {
            Output::Replace { temp, .. } => temp.reopen()?,
            Output::Stream(f) => f.try_clone()?,
        })
    }

    pub fn commit(self) -> Result<()> {
        let (into, temp) = match self.out {
            Output::Stream(_) => return Ok(()),
            Output::Replace { into, temp, .. } => (into, temp),
        };
        set_mode(temp.path(), 0o644 & !umask())
            .map_err(|e| fail(&self.target, format!("cannot set its permissions: {e}")))?;
        temp.as_file()
            .sync_all()
            .map_err(|e| fail(&self.target, e.to_string()))?;
        temp.persist(&into)
            .map_err(|e| fail(&self.target, e.error.to_string()))?;
        Ok(())
    }
}

/// The temporary file that will become `into` (the named `target`, or its link's final target).
fn temp_beside(target: &Path, into: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = destination::parent(into);
    tempfile::Builder::new()
        .prefix(partial::PREFIX)
        .tempfile_in(dir)
        .map_err(|e| {
            // tempfile appends its random file name; the reader needs the directory and why.
            let text = e.to_string();
            let why = text.split(" at path ").next().unwrap_or(&text).to_string();
            fail(
                target,
                format!("cannot create a file in {}: {why}", dir.display()),
            )
        })
}

/// Whether `path` could be written now (checked before long work, so that a bad `-o` costs
/// nothing); leaves nothing behind and opens no stream (a FIFO's reader would see its end).
pub fn check_writable(path: &Path) -> Result<()> {
    match destination::classify(path)? {
        Destination::Replace(into) => temp_beside(path, &into).map(drop),
        stream => destination::check_stream(path, &stream),
    }
}

/// Writes `bytes` to `path` whole or not at all (see [`AtomicFile`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let out = AtomicFile::create(path)?;
    let mut file = out.file();
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .map_err(|e| fail(path, e.to_string()))?;
    out.commit()
}

fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// The process's file-creation mask (read by setting it and putting it back).
pub fn umask() -> u32 {
    // SAFETY: umask only swaps the process's mask; it is restored at once.
    unsafe {
        let old = libc::umask(0o022);
        libc::umask(old);
        old as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_file_is_replaced_whole_with_the_usual_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.txt");
        std::fs::write(&p, "old").unwrap();
        write_atomic(&p, b"new contents").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new contents");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644 & !umask());
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left");
    }

    #[test]
    fn a_directory_or_a_missing_parent_is_an_error_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(dir.path(), b"x").unwrap_err().to_string();
        assert!(err.contains("it is a directory"), "{err}");
        let missing = dir.path().join("no/such/dir/out.txt");
        let err = format!("{:#}", write_atomic(&missing, b"x").unwrap_err());
        assert!(err.contains("out.txt"), "{err}");
    }

    #[test]
    fn a_link_to_a_file_stays_a_link_and_its_target_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        let link = dir.path().join("link.txt");
        std::fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        assert_eq!(entries(dir.path()), ["link.txt", "real.txt"]);
    }

    #[test]
    fn a_dangling_link_a_socket_and_a_block_device_are_refused_and_left_as_they_are() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        let err = format!("{:#}", write_atomic(&link, b"x").unwrap_err());
        assert!(err.contains("does not exist"), "{err}");
        assert!(!dir.path().join("nowhere").exists());

        let sock = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let err = format!("{:#}", write_atomic(&sock, b"x").unwrap_err());
        assert!(err.contains("it is a socket"), "{err}");
        assert!(std::fs::metadata(&sock).unwrap().file_type().is_socket());

        // A block device node of no device (loop minor 250 is never made), so nothing is at risk
        // even if it were written; mknod needs root.
        let disk = dir.path().join("disk");
        let c = std::ffi::CString::new(disk.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: c is a NUL-terminated path.
        if unsafe { libc::mknod(c.as_ptr(), libc::S_IFBLK | 0o600, libc::makedev(7, 250)) } == 0 {
            let err = format!("{:#}", write_atomic(&disk, b"x").unwrap_err());
            assert!(err.contains("block device"), "{err}");
            assert!(std::fs::metadata(&disk)
                .unwrap()
                .file_type()
                .is_block_device());
        }
        let left = entries(dir.path());
        assert!(
            left.iter()
                .all(|e| ["dangling", "disk", "sock"].contains(&e.as_str())),
            "nothing else was made: {left:?}"
        );
    }

    #[test]
    fn descriptors_of_osmeter_are_named_as_the_shell_names_them() {
        for (path, fd) in [
            ("/dev/stdout", 1),
            ("/dev/stderr", 2),
            ("/dev/fd/1", 1),
            ("/proc/self/fd/2", 2),
        ] {
            assert_eq!(
                destination::classify(Path::new(path)).unwrap(),
                Destination::Descriptor(fd),
                "{path}"
            );
        }
        let other = format!("/proc/{}/fd/1", std::process::id());
        assert_eq!(
            destination::classify(Path::new(&other)).unwrap(),
            Destination::Descriptor(1)
        );
        assert_eq!(
            destination::classify(Path::new("/dev/null")).unwrap(),
            Destination::Device("/dev/null".into())
        );
    }

    #[test]
    fn a_link_planted_by_another_user_in_a_shared_directory_is_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        if unsafe { libc::geteuid() } != 0 {
            return; // making a link owned by another user needs root
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let link = dir.path().join("report.html");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        let err = format!("{:#}", write_atomic(&link, b"x").unwrap_err());
        assert!(err.contains("owned by uid 65534"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}
