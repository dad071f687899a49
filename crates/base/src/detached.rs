//! A file system mounted nowhere: fsopen/fsmount give a mount that exists only as a descriptor of
//! this process, reached through /proc/self/fd/N and gone when the descriptor closes, whatever ends
//! the process. osmeter reaches the kernel's pseudo file systems this way (tracefs, securityfs)
//! without changing the mount table, so there is nothing to unmount after a crash.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;

/// Mounts a fresh instance of the file system type `fs_type` (no source, no options), detached.
/// Fails before Linux 5.2 and without CAP_SYS_ADMIN.
pub fn mount(fs_type: &std::ffi::CStr) -> std::io::Result<OwnedFd> {
    const FSOPEN_CLOEXEC: libc::c_uint = 1;
    const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
    const FSMOUNT_CLOEXEC: libc::c_uint = 1;
    // SAFETY: the three calls take a NUL-terminated name, descriptors they returned, and null
    // pointers where the command takes no key or value; each result is checked before use.
    unsafe {
        let fs = libc::syscall(libc::SYS_fsopen, fs_type.as_ptr(), FSOPEN_CLOEXEC);
        if fs < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fs = OwnedFd::from_raw_fd(fs as libc::c_int);
        let created = libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        );
        if created < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mnt = libc::syscall(libc::SYS_fsmount, fs.as_raw_fd(), FSMOUNT_CLOEXEC, 0);
        if mnt < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(mnt as libc::c_int))
    }
}

/// The path through which this process reaches the root of a detached mount.
pub fn root_of(mount: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", mount.as_raw_fd()))
}
