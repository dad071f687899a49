//! Headless Chromium for the report tests: where it is, how it is started (flags that work as
//! root in a container), and where screenshots go.

use super::which;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where screenshots go: target/, beside the tests' own temporary directory.
pub fn screenshot_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join(name)
}

pub fn chromium() -> Option<PathBuf> {
    let found = which("chromium").or_else(|| which("chromium-browser"));
    if found.is_none() {
        // CI installs it; elsewhere say loudly what was not checked.
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is missing: apt-get install -y chromium"
        );
        eprintln!(
            "SKIPPED the browser checks: chromium is not installed (apt-get install -y chromium)"
        );
    }
    found
}

/// Runs headless Chromium with a time limit; returns (stdout, stderr).
pub fn run_chromium(bin: &Path, profile: &Path, extra: &[String], url: &str) -> (String, String) {
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let out_pipe = child.stdout.take().unwrap();
    let err_pipe = child.stderr.take().unwrap();
    let read = |mut p: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = p.read_to_string(&mut s);
            s
        })
    };
    let (out_t, err_t) = (read(Box::new(out_pipe)), read(Box::new(err_pipe)));
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (out_t.join().unwrap(), err_t.join().unwrap())
}
