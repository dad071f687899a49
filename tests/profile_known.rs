//! Issue 23's known answers beyond seccomp (tests/profile.rs): a real change injected into the
//! kernel's path, the probes that take that path measured with `--profile` without and with it,
//! and the profiles must give most of the extra kernel time per operation to the component that
//! owns the change, and `compare --explain` must put that component first.
//!
//! - nftables: a few hundred rules on the IPv4 output and input hooks of a network namespace of
//!   the test's own (scripts/netns-run), `net.*` on loopback -> netfilter (nft_do_chain).
//! - the function tracer on the functions getppid (`syscall.null`) calls, in a trace instance of
//!   the test's own (or, where the kernel refuses the function tracer, the trace events of the
//!   getppid system call) -> tracing; `syscall.dup` is the control.
//!
//! Each change is undone whatever ends the test: the namespace lives only as long as the osmeter
//! inside it; the trace instance is cleared and removed by a guard that runs on panic too, and one
//! left by a killed test is removed by the next osmeter that opens tracefs (its name says whose it
//! is). A kernel without the feature skips the test with the reason.

mod common;

use common::{is_root, TestEnv, FAST};
use osmeter::kernel_parts::Component;
use osmeter::results::model::Run;
use osmeter::results::profile::explain::Explanation;
use osmeter::results::profile::ProbeProfile;
use osmeter::tracefs::{Instance, Tracefs};
use std::path::{Path, PathBuf};
use std::process::Command;

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

/// `osmeter run PROBES --profile --json`, under `wrapper` (a command and its arguments, ending in
/// `--`) when given, stored in the test's store.
fn profiled_run(env: &TestEnv, wrapper: &[&str], probes: &[&str]) -> Run {
    let bin = assert_cmd::cargo::cargo_bin("osmeter");
    let mut cmd = match wrapper.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(&bin);
            c
        }
        None => Command::new(&bin),
    };
    let out = cmd
        .arg("run")
        .args(probes)
        .args(["--profile", "--json"])
        .args(FAST)
        .env("OSMETER_STORE", env.store())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{wrapper:?} osmeter run {probes:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Run = serde_json::from_slice(&out.stdout).expect("stdout is a run document");
    let profiles = run.profiles.as_ref().expect("the run has profiles");
    assert_eq!(profiles.refused, None, "the kernel refused to sample");
    run
}

fn profile<'a>(run: &'a Run, label: &str) -> &'a ProbeProfile {
    let p = run
        .profiles
        .iter()
        .flat_map(|p| &p.probes)
        .find(|p| p.label == label)
        .unwrap_or_else(|| panic!("no profile of {label} in {}", run.id));
    assert!(
        p.source.is_some(),
        "{label} was not profiled: {:?}",
        p.notes
    );
    p
}

fn component_ns(p: &ProbeProfile, c: Component) -> f64 {
    p.components
        .iter()
        .filter(|s| s.component == c)
        .map(|s| s.ns_per_op)
        .sum()
}

/// The share of `label`'s extra kernel time per operation (B over A) that `owner` took, printed
/// for the record; the extra time must be there.
fn share_of_difference(a: &Run, b: &Run, label: &str, owner: Component) -> f64 {
    let (pa, pb) = (profile(a, label), profile(b, label));
    let extra = pb.kernel_ns_per_op - pa.kernel_ns_per_op;
    let owned = component_ns(pb, owner) - component_ns(pa, owner);
    eprintln!(
        "{label}: kernel {:.0} -> {:.0} ns/op; {} {:.0} -> {:.0} ns/op, {:.0} % of the difference",
        pa.kernel_ns_per_op,
        pb.kernel_ns_per_op,
        owner.name(),
        component_ns(pa, owner),
        component_ns(pb, owner),
        100.0 * owned / extra
    );
    assert!(
        extra > 0.0,
        "{label}: the change added no kernel time ({pa:?} vs {pb:?})"
    );
    owned / extra
}

/// `compare A B --explain --all --json`: the explanation part, typed.
fn explain(env: &TestEnv, a: &Run, b: &Run) -> Explanation {
    #[derive(serde::Deserialize)]
    struct Explained {
        explain: Explanation,
    }
    // --force: other tests share the machine and may make either run look busy; the explanation
    // is the subject here.
    let out = env
        .osmeter()
        .args(["compare", &a.id, &b.id, "--explain", "--all", "--json"])
        .arg("--force")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let e: Explained = serde_json::from_slice(&out.stdout).unwrap();
    e.explain
}

/// The component `compare --explain` puts first for `label`, with its delta and the figure's
/// kernel delta.
fn first_component(e: &Explanation, label: &str) -> (Component, f64, f64) {
    let f = e
        .figures
        .iter()
        .find(|f| f.label == label)
        .unwrap_or_else(|| panic!("{label} not explained: {e:?}"));
    let (c, d) = f.components[0];
    (c, d.delta, f.kernel_ns_per_op.delta)
}

/// Whether the kernel can take nftables rules in a fresh namespace; the reason when not.
fn nftables_missing() -> Option<String> {
    if !is_root() {
        return Some("a network namespace with rules needs root".into());
    }
    if common::which("nft").is_none() {
        return Some("nft is not installed (apt-get install nftables)".into());
    }
    let out = Command::new(script("netns-run"))
        .args(["1", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
    if out.status.success() {
        None
    } else if err.contains("not supported") || err.contains("operation not permitted") {
        Some(format!("the kernel takes no nftables rules here: {err}"))
    } else {
        panic!("scripts/netns-run 1 -- true failed: {err}")
    }
}

/// Loopback round trips through 300 rules per hook: each packet is checked against every rule on
/// its way out and again on its way in, none matches.
#[test]
fn nftables_rules_on_loopback_are_found_in_netfilter() {
    if let Some(why) = nftables_missing() {
        eprintln!("skipped: {why}");
        return;
    }
    let env = TestEnv::new();
    let probes = ["net.udp_roundtrip", "net.tcp_roundtrip"];
    let netns = script("netns-run");
    let netns = netns.to_str().unwrap();
    let plain = profiled_run(&env, &[netns, "0", "--"], &probes);
    let ruled = profiled_run(&env, &[netns, "300", "--"], &probes);
    let e = explain(&env, &plain, &ruled);
    for label in [
        "net.udp_roundtrip placement=same",
        "net.tcp_roundtrip placement=same",
    ] {
        let share = share_of_difference(&plain, &ruled, label, Component::Netfilter);
        assert!(share > 0.5, "{label}: netfilter got {:.0} %", 100.0 * share);
        // Named: the rule walk itself leads the netfilter functions.
        let named: Vec<&str> = profile(&ruled, label)
            .functions
            .iter()
            .filter(|f| f.component == Some(Component::Netfilter))
            .map(|f| f.name.as_str())
            .collect();
        assert!(
            named
                .first()
                .is_some_and(|n| n.starts_with("nft_do_chain") || n.starts_with("nf_hook_slow")),
            "{label}: {named:?}"
        );
        let (first, delta, kernel) = first_component(&e, label);
        assert_eq!(first, Component::Netfilter, "{label}: {e:?}");
        assert!(delta > 0.5 * kernel, "{label}: {delta} of {kernel}");
    }
}

/// Tracing on the path of `syscall.null` (getppid), in a trace instance of the test's own: the
/// function tracer on the functions it calls, or, where the kernel refuses the function tracer (as
/// this VM's does), the trace events of the getppid system call. Cleared and removed on drop
/// (panics included).
struct TracingOn {
    instance: Instance,
    what: String,
}

/// What getppid calls, whichever of them this kernel can trace.
const GETPPID_FUNCTIONS: &[&str] = &[
    "__x64_sys_getppid",
    "__do_sys_getppid",
    "__task_pid_nr_ns",
    "task_tgid_vnr",
];

/// The same path's system call events, where functions cannot be traced.
const GETPPID_EVENTS: &[&str] = &["syscalls/sys_enter_getppid", "syscalls/sys_exit_getppid"];

impl TracingOn {
    /// The reason when this kernel can trace neither.
    fn getppid_path() -> Result<TracingOn, String> {
        let fs = Tracefs::open().map_err(|e| format!("no tracefs: {e:#}"))?;
        let instance = Instance::create(&fs, "known-answer")
            .map_err(|e| format!("no trace instance: {e:#}"))?;
        let mut on = TracingOn {
            instance,
            what: String::new(),
        };
        match on.function_tracer(GETPPID_FUNCTIONS) {
            Ok(chosen) => on.what = format!("function tracer on {chosen:?}"),
            Err(refused) => {
                on.clear();
                for event in GETPPID_EVENTS {
                    match on.instance.enable_event(event) {
                        Ok(true) => {}
                        Ok(false) => return Err(format!("{refused}; and no event {event}")),
                        Err(e) => return Err(format!("{refused}; and {e:#}")),
                    }
                }
                on.what = format!("events {GETPPID_EVENTS:?} ({refused})");
            }
        }
        on.instance.write("tracing_on", "1").unwrap();
        eprintln!("tracing: {}", on.what);
        Ok(on)
    }

    /// The function tracer on those of `functions` the kernel lists; why not when it cannot.
    fn function_tracer(&self, functions: &[&str]) -> Result<Vec<String>, String> {
        let tracers = self.instance.read("available_tracers").unwrap_or_default();
        if !self.instance.has("set_ftrace_filter")
            || !tracers.split_whitespace().any(|t| t == "function")
        {
            return Err("the kernel has no function tracer for trace instances".into());
        }
        let listed = self
            .instance
            .tracefs()
            .root()
            .join("available_filter_functions");
        let traceable = std::fs::read_to_string(&listed)
            .map_err(|e| format!("the kernel refuses the function tracer: {e}"))?;
        let chosen: Vec<String> = functions
            .iter()
            .copied()
            .filter(|f| {
                traceable
                    .lines()
                    .any(|l| l.split_whitespace().next() == Some(*f))
            })
            .map(str::to_string)
            .collect();
        if chosen.len() < 2 {
            return Err(format!(
                "too few of {functions:?} can be traced: {chosen:?}"
            ));
        }
        self.instance
            .write("set_ftrace_filter", &chosen.join("\n"))
            .map_err(|e| format!("the kernel refuses the function tracer: {e:#}"))?;
        self.instance
            .write("current_tracer", "function")
            .map_err(|e| format!("the kernel refuses the function tracer: {e:#}"))?;
        Ok(chosen)
    }

    fn clear(&self) {
        let _ = self.instance.write("tracing_on", "0");
        let _ = self.instance.write("current_tracer", "nop");
        let _ = self.instance.write("set_ftrace_filter", "");
        let _ = self.instance.write("set_event", "");
    }
}

impl Drop for TracingOn {
    fn drop(&mut self) {
        // Removing the instance (next, as the field drops) undoes it all; cleared first so that
        // nothing is traced while the removal waits for a reader.
        self.clear();
    }
}

#[test]
fn tracing_on_the_path_of_a_probe_is_found_in_tracing() {
    if !is_root() {
        eprintln!("skipped: tracefs and kernel call chains need root");
        return;
    }
    let env = TestEnv::new();
    let probes = ["syscall.dup", "syscall.null"];
    let plain = profiled_run(&env, &[], &probes);
    let traced = {
        let _tracing = match TracingOn::getppid_path() {
            Ok(t) => t,
            Err(why) => {
                eprintln!("skipped: {why}");
                return;
            }
        };
        profiled_run(&env, &[], &probes)
    };
    let share = share_of_difference(&plain, &traced, "syscall.null", Component::Tracing);
    assert!(share > 0.5, "tracing got {:.0} %", 100.0 * share);
    let e = explain(&env, &plain, &traced);
    let (first, delta, kernel) = first_component(&e, "syscall.null");
    assert_eq!(first, Component::Tracing, "{e:?}");
    assert!(delta > 0.5 * kernel, "{delta} of {kernel}");
    // dup and close call none of the traced functions and write no event (with events on, every
    // system call takes the tracepoint's slow path, a fraction of what writing an event costs):
    // their tracing time grew less than getppid's.
    let grew = |label| {
        component_ns(profile(&traced, label), Component::Tracing)
            - component_ns(profile(&plain, label), Component::Tracing)
    };
    eprintln!(
        "tracing grew {:.0} ns/op on syscall.null, {:.0} on syscall.dup",
        grew("syscall.null"),
        grew("syscall.dup")
    );
    assert!(grew("syscall.dup") < grew("syscall.null"));
    // Undone: no instance of this test is left.
    let fs = Tracefs::open().unwrap();
    let left: Vec<_> = std::fs::read_dir(fs.root().join("instances"))
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("osmeter-{}-", std::process::id()))
        })
        .collect();
    assert!(left.is_empty(), "trace instances left: {left:?}");
}

/// The scripts' bad input: a clear message naming what is wrong, exit 2 for usage, nothing run.
#[test]
fn the_scripts_refuse_bad_input_and_say_why() {
    let env = TestEnv::new();
    let marker = env.dir.path().join("ran");
    let touch = ["touch", marker.to_str().unwrap()];
    // (script, arguments, whether a command follows them, what the message must say)
    let cases: &[(&str, &[&str], bool, &str)] = &[
        (
            "netns-run",
            &["lots", "--"],
            true,
            "RULES must be a whole number",
        ),
        (
            "netns-run",
            &["-1", "--"],
            true,
            "RULES must be a whole number",
        ),
        ("netns-run", &["70000", "--"], true, "at most 60000"),
        ("netns-run", &["5"], false, "usage:"),
        ("netns-run", &["5", "--"], false, "usage:"),
        (
            "profile-cost",
            &["/bin/sh", "0"],
            false,
            "N must be a whole number above 0",
        ),
    ];
    for (name, args, command, says) in cases {
        let mut cmd = Command::new(script(name));
        cmd.args(*args);
        if *command {
            cmd.args(touch);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name} {args:?}: {err}");
        assert!(err.contains(says), "{name} {args:?}: {err}");
        assert!(!marker.exists(), "{name} {args:?} ran the command");
    }
    let out = Command::new(script("profile-cost"))
        .args(["/nonexistent/osmeter", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cargo build --release"));
}
