//! Every command's text output fits 100 columns (the width people read), and `--wide` gives the
//! long lines back. One store, filled by the commands themselves, serves every command that reads
//! runs.

mod common;

use common::TestEnv;

const WIDTH: usize = 100;

/// The lines of `args`' stdout wider than [`WIDTH`], with the command, or an empty list.
fn too_wide(env: &TestEnv, args: &[&str]) -> Vec<String> {
    wider_than(env, args, WIDTH, false)
}

/// The lines of `args`' stdout wider than `width` columns, with the command; `columns` sets
/// COLUMNS to that width, as a shell does for a terminal of its size.
fn wider_than(env: &TestEnv, args: &[&str], width: usize, columns: bool) -> Vec<String> {
    let mut cmd = env.osmeter();
    if columns {
        cmd.env("COLUMNS", width.to_string());
    }
    let out = cmd.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "osmeter {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.chars().count() > width)
        .map(|l| {
            format!(
                "osmeter {} (COLUMNS={width}): {} columns: {l}",
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
    // A terminal of 80 columns, as COLUMNS says it: every table and note is fitted to it.
    let narrow: Vec<String> = commands
        .iter()
        .flat_map(|c| wider_than(&env, c, 80, true))
        .collect();
    assert!(
        narrow.is_empty(),
        "{} lines wider than 80 columns:\n{}",
        narrow.len(),
        narrow.join("\n")
    );
}

/// On a terminal, without COLUMNS, the terminal's own width is the one tables are fitted to:
/// `list` on a pseudo-terminal of 72 columns (made by util-linux's `script`) fits 72, and the
/// same on one of 160 columns uses the room.
#[test]
fn a_terminal_s_own_width_is_used() {
    let Some(script) = common::which("script") else {
        eprintln!("skipped: needs util-linux's script (apt-get install util-linux)");
        return;
    };
    let env = TestEnv::new();
    let bin = assert_cmd::cargo::cargo_bin("osmeter");
    let on_terminal = |cols: usize| -> Vec<usize> {
        let line = format!("stty cols {cols} rows 50; exec '{}' list", bin.display());
        let out = std::process::Command::new(&script)
            .args(["-qec", &line, "/dev/null"])
            .env("OSMETER_STORE", env.store())
            .env("TERM", "dumb")
            .env_remove("COLUMNS")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim_end_matches('\r').chars().count())
            .collect()
    };
    let narrow = on_terminal(72);
    assert!(narrow.len() > 10, "{narrow:?}");
    assert!(narrow.iter().all(|&w| w <= 72), "{narrow:?}");
    let wide = on_terminal(160);
    assert!(wide.iter().any(|&w| w > 100), "{wide:?}");
    assert!(wide.iter().all(|&w| w <= 160), "{wide:?}");
}

#[test]
fn wide_keeps_long_lines_whole() {
    let env = TestEnv::new();
    // Probe summaries with their origins are longer than 100 columns on one line.
    assert!(too_wide(&env, &["list"]).is_empty());
    assert!(!too_wide(&env, &["list", "--wide"]).is_empty());
}
