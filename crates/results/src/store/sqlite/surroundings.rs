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
        Some(libc::EFBIG) => return Some(crate::system::limits::file_too_large(path)),
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
    companion_problem(path).or_else(|| unwritable(path))
}

fn read_only(dir: &Path) -> String {
    format!(
        "the file system holding {} is mounted read-only",
        dir.display()
    )
}

fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A companion file of `path` that is a link, or belongs to another user than this one and the
/// store's owner (whose companions are the store's own, made by the owner's writes).
pub(super) fn companion_problem(path: &Path) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let owner = std::fs::metadata(path).ok().map(|m| m.uid());
    COMPANIONS.iter().find_map(|suffix| {
        let companion = companion(path, suffix);
        let meta = std::fs::symlink_metadata(&companion).ok()?;
        if meta.file_type().is_symlink() {
            Some(format!(
                "{} is a symbolic link (uid {} made it), which SQLite refuses to follow: it may \
                 have been planted to redirect the store's writes; remove it once you know where \
                 it came from",
                companion.display(),
                meta.uid()
            ))
        } else if meta.uid() != me && Some(meta.uid()) != owner {
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

/// What this user may not write of a store that SQLite must write to save: the file, a companion
/// file already there, or the directory where SQLite makes the missing ones. Root passes every
/// such check (a read-only file system is told apart before this).
pub(super) fn unwritable(path: &Path) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let refused = |p: &Path| !may_write(p);
    let whose = |p: &Path| match std::fs::metadata(p) {
        Ok(m) => format!(
            "it belongs to uid {} with mode {:o}",
            m.uid(),
            m.mode() & 0o7777
        ),
        Err(e) => e.to_string(),
    };
    let this_user = format!("this user (uid {me})");
    let advice = "; save to a store of your own with --store PATH or $OSMETER_STORE, or ask its \
                  owner for write access";
    if path.exists() && refused(path) {
        return Some(format!(
            "the store is not writable by {this_user}: {}{advice}",
            whose(path)
        ));
    }
    let mut missing = Vec::new();
    for suffix in ["-wal", "-shm"] {
        let c = companion(path, suffix);
        match std::fs::symlink_metadata(&c) {
            Ok(_) if refused(&c) => {
                return Some(format!(
                    "the store's own {} is not writable by {this_user}: {}{advice}",
                    c.display(),
                    whose(&c)
                ))
            }
            Ok(_) => {}
            Err(_) => missing.push(suffix),
        }
    }
    let dir = directory_of(path);
    if !missing.is_empty() && refused(&dir) {
        return Some(
            format!(
            "the store's directory {} is not writable by {this_user}, and SQLite must make its \
             {} file there to write: {}",
            dir.display(),
            missing.join(" and "),
            whose(&dir)
        ) + advice,
        );
    }
    None
}

/// Whether this process (its effective ids) may write `p`; only a refusal by permissions counts
/// (a read-only file system is said otherwise).
fn may_write(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return true;
    };
    // SAFETY: a valid C string; faccessat only reads it.
    let rc = unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) };
    rc == 0
        || !matches!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EACCES | libc::EPERM)
        )
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
