//! tracefs left as it was found whatever ends osmeter: no mount in the mount table, and a trace
//! instance left by a killed run removed (and reported) by the next one.

mod common;
use common::TestEnv;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The test's own view of tracefs: a private detached mount, so looking changes nothing and does
/// not depend on the code under test.
struct View {
    fd: OwnedFd,
}

impl View {
    fn open() -> Option<View> {
        // SAFETY: fsopen/fsconfig/fsmount with a NUL-terminated name and checked results.
        unsafe {
            let fs = libc::syscall(libc::SYS_fsopen, c"tracefs".as_ptr(), 1);
            if fs < 0 {
                return None;
            }
            let fs = OwnedFd::from_raw_fd(fs as i32);
            let null = std::ptr::null::<libc::c_void>();
            if libc::syscall(libc::SYS_fsconfig, fs.as_raw_fd(), 6, null, null, 0) < 0 {
                return None;
            }
            let m = libc::syscall(libc::SYS_fsmount, fs.as_raw_fd(), 1, 0);
            (m >= 0).then(|| View {
                fd: OwnedFd::from_raw_fd(m as i32),
            })
        }
    }

    fn instances_dir(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}/instances", self.fd.as_raw_fd()))
    }

    fn instances_of(&self, pid: u32) -> Vec<String> {
        std::fs::read_dir(self.instances_dir())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n == &format!("osmeter-{pid}") || n.starts_with(&format!("osmeter-{pid}-")))
            .collect()
    }
}

fn tracefs_mounts() -> usize {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(" - tracefs "))
        .count()
}

/// Kills the child and removes what it left if the test fails half-way.
struct Cleanup<'a> {
    child: std::process::Child,
    view: &'a View,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for name in self.view.instances_of(self.child.id()) {
            let _ = std::fs::remove_dir(self.view.instances_dir().join(name));
        }
    }
}

fn latency_trace(duration: &str) -> Vec<String> {
    [
        "latency",
        "--trace",
        "--threshold",
        "10s",
        "--classes",
        "normal",
        "--paths",
        "timer",
        "--duration",
        duration,
        "--no-store",
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn an_instance_left_by_kill_9_is_removed_by_the_next_run_and_nothing_is_mounted() {
    if !is_root() {
        eprintln!("skipped: tracefs needs root");
        return;
    }
    let Some(view) = View::open() else {
        eprintln!("skipped: this kernel gives no private tracefs mount");
        return;
    };
    let mounts_before = tracefs_mounts();
    let env = TestEnv::new();
    let child = env
        .osmeter_std()
        .args(latency_trace("60s"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut guard = Cleanup { child, view: &view };
    let deadline = Instant::now() + Duration::from_secs(20);
    let recording = |names: Vec<String>| {
        names.iter().any(|n| {
            std::fs::read_to_string(view.instances_dir().join(n).join("tracing_on"))
                .is_ok_and(|t| t.trim() == "1")
        })
    };
    while !recording(view.instances_of(pid)) {
        assert!(
            Instant::now() < deadline,
            "no recording trace instance appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGKILL: no handler, no destructor runs.
    guard.child.kill().unwrap();
    guard.child.wait().unwrap();
    let left = view.instances_of(pid);
    assert_eq!(left.len(), 1, "{left:?}");
    let tracing_on = view.instances_dir().join(&left[0]).join("tracing_on");
    assert_eq!(
        std::fs::read_to_string(tracing_on).unwrap().trim(),
        "1",
        "the killed run's instance should still be recording"
    );
    assert_eq!(
        tracefs_mounts(),
        mounts_before,
        "tracefs was mounted in the mount table and stays mounted after kill -9"
    );

    let out = env.osmeter().args(latency_trace("300ms")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("removed trace instance {}", left[0]))
            && stderr.contains("no longer runs"),
        "the second run did not say it removed {}: {stderr}",
        left[0]
    );
    assert!(
        view.instances_of(pid).is_empty(),
        "the killed run's instance is still there"
    );
    assert_eq!(tracefs_mounts(), mounts_before, "the mount table changed");
}
