//! Whether a store may be written, as ssh judges a private key: a store another user owns, or can
//! write to, or whose directory lets another user replace it, would let that user read and alter
//! the runs saved there (and, through SQLite's companion files, redirect what is written). Such a
//! store is refused before anything is measured. A sticky directory that everyone may write to
//! (/tmp) is allowed with a warning: nobody else can replace the store there, but anyone may
//! plant a companion file before osmeter makes it, so any that is present and not this user's
//! refuses the store. A group's right to write counts as another user's unless the group is this
//! user's private one (a umask of 002 makes every directory group-writable on such systems).

use anyhow::Result;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Refuses (a usage error) a store at `path` that other users could read through or alter.
pub(super) fn check_for_writing(path: &Path) -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let trusted = |uid: u32| uid == me || uid == 0;
    let fix = "give --store a path in a directory of your own (or share runs through a \
               postgres:// store)";
    if let Ok(meta) = std::fs::metadata(path) {
        if !trusted(meta.uid()) {
            return Err(crate::usage!(
                "the store {} belongs to another user (uid {}), who can read and alter every run \
                 saved there; osmeter does not save into it (this is uid {me}): {fix}",
                path.display(),
                meta.uid()
            ));
        }
        if crate::scratch::others_may_write(&meta) {
            return Err(crate::usage!(
                "the store {} may be written by other users (mode {:o}), who could alter the runs \
                 saved there; `chmod go-w {0}` if it is yours, or {fix}",
                path.display(),
                meta.mode() & 0o7777
            ));
        }
    }
    let dir = super::surroundings::directory_of(path);
    let Ok(meta) = std::fs::metadata(&dir) else {
        // Not made yet: the store's own opening makes it, as this user.
        return Ok(());
    };
    let mode = meta.mode();
    if !trusted(meta.uid()) {
        return Err(crate::usage!(
            "the store {}: its directory {} belongs to another user (uid {}), who could replace \
             the store with a file of their own; {fix}",
            path.display(),
            dir.display(),
            meta.uid()
        ));
    }
    let shared = crate::scratch::others_may_write(&meta);
    if shared && mode & libc::S_ISVTX == 0 {
        return Err(crate::usage!(
            "the store {}: other users may write to its directory {} (mode {:o}) and it has no \
             sticky bit, so they could swap the store for a file of their own; `chmod go-w {1}` \
             or add the sticky bit (chmod +t), or {fix}",
            path.display(),
            dir.display(),
            mode & 0o7777
        ));
    }
    if shared {
        if let Some(why) = super::surroundings::companion_problem(path) {
            return Err(crate::usage!(
                "the store {} cannot be trusted: {why}",
                path.display()
            ));
        }
        warn_once(&format!(
            "osmeter: warning: the store {} is in {}, where every user may create files (mode \
             {:o}); keep stores in a directory of your own",
            path.display(),
            dir.display(),
            mode & 0o7777
        ));
    }
    Ok(())
}

fn warn_once(text: &str) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::SeqCst) {
        eprintln!("{text}");
    }
}
