//! Where a file-system figure is measured. What creating or deleting a file costs depends on what
//! was done to the file system before: on a journal-less ext4 a creation scans past every inode
//! freed in the last half minute, so a figure taken right after another probe deleted thousands of
//! files was 65 times the one taken on its own. By default each round therefore gets a file system
//! made for it, which nothing touched before: a fresh ext4 image with a journal (mkfs.ext4's
//! defaults, as distributions make them) on a loop device for figures about a file system's own
//! work, and a fresh tmpfs for path lookup, which is the VFS's alone. `--dir` (and `--fs`) measure
//! the scratch directory's file system as it is instead; the figure then names it and warns that
//! its history counts. Either way the figure says which, through its notes.

use crate::apps::image::Mounted;
use crate::harness::Workload;
use crate::mounts::mount_for;
use crate::probes::{FileSystems, ProbeEnv};
use crate::results::model::{ClaimCheck, CounterScopes};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The file system a figure wants when osmeter makes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fresh {
    /// A fresh ext4 image with a journal, mounted by the kernel over a loop device.
    Ext4,
    /// A fresh tmpfs: for figures about the VFS alone (path lookup in the dentry cache).
    Tmpfs,
}

/// A round's file system: where the workload makes its directory, and what the figure says about
/// it. A fresh one is unmounted when this is dropped.
pub(super) struct Ground {
    path: PathBuf,
    note: String,
    _mount: Option<FreshMount>,
}

/// Held only to be unmounted when the round ends.
enum FreshMount {
    #[allow(dead_code)]
    Image(Mounted),
    #[allow(dead_code)]
    Tmpfs(TmpfsMount),
}

impl Ground {
    /// The file system for one round of a figure that writes at most `disk` bytes at once.
    pub(super) fn for_round(env: &ProbeEnv, fresh: Fresh, disk: u64) -> Ground {
        if env.file_systems == FileSystems::Scratch {
            return Ground::as_it_is(env.scratch, "chosen with --dir or --fs");
        }
        if let Some(why) = cannot_mount() {
            return Ground::as_it_is(env.scratch, &why);
        }
        let made = match fresh {
            Fresh::Ext4 => {
                Mounted::journaled_ext4(env.scratch, crate::apps::image::image_mib(disk)).map(|m| {
                    // What mkfs wrote goes to the device now, not through writeback during the
                    // round's samples.
                    m.sync();
                    (m.path().to_path_buf(), FreshMount::Image(m))
                })
            }
            Fresh::Tmpfs => {
                TmpfsMount::new(env.scratch).map(|m| (m.mountpoint.clone(), FreshMount::Tmpfs(m)))
            }
        };
        match made {
            Ok((path, mount)) => Ground {
                path,
                note: fresh_note(fresh).to_string(),
                _mount: Some(mount),
            },
            Err(e) => Ground::as_it_is(
                env.scratch,
                &format!("a fresh file system could not be made ({e:#})"),
            ),
        }
    }

    fn as_it_is(scratch: &Path, why: &str) -> Ground {
        Ground {
            path: scratch.to_path_buf(),
            note: as_it_is_note(scratch, why),
            _mount: None,
        }
    }

    /// Where the workload makes its own directory.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the round runs in a file system osmeter made for it.
    #[cfg(test)]
    pub(super) fn is_fresh(&self) -> bool {
        self._mount.is_some()
    }

    #[cfg(test)]
    pub(super) fn note(&self) -> &str {
        &self.note
    }
}

fn fresh_note(fresh: Fresh) -> &'static str {
    match fresh {
        Fresh::Ext4 => {
            "file system: a fresh ext4 image made for each round (mkfs.ext4 defaults, with a \
             journal; loop device), so no earlier work on a file system counts"
        }
        Fresh::Tmpfs => {
            "file system: a fresh tmpfs made for each round (path lookup is the VFS's alone)"
        }
    }
}

/// Why osmeter cannot make a file system here, or None.
fn cannot_mount() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some(
            "not root: a fresh file system per round needs mount(2) and loop devices; run as \
             root for figures that do not depend on the file system's past"
                .into(),
        );
    }
    None
}

/// The figure's note for the scratch directory's own file system: its type, device and mount
/// options, and the warning that what was done on it before counts.
fn as_it_is_note(scratch: &Path, why: &str) -> String {
    let mounts = crate::mounts::table();
    let real = std::fs::canonicalize(scratch).unwrap_or_else(|_| scratch.to_path_buf());
    let which = match mount_for(&mounts, &real.to_string_lossy()) {
        Some(m) => format!(
            "{} on {} at {} ({}{}{})",
            m.fs_type,
            m.source,
            m.mount_point,
            m.mount_options,
            if m.super_options.is_empty() { "" } else { "; " },
            m.super_options
        ),
        None => format!(
            "{} (its mount is not in /proc/self/mountinfo)",
            real.display()
        ),
    };
    format!(
        "file system: the scratch directory's own, as it is ({why}): {which}; what was done on it \
         before (files deleted by this run's other probes or anything else, fragmentation, a \
         journal or none) changes this figure"
    )
}

/// A tmpfs mounted on a fresh directory under the scratch directory, unmounted on drop.
struct TmpfsMount {
    mountpoint: PathBuf,
    /// Removed after the unmount (fields drop after `drop` runs).
    _dir: tempfile::TempDir,
}

impl TmpfsMount {
    fn new(parent: &Path) -> Result<TmpfsMount> {
        let dir = crate::scratch::private_dir(parent, "tmpfs-")?;
        let mountpoint = dir.path().to_path_buf();
        let c = |s: &str| std::ffi::CString::new(s).context("path contains a NUL byte");
        let target = c(mountpoint.to_str().context("scratch path is not UTF-8")?)?;
        let (source, fstype, options) = (c("osmeter")?, c("tmpfs")?, c("mode=0700")?);
        // SAFETY: every pointer is a NUL-terminated string that outlives the call.
        let rc = unsafe {
            libc::mount(
                source.as_ptr(),
                target.as_ptr(),
                fstype.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                options.as_ptr().cast(),
            )
        };
        if rc != 0 {
            return Err(anyhow::anyhow!(
                "mount of a tmpfs on {} failed: {}",
                mountpoint.display(),
                std::io::Error::last_os_error()
            ));
        }
        Ok(TmpfsMount {
            mountpoint,
            _dir: dir,
        })
    }
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let Ok(target) = std::ffi::CString::new(self.mountpoint.as_os_str().as_encoded_bytes())
        else {
            return;
        };
        // SAFETY: target is NUL-terminated. A busy mount is detached lazily rather than left.
        unsafe {
            if libc::umount2(target.as_ptr(), 0) != 0 {
                libc::umount2(target.as_ptr(), libc::MNT_DETACH);
            }
        }
    }
}

/// A workload measured on its round's file system. The workload is declared first, so its
/// directory goes before the file system is unmounted.
pub(super) struct Grounded<W> {
    work: W,
    ground: Ground,
}

impl<W: Workload> Grounded<W> {
    /// Builds the workload with `make` in the round's file system.
    pub(super) fn build(ground: Ground, make: impl FnOnce(&Path) -> Result<W>) -> Result<Self> {
        let work = make(ground.path())?;
        Ok(Grounded { work, ground })
    }
}

impl<W: Workload> Workload for Grounded<W> {
    fn prepare(&mut self, iters: u64) -> Result<()> {
        self.work.prepare(iters)
    }
    fn run(&mut self, iters: u64) -> Result<()> {
        self.work.run(iters)
    }
    fn finish(&mut self) -> Result<()> {
        self.work.finish()
    }
    fn bytes_per_op(&self) -> Option<u64> {
        self.work.bytes_per_op()
    }
    fn max_iters(&self) -> u64 {
        self.work.max_iters()
    }
    fn subtract_loop_overhead(&self) -> bool {
        self.work.subtract_loop_overhead()
    }
    fn notes(&self) -> Vec<String> {
        let mut notes = self.work.notes();
        notes.push(self.ground.note.clone());
        notes
    }
    fn checks(&self) -> Vec<ClaimCheck> {
        self.work.checks()
    }
    fn counted(&mut self) -> Option<CounterScopes> {
        self.work.counted()
    }
    fn timed_ns(&mut self) -> Option<u64> {
        self.work.timed_ns()
    }
}
