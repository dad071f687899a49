//! A file-system state that changes what the file-creating probes measure: on ext4 without a
//! journal the kernel will not hand out an inode again for a while after it was freed (for
//! vm.dirty_expire_centisecs, 30 s by default: it cannot be sure the deletion reached the disk), so
//! each creation scans past every recently deleted inode of its group. How long a creation takes
//! then depends on how many files were deleted in the last half minute, by this run's other probes,
//! by the probe's own earlier operations or by anything else, and swings by 5-50x. osmeter cannot
//! wait that out inside a run (the probe itself deletes files); after each round it checks whether
//! the state held (a creation after a deletion got a new inode instead of the freed one), marks
//! the figure through a failed check when it did, and says why.

use crate::results::model::ClaimCheck;
use anyhow::Result;
use std::os::fd::RawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

const EXT4_SUPER_MAGIC: i64 = 0xEF53;

/// Where freed inodes may be held back: the device of a scratch directory on ext4 (or ext2/3
/// through the ext4 driver) without a journal.
pub(super) struct DelayedReuse {
    device: String,
}

impl DelayedReuse {
    pub(super) fn of(dir: &Path) -> Option<DelayedReuse> {
        journal_less_ext4(dir, Path::new("/proc/fs/jbd2")).map(|device| DelayedReuse { device })
    }

    /// Checks, in `dir` (an open directory of the probe's own), whether the file system holds
    /// freed inodes back right now: a few creations, each right after a deletion, that all get a
    /// new inode mean every creation is scanning past recently deleted ones.
    pub(super) fn check(&self, dir: RawFd) -> Option<ClaimCheck> {
        let fresh = fresh_inode_share(dir).ok()?;
        let window = std::fs::read_to_string("/proc/sys/vm/dirty_expire_centisecs")
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .map_or("a while".to_string(), |cs| format!("{} s", cs / 100));
        Some(ClaimCheck {
            event: "fresh-inode-share".into(),
            expected: [0.0, 0.5],
            seen: fresh,
            holds: fresh <= 0.5,
            why: format!(
                "a file created right after a deletion should be able to take the freed inode; \
                 ext4 without a journal ({}) holds freed inodes back for {window} \
                 (vm.dirty_expire_centisecs), so each creation scanned past every inode deleted \
                 in that time and the figure moves with how many that were (this run's and \
                 anyone else's); --dir on tmpfs or a journaled file system avoids it",
                self.device
            ),
        })
    }
}

/// Creations that follow a deletion in the same directory.
const REUSE_TRIES: usize = 8;

/// Of `REUSE_TRIES` creations, each right after the previous file was deleted, the share that got
/// an inode other than the one just freed.
fn fresh_inode_share(dir: RawFd) -> Result<f64> {
    let name = super::cstring(".osmeter-inode-reuse")?;
    let mut freed: Option<u64> = None;
    let mut fresh = 0;
    for _ in 0..REUSE_TRIES {
        let fd = super::meta::create(dir, &name)?;
        // SAFETY: fd is open; st is written by fstat before it is read.
        let ino = unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            let ok = libc::fstat(fd, &mut st) == 0;
            libc::close(fd);
            ok.then_some(st.st_ino)
        };
        super::meta::unlink(dir, &name)?;
        let ino = ino.ok_or_else(|| super::os_error("fstat"))?;
        if freed.is_some_and(|f| f != ino) {
            fresh += 1;
        }
        freed = Some(ino);
    }
    Ok(fresh as f64 / (REUSE_TRIES - 1) as f64)
}

/// The block device's name when `dir` is on a journal-less ext4, judged by the journal threads
/// the kernel lists under `jbd2` (one `NAME-INODE` entry per journaled device).
fn journal_less_ext4(dir: &Path, jbd2: &Path) -> Option<String> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statfs fills the struct for a NUL-terminated path.
    let fs_type = unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        if libc::statfs(c.as_ptr(), &mut st) != 0 {
            return None;
        }
        st.f_type as i64
    };
    if fs_type != EXT4_SUPER_MAGIC {
        return None;
    }
    let dev = std::fs::metadata(dir).ok()?.dev();
    let name = device_name(libc::major(dev), libc::minor(dev))?;
    has_no_journal(&name, jbd2).then_some(name)
}

/// The kernel's name of a block device ("vda", "nvme0n1p2"), from sysfs.
fn device_name(major: u32, minor: u32) -> Option<String> {
    let uevent = std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/uevent")).ok()?;
    uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))
        .map(str::to_string)
}

fn has_no_journal(device: &str, jbd2: &Path) -> bool {
    // Without /proc/fs/jbd2 at all nothing is journaled (the jbd2 module is not even loaded).
    let Ok(entries) = std::fs::read_dir(jbd2) else {
        return true;
    };
    let prefix = format!("{device}-");
    !entries
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_entry_for_the_device_means_journaled() {
        let jbd2 = tempfile::tempdir().unwrap();
        assert!(has_no_journal("vda", jbd2.path()));
        std::fs::create_dir(jbd2.path().join("vdb-8")).unwrap();
        assert!(has_no_journal("vda", jbd2.path()));
        std::fs::create_dir(jbd2.path().join("vda-8")).unwrap();
        assert!(!has_no_journal("vda", jbd2.path()));
        assert!(has_no_journal("vda", &jbd2.path().join("missing")));
    }

    #[test]
    fn this_machine_is_judged_consistently() {
        // Whatever /tmp is here, the answer agrees with statfs and /proc/fs/jbd2.
        let dir = tempfile::tempdir().unwrap();
        let state = DelayedReuse::of(dir.path());
        let is_ext4 = {
            let c = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: as above.
            unsafe {
                let mut st: libc::statfs = std::mem::zeroed();
                libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == EXT4_SUPER_MAGIC
            }
        };
        if !is_ext4 {
            assert!(state.is_none());
        }
        if let Some(state) = state {
            let fd = super::super::open_dir(dir.path()).unwrap();
            let check = state.check(std::os::fd::AsRawFd::as_raw_fd(&fd)).unwrap();
            assert!(
                check.why.contains("without a journal") && check.why.contains("--dir"),
                "{check:?}"
            );
            assert!((0.0..=1.0).contains(&check.seen), "{check:?}");
            assert_eq!(check.holds, check.seen <= 0.5);
            assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
        }
    }

    #[test]
    fn a_file_system_that_reuses_inodes_or_never_does_is_told_apart() {
        // tmpfs numbers every new inode afresh; whatever the scratch file system, the share is a
        // fraction and the probe leaves nothing behind.
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let fd = super::super::open_dir(dir.path()).unwrap();
        let share = fresh_inode_share(std::os::fd::AsRawFd::as_raw_fd(&fd)).unwrap();
        assert_eq!(share, 1.0, "tmpfs hands out a new inode number every time");
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }
}
