//! End-to-end tests of `osmeter run --guest`: real QEMU (TCG), a real Debian kernel from osmeter's
//! cache (fetched once per machine), osmeter itself inside the guest. A boot costs 15-25 s here,
//! so each test boots as few times as its assertions need.

mod common;

use common::{entries, interrupt_after, which, TestEnv};
use serde_json::Value;
use std::time::Duration;

/// The kernel the tests boot: the cloud flavour `trace --system` uses too.
const KERNEL: &str = "linux-image-cloud-amd64";

/// Whether a guest can be booted here; says why not (on stderr) when it cannot.
fn guest_possible() -> bool {
    if which("qemu-system-x86_64").is_none() || which("busybox").is_none() {
        eprintln!("skipped: needs the Debian packages qemu-system-x86 and busybox-static");
        return false;
    }
    if which("apt-cache").is_none() {
        eprintln!("skipped: needs apt to find the kernel package {KERNEL}");
        return false;
    }
    true
}

/// A guest run's command with its scratch files under the test's own directory.
fn guest_cmd(env: &TestEnv, tmp: &std::path::Path) -> assert_cmd::Command {
    let mut c = env.osmeter();
    c.env("TMPDIR", tmp).args(["run", "--guest", KERNEL]);
    c
}

fn counts<'a>(run: &'a Value, probe: &str) -> &'a Value {
    run["sections"]["guest"]["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["probe"] == probe)
        .unwrap_or_else(|| panic!("no {probe} in {run}"))
}

#[test]
fn guest_runs_count_exactly_repeat_and_compare_exactly() {
    if !guest_possible() {
        return;
    }
    let env = TestEnv::new();
    let tmp = env.dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // The same kernel and parameters twice in one command: the A/A check. The table on stdout,
    // the documents from the store.
    let out = guest_cmd(&env, &tmp)
        .args(["--append", "quiet", "--append", "quiet"])
        // And the known answer of mitigations: on an Intel model without ARCH_CAPABILITIES the
        // kernel mitigates, which costs kernel instructions per system call and no user ones.
        .args([
            "--append",
            "mitigations=off",
            "--guest-cpu",
            "Skylake-Client",
        ])
        .args(["--guest-iterations", "200"])
        .args([
            "syscall.null",
            "syscall.clock_gettime",
            "app.interp",
            "memory.latency",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("[1] k.ins") && table.contains("[2] k.ins"),
        "{table}"
    );
    assert!(
        table.contains("[1] app.interp skipped: an application workload"),
        "{table}"
    );
    let runs: Vec<Value> = table
        .lines()
        .filter_map(|l| l.split_once("] run ").map(|(_, id)| id.trim().to_string()))
        .map(|id| env.json(&["show", "--json", &id]))
        .collect();
    assert_eq!(runs.len(), 3, "{table}");
    for (i, run) in runs.iter().enumerate() {
        let append = if i < 2 { "quiet" } else { "mitigations=off" };
        assert_eq!(run["tags"]["append"], append);
        assert_eq!(run["sections"]["guest"]["cpu"], "Skylake-Client");
        assert_ne!(run["started_at"], run["finished_at"]);
        assert!(run["tags"]["kernel"]
            .as_str()
            .unwrap()
            .starts_with("linux-image-"));
        assert_eq!(run["measurements"].as_array().unwrap().len(), 0);
        let g = &run["sections"]["guest"];
        assert_eq!(g["schema"], "osmeter.guest/1");
        assert!(g["cmdline"]
            .as_str()
            .unwrap()
            .ends_with(&format!(" {append}")));
        // No time is kept for a guest: nothing in the document is in seconds or nanoseconds.
        let text = g.to_string();
        assert!(!text.contains("_ns") && !text.contains("seconds"), "{text}");
        let null = &counts(run, "syscall.null")["per_op"];
        let k = null["kernel"]["instructions"].as_f64().unwrap();
        assert!(k > 100.0, "a system call runs kernel code: {null}");
        assert!(null["kernel"]["loads"].as_f64().unwrap() > 0.0);
        // The vDSO answers clock_gettime without entering the kernel, and windows with an
        // interrupt in them are not used: not one kernel instruction.
        let clock = &counts(run, "syscall.clock_gettime")["per_op"];
        assert_eq!(
            clock["kernel"]["instructions"].as_f64(),
            Some(0.0),
            "{clock}"
        );
        assert!(clock["user"]["instructions"].as_f64().unwrap() > 10.0);
        for skipped in ["app.interp", "memory.latency"] {
            let p = counts(run, skipped);
            assert_eq!(p["status"], "skipped");
            assert!(!p["reason"].as_str().unwrap().is_empty());
        }
    }
    assert_eq!(
        runs[0]["sections"]["guest"]["probes"], runs[1]["sections"]["guest"]["probes"],
        "two boots of one kernel must count the same"
    );
    let per_op = |run: &Value, mode: &str| {
        counts(run, "syscall.null")["per_op"][mode]["instructions"]
            .as_f64()
            .unwrap()
    };
    assert!(
        per_op(&runs[0], "kernel") > per_op(&runs[2], "kernel"),
        "mitigations cost kernel instructions: {} with, {} without",
        per_op(&runs[0], "kernel"),
        per_op(&runs[2], "kernel")
    );
    assert_eq!(per_op(&runs[0], "user"), per_op(&runs[2], "user"));
    let (a, b) = (
        runs[0]["id"].as_str().unwrap(),
        runs[1]["id"].as_str().unwrap(),
    );
    let cmp = env.osmeter().args(["compare", a, b]).output().unwrap();
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert!(
        cmp.status.success(),
        "{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    assert!(text.contains("0 of 12 counts differ"), "{text}");
    assert!(
        text.contains("no intervals, no false discovery rate"),
        "{text}"
    );
    assert!(!text.contains("95%"), "{text}");
    let shown = env.osmeter().args(["show", a]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("(guest)") && shown.contains("k.ins"),
        "{shown}"
    );
    let html = env.dir.path().join("r.html");
    let rep = env
        .osmeter()
        .args(["report", a, b, "-o"])
        .arg(&html)
        .output()
        .unwrap();
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains("<table class=\"guest\">"));
    let listed = env.osmeter().args(["runs"]).output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(listed.matches(" guest ").count(), 3, "{listed}");
    assert!(entries(&tmp).is_empty(), "left behind: {:?}", entries(&tmp));
}

#[test]
fn kernels_that_are_not_or_do_not_boot_are_named_and_leave_nothing() {
    if !guest_possible() {
        return;
    }
    let env = TestEnv::new();
    let tmp = env.dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let not_kernel = env.dir.path().join("notes.txt");
    std::fs::write(&not_kernel, vec![b'x'; 8192]).unwrap();
    let out = env
        .osmeter()
        .env("TMPDIR", &tmp)
        .args(["run", "--guest"])
        .arg(&not_kernel)
        .arg("syscall.null")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not an x86 Linux kernel image"), "{err}");

    let out = env
        .osmeter()
        .args([
            "run",
            "--guest",
            "linux-image-no-such-kernel-9",
            "syscall.null",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("linux-image-no-such-kernel-9"), "{err}");

    let out = guest_cmd(&env, &tmp)
        .args(["--guest-iterations", "0", "syscall.null"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));

    // Options of measured runs are refused by name rather than silently ignored.
    let out = guest_cmd(&env, &tmp)
        .args(["--rounds", "5", "syscall.null"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--rounds does not apply to --guest"), "{err}");

    // No init where the kernel looks: it panics, and the error shows the panic.
    let out = guest_cmd(&env, &tmp)
        .args(["--append", "rdinit=/no-such-init", "syscall.null"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("before osmeter ran"), "{err}");
    assert!(err.contains("Kernel panic"), "{err}");

    // A boot that cannot finish in time.
    let out = guest_cmd(&env, &tmp)
        .args(["--guest-timeout", "2s", "--json", "syscall.null"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("did not finish within 2s"), "{err}");
    assert!(out.stdout.is_empty(), "no run, no document");

    let runs = env.osmeter().args(["runs"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&runs.stdout).contains("guest"));
    assert!(entries(&tmp).is_empty(), "left behind: {:?}", entries(&tmp));
}

#[test]
fn ctrl_c_stops_the_guest_and_removes_its_files() {
    if !guest_possible() {
        return;
    }
    let env = TestEnv::new();
    let tmp = env.dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut cmd = env.osmeter_std();
    cmd.env("TMPDIR", &tmp)
        .args(["run", "--guest", KERNEL, "syscall"]);
    let (out, stopped_in) = interrupt_after(&mut cmd, Duration::from_secs(8), || {
        assert!(
            !entries(&tmp).is_empty(),
            "the guest's scratch directory exists while it runs"
        );
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(stopped_in < Duration::from_secs(10), "{stopped_in:?}");
    assert!(entries(&tmp).is_empty(), "left behind: {:?}", entries(&tmp));
    // No QEMU of this test is left: every one started had its files in `tmp`.
    let tmp_text = tmp.display().to_string();
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("qemu-system") && c.contains(&tmp_text))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
