//! Scratch space: the one place that makes directories for temporary files.
//!
//! Scratch directories are private (mode 0700 whatever the umask, checked after creation), so no
//! other user can plant a file or a link in them, and every file osmeter makes inside is created
//! exclusively ([`create_new`]). A top-level scratch directory ([`ScratchDir`]) carries a marker
//! file that its process holds locked while it lives: a run killed with SIGKILL cannot remove its
//! directory, so the next osmeter that makes scratch space in the same place finds the marker
//! unlocked, removes the leftover, and says so.

use anyhow::{anyhow, bail, Context, Result};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Name of the marker inside a top-level scratch directory: `pid N`, locked by its owner.
pub const MARKER: &str = ".osmeter-owner";

/// Every top-level scratch directory's name starts with this, so leftovers can be found.
pub const PREFIX: &str = "osmeter-";

/// Where scratch directories go: `--dir` when given, else the temporary directory ($TMPDIR, else
/// /tmp).
pub fn parent(flag: Option<&Path>) -> PathBuf {
    flag.map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir)
}

/// Checks that [`parent`] can hold scratch directories: it exists, is a writable directory, and
/// no other user can swap what osmeter makes in it (see [`parent_problem`]). The error names where
/// the directory came from (`--dir`, `$TMPDIR` or /tmp), since a user who gave no --dir would not
/// know what "--dir" meant. Returns the directory.
pub fn check_scratch_parent(flag: Option<&Path>) -> Result<PathBuf> {
    let dir = parent(flag);
    let Some(why) = parent_problem(&dir) else {
        return Ok(dir);
    };
    Err(match flag {
        Some(_) => crate::usage!("--dir {}: {why}", dir.display()),
        None if std::env::var_os("TMPDIR").is_some() => crate::usage!(
            "the temporary directory {} (from $TMPDIR, as no --dir was given): {why}; set TMPDIR \
             to a directory you may write to, unset it (for /tmp), or give --dir",
            dir.display()
        ),
        None => crate::usage!(
            "the temporary directory {} (used as no --dir was given): {why}; or give --dir DIR",
            dir.display()
        ),
    })
}

/// A private scratch directory in `parent`, removed (with everything in it) on drop.
pub struct ScratchDir {
    // Declared before the lock so the directory goes first, then the lock is released.
    dir: tempfile::TempDir,
    _lock: File,
}

impl ScratchDir {
    /// Makes `parent/osmeter-KIND-XXXXXX`, private and marked as this process's, after removing
    /// the scratch directories that dead osmeter processes left in `parent` (named on stderr).
    pub fn create(parent: &Path, kind: &str) -> Result<ScratchDir> {
        check_parent(parent)?;
        for gone in sweep(parent) {
            match gone.pid {
                Some(pid) => eprintln!(
                    "osmeter: removed {}, left behind by osmeter process {pid} which ended \
                     without cleaning up",
                    gone.path.display()
                ),
                None => eprintln!(
                    "osmeter: removed {}, left empty by an osmeter process killed while it was \
                     setting the directory up",
                    gone.path.display()
                ),
            }
        }
        let dir = private_dir(parent, &format!("{PREFIX}{kind}-"))?;
        let lock = mark(dir.path()).with_context(|| {
            format!("cannot mark the scratch directory {}", dir.path().display())
        })?;
        Ok(ScratchDir { dir, _lock: lock })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // Before the files go: a measuring process killed while it had an image mounted here
        // (app workloads) could not unmount it.
        detach_mounts_below(self.dir.path());
    }
}

/// Lazily unmounts every mount point at or below `dir`, deepest first, so that removing `dir`
/// neither fails on a busy mount point nor deletes files of a file system mounted inside.
pub fn detach_mounts_below(dir: &Path) {
    for p in crate::mounts::points_below(&crate::mounts::table(), dir) {
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else {
            continue;
        };
        // SAFETY: a valid C string; MNT_DETACH only detaches the mount from the tree.
        if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } == 0 {
            eprintln!(
                "osmeter: unmounted {}, left mounted by a measuring process that was killed",
                p.display()
            );
        }
    }
}

/// Makes a private directory `parent/PREFIX-XXXXXX` (mode 0700, checked), removed on drop. For
/// directories inside a [`ScratchDir`] and for short-lived work directories.
pub fn private_dir(parent: &Path, prefix: &str) -> Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(parent)
        .with_context(|| format!("cannot create a scratch directory in {}", parent.display()))?;
    // The umask may have taken bits away (even the owner's); set the mode outright, then check
    // what is really there.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot make {} private", dir.path().display()))?;
    check_private(dir.path())?;
    Ok(dir)
}

/// True when `path` is a real directory (not a link), owned by this user, mode 0700.
fn check_private(path: &Path) -> Result<()> {
    let meta = std::fs::symlink_metadata(path)
        .with_context(|| format!("cannot inspect {}", path.display()))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !meta.file_type().is_dir() || meta.uid() != me || meta.mode() & 0o7777 != 0o700 {
        bail!(
            "the scratch directory {} is not private after creating it (mode {:o}, owner {}); \
             something else is changing it: choose another directory with --dir",
            path.display(),
            meta.mode() & 0o7777,
            meta.uid()
        );
    }
    Ok(())
}

/// Bytes this user may still write on the file system of `dir` (statvfs's blocks available to
/// an unprivileged user), or None when it cannot be asked.
pub fn free_space(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct; c is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    (st.f_bavail as u64).checked_mul(st.f_frsize as u64)
}

/// Creates `path` as a new file (never an existing one, never through a symbolic link), readable
/// and writable by its owner only.
pub fn create_new(path: &Path) -> Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

/// Why `dir` is unsafe as the parent of scratch directories, or `None`: it must exist, be a
/// directory, be writable, and no other user may be able to rename what osmeter makes in it
/// (it belongs to root or to this user, and is sticky if everyone may write to it).
pub fn parent_problem(dir: &Path) -> Option<String> {
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) => return Some(format!("{e}; create it first or choose another directory")),
    };
    if !meta.is_dir() {
        return Some("not a directory".to_string());
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != 0 && meta.uid() != me {
        return Some(format!(
            "it belongs to another user (uid {}), who could replace osmeter's scratch files \
             there; choose a directory of your own",
            meta.uid()
        ));
    }
    let mode = meta.mode();
    if mode & 0o002 != 0 && mode & libc::S_ISVTX == 0 {
        return Some(format!(
            "every user may write to it (mode {:o}) and it has no sticky bit, so another user \
             could swap osmeter's scratch directory for a link; add the sticky bit (chmod +t) or \
             choose a directory only you can write to",
            mode & 0o7777
        ));
    }
    if let Some(why) = ancestor_problem(dir, me) {
        return Some(why);
    }
    if let Err(e) = tempfile::Builder::new()
        .prefix(".osmeter-check-")
        .tempfile_in(dir)
    {
        return Some(format!(
            "cannot create files there ({e}); choose a writable directory"
        ));
    }
    None
}

/// Why an ancestor of `dir` (as given, and where links lead) lets another user swap the whole
/// path: one that belongs to a user other than root and `me`, or that others may write to without
/// the sticky bit, could have a component renamed and replaced mid-run.
fn ancestor_problem(dir: &Path, me: u32) -> Option<String> {
    let given = std::path::absolute(dir).ok()?;
    let real = dir.canonicalize().ok()?;
    let mut seen = Vec::new();
    for ancestor in given.ancestors().skip(1).chain(real.ancestors().skip(1)) {
        if seen.iter().any(|s: &PathBuf| s == ancestor) {
            continue;
        }
        seen.push(ancestor.to_path_buf());
        let Ok(meta) = std::fs::metadata(ancestor) else {
            continue;
        };
        let mode = meta.mode();
        if meta.uid() != 0 && meta.uid() != me {
            return Some(format!(
                "its parent {} belongs to another user (uid {}), who could rename what is in it                  and swap osmeter's scratch directory mid-run; choose a directory whose parents                  all belong to you or to root",
                ancestor.display(),
                meta.uid()
            ));
        }
        if others_may_write(&meta) && mode & libc::S_ISVTX == 0 {
            return Some(format!(
                "other users may write to its parent {} (mode {:o}) and it has no sticky bit, so                  they could swap osmeter's scratch directory mid-run; choose a directory whose                  parents only you or root can change",
                ancestor.display(),
                mode & 0o7777
            ));
        }
    }
    None
}

/// Whether users other than this one may write to a file or directory with these attributes:
/// every user may, or its group may and that group is not this user's private group (the one of
/// its own name that systems with a umask of 002 give every user, and nobody else belongs to).
pub fn others_may_write(meta: &std::fs::Metadata) -> bool {
    let mode = meta.mode();
    mode & 0o002 != 0 || mode & 0o020 != 0 && !is_private_group(meta.gid())
}

fn is_private_group(gid: u32) -> bool {
    // SAFETY: getegid and geteuid have no preconditions.
    let (my_gid, my_uid) = unsafe { (libc::getegid(), libc::geteuid()) };
    if gid != my_gid {
        return false;
    }
    let (Some(user), Some((group, members))) = (user_name(my_uid), group_of(gid)) else {
        return false;
    };
    group == user && members.iter().all(|m| *m == user)
}

fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 16 << 10];
    // SAFETY: getpwuid_r fills `pwd` with pointers into `buf`, both alive for this call.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut found = std::ptr::null_mut();
        let rc = libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut found);
        if rc != 0 || found.is_null() {
            return None;
        }
        Some(
            std::ffi::CStr::from_ptr(pwd.pw_name)
                .to_string_lossy()
                .into_owned(),
        )
    }
}

/// The group's name and its listed members.
fn group_of(gid: u32) -> Option<(String, Vec<String>)> {
    let mut buf = vec![0 as libc::c_char; 64 << 10];
    // SAFETY: getgrgid_r fills `grp` with pointers into `buf`, both alive for this call; the
    // member list ends with a null pointer.
    unsafe {
        let mut grp: libc::group = std::mem::zeroed();
        let mut found = std::ptr::null_mut();
        let rc = libc::getgrgid_r(gid, &mut grp, buf.as_mut_ptr(), buf.len(), &mut found);
        if rc != 0 || found.is_null() {
            return None;
        }
        let name = std::ffi::CStr::from_ptr(grp.gr_name)
            .to_string_lossy()
            .into_owned();
        let mut members = Vec::new();
        let mut at = grp.gr_mem;
        while !at.is_null() && !(*at).is_null() {
            members.push(std::ffi::CStr::from_ptr(*at).to_string_lossy().into_owned());
            at = at.add(1);
        }
        Some((name, members))
    }
}

fn check_parent(dir: &Path) -> Result<()> {
    match parent_problem(dir) {
        None => Ok(()),
        Some(why) => Err(anyhow!(
            "cannot make scratch space in {}: {why}",
            dir.display()
        )),
    }
}

/// Writes the marker and holds it locked for as long as the returned file is open. The lock is
/// taken before the pid is written, and a sweeper only removes a directory whose marker is
/// complete and unlocked, so a directory being set up is never taken for a leftover.
fn mark(dir: &Path) -> Result<File> {
    let mut f = create_new(&dir.join(MARKER))?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    writeln!(f, "pid {}", std::process::id())?;
    Ok(f)
}

/// A leftover scratch directory that [`sweep`] removed.
#[derive(Debug, Clone, PartialEq)]
pub struct Removed {
    pub path: PathBuf,
    /// The owner named by the marker; none for a directory whose owner died before marking it.
    pub pid: Option<u32>,
}

/// A process marks its directory within microseconds of making it; one that is still unmarked
/// after this long belongs to a process killed in between.
const SETUP_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes the scratch directories in `parent` whose osmeter process is gone: this user's
/// `osmeter-*` directories that only this user may write to and only its group may read (app.web
/// opens them to nginx's), with a complete marker that nobody
/// holds locked. Anything else
/// (another user's, no marker, a link) is left alone.
pub fn sweep(parent: &Path) -> Vec<Removed> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        // Group read and search are allowed: app.web opens its scratch to nginx's group (0710,
        // 0750), and only this user can have written in such a directory.
        if !meta.file_type().is_dir() || meta.uid() != me || meta.mode() & 0o027 != 0 {
            continue;
        }
        if let Some(pid) = abandoned(&path) {
            // A run killed outright may have left an image mounted inside (`--fs`, app.andrew).
            detach_mounts_below(&path);
            if std::fs::remove_dir_all(&path).is_ok() {
                removed.push(Removed {
                    path,
                    pid: Some(pid),
                });
            }
        } else if never_marked(&path, &meta) && remove_unmarked(&path) {
            removed.push(Removed { path, pid: None });
        }
    }
    removed
}

/// True for a directory older than the set-up grace that holds nothing, or nothing but a marker
/// nobody holds locked and that never got its pid: its owner died between making and marking it.
fn never_marked(dir: &Path, meta: &std::fs::Metadata) -> bool {
    let old = meta
        .modified()
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age > SETUP_GRACE);
    if !old {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
    match names.as_slice() {
        [] => true,
        [only] if only == MARKER => read_marker(dir) == Marker::Unfinished,
        _ => false,
    }
}

/// Removes the marker (if any) and the then empty directory; nothing that appeared meanwhile.
fn remove_unmarked(dir: &Path) -> bool {
    let _ = std::fs::remove_file(dir.join(MARKER));
    std::fs::remove_dir(dir).is_ok()
}

/// What a scratch directory's marker says about its owner.
#[derive(Debug, PartialEq)]
enum Marker {
    /// No marker file osmeter could have written (missing, or not a regular file).
    Unreadable,
    /// Its process holds the lock: alive.
    Held,
    /// Complete and unlocked: the owner `pid` is gone.
    Owner(u32),
    /// Unlocked and without its pid: the owner died while writing it.
    Unfinished,
}

fn read_marker(dir: &Path) -> Marker {
    let Ok(mut f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(dir.join(MARKER))
    else {
        return Marker::Unreadable;
    };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Marker::Unreadable;
    }
    // SAFETY: flock on a descriptor we own; the lock goes when `f` is dropped.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Marker::Held;
    }
    let mut text = String::new();
    let _ = Read::by_ref(&mut f).take(64).read_to_string(&mut text);
    match text
        .strip_prefix("pid ")
        .and_then(|t| t.strip_suffix('\n'))
        .and_then(|pid| pid.parse().ok())
    {
        Some(pid) => Marker::Owner(pid),
        None => Marker::Unfinished,
    }
}

/// The pid in `dir`'s marker when the marker is complete and no process holds it locked.
fn abandoned(dir: &Path) -> Option<u32> {
    match read_marker(dir) {
        Marker::Owner(pid) => Some(pid),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
