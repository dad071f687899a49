//! What around a store file makes a write fail that SQLite only reports as "disk I/O error",
//! "database or disk is full" or "unable to open database file": a full or read-only file
//! system, or SQLite's own files beside the store (`-journal`, `-wal`, `-shm`) being links or
//! another user's. Said with the path, so the user knows what to fix.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// SQLite's companion files of a store, each made beside it while writing.
const COMPANIONS: &[&str] = &["-journal", "-wal", "-shm"];

/// The problem that explains a failed write to `path`, if one is found. `os_error` is the
/// system's error number SQLite saw last, when known.
pub(super) fn problem(path: &Path, os_error: Option<i32>) -> Option<String> {
    let dir = directory_of(path);
    let shown = dir.display();
    match os_error {
        Some(libc::ENOSPC) => {
            return Some(format!(
                "no space left on device: the file system holding {shown} is full; free some \
                 space there"
            ))
        }
        Some(libc::EDQUOT) => {
            return Some(format!(
                "disk quota exceeded on the file system holding {shown}"
            ))
        }
        Some(libc::EROFS) => return Some(read_only(&dir)),
        _ => {}
    }
    if let Some(fs) = statvfs(&dir) {
        if fs.f_flag & libc::ST_RDONLY != 0 {
            return Some(read_only(&dir));
        }
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        // Root may use the blocks kept back for it; others only the available ones.
        let blocks = if root { fs.f_bfree } else { fs.f_bavail };
        if blocks == 0 || fs.f_ffree == 0 && fs.f_files > 0 {
            return Some(format!(
                "no space left on device: the file system holding {shown} has no free {} left; \
                 free some space there",
                if blocks == 0 { "blocks" } else { "inodes" }
            ));
        }
    }
    companion_problem(path)
}

fn read_only(dir: &Path) -> String {
    format!(
        "the file system holding {} is mounted read-only",
        dir.display()
    )
}

/// A companion file of `path` that is a link, or belongs to another user.
pub(super) fn companion_problem(path: &Path) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    COMPANIONS.iter().find_map(|suffix| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let companion = PathBuf::from(name);
        let meta = std::fs::symlink_metadata(&companion).ok()?;
        if meta.file_type().is_symlink() {
            Some(format!(
                "{} is a symbolic link (uid {} made it), which SQLite refuses to follow: it may \
                 have been planted to redirect the store's writes; remove it once you know where \
                 it came from",
                companion.display(),
                meta.uid()
            ))
        } else if meta.uid() != me {
            Some(format!(
                "{} belongs to another user (uid {}), who could read or alter what is written \
                 through it; remove it once you know where it came from",
                companion.display(),
                meta.uid()
            ))
        } else {
            None
        }
    })
}

/// The directory holding `path` ("." for a bare file name).
pub(super) fn directory_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn statvfs(dir: &Path) -> Option<libc::statvfs> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct from a valid C string.
    unsafe {
        let mut fs: libc::statvfs = std::mem::zeroed();
        (libc::statvfs(c.as_ptr(), &mut fs) == 0).then_some(fs)
    }
}
