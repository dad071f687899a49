//! Processes seen through /proc, for the tests that stop osmeter with signals and check that
//! nothing it started outlived it.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// Parent PID of `pid`.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(") ")? + 2..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Every live process below `pid`.
pub fn descendants(pid: u32) -> Vec<u32> {
    let all = all_pids();
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(all.iter().filter(|&&c| parent_of(c) == Some(p)));
        i += 1;
    }
    found.remove(0);
    found
}

/// Whether `pid` still exists as more than a zombie.
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(s[s.rfind(") ")? + 2..].chars().next()? != 'Z'))
        .unwrap_or(false)
}

/// Live processes (not zombies) whose command line holds `marker`, this test process excluded.
pub fn with_marker(marker: &str) -> Vec<u32> {
    let me = std::process::id();
    all_pids()
        .into_iter()
        .filter(|&p| p != me && alive(p))
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .collect()
}

/// Waits up to `limit` for `ready`; false if it never held.
pub fn wait_until(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    ready()
}

/// Sends `signal` to `pid`.
pub fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: signalling a process the test started.
    unsafe { libc::kill(pid as libc::pid_t, signal) };
}

/// Kills every process whose command line holds `marker` (a test that failed before checking).
pub struct KillMarked(pub String);

impl Drop for KillMarked {
    fn drop(&mut self) {
        for p in with_marker(&self.0) {
            signal(p, libc::SIGKILL);
        }
    }
}

/// A unique word for a command line, so the test finds its own processes and no other.
pub fn marker(what: &str) -> String {
    format!("osmeter-{what}-{}-{}", std::process::id(), unique())
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

/// A unique number of seconds for `sleep` (21.PID0N): the command line finds it, and it sleeps
/// about 21 s, far longer than any test waits.
pub fn sleep_marker() -> String {
    format!("21.{}0{}", std::process::id(), unique())
}

/// The `sleep` processes among [`with_marker`]'s (not a shell or osmeter naming the marker).
pub fn sleeps_with_marker(marker: &str) -> usize {
    with_marker(marker)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sleep")
        })
        .count()
}
