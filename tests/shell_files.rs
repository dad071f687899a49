//! `osmeter completions` and `osmeter man`: the files a packager or a user installs.

mod common;

use common::TestEnv;
use std::process::Command as Std;

#[test]
fn bash_completion_installs_and_completes_subcommands_and_flags() {
    let env = TestEnv::new();
    let home = env.dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    env.osmeter()
        .args(["completions", "bash", "--install"])
        .env("HOME", &home)
        .env_remove("XDG_DATA_HOME")
        .assert()
        .success()
        .stdout("");
    let script = home.join(".local/share/bash-completion/completions/osmeter");
    let mode = std::os::unix::fs::PermissionsExt::mode(&script.metadata().unwrap().permissions());
    assert_eq!(mode & 0o022, 0, "not writable by others");

    // Load it into a real bash and ask for completions the way readline would.
    let ask = |line: &str| {
        let words: Vec<&str> = line.split(' ').collect();
        let cmd = format!(
            "source {}; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; \
             _osmeter osmeter '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" "),
            words.len() - 1,
            words.last().unwrap(),
            words[words.len() - 2],
        );
        let out = Std::new("bash")
            .args(["--norc", "-c", &cmd])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let subs = ask("osmeter me");
    assert!(subs.lines().any(|l| l == "memsim"), "{subs}");
    let flags = ask("osmeter compare --fail");
    assert!(flags.lines().any(|l| l == "--fail-if-slower"), "{flags}");
}

#[test]
fn completion_to_stdout_and_unknown_shells_refused() {
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .args(["completions", "fish"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("complete -c osmeter"));
    let out = env
        .osmeter()
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bash"));
}

#[test]
fn man_pages_render_with_man() {
    let env = TestEnv::new();
    let dir = env.dir.path().join("man1");
    env.osmeter()
        .args(["man", "--dir"])
        .arg(&dir)
        .assert()
        .success();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for page in [
        "osmeter.1",
        "osmeter-run.1",
        "osmeter-memsim.1",
        "osmeter-trace-convert.1",
    ] {
        assert!(
            names.iter().any(|n| n == page),
            "{page} missing from {names:?}"
        );
    }
    if Std::new("man").arg("--version").output().is_err() {
        eprintln!("man is not installed; skipping the rendering check");
        return;
    }
    let out = Std::new("man")
        .arg("-l")
        .arg(dir.join("osmeter-run.1"))
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("osmeter-run - Run probes"), "{text}");
    assert!(text.contains("repeat <N>"), "{text}");
}

#[test]
fn one_page_to_stdout_and_unknown_commands_refused() {
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .args(["man", "trace", "info"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(".TH osmeter-trace-info"));
    let out = env.osmeter().args(["man", "nosuch"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`nosuch`"));
    assert!(out.stdout.is_empty());
}

/// On a terminal a page is rendered by man-db, not printed as roff (script(1) gives osmeter a
/// terminal; MANPAGER=cat keeps the pager from waiting for keys).
#[test]
fn a_page_on_a_terminal_is_rendered() {
    let in_ci = std::env::var_os("CI").is_some();
    for tool in ["man", "script"] {
        if common::which(tool).is_none() {
            assert!(
                !in_ci,
                "{tool} is missing (apt-get install man-db util-linux)"
            );
            eprintln!("skipped: {tool} is missing (apt-get install man-db util-linux)");
            return;
        }
    }
    let env = TestEnv::new();
    let bin = env
        .osmeter_std()
        .get_program()
        .to_string_lossy()
        .into_owned();
    let out = Std::new("script")
        .args(["-qec", &format!("'{bin}' man trace info"), "/dev/null"])
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("MANWIDTH", "80")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains(".TH "), "roff on a terminal:\n{text}");
    // man's own header line; NAME may come in overstruck bold, so it is not matched.
    assert!(text.contains("osmeter-trace-info(1)"), "{text}");
}

/// osmeter as `cargo install` leaves it, in a temporary HOME: HOME/.cargo/bin/osmeter (a hard link
/// to the built binary, so that its own path says where it was installed).
fn installed_in(home: &std::path::Path) -> std::path::PathBuf {
    let bin = home.join(".cargo/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let exe = bin.join("osmeter");
    let built = assert_cmd::cargo::cargo_bin("osmeter");
    if std::fs::hard_link(&built, &exe).is_err() {
        std::fs::copy(&built, &exe).unwrap();
    }
    exe
}

/// A login-like environment: only HOME and a PATH with the install's bin first.
fn user_env(cmd: &mut Std, home: &std::path::Path) {
    cmd.env_clear().env("HOME", home).env(
        "PATH",
        format!("{}:/usr/bin:/bin", home.join(".cargo/bin").display()),
    );
}

#[test]
fn installed_man_pages_are_found_by_man_and_completions_by_bash() {
    let in_ci = std::env::var_os("CI").is_some();
    if !in_ci && Std::new("man").arg("--version").output().is_err() {
        eprintln!("man is not installed (apt-get install man-db); skipping");
        return;
    }
    let env = TestEnv::new();
    let home = env.dir.path().join("home");
    let exe = installed_in(&home);

    let mut install = Std::new(&exe);
    install.args(["man", "--install"]);
    user_env(&mut install, &home);
    let out = install.output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("`man osmeter` finds them"), "{said}");

    let mut lookup = Std::new("man");
    lookup.args(["-w", "osmeter"]);
    user_env(&mut lookup, &home);
    let out = lookup.output().unwrap();
    let found = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        found.trim(),
        home.join(".cargo/share/man/man1/osmeter.1")
            .display()
            .to_string(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let loader = std::path::Path::new("/usr/share/bash-completion/bash_completion");
    if !loader.exists() {
        assert!(!in_ci, "bash-completion is installed by .ci/run");
        eprintln!("bash-completion is not installed (apt-get install bash-completion); skipping");
        return;
    }
    let mut install = Std::new(&exe);
    install.args(["completions", "bash", "--install"]);
    user_env(&mut install, &home);
    assert!(install.status().unwrap().success());
    // bash-completion loads a command's completion on first use from the user's directory; ask it
    // to, then complete `osmeter comp` as readline would.
    let script = format!(
        "source {}; _completion_loader osmeter; complete -p osmeter >/dev/null || exit 7; \
         COMP_WORDS=(osmeter comp); COMP_CWORD=1; COMP_LINE='osmeter comp'; COMP_POINT=12; \
         $(complete -p osmeter | sed -E 's/.*-F ([^ ]+).*/\\1/') osmeter comp osmeter; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        loader.display()
    );
    let mut bash = Std::new("bash");
    bash.args(["--norc", "-c", &script]);
    user_env(&mut bash, &home);
    let out = bash.output().unwrap();
    let words = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && words.lines().any(|w| w == "compare"),
        "status {:?}, completions {words:?}, stderr {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A shell's binary, or None (with the install command said) outside CI when it is missing.
fn shell_present(name: &str) -> bool {
    if Std::new(name).arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{name} is installed by .ci/run"
    );
    eprintln!("{name} is not installed (apt-get install {name}); skipping");
    false
}

#[test]
fn installed_completions_are_found_by_fish_and_zsh() {
    let env = TestEnv::new();
    let home = env.dir.path().join("home");
    let exe = installed_in(&home);
    let install = |shell: &str| {
        let mut cmd = Std::new(&exe);
        cmd.args(["completions", shell, "--install"]);
        user_env(&mut cmd, &home);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };

    if shell_present("fish") {
        install("fish");
        // fish reads ~/.config/fish/completions on its own; `complete -C` completes a line as the
        // prompt would.
        let mut fish = Std::new("fish");
        fish.args(["-c", "complete -C 'osmeter me'"]);
        user_env(&mut fish, &home);
        let out = fish.output().unwrap();
        let words = String::from_utf8_lossy(&out.stdout);
        assert!(
            words.lines().any(|l| l.starts_with("memsim\t")),
            "{words} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!words.contains("measure-worker"), "{words}");
    }

    if shell_present("zsh") {
        let said = install("zsh");
        // zsh has no per-user directory it reads by itself: osmeter says which line to add, and
        // with exactly that line compinit finds the function.
        let line = said
            .split('`')
            .find(|s| s.starts_with("fpath+=("))
            .unwrap_or_else(|| panic!("no fpath line in {said:?}"))
            .to_string();
        let script = format!(
            "{line}; autoload -U compinit; compinit -u -d {}; print -r -- $_comps[osmeter]",
            home.join("zcompdump").display()
        );
        let mut zsh = Std::new("zsh");
        zsh.args(["-f", "-c", &script]);
        user_env(&mut zsh, &home);
        let out = zsh.output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "_osmeter",
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `completions` and `man` take only what they use: a run's `--fs` is refused, not accepted and
/// ignored, and their help does not list it.
#[test]
fn completions_and_man_do_not_take_a_runs_options() {
    let env = TestEnv::new();
    for args in [
        &["completions", "bash", "--fs", "ext4"][..],
        &["man", "--fs", "ext4"][..],
    ] {
        env.osmeter()
            .args(args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains("--fs"));
    }
    for sub in ["completions", "man"] {
        let help = env.osmeter().args([sub, "--help"]).output().unwrap();
        assert!(!String::from_utf8_lossy(&help.stdout).contains("--fs"));
    }
}

/// Completion offers what the clap definition cannot know: probe names after `run`, and the ids of
/// the runs in the user's store after `show`, asked of the installed osmeter at completion time
/// (bash through bash-completion's loader, fish through its own directory).
#[test]
fn probe_names_and_stored_run_ids_complete() {
    let env = TestEnv::new();
    let home = env.dir.path().join("home");
    let exe = installed_in(&home);
    let osmeter = |args: &[&str]| {
        let mut cmd = Std::new(&exe);
        cmd.args(args);
        user_env(&mut cmd, &home);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    // A run in the user's own store (no OSMETER_STORE: the XDG place under this HOME).
    let out = osmeter(&[
        "run",
        "syscall.null",
        "--rounds",
        "1",
        "--min-time",
        "1ms",
        "--json",
    ]);
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = run["id"].as_str().unwrap().to_string();
    let listed = String::from_utf8(osmeter(&["complete-names", "runs"]).stdout).unwrap();
    assert_eq!(listed.lines().collect::<Vec<_>>(), [id.as_str()]);

    let loader = std::path::Path::new("/usr/share/bash-completion/bash_completion");
    if loader.exists() {
        osmeter(&["completions", "bash", "--install"]);
        let complete = |line: &str| -> Vec<String> {
            let words: Vec<&str> = line.split(' ').collect();
            let script = format!(
                "source {}; _completion_loader osmeter; \
                 COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT={}; \
                 $(complete -p osmeter | sed -E 's/.*-F ([^ ]+).*/\\1/') osmeter '{}' '{}'; \
                 printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                loader.display(),
                words
                    .iter()
                    .map(|w| format!("'{w}'"))
                    .collect::<Vec<_>>()
                    .join(" "),
                words.len() - 1,
                line.len(),
                words[words.len() - 1],
                words[words.len() - 2],
            );
            let mut bash = Std::new("bash");
            bash.args(["--norc", "-c", &script]);
            user_env(&mut bash, &home);
            let out = bash.output().unwrap();
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_string)
                .collect()
        };
        let probes = complete("osmeter run syscall.n");
        assert_eq!(probes, ["syscall.null"], "{probes:?}");
        let ids = complete("osmeter show ");
        assert_eq!(ids, [id.as_str()], "{ids:?}");
        // Options still complete as before, and an option's value is not taken for a name.
        let flags = complete("osmeter show --js");
        assert_eq!(flags, ["--json"], "{flags:?}");
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "bash-completion is installed by .ci/run"
        );
    }

    if shell_present("fish") {
        osmeter(&["completions", "fish", "--install"]);
        let mut fish = Std::new("fish");
        fish.args([
            "-c",
            "complete -C 'osmeter run syscall.d'; complete -C 'osmeter show '",
        ]);
        user_env(&mut fish, &home);
        let out = fish.output().unwrap();
        let words = String::from_utf8_lossy(&out.stdout);
        assert!(words.lines().any(|l| l == "syscall.dup"), "{words}");
        assert!(words.lines().any(|l| l.starts_with(&id)), "{words}");
    }
}
