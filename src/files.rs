//! Output files: written whole or not at all, with the same permissions whatever writes them.

use anyhow::Result;
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

/// A file written through a temporary file in the target's directory and renamed over the target
/// by [`AtomicFile::commit`]: a reader never sees half a file, and a failure (or a drop without
/// commit) leaves nothing behind and the old file as it was. The finished file gets mode 0644 less
/// the user's umask, as a file made by `>` in a shell would.
pub struct AtomicFile {
    target: PathBuf,
    temp: tempfile::NamedTempFile,
}

impl AtomicFile {
    pub fn create(target: &Path) -> Result<AtomicFile> {
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if target.is_dir() {
            return Err(fail(target, "it is a directory; give a file name"));
        }
        if !dir.is_dir() {
            return Err(fail(
                target,
                format!("the directory {} does not exist", dir.display()),
            ));
        }
        let temp = tempfile::Builder::new()
            .prefix(".osmeter-partial-")
            .tempfile_in(dir)
            .map_err(|e| {
                // tempfile appends its random file name; the reader needs the directory and why.
                let text = e.to_string();
                let why = text.split(" at path ").next().unwrap_or(&text).to_string();
                fail(
                    target,
                    format!("cannot create a file in {}: {why}", dir.display()),
                )
            })?;
        Ok(AtomicFile {
            target: target.to_path_buf(),
            temp,
        })
    }

    /// The file being written.
    pub fn file(&self) -> &std::fs::File {
        self.temp.as_file()
    }

    /// A second handle on the file being written (for writers that own their file).
    pub fn reopen(&self) -> Result<std::fs::File> {
        Ok(self.temp.reopen()?)
    }

    pub fn commit(self) -> Result<()> {
        set_mode(self.temp.path(), 0o644 & !umask())
            .map_err(|e| fail(&self.target, format!("cannot set its permissions: {e}")))?;
        self.temp
            .as_file()
            .sync_all()
            .map_err(|e| fail(&self.target, e.to_string()))?;
        let target = self.target;
        self.temp
            .persist(&target)
            .map_err(|e| fail(&target, e.error.to_string()))?;
        Ok(())
    }
}

/// Whether `path` could be written now (checked before long work, so that a bad `-o` costs
/// nothing); leaves nothing behind.
pub fn check_writable(path: &Path) -> Result<()> {
    AtomicFile::create(path).map(drop)
}

/// Writes `bytes` to `path` whole or not at all (see [`AtomicFile`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut out = AtomicFile::create(path)?;
    out.temp
        .write_all(bytes)
        .and_then(|()| out.temp.flush())
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
}
