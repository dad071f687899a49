use super::*;
use crate::harness::Workload;
use crate::probes::testing::{env, first_cpu};

fn is_gone(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

#[test]
fn every_probe_and_variant_builds_and_runs() {
    crate::probes::testing::exercise(PROBES, 50, crate::probes::testing::all);
}

#[test]
fn child_processes_are_reaped_on_drop() {
    let cpu = first_cpu();
    let pipes = echo::Echo::pipes(cpu).unwrap();
    let unix = echo::Echo::unix_socket(cpu).unwrap();
    let bw = echo::PipeBandwidth::new(cpu, 4096).unwrap();
    let pids = [pipes.pid(), unix.pid(), bw.pid()];
    assert!(pids.iter().all(|&p| !is_gone(p)));
    drop((pipes, unix, bw));
    for pid in pids {
        assert!(is_gone(pid), "child {pid} still exists after drop");
    }
}

#[test]
fn partner_threads_end_on_drop() {
    let cpu = *placement::allowed_cpus().last().unwrap();
    let mut f = wake::FutexRoundTrip::new(cpu).unwrap();
    let mut e = wake::EventfdRoundTrip::new(cpu).unwrap();
    f.run(1000).unwrap();
    e.run(1000).unwrap();
    let (f_done, e_done) = (f.exited_flag(), e.exited_flag());
    assert!(!f_done() && !e_done());
    drop((f, e));
    assert!(f_done() && e_done());
}

#[test]
fn echo_returns_every_byte_it_gets() {
    // Thousands of round trips complete, so none was lost or duplicated: a lost byte would block
    // the parent, an extra one would be read as the reply to a later write and show at the end.
    let cpu = first_cpu();
    let mut e = echo::Echo::unix_socket(cpu).unwrap();
    e.run(5000).unwrap();
    let mut b = 0u8;
    // SAFETY: non-blocking peek for a stray byte.
    let n = unsafe {
        libc::recv(
            e.raw_read_fd(),
            (&mut b as *mut u8).cast(),
            1,
            libc::MSG_DONTWAIT | libc::MSG_PEEK,
        )
    };
    assert_eq!(n, -1, "a stray byte was waiting");
}

#[test]
fn bandwidth_counts_the_block_size() {
    let env = env(std::path::Path::new("/tmp"), Scale::Full);
    for v in bandwidth_variants(Scale::Full) {
        let size = param_u64(&v, "size").unwrap();
        if let Built::Ready(w) = build_bandwidth(&env, &v).unwrap() {
            assert_eq!(w.bytes_per_op(), Some(size));
        }
    }
}

#[test]
fn bad_parameters_are_refused() {
    let env = env(std::path::Path::new("/tmp"), Scale::Quick);
    assert!(partner_cpu(&env, &params![("placement", "left")]).is_err());
    assert!(build_bandwidth(&env, &params![("size", 0), ("placement", "same")]).is_err());
}

#[test]
fn a_dead_partner_is_an_error_not_a_hang() {
    let cpu = first_cpu();
    let mut e = echo::Echo::pipes(cpu).unwrap();
    // SAFETY: killing our own child.
    unsafe { libc::kill(e.pid(), libc::SIGKILL) };
    let err = e.run(10).unwrap_err();
    assert!(format!("{err}").contains("partner"), "{err}");
}
