//! The README's exit-code table, held against what osmeter does: every code the table lists has
//! a real case here that must end with it, and every code a case here ends with is in the table.

mod common;
#[path = "common/cpu_hog.rs"]
mod cpu_hog;

use common::*;
use cpu_hog::last_cpu;
use std::collections::BTreeMap;
use std::process::Output;
use std::time::Duration;

/// The codes of the README's "Exit codes" table, with their meanings.
fn readme_codes() -> BTreeMap<i32, String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme
        .split("\n## Exit codes\n")
        .nth(1)
        .expect("the README has an Exit codes section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter_map(|l| {
            let mut cells = l.trim().strip_prefix('|')?.split('|');
            let code = cells.next()?.trim().parse().ok()?;
            Some((code, cells.next()?.trim().to_string()))
        })
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Checks that `out` ended with `code` and that its stderr holds `says`.
fn expect(what: &str, out: &Output, code: i32, says: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{what}: {err}");
    assert!(err.contains(says), "{what}: {err:?} does not say {says:?}");
}

/// A run whose two figures both fail: rounds of some 7 s of CPU each (70 warm-up samples of
/// 100 ms, which the harness's own cost does not take) under a CPU-time limit of 3 s (`ulimit -t
/// 3`), so the kernel kills each figure's measuring process at the limit, which the figure names.
/// osmeter itself and the harness's own measurements (3 samples of 100 ms and their calibration,
/// well under a second) stay within it, and CPU time, unlike wall time, does not depend on how
/// busy the machine is. (Samples of 300 ms once brought the harness's own cost near the limit.) (An address-space
/// limit was used before, with a buffer larger than it; such a size is now refused before
/// measuring, exit 2.)
fn run_with_every_figure_failing(env: &TestEnv) -> Output {
    use std::os::unix::process::CommandExt;
    const LIMIT_S: u64 = 3;
    let mut cmd = env.osmeter_std();
    cmd.args(["run", "syscall.null", "syscall.dup", "--no-store"])
        .args([
            "--rounds",
            "1",
            "--warmup",
            "70",
            "--repeat",
            "3",
            "--min-time",
            "100ms",
        ]);
    // SAFETY: setrlimit in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: LIMIT_S,
                rlim_max: LIMIT_S,
            };
            if libc::setrlimit(libc::RLIMIT_CPU, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("RLIMIT_CPU"),
        "the CPU-time limit is what failed:\n{table}\n{}",
        stderr(&out)
    );
    out
}

/// A stat run of `sleep SECS`, stored; returns its id.
fn stored_sleep(env: &TestEnv, secs: &str) -> String {
    // The id the run was saved under (two runs in one second would list in either order).
    env.saved(&["stat", "-r", "5", "--json", "--", "sleep", secs])
        .1
}

#[test]
fn every_code_in_the_readme_table_is_what_its_case_ends_with() {
    let env = TestEnv::new();
    let mut tried = Vec::new();

    let out = env
        .osmeter()
        .args(["run", "syscall.null", "--no-store"])
        .args(FAST)
        .output()
        .unwrap();
    expect("a run that measured", &out, 0, "");
    tried.push(0);

    let out = run_with_every_figure_failing(&env);
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(table.matches("FAILED").count(), 2, "{table}");
    expect(
        "a run where every figure failed",
        &out,
        1,
        "every figure failed (2 failed",
    );
    tried.push(1);

    let out = env
        .osmeter()
        .args(["run", "no.such_probe", "--no-store"])
        .output()
        .unwrap();
    expect("an unknown probe", &out, 2, "no.such_probe");
    let tmp = tempfile::tempdir().unwrap();
    let not_executable = tmp.path().join("data.txt");
    std::fs::write(&not_executable, "not a program\n").unwrap();
    let trace_out = tmp.path().join("t.osmt");
    for (program, says) in [
        ("osmeter-no-such-program", "no such program on PATH"),
        (not_executable.to_str().unwrap(), "not executable"),
        (tmp.path().to_str().unwrap(), "is a directory"),
    ] {
        for cmd in [
            vec!["stat", "--no-store", "-r", "1", "--"],
            vec!["trace", "-o", trace_out.to_str().unwrap(), "--"],
        ] {
            let out = env.osmeter().args(&cmd).arg(program).output().unwrap();
            expect(&format!("{} {program}", cmd[0]), &out, 2, says);
            assert!(stderr(&out).contains(&format!("cannot start `{program}`")));
        }
    }
    assert!(!trace_out.exists());
    tried.push(2);

    let out = env
        .osmeter()
        .args(["stat", "--no-store", "-r", "1", "--", "false"])
        .output()
        .unwrap();
    expect(
        "stat of a failing command",
        &out,
        3,
        "`false` exited with status 1",
    );
    if which("valgrind").is_some() {
        let out = env
            .osmeter()
            .args(["trace", "-o", trace_out.to_str().unwrap(), "--", "false"])
            .output()
            .unwrap();
        expect(
            "trace of a failing command",
            &out,
            3,
            "the traced command failed",
        );
    }
    // An executable file that is no program the kernel knows (no magic number, no #!): like a
    // shell, osmeter lets /bin/sh run it, so both commands report the command's failure (exit 3),
    // not a start failure.
    let garbage = tmp.path().join("garbage");
    std::fs::write(&garbage, b"no-such-command-here \x01\x02\n").unwrap();
    std::fs::set_permissions(
        &garbage,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let garbage = garbage.to_str().unwrap();
    let mut commands = vec![vec!["stat", "--no-store", "-r", "1", "--", garbage]];
    if which("valgrind").is_some() {
        commands.push(vec![
            "trace",
            "-o",
            trace_out.to_str().unwrap(),
            "--",
            garbage,
        ]);
    }
    for cmd in commands {
        let out = env.osmeter().args(&cmd).output().unwrap();
        let says = if cmd[0] == "stat" {
            "exited with status 127"
        } else {
            "the traced command failed (exit status: 127)"
        };
        expect(
            &format!("{} of a file no kernel runs", cmd[0]),
            &out,
            3,
            says,
        );
    }
    let _ = std::fs::remove_file(&trace_out);
    tried.push(3);

    let fast = stored_sleep(&env, "0.01");
    let slow = stored_sleep(&env, "0.1");
    let out = env
        .osmeter()
        .args(["compare", &fast, &slow, "--fail-if-slower", "10"])
        .output()
        .unwrap();
    expect("compare over its threshold", &out, 4, "");
    tried.push(4);

    let mut cmd = env.osmeter();
    cmd.args(["latency", "--duration", "1s", "--classes", "normal"])
        .args(["--fail-over", "1ns", "--no-store"]);
    let out = cmd.output().unwrap();
    expect("latency over --fail-over", &out, 5, "");
    tried.push(5);

    // A run beside a shell spinning on its measuring CPU is called busy, and compare will not
    // call its figures changed.
    let cpu = last_cpu().to_string();
    let mut hog = std::process::Command::new("taskset")
        .args(["-c", &cpu, "sh", "-c", "while :; do :; done"])
        .spawn()
        .expect("taskset (util-linux) and sh");
    let busy = env.saved(&[
        "run",
        "syscall.null",
        "--cpu",
        &cpu,
        "--rounds",
        "2",
        "--repeat",
        "3",
        "--min-time",
        "5ms",
    ]);
    let _ = hog.kill();
    let _ = hog.wait();
    let out = env
        .osmeter()
        .args(["compare", &busy.1, &busy.1])
        .output()
        .unwrap();
    expect("compare of a busy run", &out, 6, "busy");
    tried.push(6);

    // Long samples of several probes, so that the signal lands while sampling.
    let mut cmd = env.osmeter_std();
    cmd.args([
        "run",
        "syscall.null",
        "syscall.dup",
        "cpu.reference",
        "--no-store",
    ])
    .args(["--repeat", "50", "--min-time", "50ms"]);
    let (out, _) = interrupt_after(&mut cmd, Duration::from_secs(3), || {});
    expect("a run stopped by Ctrl-C", &out, 130, "");
    tried.push(130);

    // The command's output let through goes to stderr, a pipe whose reader has gone: echo dies
    // of SIGPIPE.
    let out = env
        .osmeter_std()
        .args([
            "stat",
            "-r",
            "2",
            "--show-output",
            "--no-store",
            "--",
            "echo",
            "hi",
        ])
        .stderr(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141), "stat into a closed pipe");
    tried.push(141);

    let documented: Vec<i32> = readme_codes().into_keys().collect();
    assert_eq!(
        documented, tried,
        "the README's exit-code table and the cases tried here differ"
    );
}
