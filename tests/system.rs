//! End-to-end tests of `osmeter trace --system`: real QEMU, a real Debian kernel (fetched once into
//! the tests' cache under target/), osmeter's plugin and guest helper. Each boot takes several
//! seconds, so the commands traced are tiny.

mod common;

use common::{entries, which, TestEnv};
use osmeter::memsim::trace::{self, Kind, Mode};
use std::path::Path;
use std::time::{Duration, Instant};

/// Whether a test may boot a guest: it fetches the default kernel package once into the tests'
/// cache (common::test_cache) unless OSMETER_TEST_NO_DOWNLOADS is set, and needs QEMU and
/// busybox, whose absence fails (.ci/run installs them).
fn guest_possible() -> bool {
    if !common::downloads_allowed() {
        return false;
    }
    assert!(
        which("qemu-system-x86_64").is_some() && which("busybox").is_some(),
        "these tests need the Debian packages qemu-system-x86 and busybox-static (.ci/run installs them)"
    );
    true
}

/// The address of a kernel text symbol and of the next one, from a kallsyms file.
fn symbol_range(kallsyms: &Path, name: &str) -> (u64, u64) {
    let text = std::fs::read_to_string(kallsyms).unwrap();
    let mut addrs: Vec<(u64, &str)> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let a = u64::from_str_radix(f.next()?, 16).ok()?;
            let t = f.next()?;
            let n = f.next()?;
            matches!(t, "t" | "T").then_some((a, n))
        })
        .collect();
    addrs.sort();
    let i = addrs.iter().position(|(_, n)| *n == name).unwrap();
    let start = addrs[i].0;
    let end = addrs[i..].iter().find(|(a, _)| *a > start).unwrap().0;
    (start, end)
}

#[test]
fn a_system_capture_is_repeatable_windowed_and_sees_every_system_call() {
    if !guest_possible() {
        return;
    }
    let env = TestEnv::new();
    let dir = env.dir.path();
    // dd with one-byte blocks: 2000 reads and 2000 writes, each a system call.
    let cmd = [
        "/usr/bin/dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=1",
        "count=2000",
    ];
    for name in ["a.osmt", "b.osmt"] {
        let out = env
            .osmeter()
            .args(["trace", "--system", "-o"])
            .arg(dir.join(name))
            .arg("--")
            .args(cmd)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("2000 bytes"), "dd's own report: {stdout}");
    }
    let (a, b) = (
        std::fs::read(dir.join("a.osmt")).unwrap(),
        std::fs::read(dir.join("b.osmt")).unwrap(),
    );
    assert!(a == b, "two captures of the same command differ");

    let syms = dir.join("a.osmt.kallsyms");
    let (entry, entry_end) = symbol_range(&syms, "entry_SYSCALL_64");
    let mut src = trace::open(&dir.join("a.osmt"), None).unwrap();
    assert!(src.meta().physical() && !src.meta().user_only());
    let (mut first, mut last) = (None, None);
    let (mut entries_seen, mut in_entry, mut kernel_refs, mut user_refs) = (0u64, 0u64, 0u64, 0u64);
    let mut batch = Vec::new();
    loop {
        batch.clear();
        if src.next_batch(&mut batch, 1 << 16).unwrap() == 0 {
            break;
        }
        for r in &batch {
            first.get_or_insert(*r);
            last = Some(*r);
            match r.mode {
                Mode::Kernel => kernel_refs += 1,
                Mode::User => user_refs += 1,
            }
            if r.kind == Kind::Instr && r.mode == Mode::Kernel {
                entries_seen += u64::from(r.vaddr == entry);
                in_entry += u64::from((entry..entry_end).contains(&r.vaddr));
                // With nokaslr the kernel image sits at physical 16 MiB, linked at
                // 0xffffffff81000000: every text fetch must carry exactly that physical address.
                if r.vaddr >= 0xffff_ffff_8000_0000 {
                    assert_eq!(r.paddr, Some(r.vaddr - 0xffff_ffff_8000_0000));
                }
            }
        }
    }
    assert!(!src.meta().incomplete());
    assert!(
        entries_seen >= 4000,
        "entry_SYSCALL_64 entered {entries_seen} times for 4000 system calls"
    );
    assert!(in_entry > entries_seen);
    assert!(kernel_refs > 0 && user_refs > 0);
    // The window opens after the start marker, in the guest helper (user mode), and closes with
    // the end marker's own fetch: a 7-byte user-mode no-op.
    let (first, last) = (first.unwrap(), last.unwrap());
    assert_eq!((first.kind, first.mode), (Kind::Instr, Mode::User));
    assert_eq!(
        (last.kind, last.mode, last.size),
        (Kind::Instr, Mode::User, 7)
    );

    let info = env
        .osmeter()
        .args(["trace", "info"])
        .arg(dir.join("a.osmt"))
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(
        !info.contains("user mode only") && !info.contains("INCOMPLETE"),
        "{info}"
    );

    // Attribution through the sidecar symbol table: the system-call category holds the entry
    // code, entered at least once per call.
    let doc = env.json(&[
        "trace",
        "info",
        "--json",
        "--functions",
        "10",
        dir.join("a.osmt").to_str().unwrap(),
    ]);
    let syscall = doc["attribution"]["categories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "syscall")
        .expect("a syscall category");
    assert!(syscall["instructions"].as_u64().unwrap() >= in_entry);
    let entry_fetches: u64 = syscall["top_functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"].as_str().unwrap().starts_with("entry_SYSCALL_64"))
        .map(|f| f["instructions"].as_u64().unwrap())
        .sum();
    assert!(entry_fetches >= 4000, "{syscall}");
}

#[test]
fn bad_requests_are_refused_before_any_boot() {
    let env = TestEnv::new();
    let out = env.dir.path().join("t.osmt");
    let cases: &[(&[&str], &str)] = &[
        (&["--", "osmeter-no-such-program"], "not found"),
        (&["--workload", "nope"], "compile"),
        (&["--workload", "sort", "--", "ls"], "not both"),
        (&[], "--workload"),
        (&["--memory", "10", "--", "ls"], "64..=2048"),
        (&["--timeout", "soon", "--", "ls"], "--timeout"),
    ];
    for (args, expect) in cases {
        let o = env
            .osmeter()
            .args(["trace", "--system", "-o"])
            .arg(&out)
            .args(*args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
    let o = env
        .osmeter()
        .args(["trace", "--system", "--kernel", "/no/vmlinuz", "-o"])
        .arg(&out)
        .args(["--", "ls"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/no/vmlinuz"));
    assert!(
        entries(env.dir.path()).is_empty(),
        "nothing may be left behind"
    );
}

#[test]
fn the_workloads_are_listed() {
    let env = TestEnv::new();
    let o = env.osmeter().args(["trace", "workloads"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    for w in ["compile", "sort", "grep", "copy", "net", "spawn"] {
        assert!(text.contains(w), "{text}");
    }
}

#[test]
fn a_command_that_cannot_run_in_the_guest_leaves_no_trace() {
    if !guest_possible() {
        return;
    }
    let env = TestEnv::new();
    let script = env.dir.path().join("script.sh");
    std::fs::write(&script, "#!/no/such/interpreter\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = env.dir.path().join("t.osmt");
    let o = env
        .osmeter()
        .args(["trace", "--system", "-o"])
        .arg(&out)
        .arg("--")
        .arg(&script)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("inside the guest: cannot run"), "{err}");
    assert!(err.contains("--include"), "{err}");
    assert_eq!(entries(env.dir.path()), vec!["script.sh".to_string()]);
}

#[test]
fn a_failing_command_keeps_its_trace_and_says_so() {
    if !guest_possible() {
        return;
    }
    let env = TestEnv::new();
    let out = env.dir.path().join("t.osmt");
    let o = env
        .osmeter()
        .args(["trace", "--system", "-o"])
        .arg(&out)
        .args(["--", "false"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("exited with status 1"), "{err}");
    let mut src = trace::open(&out, None).unwrap();
    assert!(!trace::read_all(src.as_mut()).unwrap().is_empty());
    assert!(!src.meta().incomplete());
}

#[test]
fn a_guest_that_does_not_finish_in_time_is_stopped_with_its_console_shown() {
    if !guest_possible() {
        return;
    }
    let env = TestEnv::new();
    let out = env.dir.path().join("t.osmt");
    // Booting alone takes longer than this.
    let o = env
        .osmeter()
        .args(["trace", "--system", "--timeout", "1s", "-o"])
        .arg(&out)
        .args(["--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("within"), "{err}");
    assert!(err.contains("console"), "{err}");
    assert!(entries(env.dir.path()).is_empty());
}

#[test]
fn ctrl_c_keeps_a_consistent_trace_marked_incomplete() {
    if !guest_possible() {
        return;
    }
    let env = TestEnv::new();
    let out = env.dir.path().join("t.osmt.zst");
    let mut child = env
        .osmeter_std()
        .args(["trace", "--system", "--timeout", "5min", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c", "while :; do :; done"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until references are arriving (the partial file grows), then interrupt.
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let growing = std::fs::read_dir(env.dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| e.metadata().map(|m| m.len() > 100_000).unwrap_or(false));
        if growing {
            break;
        }
        assert!(Instant::now() < deadline, "the capture never started");
        std::thread::sleep(Duration::from_millis(200));
    }
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("marked incomplete"), "{stderr}");
    let mut src = trace::open(&out, None).unwrap();
    let n = trace::read_all(src.as_mut()).unwrap().len();
    assert!(n > 0);
    assert!(src.meta().incomplete());
    let mut names = entries(env.dir.path());
    names.sort();
    assert_eq!(names, vec!["t.osmt.zst", "t.osmt.zst.kallsyms"]);
}

#[test]
fn a_symbol_table_that_is_not_one_is_refused_before_booting() {
    if !guest_possible() {
        return;
    }
    let env = TestEnv::new();
    let map = env.dir.path().join("System.map");
    std::fs::write(
        &map,
        "ffffffffffffffff B The real System.map is elsewhere\n",
    )
    .unwrap();
    for (path, expect) in [
        (map.as_path(), "text symbols"),
        (Path::new("/no/System.map"), "cannot read --system-map"),
    ] {
        let o = env
            .osmeter()
            .args(["trace", "--system", "--system-map"])
            .arg(path)
            .arg("-o")
            .arg(env.dir.path().join("t.osmt"))
            .args(["--", "true"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(expect), "{err}");
    }
    assert_eq!(entries(env.dir.path()), vec!["System.map".to_string()]);
}
