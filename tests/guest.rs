//! End-to-end tests of `osmeter run --guest`: real QEMU (TCG), real Debian kernels, osmeter itself
//! inside the guest. A boot costs 15-25 s here, so each test boots as few times as its assertions
//! need. Two kernel packages are fetched, once, into the tests' cache under target/
//! (common::test_cache: the cloud kernel, some 27 MB, and its PREEMPT_RT build, some 71 MB);
//! OSMETER_TEST_NO_DOWNLOADS=1 skips the tests that would fetch them (README.md).

mod common;

use common::schema_check::{assert_follow_their_schemas, documents, validator};
use common::{entries, interrupt_after, which, TestEnv};
use serde_json::Value;
use std::time::Duration;

/// The kernel the tests boot: the cloud flavour `trace --system` uses too.
const KERNEL: &str = "linux-image-cloud-amd64";

/// Whether a guest can be booted here; says why not (on stderr) when it cannot.
fn guest_possible() -> bool {
    if !common::downloads_allowed() {
        return false;
    }
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

/// A test's environment and a TMPDIR of its own for the guests' scratch files (checked empty at
/// the end), or None, said why, when no guest can boot here.
fn guest_env() -> Option<(TestEnv, std::path::PathBuf)> {
    if !guest_possible() {
        return None;
    }
    let env = TestEnv::new();
    let tmp = env.dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    Some((env, tmp))
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

/// The kernel parameters of the one-kernel test's boots, in order: an A/A pair, the known answer
/// of mitigations, and seccomp filters of two more lengths (every boot runs under a filter, the
/// first three under one of no comparisons, so that five boots answer all three questions).
const APPENDS: [&str; 5] = [
    "osmeter.seccomp=0",
    "osmeter.seccomp=0",
    "osmeter.seccomp=0 mitigations=off",
    "osmeter.seccomp=100",
    "osmeter.seccomp=200",
];

/// The number N of a compare line "0 of N counts differ" (or "... simulated figures differ").
fn none_of(text: &str, what: &str) -> usize {
    let line = text
        .lines()
        .find(|l| l.starts_with("0 of ") && l.contains(what))
        .unwrap_or_else(|| panic!("no \"0 of N {what}\" in {text}"));
    line["0 of ".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// One command, five boots of one kernel (a boot costs 10-20 s of CPU here, so the assertions of
/// several features share them), on an Intel model that the kernel mitigates and whose RDRAND
/// would seed the kernel's randomness, with every counted reference simulated on two machines:
/// - A/A: two boots count and simulate the same, misses included, and compare says so exactly;
/// - mitigations cost kernel instructions per system call and no user ones;
/// - a seccomp filter costs kernel instructions in equal steps with its length, and the growth is
///   in the filter's own code;
/// - a small first level misses more than a large one; kernel instructions split by function add
///   up to the count; probes that cannot run in a guest are named and skipped.
#[test]
fn one_kernel_counted_exactly_repeatably_and_explained() {
    let Some((env, tmp)) = guest_env() else {
        return;
    };
    let mut cmd = guest_cmd(&env, &tmp);
    for a in APPENDS {
        cmd.args(["--append", a]);
    }
    let out = cmd
        .args(["--guest-cpu", "Skylake-Client", "--guest-iterations", "10"])
        .args(["--preset", "pentium", "--preset", "x86-modern"])
        .args([
            "syscall.null",
            "syscall.clock_gettime",
            "fs.read_cached",
            "app.interp",
            "memory.latency",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("[1] k.ins") && table.contains(&format!("[{}] k.ins", APPENDS.len())),
        "{table}"
    );
    assert!(table.contains("Simulated on pentium"), "{table}");
    assert!(table.contains("Simulated on x86-modern"), "{table}");
    assert!(
        table.contains("[1] app.interp skipped: an application workload"),
        "{table}"
    );
    let ids: Vec<String> = table
        .lines()
        .filter_map(|l| l.split_once("] run ").map(|(_, id)| id.trim().to_string()))
        .collect();
    assert_eq!(ids.len(), APPENDS.len(), "{table}");
    let runs: Vec<Value> = ids
        .iter()
        .map(|id| env.json(&["show", "--json", id]))
        .collect();
    for (run, append) in runs.iter().zip(APPENDS) {
        assert_eq!(run["tags"]["append"], append);
        assert!(run["tags"]["kernel"]
            .as_str()
            .unwrap()
            .starts_with("linux-image-"));
        assert_ne!(run["started_at"], run["finished_at"]);
        assert_eq!(run["measurements"].as_array().unwrap().len(), 0);
        let g = &run["sections"]["guest"];
        assert_eq!(g["schema"], "osmeter.guest/1");
        assert_eq!(g["cpu"], "Skylake-Client");
        assert_eq!(g["presets"], serde_json::json!(["pentium", "x86-modern"]));
        assert!(g["symbols"].as_str().unwrap().contains("kallsyms"), "{g}");
        assert!(g["cmdline"].as_str().unwrap().ends_with(append), "{g}");
        // No time is kept for a guest: no field of the document is in seconds or nanoseconds
        // (kernel function names, such as __task_pid_nr_ns, are not fields).
        let mut fields = g.clone();
        for p in fields["probes"].as_array_mut().unwrap() {
            p.as_object_mut().unwrap().remove("kernel_parts");
        }
        let text = fields.to_string();
        assert!(!text.contains("_ns") && !text.contains("seconds"), "{text}");
        let null = &counts(run, "syscall.null")["per_op"];
        assert!(
            null["kernel"]["instructions"].as_f64().unwrap() > 100.0,
            "a system call runs kernel code: {null}"
        );
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
        for probe in ["syscall.null", "fs.read_cached"] {
            let p = counts(run, probe);
            let kernel = p["per_op"]["kernel"]["instructions"].as_f64().unwrap();
            let sum: f64 = p["kernel_parts"]["categories"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_f64().unwrap())
                .sum();
            assert!(
                (sum - kernel).abs() < 1e-6,
                "{probe}: {sum} against {kernel}"
            );
        }
        // A 16 KB read per operation: 8 KB first-level caches miss what 32 KB ones keep.
        let read = counts(run, "fs.read_cached");
        let l1d = |i: usize| {
            read["simulated"][i]["kernel"]["l1d_misses"]
                .as_f64()
                .unwrap()
        };
        assert_eq!(read["simulated"][0]["preset"], "pentium");
        assert!(
            l1d(0) > 2.0 * l1d(1),
            "pentium {} x86-modern {}",
            l1d(0),
            l1d(1)
        );
        assert!(
            read["kernel_parts"]["categories"]["block-copy"]
                .as_f64()
                .unwrap()
                > 0.0
        );
    }
    // A/A on an Intel model: QEMU's RDRAND is seeded, so even simulated misses repeat.
    assert_eq!(
        runs[0]["sections"]["guest"]["probes"], runs[1]["sections"]["guest"]["probes"],
        "two boots of one kernel must count and simulate the same"
    );
    let same = env
        .osmeter()
        .args(["compare", &ids[0], &ids[1]])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&same.stdout);
    assert!(
        same.status.success(),
        "{}",
        String::from_utf8_lossy(&same.stderr)
    );
    assert!(none_of(&text, "counts differ") > 0, "{text}");
    assert!(none_of(&text, "simulated figures differ") > 0, "{text}");
    assert!(
        text.contains("no intervals, no false discovery rate"),
        "{text}"
    );
    assert!(!text.contains("95%"), "{text}");
    let all = env
        .osmeter()
        .args(["compare", "--all", &ids[0], &ids[1]])
        .output()
        .unwrap();
    let all = String::from_utf8_lossy(&all.stdout);
    assert!(
        all.contains("fs.read_cached file_size=4194304 pentium.kernel.mcpi"),
        "{all}"
    );

    let per_call = |i: usize, mode: &str| {
        counts(&runs[i], "syscall.null")["per_op"][mode]["instructions"]
            .as_f64()
            .unwrap()
    };
    // Mitigations: kernel instructions only.
    assert!(
        per_call(0, "kernel") > per_call(2, "kernel"),
        "mitigations cost kernel instructions: {} with, {} without",
        per_call(0, "kernel"),
        per_call(2, "kernel")
    );
    assert_eq!(per_call(0, "user"), per_call(2, "user"));

    // Seccomp: the guest reports the filter it ran under; every comparison costs the same.
    let filtered = [0, 3, 4];
    for (i, rules) in filtered.iter().zip([0, 100, 200]) {
        assert_eq!(runs[*i]["sections"]["guest"]["seccomp_rules"], rules);
    }
    let k: Vec<f64> = filtered.iter().map(|i| per_call(*i, "kernel")).collect();
    assert!(
        k[1] > k[0] + 100.0,
        "100 comparisons cost at least one instruction each: {k:?}"
    );
    assert_eq!(
        k[2] - k[1],
        k[1] - k[0],
        "every comparison costs the same: {k:?}"
    );
    let u: Vec<f64> = filtered.iter().map(|i| per_call(*i, "user")).collect();
    assert!(u[0] == u[1] && u[1] == u[2], "{u:?}");
    // A filter of none and of 100 comparisons: the difference is split by function, exactly,
    // and most of it is the filter's JIT-compiled code, outside every kernel symbol.
    let cmp = env
        .osmeter()
        .args(["compare", "--json", &ids[0], &ids[3]])
        .output()
        .unwrap();
    assert!(
        cmp.status.success(),
        "{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    if let Some(python) = validator() {
        let docs = documents("compare --json (two guest runs)", &cmp.stdout);
        let seen = assert_follow_their_schemas(&env, python, docs);
        assert!(seen.contains("compare-exact"), "{seen:?}");
    }
    let c: Value = serde_json::from_slice(&cmp.stdout).unwrap();
    let null = c["explained"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["figure"] == "syscall.null")
        .unwrap_or_else(|| panic!("{c}"));
    let moved: f64 = null["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["difference"].as_f64().unwrap())
        .sum();
    assert!(null["difference"].as_f64().unwrap() > 50.0, "{null}");
    assert!(
        (moved - null["difference"].as_f64().unwrap()).abs() < 1e-6,
        "{null}"
    );
    let top = &null["functions"][0];
    assert_eq!(top["name"], "(no symbol)", "{null}");
    assert!(
        top["difference"].as_f64().unwrap() >= 100.0,
        "one comparison or more per rule: {null}"
    );

    let (a, b) = (ids[0].as_str(), ids[1].as_str());
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
    assert_eq!(listed.matches(" guest ").count(), APPENDS.len(), "{listed}");
    assert!(entries(&tmp).is_empty(), "left behind: {:?}", entries(&tmp));
}

#[test]
fn kernels_that_are_not_or_do_not_boot_are_named_and_leave_nothing() {
    let Some((env, tmp)) = guest_env() else {
        return;
    };
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

    let bad = guest_cmd(&env, &tmp)
        .args(["--append", "osmeter.seccomp=lots", "syscall.null"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(
        err.contains("osmeter.seccomp=lots") && err.contains("0 to 4000"),
        "{err}"
    );

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
    // The console's last lines come with it (or that the kernel printed nothing yet).
    assert!(
        err.contains("last console lines:\n  |") || err.contains("printed nothing"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no run, no document");

    let runs = env.osmeter().args(["runs"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&runs.stdout).contains("guest"));
    assert!(entries(&tmp).is_empty(), "left behind: {:?}", entries(&tmp));
}

#[test]
fn ctrl_c_stops_the_guest_and_removes_its_files() {
    let Some((env, tmp)) = guest_env() else {
        return;
    };
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

/// Debian's 6.1 kernel against its PREEMPT_RT build, on wake-ups between two tasks: the RT
/// kernel turns spinlocks into sleeping rt-mutexes, which costs kernel instructions per round
/// trip and shows by name among the functions the round trip ran. Counting is exact, so user
/// instructions are equal on both. The kernel without PREEMPT_RT is the cloud flavour the other
/// tests boot (no other locking but the RT patch's shows the rt_ names), so only the RT build,
/// some 71 MB, is fetched for this test (once, into the tests' cache).
#[test]
fn the_rt_kernel_s_locking_shows_in_the_counts_of_wake_ups() {
    let Some((env, tmp)) = guest_env() else {
        return;
    };
    let out = env
        .osmeter()
        .env("TMPDIR", &tmp)
        .args([
            "run",
            "--json",
            "--guest-iterations",
            "10",
            "--preset",
            "pentium",
        ])
        .args(["--guest", KERNEL, "--guest", "linux-image-rt-amd64"])
        .args(["ipc.futex_roundtrip", "ipc.pipe_pingpong"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let runs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(runs.len(), 2);
    let release = |i: usize| {
        runs[i]["sections"]["guest"]["release"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        !release(0).contains("-rt-") && release(1).contains("-rt-"),
        "{}",
        release(1)
    );
    for probe in ["ipc.futex_roundtrip", "ipc.pipe_pingpong"] {
        let point = |i: usize| -> &Value {
            runs[i]["sections"]["guest"]["probes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["probe"] == probe && p["params"]["placement"] == "same")
                .unwrap_or_else(|| panic!("no {probe} placement=same in {}", runs[i]))
        };
        let (plain, rt) = (point(0), point(1));
        let ins = |p: &Value, mode: &str| p["per_op"][mode]["instructions"].as_f64().unwrap();
        assert!(
            ins(rt, "kernel") > ins(plain, "kernel"),
            "{probe}: rt {} plain {}",
            ins(rt, "kernel"),
            ins(plain, "kernel")
        );
        assert_eq!(ins(rt, "user"), ins(plain, "user"), "{probe}");
        let rt_locks = |p: &Value| -> f64 {
            p["kernel_parts"]["functions"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(name, _)| name.starts_with("rt_spin") || name.starts_with("rt_mutex"))
                .map(|(_, v)| v.as_f64().unwrap())
                .sum()
        };
        assert!(rt_locks(rt) > 0.0, "{probe}: {}", rt["kernel_parts"]);
        assert_eq!(rt_locks(plain), 0.0, "{probe}: {}", plain["kernel_parts"]);
    }
    assert!(entries(&tmp).is_empty(), "left behind: {:?}", entries(&tmp));
}

/// `paper --guest`: refused where it means nothing, before anything boots; `chen96 --guest K`
/// counts the paper's probes that can run in a guest and says where the counts come from.
#[test]
fn papers_take_kernels_counted_in_a_guest() {
    let env = TestEnv::new();
    for (args, says) in [
        (
            vec!["paper", "chen-bershad93", "--guest", KERNEL],
            "give --guest twice",
        ),
        (
            vec!["paper", "ousterhout89", "--guest", KERNEL],
            "not to ousterhout89",
        ),
        (
            vec!["paper", "chen96", "--guest", KERNEL, "--table", "4.1"],
            "--table does not apply with --guest",
        ),
    ] {
        let out = env.osmeter().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    if !guest_possible() {
        return;
    }
    let tmp = env.dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out = env
        .osmeter()
        .env("TMPDIR", &tmp)
        .args(["paper", "chen96", "--guest", KERNEL])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("no hardware PMU") || text.contains("has a PMU"),
        "{text}"
    );
    // Every figure of the paper's table has a row: its user and kernel instructions, and
    // whether they came from the guest.
    let row = |figure: &str| -> (Vec<f64>, String) {
        let line = text
            .lines()
            .find(|l| l.starts_with(figure))
            .unwrap_or_else(|| panic!("no row {figure} in {text}"));
        let nums = line
            .split_whitespace()
            .filter_map(|w| w.parse::<f64>().ok())
            .collect();
        (nums, line.to_string())
    };
    let (dynamic, line) = row("process.exec link=dynamic method=vfork");
    assert!(line.trim_end().ends_with("guest"), "{line}");
    let (fixed, _) = row("process.exec link=static method=vfork");
    assert!(
        fixed[1] > 10_000.0,
        "an exec runs tens of thousands of kernel instructions: {fixed:?}"
    );
    assert!(
        dynamic[0] > fixed[0],
        "the dynamic loader runs in user mode: {dynamic:?} against {fixed:?}"
    );
    let (tcp, line) = row("net.tcp_bandwidth rcvbuf=24576 placement=cross");
    assert!(tcp[1] > 0.0 && line.contains("guest, see below"), "{line}");
    // The notes under the table are prose, wrapped to the terminal's width.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "counted as net.tcp_bandwidth placement=same rcvbuf=24576 (the guest has one CPU)"
        ),
        "{text}"
    );
    let (none, _) = row("memory.latency");
    assert!(none.is_empty());
    assert!(
        flat.contains("size=512: not counted in a guest: a hardware figure"),
        "{text}"
    );
    // The same table as JSON: rows of the kind `osmeter schema paper-count-row` describes.
    let out = env
        .osmeter()
        .env("TMPDIR", &tmp)
        .args(["paper", "chen96", "--guest", KERNEL, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(python) = validator() {
        let docs = documents("paper chen96 --guest --json", &out.stdout);
        let seen = assert_follow_their_schemas(&env, python, docs);
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["paper-count-row"]);
    }
    assert!(entries(&tmp).is_empty(), "left behind: {:?}", entries(&tmp));
}

/// `paper chen-bershad93` with two kernels side by side, as the paper set Ultrix beside Mach:
/// each kernel's MCPI row as JSON, of the kind `osmeter schema paper-mcpi-row` describes.
#[test]
fn two_kernels_side_by_side_give_the_papers_mcpi_rows() {
    let Some((env, tmp)) = guest_env() else {
        return;
    };
    let out = env
        .osmeter()
        .env("TMPDIR", &tmp)
        .args(["paper", "chen-bershad93", "--guest", KERNEL])
        .args(["--guest", "linux-image-rt-amd64"])
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert!(rows.len() >= 2, "a row per kernel at least: {rows:?}");
    if let Some(python) = validator() {
        let docs = documents(
            "paper chen-bershad93 --guest A --guest B --json",
            &out.stdout,
        );
        let seen = assert_follow_their_schemas(&env, python, docs);
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["paper-mcpi-row"]);
    }
    assert!(entries(&tmp).is_empty(), "left behind: {:?}", entries(&tmp));
}

/// The release the meta-package KERNEL stands for today (`6.1.0-57`), so that a pattern over it
/// names the two kernels the tests' cache holds (the cloud and RT builds of that release), and
/// no other, whatever the archive's newest release.
fn cached_release() -> String {
    let out = std::process::Command::new("apt-cache")
        .args(["depends", KERNEL])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let concrete = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Depends: linux-image-"))
        .unwrap_or_else(|| panic!("{KERNEL} depends on no kernel: {text}"));
    concrete.trim_end_matches("-cloud-amd64").to_string()
}

/// One `--guest` pattern over the two cached kernels (cloud and RT of one release), beside a
/// "kernel" QEMU refuses at once: both kernels counted in version order (then by name), the
/// refused one a line under the table and not the end of the sweep; every user count
/// non-negative (the empty loop is the probes' loop, so `sched_yield` no longer counts -4); a
/// budget that holds and one too small, the latter failing the command with exit 4 and in the
/// JUnit file. Before that, without booting: the dry run's list, and the patterns refused.
#[test]
fn a_pattern_sweeps_kernels_in_version_order_and_budgets_gate_them() {
    let Some((env, tmp)) = guest_env() else {
        return;
    };
    let release = cached_release();
    let pattern = format!("{release}-*-amd64");
    let (cloud, rt) = (
        format!("{release}-cloud-amd64"),
        format!("{release}-rt-amd64"),
    );

    let out = env
        .osmeter()
        .args(["run", "--guest", &pattern, "--dry-run", "syscall.null"])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        list.starts_with("2 kernel(s) in the order they would boot"),
        "{list}"
    );
    let (at_cloud, at_rt) = (list.find(&cloud).unwrap(), list.find(&rt).unwrap());
    assert!(at_cloud < at_rt, "{list}");
    assert!(list.contains("--cache-max 2 GiB"), "{list}");

    for (bad, says) in [
        (format!("{release}-clod-amd64*"), "the nearest"),
        ("6.1.0-57..47-cloud-amd64".to_string(), "empty"),
    ] {
        let out = env
            .osmeter()
            .args(["run", "--guest", &bad, "syscall.null"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&bad) && err.contains(says), "{err}");
    }

    // A bzImage header and nothing else: QEMU refuses it with the initrd osmeter gives.
    let refused = env.dir.path().join("refused-bzImage");
    let mut image = vec![0u8; 8192];
    image[0x202..0x206].copy_from_slice(b"HdrS");
    std::fs::write(&refused, image).unwrap();
    let junit = env.dir.path().join("budgets.xml");
    let out = env
        .osmeter()
        .env("TMPDIR", &tmp)
        .args(["run", "--guest", &pattern, "--guest"])
        .arg(&refused)
        .args(["--guest-iterations", "10", "--junit"])
        .arg(&junit)
        .args(["--fail-if-over", "syscall.null=kernel.instructions:100000"])
        .args(["--fail-if-over", "syscall.sched_yield=user.instructions:0"])
        .args(["syscall.null", "syscall.sched_yield"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{err}\n{table}");
    assert!(
        table.contains(&format!("[1] linux-image-{cloud}"))
            && table.contains(&format!("[2] linux-image-{rt}")),
        "{table}"
    );
    let refused_line = table
        .lines()
        .find(|l| l.starts_with("did not boot: "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(refused_line.contains("refused-bzImage"), "{table}");
    assert!(
        table.contains("Budgets: 2 of 5 held; 3 did not:"),
        "{table}"
    );
    assert!(table.contains("over budget: linux-image-"), "{table}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("tests=\"5\" failures=\"2\" errors=\"1\""),
        "{xml}"
    );
    assert!(xml.contains("type=\"over budget\""), "{xml}");
    let ids: Vec<String> = table
        .lines()
        .filter_map(|l| l.split_once("] run ").map(|(_, id)| id.trim().to_string()))
        .collect();
    assert_eq!(ids.len(), 2, "{table}");
    for id in &ids {
        let run = env.json(&["show", "--json", id]);
        for probe in ["syscall.null", "syscall.sched_yield"] {
            let p = counts(&run, probe);
            assert!(p["reason"].is_null(), "{p}");
            for mode in ["user", "kernel"] {
                for (event, v) in p["per_op"][mode].as_object().unwrap() {
                    let v = v.as_f64().unwrap();
                    assert!(v >= 0.0, "{probe} {mode}.{event} {v} in {id}");
                }
            }
        }
        let user = counts(&run, "syscall.sched_yield")["per_op"]["user"]["instructions"]
            .as_f64()
            .unwrap();
        assert!(
            user > 0.0,
            "sched_yield's wrapper runs in user mode: {user}"
        );
    }
    assert!(entries(&tmp).is_empty(), "left behind: {:?}", entries(&tmp));
}
