//! The profile and timeline exports read back by what consumes them, not by osmeter: `go tool
//! pprof` reads the pprof file; speedscope's own JSON Schema (tests/data/speedscope, from its npm
//! package) checks the speedscope file through Python's `jsonschema`; the trace-event file is
//! checked against the Trace Event Format's documented fields (see [`check_trace_event_fields`]
//! for why not by Perfetto's trace processor). A consumer missing is a skip with its install
//! command, or a failure in CI.

mod common;
#[path = "common/cpu_hog.rs"]
mod cpu_hog;

use common::{consumer_missing, is_root, which, TestEnv, FAST};
use cpu_hog::{exclusive, hog, last_cpu};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A profiled run of a cheap probe: the run's JSON. Kernel call chains need root here.
fn profiled_run(env: &TestEnv) -> Option<Value> {
    if !is_root() {
        eprintln!("skipped: kernel call chains need root here");
        return None;
    }
    let mut args = vec!["run", "syscall.null", "--profile", "--json"];
    args.extend_from_slice(FAST);
    let run = env.json(&args);
    assert!(
        run["profiles"]["refused"].is_null(),
        "{}",
        run["profiles"]["refused"]
    );
    Some(run)
}

/// The stored folded stacks of the run's one figure, as (stack, samples).
fn folded(run: &Value) -> Vec<(String, u64)> {
    run["profiles"]["probes"][0]["folded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["stack"].as_str().unwrap().to_string(),
                s["samples"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn export(env: &TestEnv, id: &str, format: &str, file: &Path) {
    let out = env
        .osmeter()
        .args(["export", id, "--format", format, "-o"])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "export {format}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `go` on the PATH, or where the official archive installs it.
fn go() -> Option<PathBuf> {
    which("go").or_else(|| {
        let p = PathBuf::from("/usr/local/go/bin/go");
        p.is_file().then_some(p)
    })
}

#[test]
fn go_tool_pprof_reads_the_profile_with_its_functions_and_total() {
    let env = TestEnv::new();
    let Some(run) = profiled_run(&env) else {
        return;
    };
    let id = run["id"].as_str().unwrap();
    let file = env.dir.path().join("run.pb.gz");
    export(&env, id, "pprof", &file);
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(bytes[..2], [0x1f, 0x8b], "gzip");
    let Some(go) = go() else {
        consumer_missing("go (for go tool pprof)", "apt-get install golang-go");
        return;
    };
    let out = Command::new(go)
        .args(["tool", "pprof", "-top", "-symbolize=none"])
        .args(["-nodecount=100000", "-nodefraction=0", "-edgefraction=0"])
        .arg(&file)
        .env("PPROF_TMPDIR", env.dir.path())
        .output()
        .unwrap();
    let top = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pprof: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(top.contains("Type: samples"), "{top}");
    // "Showing nodes accounting for N, 100% of N total": every stored sample, nothing else.
    let stacks = folded(&run);
    let total: u64 = stacks.iter().map(|(_, n)| n).sum();
    assert!(
        top.contains(&format!("of {total} total")),
        "want a total of {total}: {top}"
    );
    // The figure is the root of every stack, and each stack's leaf is a function pprof lists.
    let listed: Vec<&str> = top
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .collect();
    assert!(listed.contains(&"syscall.null"), "{top}");
    for (stack, _) in &stacks {
        let leaf = stack.rsplit(';').next().unwrap();
        let first_word = leaf.split_whitespace().next().unwrap();
        assert!(
            listed.contains(&first_word),
            "{leaf} is not in pprof's list: {top}"
        );
    }
}

/// Validates `file` against speedscope's schema with Python's jsonschema; Ok, or the errors.
fn speedscope_schema_check(file: &Path) -> Option<Result<(), String>> {
    const CHECK: &str = "\
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
errors = list(jsonschema.Draft7Validator(schema).iter_errors(doc))
for e in errors:
    print(e.message)
sys.exit(1 if errors else 0)
";
    // The Python on the PATH, or Debian's, which python3-jsonschema installs for.
    let python = ["python3", "/usr/bin/python3"].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import jsonschema"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(python) = python else {
        consumer_missing(
            "python3's jsonschema",
            "apt-get install python3-jsonschema, or pip install jsonschema",
        );
        return None;
    };
    let schema =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/speedscope/file-format-schema.json");
    let out = Command::new(python)
        .args(["-c", CHECK])
        .arg(schema)
        .arg(file)
        .output()
        .unwrap();
    Some(if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    })
}

#[test]
fn speedscope_file_passes_speedscopes_own_schema_and_holds_the_stacks() {
    let env = TestEnv::new();
    let Some(run) = profiled_run(&env) else {
        return;
    };
    let id = run["id"].as_str().unwrap();
    let file = env.dir.path().join("run.speedscope.json");
    export(&env, id, "speedscope", &file);
    let Some(verdict) = speedscope_schema_check(&file) else {
        return;
    };
    verdict.unwrap();
    let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let frames: Vec<&str> = doc["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let profile = &doc["profiles"][0];
    assert_eq!(profile["name"], "syscall.null");
    let stacks: Vec<(String, u64)> = profile["samples"]
        .as_array()
        .unwrap()
        .iter()
        .zip(profile["weights"].as_array().unwrap())
        .map(|(s, w)| {
            let names: Vec<&str> = s
                .as_array()
                .unwrap()
                .iter()
                .map(|i| frames[i.as_u64().unwrap() as usize])
                .collect();
            (names.join(";"), w.as_u64().unwrap())
        })
        .collect();
    assert_eq!(stacks, folded(&run));

    // The check is real: the same file without a required field fails it.
    let mut broken = doc.clone();
    broken["profiles"][0]
        .as_object_mut()
        .unwrap()
        .remove("weights");
    let broken_file = env.dir.path().join("broken.json");
    std::fs::write(&broken_file, serde_json::to_vec(&broken).unwrap()).unwrap();
    let err = speedscope_schema_check(&broken_file).unwrap().unwrap_err();
    assert!(!err.is_empty());
}

/// The Trace Event Format's documented fields (the "JSON Object Format": `traceEvents`; complete
/// events `ph: "X"` with `name`, `cat`, `ts` and `dur` in microseconds, `pid`, `tid`; metadata
/// events `ph: "M"` named `process_name` or `thread_name` with `args.name`), and the nesting that
/// viewers need of the complete events of one thread. Perfetto's own reader, the `perfetto`
/// package's `trace_processor`, was tried: it installs from PyPI but downloads its
/// trace_processor_shell binary at run time from Google's storage, which this project's
/// machines and CI cannot reach (`perfetto 0.59.1` stops with curl's "could not resolve host"),
/// so the fields are checked here instead.
fn check_trace_event_fields(doc: &Value) -> TraceRead {
    let events = doc["traceEvents"].as_array().expect("traceEvents, a list");
    let mut slices: BTreeMap<(u64, u64), Vec<SliceRead>> = BTreeMap::new();
    let mut processes = BTreeMap::new();
    let mut threads = BTreeMap::new();
    for e in events {
        let name = e["name"].as_str().expect("every event has a name");
        let pid = e["pid"].as_u64().expect("an integer pid");
        let tid = e["tid"].as_u64().expect("an integer tid");
        match e["ph"].as_str().expect("a phase") {
            "X" => {
                let ts = e["ts"].as_f64().expect("ts, microseconds");
                let dur = e["dur"].as_f64().expect("dur, microseconds");
                assert!(ts >= 0.0 && dur >= 0.0, "{e}");
                let cat = e["cat"].as_str().expect("a category").to_string();
                assert!(e["args"].is_object(), "{e}");
                slices.entry((pid, tid)).or_default().push(SliceRead {
                    name: name.to_string(),
                    cat,
                    ts,
                    dur,
                });
            }
            "M" => {
                let value = e["args"]["name"].as_str().expect("args.name").to_string();
                match name {
                    "process_name" => processes.insert(pid, value),
                    "thread_name" => threads.insert((pid, tid), value),
                    other => panic!("metadata event {other}"),
                };
            }
            other => panic!("phase {other} in {e}"),
        }
    }
    for (track, list) in &slices {
        assert!(
            processes.contains_key(&track.0),
            "process {} unnamed",
            track.0
        );
        assert!(threads.contains_key(track), "thread {track:?} unnamed");
        // Two slices of a thread are apart or one holds the other (1 ns of rounding allowed).
        for (i, a) in list.iter().enumerate() {
            for b in &list[i + 1..] {
                let (a0, a1, b0, b1) = (a.ts, a.ts + a.dur, b.ts, b.ts + b.dur);
                let eps = 1e-3;
                let apart = a1 <= b0 + eps || b1 <= a0 + eps;
                let nested =
                    (a0 <= b0 + eps && b1 <= a1 + eps) || (b0 <= a0 + eps && a1 <= b1 + eps);
                assert!(apart || nested, "{a:?} and {b:?} overlap without nesting");
            }
        }
    }
    TraceRead {
        slices,
        processes,
        threads,
    }
}

/// A complete event as read back: times in microseconds.
#[derive(Debug)]
struct SliceRead {
    name: String,
    cat: String,
    ts: f64,
    dur: f64,
}

/// A trace-event file as read back: the slices of each (pid, tid), the names of the processes
/// (by pid) and of the threads.
struct TraceRead {
    slices: BTreeMap<(u64, u64), Vec<SliceRead>>,
    processes: BTreeMap<u64, String>,
    threads: BTreeMap<(u64, u64), String>,
}

/// A hog takes the measured CPU from the normal class's timer thread for a while; cause capture
/// keeps that late wake, and the timeline has it on the CPU's track with the hog inside it.
#[test]
fn a_late_wake_is_a_slice_on_its_cpus_track_with_what_ran_inside() {
    let _cpu = exclusive();
    if !is_root() {
        eprintln!("skipped: cause capture needs root");
        return;
    }
    let env = TestEnv::new();
    let cpu = last_cpu();
    let h = hog(cpu, 800, 40);
    let out = env
        .osmeter()
        .args([
            "latency",
            "--trace",
            "--threshold",
            "15ms",
            "--episodes",
            "1",
        ])
        .args([
            "--classes",
            "normal",
            "--paths",
            "timer",
            "--duration",
            "2s",
        ])
        .args(["--cpus", &cpu.to_string()])
        .output()
        .unwrap();
    h.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && err.contains("tracefs") {
        eprintln!("skipped: {err}");
        return;
    }
    assert!(out.status.success(), "{err}");
    let id = common::saved_id(&err);
    let file = env.dir.path().join("wakes.json");
    export(&env, &id, "trace-event", &file);
    let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let read = check_trace_event_fields(&doc);
    let track = |name: &str| {
        let (&(pid, tid), _) = read
            .threads
            .iter()
            .find(|(_, n)| *n == name)
            .unwrap_or_else(|| panic!("no track {name}: {:?}", read.threads));
        assert_eq!(read.processes[&pid], format!("CPU {cpu}"));
        read.slices
            .get(&(pid, tid))
            .map_or(&[][..], |v| v.as_slice())
    };
    let wakes = track("late wakes");
    let ran = track("what ran");
    let wake = wakes
        .iter()
        .find(|s| s.cat == "late wake")
        .expect("the late wake");
    assert!(wake.name.starts_with("normal/timer "), "{wake:?}");
    // The hog held the CPU while the thread was due, and the thread waited for it once woken.
    assert!(
        ran.iter()
            .any(|s| s.name == "ran: osm-hog" && s.cat == "scheduling"),
        "the hog is not inside the wake: {ran:?}"
    );
    assert!(
        wakes.iter().any(|s| s.name == "thread" && s.cat == "stage"),
        "no thread stage: {wakes:?}"
    );
    let inside: Vec<&SliceRead> = wakes
        .iter()
        .chain(ran)
        .filter(|s| s.cat != "late wake")
        .collect();
    for s in &inside {
        assert!(
            s.ts + 1e-3 >= wake.ts && s.ts + s.dur <= wake.ts + wake.dur + 1e-3,
            "{s:?} outside {wake:?}"
        );
    }
}

#[test]
fn a_format_the_run_cannot_have_is_refused_naming_what_it_needs() {
    let env = TestEnv::new();
    let run = env.run_id(&["syscall.null"]);
    let out = env
        .osmeter()
        .args(["export", &run, "--format", "trace-event"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("needs a timeline of late wakes (`osmeter latency --trace`)")
            && err.contains("runs of kind latency")
            && err.contains(
                "formats are json, csv, markdown, openmetrics, folded, pprof, speedscope"
            ),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // The right kind without the data: as the folded stacks say it, a failure naming the option.
    for format in ["pprof", "speedscope"] {
        let out = env
            .osmeter()
            .args(["export", &run, "--format", format])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{format}: {err}");
        assert!(
            err.contains("no profiles") && err.contains("--profile"),
            "{err}"
        );
    }

    let (_, latency) = env.saved(&[
        "latency",
        "--classes",
        "normal",
        "--paths",
        "timer",
        "--duration",
        "1s",
    ]);
    for format in ["pprof", "speedscope", "folded"] {
        let out = env
            .osmeter()
            .args(["export", &latency, "--format", format])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{format}: {err}");
        assert!(
            err.contains(&format!(
                "--format {format} needs profiles (`osmeter run --profile` or `osmeter stat \
                 --profile`)"
            )) && err.contains("is of kind latency, whose formats are")
                && err.contains("trace-event"),
            "{err}"
        );
    }
    // A latency run measured without --trace says how to keep the wakes.
    let out = env
        .osmeter()
        .args(["export", &latency, "--format", "trace-event"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("without --trace"), "{err}");
}
