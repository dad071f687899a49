//! Application workloads end to end: real interpreters (and, below, real gcc, ghostscript and
//! fuse2fs), counted through a real cgroup, with nothing left behind.

mod common;

use common::apps::{figure, leaked_cgroups, run_of, software};
use common::{is_root, TestEnv};
use osmeter::results::model::Status;

#[test]
fn interpreters_start_counted_whole_in_a_cgroup_that_is_removed() {
    let env = TestEnv::new();
    let run = run_of(env.json(&[
        "run",
        "app.interp",
        "--rounds",
        "2",
        "--repeat",
        "2",
        "--min-time",
        "1ms",
        "--json",
        "--no-store",
    ]));
    for interp in ["python3", "perl", "tclsh"] {
        let m = figure(&run, "app.interp", &[("interp", interp)]);
        assert_eq!(m.status, Status::Ok, "{m:?}");
        assert!(m.summary.as_ref().unwrap().median > 0.0, "{m:?}");
        // Each operation starts a process: it faults pages in and spends time in both modes.
        assert!(software(m, "page-faults") >= 10.0, "{m:?}");
        assert!(software(m, "workload-user-ns") + software(m, "workload-kernel-ns") > 0.0);
        if is_root() {
            // Counted through the cgroup: the interpreter's own CPU time is in task-clock.
            assert!(
                software(m, "task-clock") > 100_000.0,
                "{interp}: {:?}",
                m.counters
            );
            assert!(
                m.warnings.iter().all(|w| !w.contains("getrusage")),
                "{:?}",
                m.warnings
            );
        }
        // Interrupts are named by source, and the machine's time by state.
        assert!(
            m.counters.software.keys().any(|k| k.starts_with("irq:")),
            "{:?}",
            m.counters
        );
        assert!(m.counters.software.contains_key("machine-idle-ns"));
    }
    assert!(leaked_cgroups().is_empty(), "{:?}", leaked_cgroups());
}

#[test]
fn the_table_shows_the_whole_workload_view() {
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .args([
            "run",
            "app.interp",
            "--set",
            "interp=perl",
            "--rounds",
            "1",
            "--repeat",
            "1",
            "--min-time",
            "1ms",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("App figures counted whole"), "{text}");
    let row = text
        .lines()
        .filter(|l| l.starts_with("app.interp interp=perl"))
        .nth(1)
        .unwrap_or_else(|| panic!("no whole-workload row: {text}"));
    assert!(row.contains('%'), "{row}");
}

#[test]
fn an_unknown_interpreter_is_a_clear_failure() {
    let env = TestEnv::new();
    let out = env
        .osmeter()
        .args([
            "run",
            "app.interp",
            "--set",
            "interp=ruby",
            "--rounds",
            "1",
            "--repeat",
            "1",
            "--no-store",
        ])
        .output()
        .unwrap();
    // Refused before anything is measured, naming the interpreters it takes.
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--set interp=ruby: app.interp takes interp")
            && text.contains("python3 (Python 3); perl (Perl); tclsh (Tcl)"),
        "{text}"
    );
}

#[test]
fn suites_hold_the_app_workloads_they_should() {
    let env = TestEnv::new();
    let out = env.osmeter().args(["list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("apps ") && text.contains("app.interp"),
        "{text}"
    );
}

const ONE_SHORT_ROUND: &[&str] = &common::one_round("1ms");

/// One round whose samples are long enough to span several timer ticks, so that the machine
/// certainly raises interrupts during them (a 1 ms sample of a busy loopback server often sees
/// none: loopback traffic raises no device interrupt).
const ONE_TICKED_ROUND: &[&str] = &common::one_round("200ms");

#[test]
fn ghostscript_renders_the_generated_document_counted_whole() {
    let env = TestEnv::new();
    let mut args = vec![
        "run",
        "app.ghostscript",
        "--set",
        "pages=2",
        "--json",
        "--no-store",
    ];
    args.extend_from_slice(ONE_SHORT_ROUND);
    let run = run_of(env.json(&args));
    let m = figure(&run, "app.ghostscript", &[]);
    if !std::path::Path::new("/usr/bin/gs").exists() {
        // Skipped, naming the package and the command that installs it.
        assert_eq!(m.status, Status::Skipped, "{m:?}");
        let why = m.reason.as_deref().unwrap();
        assert!(why.contains("apt-get install -y ghostscript") && why.contains("--install"));
        return;
    }
    assert_eq!(m.status, Status::Ok, "{m:?}");
    // Rendering two pages at 150 dpi is tens of milliseconds of user time at least.
    assert!(software(m, "workload-user-ns") > 5e6, "{:?}", m.counters);
    assert!(m.warnings.iter().any(|w| w.contains("2 pages")), "{m:?}");
}

#[test]
fn install_with_everything_present_changes_nothing() {
    if !is_root() || !std::path::Path::new("/usr/bin/gs").exists() {
        return;
    }
    let env = TestEnv::new();
    let mut args = vec![
        "run",
        "app.ghostscript",
        "--set",
        "pages=1",
        "--install",
        "--no-store",
    ];
    args.extend_from_slice(ONE_SHORT_ROUND);
    let out = env.osmeter().args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("installing"));
}

/// True when `program` is installed. Outside CI a missing one skips the test, saying which
/// package and how to install it; under CI=1 (`.ci/run` installs them) it fails.
fn installed_or_skip(program: &str, package: &str) -> bool {
    if std::path::Path::new(program).exists() {
        return true;
    }
    let how = format!("apt-get install -y {package}");
    assert!(
        std::env::var_os("CI").is_none(),
        "{program} is missing: {how}"
    );
    eprintln!("SKIPPED: {program} is not installed ({how})");
    false
}

/// The X sockets now in /tmp/.X11-unix.
fn x_sockets() -> Vec<String> {
    std::fs::read_dir("/tmp/.X11-unix")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A directory for a run's scratch files that nginx's workers (nobody, when the tests run as
/// root) may pass through.
fn passable_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    dir
}

/// Processes whose command line names `dir` (nginx's prefix, Xvfb's authority file).
fn processes_in(dir: &std::path::Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter_map(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            cmd.contains(&needle).then_some(cmd)
        })
        .collect()
}

/// Nothing of a run in `dir` is left: no workload cgroup, no server, no files, and no X socket
/// that nobody answers on (a socket another test's live Xvfb holds is not ours).
fn assert_served_nothing_left(dir: &std::path::Path, sockets_before: &[String]) {
    assert!(leaked_cgroups().is_empty(), "{:?}", leaked_cgroups());
    assert!(processes_in(dir).is_empty(), "{:?}", processes_in(dir));
    assert!(
        common::entries(dir).is_empty(),
        "{:?}",
        common::entries(dir)
    );
    for s in x_sockets() {
        if sockets_before.contains(&s) {
            continue;
        }
        let path = std::path::Path::new("/tmp/.X11-unix").join(&s);
        assert!(
            std::os::unix::net::UnixStream::connect(&path).is_ok(),
            "{} left behind by a server that is gone",
            path.display()
        );
    }
}

/// Runs `osmeter run ARGS ROUND` stored in the test's store in `dir`, then reads the stored run
/// back.
fn stored_run(
    env: &TestEnv,
    dir: &std::path::Path,
    args: &[&str],
    round: &[&str],
) -> osmeter::results::model::Run {
    let dir = dir.to_string_lossy().into_owned();
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--dir", &dir, "--json"]);
    all.extend_from_slice(round);
    let id = env.json(&all)["id"].as_str().unwrap().to_string();
    run_of(env.json(&["show", &id, "--json"]))
}

/// The figure is measured and counted whole: the cgroup's user and kernel time, its switches, the
/// machine's time by state and interrupts by source.
fn assert_counted_whole(m: &osmeter::results::model::Measurement) {
    assert_eq!(m.status, Status::Ok, "{m:?}");
    assert!(m.summary.as_ref().unwrap().median > 0.0, "{m:?}");
    assert!(
        software(m, "workload-user-ns") + software(m, "workload-kernel-ns") > 0.0,
        "{:?}",
        m.counters
    );
    assert!(software(m, "context-switches") > 0.0, "{:?}", m.counters);
    assert!(m.counters.software.contains_key("machine-idle-ns"));
}

/// Interrupts by source are counted for some figure of `probe` (a sample shorter than a timer
/// tick may see none: measure with [`ONE_TICKED_ROUND`]).
fn assert_some_interrupts(run: &osmeter::results::model::Run, probe: &str) {
    assert!(
        run.measurements
            .iter()
            .filter(|m| m.probe == probe)
            .any(|m| m.counters.software.keys().any(|k| k.starts_with("irq:"))),
        "no interrupts counted for {probe}"
    );
}

#[test]
fn web_serves_counted_whole_with_nginx_in_the_cgroup_and_is_stored() {
    if !installed_or_skip("/usr/sbin/nginx", "nginx-light") {
        return;
    }
    let env = TestEnv::new();
    let dir = passable_dir();
    let before = x_sockets();
    let run = stored_run(
        &env,
        dir.path(),
        &[
            "app.web",
            "--set",
            "conn=close",
            "--set",
            "cache=warm",
            "--set",
            "clients=4",
        ],
        ONE_TICKED_ROUND,
    );
    for stat in ["time", "p50", "p99"] {
        let m = figure(&run, "app.web", &[("stat", stat), ("clients", "4")]);
        assert_counted_whole(m);
        // A new connection per request: the client and nginx both switch for every one.
        assert!(software(m, "context-switches") >= 1.0, "{:?}", m.counters);
    }
    assert_some_interrupts(&run, "app.web");
    let time = figure(&run, "app.web", &[("stat", "time")]);
    // Also a bandwidth: the trace's mean body per request.
    assert!(time.bytes_per_op.unwrap() > 1000, "{time:?}");
    assert_served_nothing_left(dir.path(), &before);
}

#[test]
fn bitblt_and_wish_draw_on_an_xvfb_counted_whole_and_are_stored() {
    if !installed_or_skip("/usr/bin/Xvfb", "xvfb") || !installed_or_skip("/usr/bin/wish", "tk") {
        return;
    }
    let env = TestEnv::new();
    let dir = passable_dir();
    let before = x_sockets();
    let run = stored_run(
        &env,
        dir.path(),
        &["app.bitblt", "app.wish", "--set", "panels=3"],
        ONE_TICKED_ROUND,
    );
    for depth in ["1", "24"] {
        for path in ["put-image", "copy-area"] {
            let m = figure(&run, "app.bitblt", &[("depth", depth), ("path", path)]);
            assert_counted_whole(m);
            // 570 pixels: 72 bytes a row at 1 bit, 2280 at 32 bits per pixel; 760 rows.
            let row = if depth == "1" { 72 } else { 2280 };
            assert_eq!(m.bytes_per_op, Some(row * 760), "{m:?}");
        }
    }
    assert_some_interrupts(&run, "app.bitblt");
    let wish = figure(&run, "app.wish", &[("panels", "3")]);
    assert_counted_whole(wish);
    // Xvfb draws in the same cgroup: a wish run is many switches between client and server.
    assert!(
        software(wish, "context-switches") > 20.0,
        "{:?}",
        wish.counters
    );
    assert!(software(wish, "page-faults") > 100.0, "{:?}", wish.counters);
    assert_served_nothing_left(dir.path(), &before);
}

#[test]
fn a_missing_server_package_names_its_install_command() {
    // Whatever is installed, the registry names the packages `--install` would fetch.
    let env = TestEnv::new();
    let out = env.osmeter().args(["list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for id in ["app.web", "app.wish", "app.bitblt"] {
        assert!(text.contains(id), "{id} not listed: {text}");
    }
    if std::path::Path::new("/usr/sbin/nginx").exists() {
        return;
    }
    let mut args = vec![
        "run",
        "app.web",
        "--set",
        "clients=1",
        "--json",
        "--no-store",
    ];
    args.extend_from_slice(ONE_SHORT_ROUND);
    let run = run_of(env.json(&args));
    let m = figure(&run, "app.web", &[]);
    assert_eq!(m.status, Status::Skipped, "{m:?}");
    let why = m.reason.as_deref().unwrap();
    assert!(why.contains("apt-get install -y nginx-light"), "{why}");
}

#[test]
fn ctrl_c_during_web_leaves_nothing() {
    if !installed_or_skip("/usr/sbin/nginx", "nginx-light") {
        return;
    }
    let env = TestEnv::new();
    let dir = passable_dir();
    let before = x_sockets();
    let mut cmd = env.osmeter_std();
    cmd.args([
        "run",
        "app.web",
        "--set",
        "conn=keep-alive",
        "--set",
        "cache=warm",
        "--rounds",
        "3",
        "--no-store",
        "--dir",
    ])
    .arg(dir.path());
    let (out, _) = common::interrupt_after(&mut cmd, std::time::Duration::from_secs(1), || {
        // Interrupt once nginx serves, inside the run's directory, and the samples have begun.
        let t = std::time::Instant::now();
        while processes_in(dir.path()).is_empty() && t.elapsed().as_secs() < 60 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(
            !processes_in(dir.path()).is_empty(),
            "nginx never ran in {}",
            dir.path().display()
        );
        std::thread::sleep(std::time::Duration::from_millis(1500));
    });
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_served_nothing_left(dir.path(), &before);
}

#[test]
fn show_and_the_report_give_the_whole_workload_view_of_a_stored_run() {
    let env = TestEnv::new();
    let mut args = vec!["run", "app.interp", "--set", "interp=perl", "--json"];
    args.extend_from_slice(ONE_SHORT_ROUND);
    let id = env.json(&args)["id"].as_str().unwrap().to_string();
    // `show` prints what `run` printed under the table, shares of the machine's time included.
    let out = env.osmeter().args(["show", &id]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("App figures counted whole"), "{text}");
    assert!(text.contains("m.idle"), "{text}");
    let html_path = env.dir.path().join("report.html");
    let out = env
        .osmeter()
        .args(["report", &id, "-o"])
        .arg(&html_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    let section = &html[html
        .find("id=\"apps\"")
        .unwrap_or_else(|| panic!("no apps section"))..];
    assert!(
        section.contains("app.interp interp=perl") && section.contains("kernel share"),
        "{}",
        &section[..section.len().min(2000)]
    );
}
