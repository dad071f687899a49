//! Issue 44's hostile cases (the fourth hardening round), end to end on the real binary, each
//! test named after what it proves: secrets kept from children, exports that no spreadsheet or
//! terminal can be tricked by, an environment that is checked rather than trusted, dates and
//! files named right, and output that cannot be written never losing the measurement.

mod common;
#[path = "common/pg.rs"]
mod pg;

use common::TestEnv;
use std::os::unix::fs::PermissionsExt;
use std::process::Output;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn all_output(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// The URL of a fresh test database, without its password, and the password.
fn url_without_password() -> (String, &'static str) {
    let url = pg::fresh_database();
    let with = format!("{}:{}@", pg::USER, pg::PASSWORD);
    assert!(url.contains(&with), "{url}");
    (url.replace(&with, &format!("{}@", pg::USER)), pg::PASSWORD)
}

// ---- item 1: secrets ---------------------------------------------------------------------------

#[test]
fn the_store_password_never_reaches_the_command_under_stat() {
    let env = TestEnv::new();
    let url = pg::fresh_database();
    let out = env
        .osmeter()
        .env("OSMETER_STORE", &url)
        .env("PGPASSWORD", "pgpassword-secret")
        .args(["stat", "-r", "1", "--show-output", "--"])
        .args([
            "sh",
            "-c",
            "echo \"store=[$OSMETER_STORE] pw=[$PGPASSWORD]\"",
        ])
        .output()
        .unwrap();
    let all = all_output(&out);
    assert!(out.status.success(), "{all}");
    assert!(!all.contains(pg::PASSWORD), "{all}");
    assert!(!all.contains("pgpassword-secret"), "{all}");
    // The child still knows which store, so an osmeter under stat finds it (with ~/.pgpass).
    assert!(
        all.contains(&format!("store=[postgres://{}@", pg::USER)),
        "{all}"
    );
    assert!(all.contains("pw=[]"), "{all}");
    // And the run was kept where the URL says.
    let runs = env
        .osmeter()
        .env("OSMETER_STORE", &url)
        .args(["runs", "--json"])
        .output()
        .unwrap();
    assert!(runs.status.success(), "{}", text(&runs.stderr));
    assert!(
        text(&runs.stdout).contains("\"stat\""),
        "{}",
        text(&runs.stdout)
    );
}

#[test]
fn a_password_in_the_query_or_beside_a_local_store_reaches_no_load_command() {
    let env = TestEnv::new();
    // --store wins over $OSMETER_STORE, which stays in the environment all the same.
    let out = env
        .osmeter()
        .env(
            "OSMETER_STORE",
            "postgres://osm@db.invalid/fleet?password=query-secret&sslmode=disable",
        )
        .env("PGPASSWORD", "pgpassword-secret")
        .args([
            "latency",
            "--duration",
            "1s",
            "--classes",
            "normal",
            "--no-store",
        ])
        .args([
            "--load-cmd",
            "echo \"load store=[$OSMETER_STORE] pw=[$PGPASSWORD]\" >&2; sleep 100",
        ])
        .output()
        .unwrap();
    let all = all_output(&out);
    assert!(out.status.success(), "{all}");
    assert!(!all.contains("query-secret"), "{all}");
    assert!(!all.contains("pgpassword-secret"), "{all}");
    assert!(
        all.contains("load store=[postgres://osm@db.invalid/fleet?sslmode=disable] pw=[]"),
        "{all}"
    );
}

#[test]
fn the_password_file_lets_a_url_leave_the_password_out() {
    let env = TestEnv::new();
    let (url, password) = url_without_password();
    let port = pg::cluster().port;
    let db = url.rsplit('/').next().unwrap().to_string();
    let passfile = env.dir.path().join("pgpass");
    std::fs::write(
        &passfile,
        format!(
            "# the test cluster\nother:*:*:*:wrong\n127.0.0.1:{port}:{db}:{}:{password}\n",
            pg::USER
        ),
    )
    .unwrap();
    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
    let runs = |mode: u32| {
        std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(mode)).unwrap();
        env.osmeter()
            .env_remove("PGPASSWORD")
            .env("PGPASSFILE", &passfile)
            .args(["runs", "--store", &url])
            .output()
            .unwrap()
    };
    let private = runs(0o600);
    assert!(private.status.success(), "{}", all_output(&private));
    // A file its group may read is not read, and the warning says how to make it private.
    let shared = runs(0o640);
    let err = text(&shared.stderr);
    assert_eq!(shared.status.code(), Some(1), "{err}");
    assert!(
        err.contains("chmod 0600") && err.contains("pgpass"),
        "{err}"
    );
    assert!(!err.contains(password), "{err}");
}

// ---- item 3: injection -------------------------------------------------------------------------

/// What a spreadsheet would run if a cell started with it.
const FORMULA: &str = "=cmd|' /C calc'!A0";

/// A small synthetic trace in the test's directory.
fn synth(env: &TestEnv, refs: u64) -> std::path::PathBuf {
    let p = env.dir.path().join("s.osmt");
    let out = env
        .osmeter()
        .args([
            "trace",
            "synth",
            "--refs",
            &refs.to_string(),
            "--seed",
            "3",
            "-o",
        ])
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    p
}

/// The cells of an RFC 4180 text (quoted fields unquoted, doubled quotes undone).
fn csv_cells(text: &str) -> Vec<String> {
    let mut cells = vec![];
    let mut cell = String::new();
    let (mut quoted, mut chars) = (false, text.chars().peekable());
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cell.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' | '\n' if !quoted => cells.push(std::mem::take(&mut cell)),
            c => cell.push(c),
        }
    }
    cells.push(cell);
    cells
}

#[test]
fn a_formula_named_machine_or_tag_never_starts_an_exported_cell() {
    let env = TestEnv::new();
    let trace = synth(&env, 20_000);
    // A machine of a config file named as a formula, as anyone's config may name it.
    let doc = env.json(&[
        "memsim",
        "--json",
        "--no-store",
        "--no-3c",
        "--preset",
        "ds5000-200",
        trace.to_str().unwrap(),
    ]);
    let mut config = doc["machines"][0]["config"].clone();
    config["name"] = FORMULA.into();
    let path = env.dir.path().join("formula.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let (_, id) = env.saved(&[
        "memsim",
        "--no-3c",
        "--tag",
        &format!("note={FORMULA}"),
        "--config",
        path.to_str().unwrap(),
        trace.to_str().unwrap(),
    ]);
    let export = |format: &str| {
        let out = env
            .osmeter()
            .args(["export", &id, "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let csv = export("csv");
    let cells = csv_cells(&csv);
    let named: Vec<&String> = cells.iter().filter(|c| c.contains(FORMULA)).collect();
    assert!(named.len() > 5, "the machine's figures are exported: {csv}");
    for cell in &cells {
        assert!(
            !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
            "a cell a spreadsheet would run: {cell:?}"
        );
    }
    for cell in named {
        assert!(cell.starts_with(&format!("'{FORMULA}")), "{cell:?}");
    }
    let markdown = export("markdown");
    for row in markdown.lines().filter(|l| l.starts_with('|')) {
        for cell in row.split(" | ") {
            let cell = cell.trim_start_matches("| ");
            assert!(!cell.starts_with('='), "{row}");
        }
    }
    assert!(
        markdown.contains(&format!("'{}", FORMULA.replace('|', "\\|"))),
        "{markdown}"
    );
    // The JSON keeps the name as it was given.
    assert!(export("json").contains(&format!("\"name\": \"{FORMULA}\"")));
}

#[test]
fn bidirectional_controls_in_a_tag_are_shown_escaped_by_runs_and_show() {
    let env = TestEnv::new();
    let id = env.run_id(&[
        "syscall.null",
        "--tag",
        "note=abc\u{202e}fdp.exe\u{2066}x\u{2069}",
    ]);
    for args in [vec!["runs"], vec!["show", &id]] {
        let out = env.osmeter().args(&args).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let shown = text(&out.stdout);
        assert!(
            !shown.contains(['\u{202e}', '\u{2066}', '\u{2069}']),
            "{args:?} prints a bidi control raw: {shown}"
        );
        assert!(
            shown.contains("abc\\u{202e}fdp.exe\\u{2066}x\\u{2069}"),
            "{args:?}: {shown}"
        );
    }
}

// ---- item 4: environment taken on trust --------------------------------------------------------

/// `osmeter` with no store named, so the default one (under XDG_DATA_HOME or HOME) is used, run
/// in `cwd`.
fn osmeter_default_store(cwd: &std::path::Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("osmeter").unwrap();
    c.env_remove("OSMETER_STORE")
        .env_remove("XDG_DATA_HOME")
        .current_dir(cwd);
    c
}

#[test]
fn a_relative_xdg_data_home_is_ignored_and_a_relative_home_refused() {
    let env = TestEnv::new();
    let home = env.dir.path().join("home");
    let cwd = env.dir.path().join("cwd");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let mut args = vec!["run", "syscall.null"];
    args.extend_from_slice(common::FAST);
    let out = osmeter_default_store(&cwd)
        .env("HOME", &home)
        .env("XDG_DATA_HOME", "data")
        .args(&args)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("XDG_DATA_HOME") && err.contains("ignored"),
        "{err}"
    );
    assert!(home.join(".local/share/osmeter/runs.db").is_file(), "{err}");
    assert!(
        common::entries(&cwd).is_empty(),
        "{:?}",
        common::entries(&cwd)
    );

    // A relative HOME with no XDG_DATA_HOME: refused before measuring, naming HOME.
    let out = osmeter_default_store(&cwd)
        .env("HOME", "home")
        .args(&args)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("HOME is \"home\", a relative path"), "{err}");
    assert!(err.contains("--store"), "{err}");
    assert!(!err.contains("syscall.null "), "nothing is measured: {err}");
    assert!(
        common::entries(&cwd).is_empty(),
        "{:?}",
        common::entries(&cwd)
    );
}

#[test]
fn an_unusable_tmpdir_is_named_as_tmpdir_not_as_dir() {
    let env = TestEnv::new();
    let file = env.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    for (tmpdir, says) in [
        (std::path::Path::new("/nonexistent"), "No such file"),
        (file.as_path(), "not a directory"),
    ] {
        let out = env
            .osmeter()
            .env("TMPDIR", tmpdir)
            .args(["run", "syscall.null"])
            .args(common::FAST)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("$TMPDIR") && err.contains(says), "{err}");
        assert!(err.contains(&tmpdir.display().to_string()), "{err}");
        assert!(!err.contains("--dir /"), "{err}");
    }
    // Given, --dir is named as --dir.
    let out = env
        .osmeter()
        .args(["run", "syscall.null", "--dir", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--dir /nonexistent"));
}

// ---- item 8: messages that name the thing ------------------------------------------------------

#[test]
fn days_a_month_does_not_have_are_refused_by_since() {
    let env = TestEnv::new();
    for (date, says) in [
        ("2026-02-30", "February 2026 has 28 days"),
        ("2026-04-31", "April 2026 has 30 days"),
        ("2025-02-29", "2025 is not a leap year"),
    ] {
        let out = env
            .osmeter()
            .args(["runs", "--since", date])
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{date}: {err}");
        assert!(err.contains(date) && err.contains(says), "{date}: {err}");
    }
    let out = env
        .osmeter()
        .args(["runs", "--since", "2024-02-29"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn a_guest_kernel_that_is_a_device_or_a_directory_is_named_as_such() {
    let env = TestEnv::new();
    let dir = env.dir.path().to_str().unwrap().to_string();
    for (spec, is) in [
        ("/dev/zero", "is a character device"),
        (dir.as_str(), "is a directory"),
    ] {
        let out = env
            .osmeter()
            .args(["run", "syscall.null", "--guest", spec])
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(
            err.contains(&format!("{spec} {is}, not a kernel image")),
            "{err}"
        );
        assert!(
            err.contains("--guest takes a bzImage/vmlinuz file"),
            "{err}"
        );
        assert!(
            !err.contains("--kernel") && !err.contains("does not exist"),
            "{err}"
        );
    }
}

#[test]
fn a_truncated_zstd_trace_is_named_and_said_to_be_cut_short() {
    let env = TestEnv::new();
    let trace = synth(&env, 20_000);
    let packed = zstd::encode_all(&std::fs::read(&trace).unwrap()[..], 3).unwrap();
    let cut = env.dir.path().join("cut.osmt.zst");
    std::fs::write(&cut, &packed[..packed.len() / 2]).unwrap();
    let out = env
        .osmeter()
        .args(["memsim", "--no-store"])
        .arg(&cut)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("the zstd trace {} is cut short", cut.display())),
        "{err}"
    );
}

// ---- item 2: output that cannot be written -----------------------------------------------------

/// Runs osmeter with `args` and its stdout on /dev/full; returns stderr after checking that the
/// print failed with exit 1 and said the run was kept, and returns the id it named.
fn kept_despite_a_full_stdout(env: &TestEnv, args: &[&str]) -> String {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = env.osmeter_std().args(args).stdout(full).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(
        err.contains("cannot write the results to stdout"),
        "{args:?}: {err}"
    );
    let id = err
        .split("the run was kept all the same as ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("{args:?}: no kept run named: {err}"))
        .to_string();
    // The run is in the store, whole.
    let shown = env.json(&["show", &id, "--json"]);
    assert_eq!(shown["id"], id.as_str(), "{args:?}");
    id
}

#[test]
fn a_full_stdout_keeps_the_run_of_run_latency_and_memsim_and_names_it() {
    let env = TestEnv::new();
    let mut run = vec!["run", "syscall.null"];
    run.extend_from_slice(common::FAST);
    let a = kept_despite_a_full_stdout(&env, &run);
    let b = kept_despite_a_full_stdout(
        &env,
        &[
            "latency",
            "--duration",
            "1s",
            "--classes",
            "normal",
            "--json",
        ],
    );
    let trace = synth(&env, 20_000);
    let c = kept_despite_a_full_stdout(
        &env,
        &[
            "memsim",
            "--no-3c",
            "--preset",
            "ds5000-200",
            trace.to_str().unwrap(),
        ],
    );
    let runs = env.json(&["runs", "--json"]);
    let ids: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    for id in [&a, &b, &c] {
        assert!(ids.contains(&id.as_str()), "{id} in {ids:?}");
    }
    // Without a store there is nothing to keep, and the error says so.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = env
        .osmeter_std()
        .args(["run", "syscall.null", "--no-store"])
        .args(common::FAST)
        .stdout(full)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("with --no-store the run was not kept"),
        "{err}"
    );
}
