//! The network workloads (measuring side) and the loops their partner processes run.

use super::partner::Partner;
use super::sock::{
    no_delay, partner_timeouts, recv_byte, send_all, send_byte, sock_error, tcp_listener, tcp_pair,
    udp_pair,
};
use crate::harness::Workload;
use anyhow::{bail, Result};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Bytes per bandwidth operation: the buffer size of Chen et al.'s network test.
pub(super) const TRANSFER: usize = 256 << 10;

/// Connections per sample at most, far below what the ephemeral port range would allow.
pub(super) const CONNECT_MAX_ITERS: u64 = 20_000;

fn interrupted_or_fatal() -> bool {
    std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)
}

/// Partner loop: answer each byte with that byte plus one, until end of file or an error.
fn echo(fd: RawFd) -> i32 {
    let mut b = 0u8;
    loop {
        // SAFETY: one byte into a stack value.
        let n = unsafe { libc::recv(fd, (&mut b as *mut u8).cast(), 1, 0) };
        if n == 1 {
            b = b.wrapping_add(1);
            // SAFETY: as above.
            if unsafe { libc::send(fd, (&b as *const u8).cast(), 1, libc::MSG_NOSIGNAL) } != 1 {
                return 1;
            }
        } else if n == 0 {
            return 0;
        } else if interrupted_or_fatal() {
            return 1;
        }
    }
}

/// Partner loop: receive `op` bytes at a time, never reading across an operation's end, and
/// acknowledge each complete operation with a one-byte sequence number.
fn sink(fd: RawFd, buf: &mut [u8], op: usize) -> i32 {
    let mut seq = 0u8;
    loop {
        let mut left = op;
        while left > 0 {
            let want = left.min(buf.len());
            // SAFETY: buf holds at least `want` bytes.
            let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), want, 0) };
            if n > 0 {
                left -= n as usize;
            } else if n == 0 {
                return 0;
            } else if interrupted_or_fatal() {
                return 1;
            }
        }
        seq = seq.wrapping_add(1);
        // SAFETY: one byte from a stack value.
        while unsafe { libc::send(fd, (&seq as *const u8).cast(), 1, libc::MSG_NOSIGNAL) } != 1 {
            if interrupted_or_fatal() {
                return 1;
            }
        }
    }
}

/// Partner loop: accept a connection and close it at once.
fn accept_close(listener: RawFd) -> i32 {
    loop {
        // SAFETY: null address pointers are allowed.
        let c = unsafe { libc::accept(listener, std::ptr::null_mut(), std::ptr::null_mut()) };
        if c >= 0 {
            // SAFETY: c was just accepted.
            unsafe { libc::close(c) };
        } else if interrupted_or_fatal() {
            return 1;
        }
    }
}

/// One-byte request/reply with a partner, over TCP or UDP.
pub(super) struct RoundTrip {
    fd: OwnedFd,
    seq: u8,
    _partner: Partner,
}

impl RoundTrip {
    pub(super) fn tcp(cpu: usize) -> Result<RoundTrip> {
        let (near, far) = tcp_pair(None)?;
        no_delay(near.as_raw_fd())?;
        no_delay(far.as_raw_fd())?;
        Self::start(cpu, near, far)
    }

    pub(super) fn udp(cpu: usize) -> Result<RoundTrip> {
        let (near, far) = udp_pair()?;
        Self::start(cpu, near, far)
    }

    fn start(cpu: usize, near: OwnedFd, far: OwnedFd) -> Result<RoundTrip> {
        partner_timeouts(near.as_raw_fd())?;
        let f = far.as_raw_fd();
        let partner = Partner::spawn(cpu, &[f], move || echo(f))?;
        // The far end now lives in the partner only, so its death shows here as end of file.
        drop(far);
        Ok(RoundTrip {
            fd: near,
            seq: 0,
            _partner: partner,
        })
    }

    #[cfg(test)]
    pub(super) fn partner_pid(&self) -> libc::pid_t {
        self._partner.pid()
    }
}

impl Workload for RoundTrip {
    fn run(&mut self, iters: u64) -> Result<()> {
        let fd = self.fd.as_raw_fd();
        for _ in 0..iters {
            self.seq = self.seq.wrapping_add(1);
            send_byte(fd, self.seq)?;
            let reply = recv_byte(fd)?;
            if reply != self.seq.wrapping_add(1) {
                bail!(
                    "the partner answered {reply} to request {}: replies are out of step",
                    self.seq
                );
            }
        }
        Ok(())
    }
}

/// 256 KB transfers over TCP to a partner that acknowledges each one once it has received it all.
pub(super) struct Bandwidth {
    fd: OwnedFd,
    data: Vec<u8>,
    /// Sequence number of the last acknowledgement read.
    acked: u8,
    _partner: Partner,
}

impl Bandwidth {
    pub(super) fn new(cpu: usize, rcvbuf: Option<i32>) -> Result<Bandwidth> {
        let (near, far) = tcp_pair(rcvbuf)?;
        // Without it, Nagle holds back the short tail of each transfer (256 KB is not a multiple
        // of the loopback MSS) and the one-byte acknowledgement until earlier data is acknowledged,
        // and a delayed ACK then stalls a transfer for tens of milliseconds.
        no_delay(near.as_raw_fd())?;
        no_delay(far.as_raw_fd())?;
        partner_timeouts(near.as_raw_fd())?;
        let f = far.as_raw_fd();
        let mut buf = vec![0u8; TRANSFER];
        let partner = Partner::spawn(cpu, &[f], move || {
            let code = sink(f, &mut buf, TRANSFER);
            // Freeing would take the allocator's lock, which another thread of the parent may
            // have held at the fork; the process ends anyway.
            std::mem::forget(buf);
            code
        })?;
        drop(far);
        Ok(Bandwidth {
            fd: near,
            data: (0..TRANSFER).map(|i| (i % 253) as u8).collect(),
            acked: 0,
            _partner: partner,
        })
    }

    fn ack(&mut self) -> Result<()> {
        let b = recv_byte(self.fd.as_raw_fd())?;
        self.acked = self.acked.wrapping_add(1);
        if b != self.acked {
            bail!(
                "acknowledgement {b} where {} was due: transfers are out of step",
                self.acked
            );
        }
        Ok(())
    }

    #[cfg(test)]
    pub(super) fn partner_pid(&self) -> libc::pid_t {
        self._partner.pid()
    }
}

impl Workload for Bandwidth {
    fn run(&mut self, iters: u64) -> Result<()> {
        let fd = self.fd.as_raw_fd();
        for i in 0..iters {
            send_all(fd, &self.data)?;
            // The acknowledgement of the previous transfer has usually arrived by now, so reading
            // it costs a system call but no wait; only the last one of a sample is waited for.
            if i > 0 {
                self.ack()?;
            }
        }
        if iters > 0 {
            self.ack()?;
        }
        Ok(())
    }

    fn bytes_per_op(&self) -> Option<u64> {
        Some(TRANSFER as u64)
    }
}

/// A TCP connection set up and torn down against a partner's listener.
pub(super) struct Connect {
    addr: libc::sockaddr_in,
    _partner: Partner,
}

impl Connect {
    pub(super) fn new(cpu: usize) -> Result<Connect> {
        let (listener, port) = tcp_listener(None)?;
        let l = listener.as_raw_fd();
        let partner = Partner::spawn(cpu, &[l], move || accept_close(l))?;
        // Only the partner listens now: if it dies, connect is refused instead of hanging.
        drop(listener);
        Ok(Connect {
            addr: super::sock::loopback(port),
            _partner: partner,
        })
    }

    fn cycle(&self, fd: RawFd) -> Result<()> {
        // Reset instead of an orderly close: neither side keeps the connection in TIME_WAIT, so
        // many iterations cannot run out of ports.
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        super::sock::set_opt(fd, libc::SOL_SOCKET, libc::SO_LINGER, &linger)?;
        super::sock::connect(fd, &self.addr)?;
        // Waiting for the partner's close makes the accept part of the operation, and keeps at
        // most one connection in the listen backlog.
        let mut b = 0u8;
        // SAFETY: one byte into a stack value.
        match unsafe { libc::recv(fd, (&mut b as *mut u8).cast(), 1, 0) } {
            0 => Ok(()),
            n if n > 0 => bail!("the partner sent data on a connection it should only close"),
            _ => Err(sock_error("recv")),
        }
    }

    #[cfg(test)]
    pub(super) fn partner_pid(&self) -> libc::pid_t {
        self._partner.pid()
    }

    #[cfg(test)]
    pub(super) fn port(&self) -> u16 {
        u16::from_be(self.addr.sin_port)
    }
}

impl Workload for Connect {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            let s = super::sock::socket(libc::SOCK_STREAM)?;
            self.cycle(s.as_raw_fd())?;
        }
        Ok(())
    }

    fn max_iters(&self) -> u64 {
        CONNECT_MAX_ITERS
    }
}
