//! Progress lines of long jobs: on stderr only, never mixed into results, and absent unless
//! stderr is a terminal or OSMETER_PROGRESS=always asks for them.

mod common;

use common::TestEnv;

fn synth(env: &TestEnv, refs: &str) -> std::path::PathBuf {
    let trace = env.dir.path().join("t.osmt");
    env.osmeter()
        .args(["trace", "synth", "--refs", refs, "--seed", "3", "-o"])
        .arg(&trace)
        .assert()
        .success();
    trace
}

#[test]
fn memsim_reports_its_reading_on_stderr_only() {
    let env = TestEnv::new();
    // Long enough in a debug build to outlast the first one-second period of the progress line.
    let trace = synth(&env, "6000000");
    let out = env
        .osmeter()
        .env("OSMETER_PROGRESS", "always")
        .arg("memsim")
        .arg(&trace)
        .args(["--preset", "ds5000-200", "--json", "--no-store"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout stays JSON");
    assert!(doc["machines"].is_array());
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("memsim: ")).collect();
    assert!(!lines.is_empty(), "no progress line in:\n{err}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains(" of ") && l.contains(" %") && l.contains(" read, ")),
        "{lines:?}"
    );

    // Not a terminal and not asked for: nothing.
    let quiet = env
        .osmeter()
        .arg("memsim")
        .arg(&trace)
        .args(["--preset", "ds5000-200", "--no-store"])
        .output()
        .unwrap();
    assert!(quiet.status.success());
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("memsim: "));
}

#[test]
fn trace_capture_reports_references_captured() {
    let env = TestEnv::new();
    if common::which("valgrind").is_none() {
        eprintln!("valgrind is not installed (.ci/run installs it); skipping");
        return;
    }
    let out = env
        .osmeter()
        .env("OSMETER_PROGRESS", "always")
        .args(["trace", "-o"])
        .arg(env.dir.path().join("busy.osmt"))
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 400 ]; do i=$((i+1)); done",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .any(|l| l.starts_with("trace: ") && l.contains("references captured")),
        "{err}"
    );
}

#[test]
fn latency_reports_time_measured_and_left() {
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .env("OSMETER_PROGRESS", "always")
        .args([
            "latency",
            "--classes",
            "normal",
            "--paths",
            "timer",
            "--duration",
            "2500ms",
            "--json",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("stdout stays JSON");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("latency: ")).collect();
    assert!(
        lines
            .first()
            .is_some_and(|l| l.contains(" of 2.5 s (") && l.contains("left")),
        "{err}"
    );
}

#[test]
fn run_reports_each_figure_and_round_when_asked_and_nothing_when_not() {
    let env = TestEnv::new();
    let run = |progress: &str| {
        let out = env
            .osmeter()
            .env("OSMETER_PROGRESS", progress)
            .args(["run", "syscall.null", "--no-store", "--json"])
            .args(common::FAST)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("stdout stays JSON");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run("always");
    assert!(
        err.lines()
            .any(|l| l.starts_with("[1/") && l.contains("round 1/")),
        "{err}"
    );
    assert!(
        !err.contains('\x1b'),
        "no terminal escapes on a pipe: {err:?}"
    );
    let quiet = run("never");
    assert!(!quiet.lines().any(|l| l.starts_with("[1/")), "{quiet}");
}

#[test]
fn run_progress_gives_elapsed_and_left_and_its_total_never_grows() {
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .env("OSMETER_PROGRESS", "always")
        .args([
            "run",
            "syscall.null",
            "syscall.dup",
            "--rounds",
            "3",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let first: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with('[') && !l.starts_with("[extra"))
        .collect();
    assert!(!first.is_empty(), "no progress line in:\n{err}");
    let totals: std::collections::BTreeSet<&str> = first
        .iter()
        .filter_map(|l| l[1..].split(']').next()?.split('/').nth(1))
        .collect();
    assert_eq!(
        totals.len(),
        1,
        "the total changed during the run: {first:?}"
    );
    // Every line says how long the run has taken: "[3/7] 1.2 s..." (an elapsed time in s).
    assert!(
        first
            .iter()
            .all(|l| l.split(']').nth(1).is_some_and(|rest| rest.contains(" s"))),
        "{first:?}"
    );
    // Results stay on stdout, progress only on stderr.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("round 1/"));
}

/// The traced command's output and the progress line share one file (as they share a terminal):
/// the command writes half a line, waits past a progress period, and ends the line. Every line
/// of the command's reaches the file whole, and progress is still drawn between them.
#[test]
fn trace_progress_never_runs_into_the_commands_output() {
    let env = TestEnv::new();
    if common::which("valgrind").is_none() {
        eprintln!("valgrind is not installed (.ci/run installs it); skipping");
        return;
    }
    let log = env.dir.path().join("terminal.log");
    let file = std::fs::File::create(&log).unwrap();
    let status = env
        .osmeter_std()
        .env("OSMETER_PROGRESS", "always")
        .args(["trace", "-o"])
        .arg(env.dir.path().join("talk.osmt"))
        .args([
            "--",
            "sh",
            "-c",
            // Half lines on stdout and on stderr, each finished after more than a second; then
            // quiet, for the progress line to show it still runs.
            "for i in 1 2; do printf \"out$i-\"; sleep 1.3; echo end; printf \"err$i-\" >&2; \
             sleep 1.3; echo end >&2; done; sleep 1.5",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .status()
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{text}");
    for want in ["out1-end", "err1-end", "out2-end", "err2-end"] {
        assert!(
            text.lines().any(|l| l == want),
            "{want:?} is not a whole line of its own in:\n{text}"
        );
    }
    assert!(
        text.lines().any(|l| l.starts_with("trace: ")),
        "no progress line in:\n{text}"
    );
}

/// The same on a terminal (a pty made by util-linux's `script`), where the progress line is
/// redrawn in place: the command's half line is finished before any redraw, and the line is
/// cleared before the command writes again.
#[test]
fn trace_progress_on_a_terminal_clears_itself_for_the_commands_output() {
    let env = TestEnv::new();
    if common::which("valgrind").is_none() || common::which("script").is_none() {
        eprintln!(
            "valgrind or script (util-linux) is not installed (.ci/run installs them); skipping"
        );
        return;
    }
    let osmeter = assert_cmd::cargo::cargo_bin("osmeter");
    let trace = env.dir.path().join("tty.osmt");
    let inner = format!(
        "{} trace -o {} -- sh -c 'printf out1-; sleep 1.3; echo end; sleep 1.3; echo out2'",
        osmeter.display(),
        trace.display()
    );
    let out = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &inner, "/dev/null"])
        .env("OSMETER_STORE", env.store())
        .env_remove("OSMETER_PROGRESS")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text:?}");
    assert!(
        text.contains("\x1b[2Ktrace: "),
        "progress drawn in place: {text:?}"
    );
    assert!(
        text.contains("out1-end"),
        "the half line finished whole: {text:?}"
    );
    // Whatever the command writes starts on a cleared line, never after a progress line's text.
    for word in ["out1-", "out2"] {
        let at = text.find(word).unwrap();
        let before = &text[..at];
        assert!(
            before.ends_with("\x1b[2K") || before.ends_with('\n') || before.is_empty(),
            "{word} written after progress text: {text:?}"
        );
    }
}
