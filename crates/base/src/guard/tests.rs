use super::sys::*;
use super::*;
use std::time::Instant;

/// Live (not zombie) processes whose command line holds `marker`.
fn alive_with(marker: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if text.contains(marker) && !zombie {
            out.push(text);
        }
    }
    out
}

fn unique(tag: &str) -> String {
    // A sleep length no other test uses: the marker processes are found by it.
    let n = std::process::id() as u64 * 100 + tag.len() as u64;
    format!("{}.{}", 100_000 + n % 800_000, tag.len())
}

fn wait_until(what: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if what() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn stop_ends_every_descendant_even_those_that_left_the_group() {
    let m = unique("tree");
    // Background job, a new session, a double fork whose middle process exits, nohup.
    let cmd = format!(
        "sleep {m} & setsid sleep {m} & (sleep {m} &) ; nohup sleep {m} >/dev/null 2>&1 & wait"
    );
    let mut g = Guarded::spawn(&cmd, 500_000, Duration::from_millis(300)).unwrap();
    assert!(
        wait_until(|| alive_with(&m).len() >= 4),
        "{:?}",
        alive_with(&m)
    );
    let t0 = Instant::now();
    assert_eq!(g.stop(), None, "killed, so no exit code");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert!(alive_with(&m).is_empty(), "{:?}", alive_with(&m));
}

#[test]
fn the_guardian_ends_the_tree_when_its_parent_is_killed() {
    let m = unique("orphaned");
    // Plays osmeter: a child process that starts the guarded command, then is SIGKILLed.
    // SAFETY: fork in a test; the child only spawns and sleeps (glibc's fork keeps malloc usable).
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let cmd = format!("setsid sleep {m} & (sleep {m} &); wait");
        let code = match Guarded::spawn(&cmd, 500_000, Duration::from_millis(100)) {
            Ok(g) => {
                std::mem::forget(g);
                std::thread::sleep(Duration::from_secs(60));
                0
            }
            Err(_) => 1,
        };
        unsafe { libc::_exit(code) };
    }
    assert!(
        wait_until(|| alive_with(&m).len() >= 2),
        "{:?}",
        alive_with(&m)
    );
    // SAFETY: our own child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    assert!(
        wait_until(|| alive_with(&m).is_empty()),
        "{:?}",
        alive_with(&m)
    );
}

#[test]
fn exit_codes_of_commands_that_end_by_themselves() {
    let mut g = Guarded::spawn("exit 3", 500_000, Duration::from_millis(100)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(g.stop(), Some(3));
    assert_eq!(g.stop(), Some(3), "a second stop answers the same");
    let mut g = Guarded::spawn("true", 500_000, Duration::from_millis(100)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(g.stop(), Some(0));
    // One that ignores SIGTERM is killed after the grace period.
    let t0 = Instant::now();
    let mut g = Guarded::spawn(
        "trap '' TERM; sleep 30",
        500_000,
        Duration::from_millis(200),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(g.stop(), None);
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn the_guardian_keeps_none_of_osmeters_descriptors() {
    // A pipe open in the parent when the guardian forks: once the parent closes its write end,
    // the read end must see the end of file, which it would not if the guardian held a copy.
    let (r, w) = pipe().unwrap();
    let mut g = Guarded::spawn("sleep 30", 500_000, Duration::from_millis(100)).unwrap();
    drop(w);
    let mut buf = [0u8; 1];
    let mut p = libc::pollfd {
        fd: r.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: polling and reading our own descriptor.
    let ready = unsafe { libc::poll(&mut p, 1, 2000) };
    assert_eq!(ready, 1, "the write end is still open somewhere");
    assert_eq!(
        unsafe { libc::read(r.as_raw_fd(), buf.as_mut_ptr().cast(), 1) },
        0
    );
    g.stop();
}

#[test]
fn the_command_cannot_take_or_keep_real_time_priority() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let cmd = format!(
        "exec > {out}; echo rtprio $(ulimit -Hr) $(ulimit -r); echo rttime $(ulimit -Ht) ; \
         grep -E '^(CapBnd|CapEff|NoNewPrivs)' /proc/self/status; \
         chrt -f 50 true 2>/dev/null && echo chrt-allowed || echo chrt-refused; \
         prlimit --pid $$ --rttime=unlimited:unlimited 2>/dev/null && echo rttime-lifted || echo rttime-kept; \
         chrt -p $$",
        out = out.display()
    );
    let mut g = Guarded::spawn(&cmd, 250_000, Duration::from_millis(100)).unwrap();
    assert!(wait_until(
        || std::fs::read_to_string(&out).is_ok_and(|t| t.contains("scheduling priority"))
    ));
    g.stop();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("rtprio 0 0"), "{text}");
    assert!(
        text.contains("chrt-refused") && text.contains("rttime-kept"),
        "{text}"
    );
    assert!(text.contains("SCHED_OTHER"), "{text}");
    assert!(text.contains("NoNewPrivs:\t1"), "{text}");
    for line in text.lines().filter(|l| l.starts_with("Cap")) {
        let mask = u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap();
        assert_eq!(mask & (1 << 23 | 1 << 24), 0, "{line}");
    }
}

#[test]
fn helpers_parse_what_proc_writes() {
    assert_eq!(parse_pid(b"1234\0\0"), Some(1234));
    assert_eq!(parse_pid(b"self\0"), None);
    assert_eq!(parse_pid(b"\0"), None);
    let mut buf = [0u8; 8];
    assert_eq!(write_decimal(&mut buf, 40321), 5);
    assert_eq!(&buf[..5], b"40321");
    // SAFETY: reading our own /proc entry.
    let parent = unsafe { parent_of(std::process::id() as libc::pid_t) };
    assert_eq!(parent, Some(unsafe { libc::getppid() }));
}
