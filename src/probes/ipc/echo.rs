//! Partner processes reached through descriptors: one-byte round trips over pipes or a UNIX
//! socket pair, and a pipe drained by a reader for bandwidth.

use super::partner::{io_failure, pipe, retry_after_signal, ChildProcess};
use crate::harness::Workload;
use anyhow::{Context, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The parent's side of a one-byte echo: write to the child, read its reply.
pub struct Echo {
    /// Held for its Drop, which kills and reaps the child.
    #[cfg_attr(not(test), allow(dead_code))]
    child: ChildProcess,
    read_fd: RawFd,
    write_fd: RawFd,
    /// Owns the descriptors above (one socket, or the ends of two pipes); closed after the child is
    /// killed.
    _fds: Vec<OwnedFd>,
}

/// Child side: echo every byte back until the other end goes away.
fn echo_loop(read_fd: RawFd, write_fd: RawFd) {
    let mut b = 0u8;
    loop {
        // SAFETY: one byte into a local; the descriptors are kept open in the child.
        let n = unsafe { libc::read(read_fd, (&mut b as *mut u8).cast(), 1) };
        if n != 1 {
            return;
        }
        // SAFETY: as above.
        if unsafe { libc::write(write_fd, (&b as *const u8).cast(), 1) } != 1 {
            return;
        }
    }
}

impl Echo {
    /// A child on `cpu` echoing through two pipes, as in Ousterhout's cswitch test.
    pub fn pipes(cpu: usize) -> Result<Echo> {
        let (down_r, down_w) = pipe()?;
        let (up_r, up_w) = pipe()?;
        let (cr, cw) = (down_r.as_raw_fd(), up_w.as_raw_fd());
        let child = ChildProcess::spawn(cpu, &[cr, cw], || echo_loop(cr, cw))?;
        // The child's ends are closed here so that its exit shows as end-of-file or EPIPE.
        drop((down_r, up_w));
        Echo::started(
            child,
            up_r.as_raw_fd(),
            down_w.as_raw_fd(),
            vec![up_r, down_w],
        )
    }

    /// A child on `cpu` echoing through a UNIX stream socket pair.
    pub fn unix_socket(cpu: usize) -> Result<Echo> {
        let mut sv = [0; 2];
        // SAFETY: sv is a valid two-element out-array.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                sv.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error()).context("socketpair(AF_UNIX)");
        }
        // SAFETY: both descriptors were just created and are owned by nobody else.
        let (mine, theirs) = unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) };
        let cs = theirs.as_raw_fd();
        let child = ChildProcess::spawn(cpu, &[cs], || echo_loop(cs, cs))?;
        drop(theirs);
        let fd = mine.as_raw_fd();
        Echo::started(child, fd, fd, vec![mine])
    }

    /// One untimed exchange, so the child is known to be in its loop before the first sample.
    fn started(
        child: ChildProcess,
        read_fd: RawFd,
        write_fd: RawFd,
        fds: Vec<OwnedFd>,
    ) -> Result<Echo> {
        let mut echo = Echo {
            child,
            read_fd,
            write_fd,
            _fds: fds,
        };
        echo.run(1).context("first exchange with the partner")?;
        Ok(echo)
    }

    #[cfg(test)]
    pub fn pid(&self) -> libc::pid_t {
        self.child.pid()
    }
}

impl Workload for Echo {
    fn run(&mut self, iters: u64) -> Result<()> {
        let mut b = 0u8;
        for _ in 0..iters {
            // A signal that does not stop the run restarts the interrupted call; that path is
            // taken only on failure, so the common case is one write and one read.
            loop {
                // SAFETY: one byte from a local over a descriptor owned by self.
                let n = unsafe { libc::write(self.write_fd, (&b as *const u8).cast(), 1) };
                if n == 1 {
                    break;
                }
                if !(n < 0 && retry_after_signal()) {
                    return Err(io_failure(n, "write to the partner"));
                }
            }
            loop {
                // SAFETY: one byte into a local over a descriptor owned by self.
                let n = unsafe { libc::read(self.read_fd, (&mut b as *mut u8).cast(), 1) };
                if n == 1 {
                    break;
                }
                if !(n < 0 && retry_after_signal()) {
                    return Err(io_failure(n, "read of the partner's reply"));
                }
            }
        }
        Ok(())
    }
}

/// Writes `size`-byte blocks into a pipe whose other end a child reads and throws away.
pub struct PipeBandwidth {
    #[cfg_attr(not(test), allow(dead_code))]
    child: ChildProcess,
    write_fd: OwnedFd,
    buf: Vec<u8>,
}

impl PipeBandwidth {
    pub fn new(cpu: usize, size: usize) -> Result<PipeBandwidth> {
        // Non-zero and touched, so neither side measures first-touch page faults.
        let buf = vec![0x5au8; size];
        // The child's buffer is allocated before the fork: the child may not allocate.
        let mut sink = vec![0u8; size];
        let (r, w) = pipe()?;
        let rfd = r.as_raw_fd();
        let child = ChildProcess::spawn(cpu, &[rfd], || loop {
            // SAFETY: reading into the child's copy of `sink`, which is `size` bytes long.
            let n = unsafe { libc::read(rfd, sink.as_mut_ptr().cast(), sink.len()) };
            if n <= 0 {
                return;
            }
        })?;
        drop(r);
        Ok(PipeBandwidth {
            child,
            write_fd: w,
            buf,
        })
    }

    #[cfg(test)]
    pub fn pid(&self) -> libc::pid_t {
        self.child.pid()
    }
}

impl Workload for PipeBandwidth {
    fn run(&mut self, iters: u64) -> Result<()> {
        let fd = self.write_fd.as_raw_fd();
        let len = self.buf.len();
        let base = self.buf.as_ptr();
        for _ in 0..iters {
            let mut done = 0usize;
            while done < len {
                // SAFETY: done < len, so the range lies inside buf.
                let n = unsafe { libc::write(fd, base.add(done).cast(), len - done) };
                if n > 0 {
                    done += n as usize;
                } else if !(n < 0 && retry_after_signal()) {
                    return Err(io_failure(n, "write into the pipe"));
                }
            }
        }
        Ok(())
    }

    fn bytes_per_op(&self) -> Option<u64> {
        Some(self.buf.len() as u64)
    }
}

#[cfg(test)]
impl Echo {
    pub fn raw_read_fd(&self) -> RawFd {
        self.read_fd
    }
}
