//! `run --profile` end to end: real sampling of real probes, real kernel symbols, a real seccomp
//! filter as the known answer, a real refusal by the kernel.

mod common;

use common::{is_root, TestEnv, FAST};
use serde_json::Value;
use std::collections::HashSet;

/// Root reads kallsyms' addresses and samples kernel call chains at any perf_event_paranoid.
fn can_profile() -> bool {
    if !is_root() {
        eprintln!("skipped: kernel call chains need root here");
    }
    is_root()
}

fn kernel_function_names() -> HashSet<String> {
    std::fs::read_to_string("/proc/kallsyms")
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect()
}

fn profile_of(run: &Value) -> &Value {
    let p = &run["profiles"];
    assert_eq!(p["schema"], "osmeter.profiles/1", "{p}");
    assert!(p["refused"].is_null(), "refused: {}", p["refused"]);
    &p["probes"][0]
}

fn component_ns(profile: &Value, name: &str) -> f64 {
    profile["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["component"] == name)
        .map_or(0.0, |c| c["ns_per_op"].as_f64().unwrap())
}

#[test]
fn a_syscall_probe_profile_names_real_kernel_functions_and_is_shown_and_exported() {
    if !can_profile() {
        return;
    }
    let env = TestEnv::new();
    let mut args = vec!["run", "syscall.null", "--profile", "--json"];
    args.extend_from_slice(FAST);
    let run = env.json(&args);
    assert_eq!(run["measurements"][0]["status"], "ok");
    let p = profile_of(&run);
    assert_eq!(p["label"], "syscall.null");
    assert!(p["samples"].as_u64().unwrap() > 0);
    assert!(p["kernel_ns_per_op"].as_f64().unwrap() > 0.0, "{p}");
    // Unsampled runs were timed beside the sampled ones, and the times per operation are what
    // the samples counted divided by the slowdown: on cpu-clock every sample is one 50 us period
    // (20 kHz, unless the kernel's rate limit is lower).
    let slowdown = p["sampling_slowdown"]
        .as_f64()
        .expect("a sampling slowdown");
    assert!(slowdown >= 1.0, "{p}");
    if p["source"] == "cpu-clock" {
        let period =
            p["ns_per_op"].as_f64().unwrap() * slowdown * p["operations"].as_f64().unwrap()
                / p["samples"].as_f64().unwrap();
        let rate: f64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
            .map_or(20_000.0, |t| t.trim().parse().unwrap_or(20_000.0));
        let want = 1e9 / rate.min(20_000.0);
        assert!(
            (period / want - 1.0).abs() < 0.01,
            "{period} ns a sample, want {want}: {p}"
        );
    }
    let known = kernel_function_names();
    let kernel: Vec<&str> = p["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kernel"] == true)
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(kernel.iter().any(|n| known.contains(*n)), "{kernel:?}");
    for name in &kernel {
        let bare = name.split(" [").next().unwrap();
        assert!(
            known.contains(bare) || (bare.starts_with("0x") && bare.ends_with("xxx")),
            "{name} is neither a kernel symbol nor an address"
        );
    }

    let id = run["id"].as_str().unwrap();
    // `show --profile`: every function, figure by figure.
    let show = env
        .osmeter()
        .args(["show", id, "--profile"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("Where the time goes"), "{text}");
    assert!(text.contains("samples on cpu-clock") || text.contains("samples on cycles"));
    let section = &text[text.find("Where the time goes").unwrap()..];
    assert!(
        section.lines().all(|l| l.chars().count() <= 100),
        "{section}"
    );
    assert!(section.contains("(entry-exit)"), "{section}");
    // `show`: a line per figure and where the rest is.
    let show = env.osmeter().args(["show", id]).output().unwrap();
    let brief = String::from_utf8_lossy(&show.stdout);
    let brief = &brief[brief.find("Where the time goes").unwrap()..];
    assert!(!brief.contains("(entry-exit)"), "{brief}");
    assert!(
        brief.contains(&format!("osmeter show {id} --profile")),
        "{brief}"
    );
    assert!(brief.lines().count() < section.lines().count(), "{brief}");

    let out = env
        .osmeter()
        .args(["export", id, "--format", "folded"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let folded = String::from_utf8(out.stdout).unwrap();
    assert!(!folded.is_empty());

    let page = env.dir.path().join("report.html");
    env.osmeter()
        .args(["report", id, "-o"])
        .arg(&page)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<section id=\"profiles\">"),
        "no profiles section"
    );
    assert!(html.contains("<svg class=\"icicle\""), "no flame graph");
    assert!(
        html.contains("<title>syscall.null"),
        "the root frame is the figure's label"
    );
    for line in folded.lines() {
        let (stack, count) = line.rsplit_once(' ').unwrap();
        assert!(stack.starts_with("syscall.null;"), "{line}");
        assert!(count.parse::<u64>().unwrap() > 0, "{line}");
    }
}

/// Issue 23's first known answer: a seccomp filter of 4000 instructions makes every system call
/// slower, and the profile gives most of the kernel's extra time to the security component.
#[test]
fn a_seccomp_filter_is_found_in_the_security_component() {
    if !can_profile() {
        return;
    }
    if common::which("cc").is_none() {
        eprintln!("skipped: scripts/seccomp-run needs a C compiler (apt-get install gcc)");
        return;
    }
    let env = TestEnv::new();
    let bin = assert_cmd::cargo::cargo_bin("osmeter");
    let mut args = vec!["run", "syscall.null", "--profile", "--json"];
    args.extend_from_slice(FAST);
    let run_with = |filtered: bool| -> Value {
        let mut cmd = if filtered {
            let mut c = std::process::Command::new(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/seccomp-run"),
            );
            c.args(["4000", "--"]).arg(&bin);
            c
        } else {
            std::process::Command::new(&bin)
        };
        let out = cmd
            .args(&args)
            .env("OSMETER_STORE", env.store())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let plain = run_with(false);
    let filtered = run_with(true);
    let (a, b) = (profile_of(&plain), profile_of(&filtered));
    let kernel = |p: &Value| p["kernel_ns_per_op"].as_f64().unwrap();
    let extra = kernel(b) - kernel(a);
    assert!(extra > 0.0, "the filter added no kernel time: {a} {b}");
    let security = component_ns(b, "security") - component_ns(a, "security");
    let share = security / extra;
    eprintln!(
        "security gets {:.0} % of {extra:.0} ns/op more kernel time",
        100.0 * share
    );
    assert!(
        share > 0.5,
        "security got {security:.0} of {extra:.0} ns/op"
    );
    // Named: the filter's runner, or the JIT-compiled program (unlisted pages) it calls.
    let security_functions: Vec<&str> = b["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["component"] == "security")
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(
        security_functions
            .iter()
            .any(|n| n.contains("seccomp") || n.ends_with("xxx")),
        "{security_functions:?}"
    );

    // compare --explain says the same: the security component got most of the difference.
    let (ia, ib) = (
        plain["id"].as_str().unwrap(),
        filtered["id"].as_str().unwrap(),
    );
    // --force: a shared machine (other tests of this binary) may call either run busy; the
    // explanation is the subject here.
    let c = env.json(&["compare", ia, ib, "--explain", "--all", "--json", "--force"]);
    let f = &c["explain"]["figures"][0];
    assert_eq!(f["label"], "syscall.null", "{c}");
    let (first, delta) = (
        &f["components"][0],
        f["kernel_ns_per_op"]["delta"].as_f64().unwrap(),
    );
    assert_eq!(first[0], "security", "{f}");
    assert!(first[1]["delta"].as_f64().unwrap() > 0.5 * delta, "{f}");
    let text = env
        .osmeter()
        .args(["compare", ia, ib, "--explain", "--all", "--force"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("Why (profiles") && text.contains("security"),
        "{text}"
    );
}

#[test]
fn explain_without_profiles_says_how_to_take_them() {
    let env = TestEnv::new();
    let (a, b) = (env.run_id(&["syscall.null"]), env.run_id(&["syscall.null"]));
    let c = env.json(&["compare", &a, &b, "--explain", "--json", "--force"]);
    let missing = c["explain"]["missing"].as_str().unwrap();
    assert!(
        missing.contains("neither side") && missing.contains("--profile"),
        "{missing}"
    );
    assert!(
        c["figures"].is_array(),
        "the comparison itself is still there: {c}"
    );
}

/// Sets perf_event_paranoid for the test's life and puts the old value back, also on panic.
struct Paranoid(Option<String>);

const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";

impl Paranoid {
    /// At least 2: no kernel samples for unprivileged users.
    fn refusing() -> Paranoid {
        let old = std::fs::read_to_string(PARANOID).unwrap();
        if old.trim().parse::<i32>().unwrap() >= 2 {
            return Paranoid(None);
        }
        std::fs::write(PARANOID, "2").unwrap();
        Paranoid(Some(old))
    }
}

impl Drop for Paranoid {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            std::fs::write(PARANOID, old.trim()).unwrap();
        }
    }
}

#[test]
fn a_refusing_kernel_gives_one_reason_and_a_run_without_profiles() {
    let Some(mut nobody) = common::osmeter_as_nobody() else {
        eprintln!("skipped: needs root and setpriv to run as nobody");
        return;
    };
    let _paranoid = Paranoid::refusing();
    let out = nobody
        .args(["run", "syscall.null", "--profile", "--json", "--no-store"])
        .args(FAST)
        .current_dir("/")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["measurements"][0]["status"], "ok");
    let p = &run["profiles"];
    let reason = p["refused"].as_str().unwrap();
    assert!(reason.contains("perf_event_paranoid"), "{reason}");
    assert!(p["probes"].as_array().unwrap().is_empty(), "{p}");
}

#[test]
fn folded_export_of_a_run_without_profiles_says_how_to_take_them() {
    let env = TestEnv::new();
    let id = env.run_id(&["syscall.null"]);
    let target = env.dir.path().join("out.folded");
    let out = env
        .osmeter()
        .args(["export", &id, "--format", "folded", "-o"])
        .arg(&target)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no profiles") && err.contains("--profile"),
        "{err}"
    );
    assert!(!target.exists(), "nothing written");
    assert_eq!(common::entries(env.dir.path()), ["runs.db"]);
}

/// Ctrl-C while the second figure is being profiled: the run ends as interrupted (130) and keeps
/// every timed figure and the profiles already taken.
#[test]
fn ctrl_c_during_profile_rounds_keeps_what_was_measured() {
    use std::io::{BufRead, BufReader};
    if !can_profile() {
        return;
    }
    let env = TestEnv::new();
    let mut child = env
        .osmeter_std()
        .args(["run", "syscall.null", "syscall.dup", "signal.install"])
        .args(["--profile", "--json"])
        .args(FAST)
        .env("OSMETER_PROGRESS", "always")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut BufReader::new(stdout), &mut text).unwrap();
        text
    });
    let mut profiling = 0;
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        if line.unwrap().starts_with("[profile ") {
            profiling += 1;
            if profiling == 2 {
                // SAFETY: signalling the child this test started.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            }
        }
    }
    let status = child.wait().unwrap();
    assert_eq!(profiling, 2, "profiling went on after Ctrl-C");
    assert_eq!(status.code(), Some(130));
    let run: Value = serde_json::from_str(&reader.join().unwrap()).unwrap();
    assert_eq!(run["interrupted"], true);
    let ms = run["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 3);
    assert!(ms.iter().all(|m| m["status"] == "ok"), "{ms:?}");
    let probes = run["profiles"]["probes"].as_array().unwrap();
    assert!(!probes.is_empty() && probes.len() <= 2, "{probes:?}");
    assert!(probes[0]["samples"].as_u64().unwrap() > 0);
}

#[test]
fn stat_profile_samples_the_command_and_its_children_not_osmeter() {
    if !can_profile() {
        return;
    }
    let env = TestEnv::new();
    let script = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; /bin/ls / >/dev/null";
    let (out, id) = env.saved(&["stat", "-r", "1", "--profile", "--", "sh", "-c", script]);
    assert!(out.contains("Where the time goes"), "{out}");
    let run = env.json(&["show", &id, "--json"]);
    let p = profile_of(&run);
    assert!(p["samples"].as_u64().unwrap() > 0);
    assert_eq!(p["operations"], 1);
    // The timed run's wall time stood for the unsampled one.
    assert!(
        p["sampling_slowdown"].as_f64().expect("a slowdown") >= 1.0,
        "{p}"
    );
    // sh, and ls in a child of its own; never osmeter's own polling.
    assert!(p["processes"].as_u64().unwrap() >= 1, "{p}");
    let folded = env
        .osmeter()
        .args(["export", &id, "--format", "folded"])
        .output()
        .unwrap();
    let folded = String::from_utf8(folded.stdout).unwrap();
    assert!(!folded.is_empty());
    assert!(
        !folded.contains("osmeter::"),
        "osmeter itself was sampled:\n{folded}"
    );
}

/// An app workload's profile samples its cgroup: every process of the workload (perl and what it
/// starts), with a note saying so; where CPU-wide sampling is refused, the note says why.
#[test]
fn app_workloads_are_sampled_through_their_cgroup() {
    if !can_profile() {
        return;
    }
    if common::which("perl").is_none() {
        eprintln!("skipped: app.interp interp=perl needs perl (apt-get install perl)");
        return;
    }
    let env = TestEnv::new();
    let mut args = vec![
        "run",
        "app.interp",
        "--set",
        "interp=perl",
        "--profile",
        "--json",
    ];
    args.extend_from_slice(FAST);
    let run = env.json(&args);
    let p = profile_of(&run);
    assert_eq!(p["label"], "app.interp interp=perl", "{p}");
    let notes: Vec<&str> = p["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let how = notes
        .iter()
        .find(|n| n.starts_with("sampled: "))
        .unwrap_or_else(|| panic!("no note on how it was sampled: {notes:?}"));
    assert!(
        how.contains("every process in the workload's cgroup")
            || how.contains("not the workload's cgroup ("),
        "{how}"
    );
    assert!(p["processes"].as_u64().unwrap() >= 1, "{p}");
    assert!(p["kernel_ns_per_op"].as_f64().unwrap() > 0.0, "{p}");
}

/// Under `--fs fuse` the file probes' work is done by the run's fuse2fs server, a process in a
/// cgroup of its own that no probe starts: its profile includes the server's samples (it reads
/// requests from /dev/fuse, which the measuring process never does), with a note saying so.
#[test]
fn the_runs_fuse_server_is_sampled_with_the_file_probes() {
    if !can_profile() {
        return;
    }
    if let Some(missing) = ["/usr/bin/fuse2fs", "/usr/sbin/mkfs.ext4"]
        .iter()
        .find(|p| !std::path::Path::new(p).exists())
    {
        eprintln!("skipped: --fs fuse needs {missing} (apt-get install fuse2fs e2fsprogs)");
        return;
    }
    let env = TestEnv::new();
    let mut args = vec!["run", "fs.metadata", "--fs", "fuse", "--profile", "--json"];
    args.extend_from_slice(FAST);
    let run = env.json(&args);
    let p = profile_of(&run);
    let notes: Vec<&str> = p["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("sampled with it: the run's file system server (fuse2fs")),
        "{notes:?}"
    );
    assert!(p["processes"].as_u64().unwrap() >= 2, "{p}");
    let server_side = p["folded"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["stack"].as_str().unwrap().contains("fuse_dev_"))
        .count();
    assert!(
        server_side > 0,
        "no stack of the server reading /dev/fuse: {p}"
    );
}
