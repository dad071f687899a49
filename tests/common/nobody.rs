//! osmeter as nobody, the unprivileged user of the hostile tests (tests/hostile_round4b.rs,
//! tests/hostile_process_limits.rs): a home of its own, resource limits set once it is nobody,
//! and its tasks counted through /proc (what RLIMIT_NPROC counts), so that a case can wait for an
//! earlier one's processes to be gone and prove that it left none behind.
#![allow(dead_code)]

use super::procs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn all_output(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// Longer than any case here takes on the slowest machine: only a hang reaches it.
pub const HANG: Duration = Duration::from_secs(240);

/// Runs `cmd` to its end, or kills it at [`HANG`] and fails: the cases here once never ended.
pub fn output_or_hang(cmd: &mut Command, what: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ended = procs::wait_until(HANG, || matches!(child.try_wait(), Ok(Some(_))));
    if !ended {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "{what}: still running after {HANG:?}; it printed:\n{}",
            all_output(&out)
        );
    }
    child.wait_with_output().unwrap()
}

/// One case as nobody at a time: RLIMIT_NPROC counts every process of the user, so two cases at
/// once would count each other's.
pub static AS_NOBODY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A directory nobody may traverse (mode 755), for what nobody reads.
pub fn open_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// A directory of nobody's own inside `parent`.
pub fn nobodys_dir(parent: &Path, name: &str) -> PathBuf {
    let d = parent.join(name);
    std::fs::create_dir(&d).unwrap();
    std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
    d
}

/// osmeter as nobody (see common::osmeter_as_nobody) with a home of its own under `home`, so
/// nothing it writes goes to root's.
pub fn as_nobody(home: &Path) -> Option<Command> {
    let mut c = super::osmeter_as_nobody()?;
    c.env_remove("OSMETER_STORE")
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"));
    Some(c)
}

/// osmeter as nobody under `ulimit -u tasks`, set by prlimit once it is nobody: set before the
/// change of user, the limit would make the kernel refuse the exec itself whenever nobody already
/// runs a process. Waits first, boundedly, for nobody's processes of an earlier case to be gone,
/// as they count against the limit too.
pub fn as_nobody_with_tasks(home: &Path, tasks: u64) -> Option<Command> {
    let (setpriv, prlimit) = (super::which("setpriv")?, super::which("prlimit")?);
    if !super::is_root() {
        return None;
    }
    procs::wait_until(Duration::from_secs(10), || nobodys_tasks() == 0);
    // Other processes of nobody count against the limit too: it is set above them.
    let tasks = tasks + nobodys_tasks() as u64;
    let mut c = Command::new(setpriv);
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
    ])
    .arg(prlimit)
    .arg(format!("--nproc={tasks}"))
    .arg(assert_cmd::cargo::cargo_bin("osmeter"))
    .env_remove("OSMETER_STORE")
    .env("HOME", home)
    .env("XDG_DATA_HOME", home.join("data"))
    .env("XDG_CACHE_HOME", home.join("cache"));
    super::default_signals(&mut c);
    Some(c)
}

/// Tasks (threads of every process) of nobody (uid 65534) now: what RLIMIT_NPROC counts.
pub fn nobodys_tasks() -> usize {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .bytes()
                        .all(|b| b.is_ascii_digit())
                })
                .filter(|e| {
                    std::fs::read_to_string(e.path().join("status")).is_ok_and(|s| {
                        s.lines().any(|l| {
                            l.strip_prefix("Uid:")
                                .is_some_and(|u| u.split_whitespace().next() == Some("65534"))
                        })
                    })
                })
                .map(|e| {
                    std::fs::read_to_string(e.path().join("status"))
                        .ok()
                        .and_then(|s| {
                            s.lines()
                                .find_map(|l| l.strip_prefix("Threads:"))
                                .and_then(|n| n.trim().parse::<usize>().ok())
                        })
                        .unwrap_or(1)
                })
                .sum()
        })
        .unwrap_or(0)
}
