//! Loopback sockets on raw descriptors: the timed loops call send/recv directly, and options such
//! as SO_RCVBUF must be set at points (before listen) that std's types do not expose.

use crate::interrupt::Interrupted;
use anyhow::{anyhow, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// How long the measuring side waits for its partner before calling the run failed.
pub(super) const PARTNER_TIMEOUT_S: libc::time_t = 10;

/// The error for a failed socket call: an interruption by the user is reported as such so the run
/// stops, a timeout says that the partner went quiet.
pub(super) fn sock_error(what: &str) -> anyhow::Error {
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINTR) => anyhow!(Interrupted),
        Some(libc::EAGAIN) => {
            anyhow!("{what}: no answer from the partner process within {PARTNER_TIMEOUT_S} s")
        }
        _ => anyhow!("{what} failed: {e}"),
    }
}

/// 127.0.0.1:`port`; port 0 asks the kernel to choose.
pub(super) fn loopback(port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
        },
        sin_zero: [0; 8],
    }
}

const ADDR_LEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;

pub(super) fn socket(ty: libc::c_int) -> Result<OwnedFd> {
    // SAFETY: no pointers involved.
    let fd = unsafe { libc::socket(libc::AF_INET, ty | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(sock_error("socket"));
    }
    // SAFETY: fd was just created.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub(super) fn set_opt<T>(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> Result<()> {
    // SAFETY: value points to a live T of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(sock_error("setsockopt"));
    }
    Ok(())
}

#[cfg(test)]
pub(super) fn get_int_opt(fd: RawFd, level: libc::c_int, name: libc::c_int) -> Result<i32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: v and len are valid out-pointers of the sizes given.
    let rc = unsafe { libc::getsockopt(fd, level, name, (&mut v as *mut i32).cast(), &mut len) };
    if rc != 0 {
        return Err(sock_error("getsockopt"));
    }
    Ok(v)
}

/// Binds to 127.0.0.1 on a port the kernel picks, and returns that port.
pub(super) fn bind_loopback(fd: RawFd) -> Result<u16> {
    let mut addr = loopback(0);
    // SAFETY: addr is a valid sockaddr_in of ADDR_LEN bytes.
    if unsafe { libc::bind(fd, (&addr as *const libc::sockaddr_in).cast(), ADDR_LEN) } != 0 {
        return Err(sock_error("bind to 127.0.0.1"));
    }
    let mut len = ADDR_LEN;
    // SAFETY: addr and len are valid out-pointers.
    let rc =
        unsafe { libc::getsockname(fd, (&mut addr as *mut libc::sockaddr_in).cast(), &mut len) };
    if rc != 0 {
        return Err(sock_error("getsockname"));
    }
    Ok(u16::from_be(addr.sin_port))
}

pub(super) fn connect(fd: RawFd, addr: &libc::sockaddr_in) -> Result<()> {
    // SAFETY: addr is a valid sockaddr_in of ADDR_LEN bytes.
    if unsafe { libc::connect(fd, (addr as *const libc::sockaddr_in).cast(), ADDR_LEN) } != 0 {
        return Err(sock_error("connect to 127.0.0.1"));
    }
    Ok(())
}

/// A TCP listener on 127.0.0.1. A receive buffer size is set before listen so that accepted
/// connections inherit it and advertise a window that fits it from the first segment.
pub(super) fn tcp_listener(rcvbuf: Option<i32>) -> Result<(OwnedFd, u16)> {
    let l = socket(libc::SOCK_STREAM)?;
    set_opt(l.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, &1i32)?;
    if let Some(size) = rcvbuf {
        set_opt(l.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, &size)?;
    }
    let port = bind_loopback(l.as_raw_fd())?;
    // SAFETY: l is a bound socket.
    if unsafe { libc::listen(l.as_raw_fd(), 128) } != 0 {
        return Err(sock_error("listen"));
    }
    Ok((l, port))
}

/// A connected TCP pair over loopback: (connecting end, accepted end). The accepted end carries
/// `rcvbuf` when given.
pub(super) fn tcp_pair(rcvbuf: Option<i32>) -> Result<(OwnedFd, OwnedFd)> {
    let (listener, port) = tcp_listener(rcvbuf)?;
    let client = socket(libc::SOCK_STREAM)?;
    // The handshake completes in the kernel against the listen backlog, so connect returns
    // before accept is called.
    connect(client.as_raw_fd(), &loopback(port))?;
    // SAFETY: null address pointers are allowed when the peer address is not wanted.
    let fd = unsafe {
        libc::accept4(
            listener.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(sock_error("accept"));
    }
    // SAFETY: fd was just accepted.
    Ok((client, unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Two UDP sockets on 127.0.0.1, each connected to the other.
pub(super) fn udp_pair() -> Result<(OwnedFd, OwnedFd)> {
    let a = socket(libc::SOCK_DGRAM)?;
    let b = socket(libc::SOCK_DGRAM)?;
    let pa = bind_loopback(a.as_raw_fd())?;
    let pb = bind_loopback(b.as_raw_fd())?;
    connect(a.as_raw_fd(), &loopback(pb))?;
    connect(b.as_raw_fd(), &loopback(pa))?;
    Ok((a, b))
}

pub(super) fn no_delay(fd: RawFd) -> Result<()> {
    set_opt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, &1i32)
}

/// Bounds how long the measuring side blocks on a partner that stopped answering.
pub(super) fn partner_timeouts(fd: RawFd) -> Result<()> {
    let t = libc::timeval {
        tv_sec: PARTNER_TIMEOUT_S,
        tv_usec: 0,
    };
    set_opt(fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, &t)?;
    set_opt(fd, libc::SOL_SOCKET, libc::SO_SNDTIMEO, &t)
}

/// Sends all of `buf`, continuing after short sends. MSG_NOSIGNAL: a vanished partner is an
/// error, not a SIGPIPE.
pub(super) fn send_all(fd: RawFd, buf: &[u8]) -> Result<()> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer and length describe the unsent tail of buf.
        let n = unsafe {
            libc::send(
                fd,
                buf[done..].as_ptr().cast(),
                buf.len() - done,
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            return Err(sock_error("send"));
        }
        done += n as usize;
    }
    Ok(())
}

pub(super) fn send_byte(fd: RawFd, b: u8) -> Result<()> {
    // SAFETY: one byte from a stack value.
    let n = unsafe { libc::send(fd, (&b as *const u8).cast(), 1, libc::MSG_NOSIGNAL) };
    if n != 1 {
        return Err(sock_error("send"));
    }
    Ok(())
}

pub(super) fn recv_byte(fd: RawFd) -> Result<u8> {
    let mut b = 0u8;
    // SAFETY: one byte into a stack value.
    let n = unsafe { libc::recv(fd, (&mut b as *mut u8).cast(), 1, 0) };
    match n {
        1 => Ok(b),
        0 => Err(anyhow!("the partner process closed the connection")),
        _ => Err(sock_error("recv")),
    }
}
