//! `osmeter latency --load app.NAME`: the real application runs as load (nginx on loopback, wish
//! and Xvfb, osmeter's own X client, the Andrew benchmark's gcc, Ghostscript, python3), and SIGTERM
//! to osmeter leaves no server, no X socket and no scratch file behind.

mod common;

use common::TestEnv;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// Pids of the processes whose command line or working directory mentions `needle` (a compiler
/// started in the copied tree names only relative paths).
fn processes_mentioning(needle: &str) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let cwd = std::fs::read_link(e.path().join("cwd")).unwrap_or_default();
        if cmd.contains(needle) || cwd.to_string_lossy().contains(needle) {
            out.push((pid, cmd));
        }
    }
    out
}

fn installed(program: &str, package: &str) -> bool {
    let found = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        .iter()
        .any(|d| Path::new(d).join(program).exists());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{program} is missing: apt-get install -y {package}"
        );
        eprintln!("SKIPPED: {program} is not installed (apt-get install -y {package})");
    }
    found
}

/// Runs `latency --load LOAD` in a fresh directory, waits until `program` runs from it, sends
/// SIGTERM, and checks the run's report and that nothing is left. The measurement starts only once
/// the application has done its first unit of work; on a busy machine that can take longer than
/// the wait, and the signal then ends a run that never measured (exit 130, nothing to report): that
/// attempt still has to leave nothing, and the next waits longer.
fn sigterm_leaves_nothing(load: &str, program: &str) {
    for settle in [1.5, 6.0, 20.0] {
        if attempt(load, program, Duration::from_secs_f64(settle)) {
            return;
        }
    }
    panic!("{load}: every SIGTERM came before the measurement started");
}

/// One run ended by SIGTERM after `settle`; false when it had not started measuring.
fn attempt(load: &str, program: &str, settle: Duration) -> bool {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    // Others may pass through (not list): nginx's workers run as nobody when the tests are root.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let marker = dir.path().to_string_lossy().into_owned();
    let child = env
        .osmeter_std()
        .args([
            "latency",
            "--duration",
            "120s",
            "--classes",
            "normal",
            "--paths",
            "timer",
            "--load",
            load,
            "--json",
            "--no-store",
            "--dir",
        ])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        seen = processes_mentioning(&marker);
        if seen.iter().any(|(_, c)| c.contains(program)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // The X socket, found from the display number Xvfb reported into the scratch directory.
    let sockets: Vec<_> = walk(dir.path())
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "display"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|n| format!("/tmp/.X11-unix/X{}", n.trim()))
        .collect();
    // Some work done under load before the signal.
    std::thread::sleep(settle);
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        seen.iter().any(|(_, c)| c.contains(program)),
        "{program} never ran: {seen:?}; {stderr}"
    );
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let measured = !out.stdout.is_empty();
    if measured {
        let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let loads = run["sections"]["latency"]["loads"].as_array().unwrap();
        let report = loads.iter().find(|l| l["load"] == load).unwrap();
        assert!(report["error"].is_null(), "{report}");
        assert!(report["ops"].as_u64().unwrap() > 0, "{report}");
    }
    // Nothing left: no process started from the directory, no socket, no file.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_mentioning(&marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        processes_mentioning(&marker).is_empty(),
        "{:?}",
        processes_mentioning(&marker)
    );
    for s in &sockets {
        assert!(!Path::new(s).exists(), "{s} left behind");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
    measured
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn web_load_serves_until_sigterm_and_leaves_nothing() {
    if installed("nginx", "nginx-light") {
        sigterm_leaves_nothing("app.web", "nginx");
    }
}

#[test]
fn wish_load_draws_until_sigterm_and_leaves_nothing() {
    if installed("Xvfb", "xvfb") && installed("wish", "tk") {
        sigterm_leaves_nothing("app.wish", "Xvfb");
    }
}

#[test]
fn bitblt_load_draws_until_sigterm_and_leaves_nothing() {
    if installed("Xvfb", "xvfb") {
        sigterm_leaves_nothing("app.bitblt", "Xvfb");
    }
}

#[test]
fn andrew_load_compiles_until_sigterm_and_leaves_nothing() {
    if installed("gcc", "gcc") {
        sigterm_leaves_nothing("app.andrew", "gcc");
    }
}

#[test]
fn ghostscript_load_renders_until_sigterm_and_leaves_nothing() {
    if installed("gs", "ghostscript") {
        sigterm_leaves_nothing("app.ghostscript", "gs");
    }
}

/// python3's command line does not name the scratch directory, so this run is watched by its
/// report and its directory instead: it ends by itself and says how many starts it made.
#[test]
fn interp_load_starts_python_and_reports_its_starts() {
    if !installed("python3", "python3") {
        return;
    }
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let out = env
        .osmeter()
        .args([
            "latency",
            "--duration",
            "3s",
            "--classes",
            "normal",
            "--paths",
            "timer",
            "--load",
            "app.interp",
            "--json",
            "--no-store",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let loads = run["sections"]["latency"]["loads"].as_array().unwrap();
    let report = loads.iter().find(|l| l["load"] == "app.interp").unwrap();
    assert!(report["error"].is_null(), "{report}");
    assert!(report["ops"].as_u64().unwrap() > 0, "{report}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_missing_load_name_is_a_usage_error_that_lists_the_app_loads() {
    let out = TestEnv::new()
        .osmeter()
        .args(["latency", "--load", "app.nginx", "--no-store"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        [
            "app.web",
            "app.bitblt",
            "app.andrew",
            "app.ghostscript",
            "app.interp"
        ]
        .iter()
        .all(|l| err.contains(l)),
        "{err}"
    );
}
