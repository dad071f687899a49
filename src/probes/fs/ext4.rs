//! A file-system state that changes what the file-creating probes measure: on ext4 without a
//! journal the kernel will not hand out an inode again for a while after it was freed (it cannot be
//! sure the deletion reached the disk), so each creation scans past every recently deleted inode of
//! its group. How long a creation takes then depends on how many files were deleted in the last
//! minutes, by this run's other probes or by anything else, and swings by 5-50x. osmeter cannot
//! wait that out inside a run; it says so on the figures concerned.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

const EXT4_SUPER_MAGIC: i64 = 0xEF53;

/// The note for figures that create files under `dir`, when its file system is ext4 (or ext2/3
/// through the ext4 driver) without a journal.
pub(super) fn delayed_inode_reuse(dir: &Path) -> Option<String> {
    let device = journal_less_ext4(dir, Path::new("/proc/fs/jbd2"))?;
    Some(format!(
        "the scratch directory is on ext4 without a journal ({device}): new files skip inodes \
         deleted in the last minutes, so this figure moves with earlier deletions (watch its \
         spread between rounds); --dir on a journaled file system or tmpfs avoids it"
    ))
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
        let note = delayed_inode_reuse(dir.path());
        let is_ext4 = {
            let c = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: as above.
            unsafe {
                let mut st: libc::statfs = std::mem::zeroed();
                libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == EXT4_SUPER_MAGIC
            }
        };
        if !is_ext4 {
            assert!(note.is_none());
        }
        if let Some(n) = note {
            assert!(
                n.contains("without a journal") && n.contains("--dir"),
                "{n}"
            );
        }
    }
}
