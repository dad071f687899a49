//! System calls shared by the guardians: pipes, /proc walks and descriptor closing, all usable
//! between fork and exec (async-signal-safe, stack buffers only) except [`pipe`].

use anyhow::{Context, Result};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

pub(super) fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot create a pipe");
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Reads one native-endian i32; `None` at end of file.
pub(super) fn read_i32(fd: RawFd) -> Option<i32> {
    let mut buf = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        // SAFETY: reading into the unfilled tail of buf.
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), 4 - got) };
        if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        if n <= 0 {
            return None;
        }
        got += n as usize;
    }
    Some(i32::from_ne_bytes(buf))
}

/// Calls `f` with the pid of every process whose parent is `parent`, found by reading
/// /proc/PID/stat of every process (the children lists of /proc are not in every kernel).
/// Returns how many there were.
pub(super) unsafe fn for_each_child(parent: libc::pid_t, mut f: impl FnMut(libc::pid_t)) -> usize {
    let dir = libc::open(
        c"/proc".as_ptr(),
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
    );
    if dir < 0 {
        return 0;
    }
    let mut count = 0;
    let mut buf = [0u8; 8192];
    loop {
        let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
        if n <= 0 {
            break;
        }
        let mut off = 0usize;
        while off + 19 < n as usize {
            // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name[].
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            if reclen == 0 {
                break;
            }
            let name = &buf[off + 19..(off + reclen).min(n as usize)];
            if let Some(pid) = parse_pid(name) {
                if parent_of(pid) == Some(parent) {
                    f(pid);
                    count += 1;
                }
            }
            off += reclen;
        }
    }
    libc::close(dir);
    count
}

/// The leading decimal number of a NUL-terminated name, if the name is only digits.
pub(super) fn parse_pid(name: &[u8]) -> Option<libc::pid_t> {
    let mut v: libc::pid_t = 0;
    let mut digits = 0;
    for &b in name {
        match b {
            0 => break,
            b'0'..=b'9' if digits < 9 => {
                v = v * 10 + libc::pid_t::from(b - b'0');
                digits += 1;
            }
            _ => return None,
        }
    }
    (digits > 0).then_some(v)
}

/// The parent pid from /proc/PID/stat (the field after the state, after the last ')').
pub(super) unsafe fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let mut path = [0u8; 32];
    let prefix = b"/proc/";
    path[..prefix.len()].copy_from_slice(prefix);
    let len = prefix.len() + write_decimal(&mut path[prefix.len()..], pid as u64);
    path[len..len + 6].copy_from_slice(b"/stat\0");
    let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 1024];
    let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
    libc::close(fd);
    if n <= 0 {
        return None;
    }
    let text = &buf[..n as usize];
    let close = text.iter().rposition(|&b| b == b')')?;
    // ") S 1234 ..."
    let rest = text.get(close + 4..)?;
    let end = rest.iter().position(|&b| b == b' ')?;
    parse_pid(&rest[..end])
}

/// Writes `v` in decimal at the start of `out`; returns the digits written.
pub(super) fn write_decimal(out: &mut [u8], mut v: u64) -> usize {
    let mut tmp = [0u8; 20];
    let mut n = 0;
    loop {
        tmp[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 || n == tmp.len() {
            break;
        }
    }
    for i in 0..n.min(out.len()) {
        out[i] = tmp[n - 1 - i];
    }
    n.min(out.len())
}

pub(super) unsafe fn write_i32(fd: RawFd, v: i32) {
    let b = v.to_ne_bytes();
    libc::write(fd, b.as_ptr().cast(), b.len());
}

pub(super) unsafe fn sleep_ms(ms: u64) {
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: (ms * 1_000_000) as libc::c_long,
    };
    libc::nanosleep(&ts, std::ptr::null_mut());
}

/// Closes every descriptor from 3 up except those in `keep`.
pub(super) unsafe fn close_all_but(keep: &[RawFd]) {
    let mut sorted = [RawFd::MAX; 8];
    for (slot, &fd) in sorted.iter_mut().zip(keep) {
        *slot = fd;
    }
    sorted.sort_unstable();
    let mut from: RawFd = 3;
    for &k in sorted.iter().chain(std::iter::once(&RawFd::MAX)) {
        if k == RawFd::MAX {
            close_range(from, u32::MAX);
            break;
        }
        if k >= from {
            if k > from {
                close_range(from, (k - 1) as u32);
            }
            from = k + 1;
        }
    }
}

pub(super) unsafe fn close_range(first: RawFd, last: u32) {
    if libc::syscall(libc::SYS_close_range, first as u32, last, 0u32) == 0 {
        return;
    }
    // Kernels before 5.9: one by one, up to the descriptor limit.
    let limit = libc::sysconf(libc::_SC_OPEN_MAX).clamp(1024, 1 << 20) as u32;
    let mut fd = first as u32;
    while fd <= last.min(limit) {
        libc::close(fd as RawFd);
        fd += 1;
    }
}
