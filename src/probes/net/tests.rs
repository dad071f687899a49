use super::partner::{gone, Partner};
use super::sock::{get_int_opt, tcp_pair};
use super::work::{Bandwidth, Connect, RoundTrip, CONNECT_MAX_ITERS};
use super::*;
use crate::probes::testing::env;
use std::os::fd::AsRawFd;

#[test]
fn every_probe_and_variant_builds_and_runs() {
    crate::probes::testing::exercise(PROBES, 20, crate::probes::testing::all);
}

#[test]
fn parameters_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let e = env(dir.path(), Scale::Quick);
    let bad = params![("placement", "elsewhere")];
    assert!((PROBES[1].build)(&e, &bad).is_err());
    assert!(rcvbuf_param(&params![("rcvbuf", "big")]).is_err());
    assert_eq!(
        rcvbuf_param(&params![("rcvbuf", 24576)]).unwrap(),
        Some(24576)
    );
    assert_eq!(rcvbuf_param(&params![("rcvbuf", "default")]).unwrap(), None);
}

#[test]
fn partners_are_gone_after_drop() {
    let rt = RoundTrip::tcp(0).unwrap();
    let udp = RoundTrip::udp(0).unwrap();
    let bw = Bandwidth::new(0, Some(SMALL_RCVBUF)).unwrap();
    let cn = Connect::new(0).unwrap();
    let pids = [
        rt.partner_pid(),
        udp.partner_pid(),
        bw.partner_pid(),
        cn.partner_pid(),
    ];
    assert!(pids.iter().all(|&p| !gone(p)));
    drop((rt, udp, bw, cn));
    for p in pids {
        assert!(gone(p), "partner {p} still exists");
    }
}

#[test]
fn small_receive_buffer_reaches_the_accepted_socket() {
    let (_near, far) = tcp_pair(Some(SMALL_RCVBUF)).unwrap();
    // Linux doubles the asked size to leave room for its bookkeeping.
    let got = get_int_opt(far.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF).unwrap();
    assert_eq!(got, 2 * SMALL_RCVBUF);
    let (_near, far) = tcp_pair(None).unwrap();
    let got = get_int_opt(far.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF).unwrap();
    assert!(got > 2 * SMALL_RCVBUF, "default receive buffer is {got}");
}

#[test]
fn acknowledgements_count_whole_transfers() {
    let mut bw = Bandwidth::new(0, Some(SMALL_RCVBUF)).unwrap();
    // 300 transfers wrap the one-byte sequence number; any lost or extra ack is an error.
    bw.run(150).unwrap();
    bw.run(150).unwrap();
}

#[test]
fn a_dead_partner_is_an_error_not_a_hang() {
    let mut rt = RoundTrip::tcp(0).unwrap();
    rt.run(3).unwrap();
    // SAFETY: our own child; Drop reaps it.
    unsafe { libc::kill(rt.partner_pid(), libc::SIGKILL) };
    assert!(rt.run(3).is_err());

    let mut cn = Connect::new(0).unwrap();
    cn.run(3).unwrap();
    // SAFETY: as above.
    unsafe { libc::kill(cn.partner_pid(), libc::SIGKILL) };
    // Give the kernel a moment to close the dead partner's listener.
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(cn.run(3).is_err());
}

/// Connections of `port` in TIME_WAIT, from /proc/net/tcp.
fn time_wait_on(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let port = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[3] == "06" && (f[1].ends_with(&port) || f[2].ends_with(&port))
        })
        .count()
}

#[test]
fn connections_leave_no_time_wait_behind() {
    let mut cn = Connect::new(0).unwrap();
    assert!(cn.max_iters() <= CONNECT_MAX_ITERS);
    cn.run(500).unwrap();
    assert_eq!(time_wait_on(cn.port()), 0);
}

#[test]
fn a_partner_keeps_only_the_descriptors_it_was_given() {
    let (a, b) = tcp_pair(None).unwrap();
    let keep = b.as_raw_fd();
    let other = a.as_raw_fd();
    // The child reports through its exit status whether `other` is closed and `keep` open.
    let p = Partner::spawn(0, &[keep], move || {
        // SAFETY: F_GETFD only queries the descriptor.
        let kept = unsafe { libc::fcntl(keep, libc::F_GETFD) } >= 0;
        let closed = unsafe { libc::fcntl(other, libc::F_GETFD) } < 0;
        if kept && closed {
            0
        } else {
            1
        }
    })
    .unwrap();
    let mut status = 0;
    // SAFETY: our own child, reaped here before Partner's Drop would.
    let r = unsafe { libc::waitpid(p.pid(), &mut status, 0) };
    assert_eq!(r, p.pid());
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    std::mem::forget(p);
}

#[test]
fn a_partner_that_cannot_be_pinned_is_reported() {
    let err = Partner::spawn(libc::CPU_SETSIZE as usize - 1, &[], || 0)
        .err()
        .expect("pinning to a CPU that does not exist must fail");
    assert!(format!("{err:#}").contains("pinned"), "{err:#}");
}
