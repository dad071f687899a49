//! Every command's text output fits 100 columns (the width people read), and `--wide` gives the
//! long lines back. One store, filled by the commands themselves, serves every command that reads
//! runs.

mod common;

use common::TestEnv;

const WIDTH: usize = 100;

/// The lines of `args`' stdout wider than [`WIDTH`], with the command, or an empty list.
fn too_wide(env: &TestEnv, args: &[&str]) -> Vec<String> {
    let out = env.osmeter().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "osmeter {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.chars().count() > WIDTH)
        .map(|l| {
            format!(
                "osmeter {}: {} columns: {l}",
                args.join(" "),
                l.chars().count()
            )
        })
        .collect()
}

#[test]
fn every_command_fits_a_hundred_columns() {
    let env = TestEnv::new();
    let fast = ["--rounds", "2", "--repeat", "3", "--min-time", "2ms"];
    let run = |tag: &str| {
        let mut args = vec!["run", "syscall.null", "syscall.dup", "cpu.reference"];
        args.extend(fast);
        args.extend(["--tag", tag]);
        env.saved(&args)
    };
    let (_, a) = run("side=a");
    let (_, b) = run("side=b");
    // Hardware figures with long labels in the per-primitive table under the run's own.
    let (_, copy) = env.saved(&[
        "run",
        "syscall.null",
        "memory.copy",
        "cpu.reference",
        "--rounds",
        "2",
        "--repeat",
        "3",
        "--min-time",
        "2ms",
    ]);
    let trace = env.dir.path().join("s.osmt");
    let trace = trace.to_str().unwrap();
    env.osmeter()
        .args(["trace", "synth", "--refs", "20000", "-o", trace])
        .assert()
        .success();
    let commands: Vec<Vec<&str>> = vec![
        vec!["run", "syscall.null", "--rounds", "2", "--no-store"],
        vec!["show", &b],
        vec!["list"],
        vec!["info"],
        vec!["runs"],
        // --force: a shared machine may call these runs busy; their width is the subject.
        vec!["compare", &a, &b, "--all", "--force"],
        vec![
            "compare", "--tag-a", "side=a", "--tag-b", "side=b", "--force",
        ],
        vec!["history", "syscall.null"],
        vec!["stat", "-r", "3", "--", "true"],
        vec!["latency", "--duration", "2s", "--paths", "timer,futex"],
        vec![
            "memsim",
            trace,
            "--preset",
            "ds5000-200",
            "--preset",
            "x86-modern",
        ],
        vec!["trace", "info", trace],
        vec!["trace", "workloads"],
        vec!["paper"],
        vec!["paper", "ousterhout89", "--table", "2", "--quick"],
        vec!["paper", "ousterhout89", "--run", &a],
        vec!["show", &copy],
        vec!["paper", "ousterhout89", "--run", &copy],
        vec!["fleet"],
    ];
    let wide: Vec<String> = commands.iter().flat_map(|c| too_wide(&env, c)).collect();
    assert!(
        wide.is_empty(),
        "{} lines wider than {WIDTH} columns:\n{}",
        wide.len(),
        wide.join("\n")
    );
}

#[test]
fn wide_keeps_long_lines_whole() {
    let env = TestEnv::new();
    // Probe summaries with their origins are longer than 100 columns on one line.
    assert!(too_wide(&env, &["list"]).is_empty());
    assert!(!too_wide(&env, &["list", "--wide"]).is_empty());
}
