//! What every X and web workload is given (where to put scratch files, how big, which seed), and
//! the process bookkeeping they share. Missing programs are [`super::packages`]' business.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How much work a workload does: `quick` fits the quick suite's budget, `full` is the size the
/// figures in the apps suite are meant for (the same choice as a probe's parameter space).
pub use crate::harness::env::Scale;

/// The small context a workload runs in.
#[derive(Debug, Clone)]
pub struct Context {
    /// Parent of the workload's scratch directory (made fresh and removed at the end).
    pub dir: PathBuf,
    pub scale: Scale,
    /// Every generated input (file sizes, request order, pixels) follows from this.
    pub seed: u64,
}

impl Context {
    pub fn new(dir: &Path, scale: Scale, seed: u64) -> Context {
        Context {
            dir: dir.to_path_buf(),
            scale,
            seed,
        }
    }
}

/// CPU time of a set of processes, user and kernel apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuTime {
    pub user_s: f64,
    pub system_s: f64,
}

impl CpuTime {
    /// What was spent between `earlier` and `self`.
    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user_s: (self.user_s - earlier.user_s).max(0.0),
            system_s: (self.system_s - earlier.system_s).max(0.0),
        }
    }

    pub fn plus(self, other: CpuTime) -> CpuTime {
        CpuTime {
            user_s: self.user_s + other.user_s,
            system_s: self.system_s + other.system_s,
        }
    }

    /// The calling thread's own time so far.
    pub fn this_thread() -> CpuTime {
        // SAFETY: getrusage fills the struct we pass.
        let ru = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
            ru
        };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        CpuTime {
            user_s: secs(ru.ru_utime),
            system_s: secs(ru.ru_stime),
        }
    }

    /// Time used so far by the live processes of process group `pgid` (a server's master and
    /// workers; an exited process's time is lost unless its parent has reaped it).
    pub fn of_group(pgid: libc::pid_t) -> CpuTime {
        let hz = crate::system::ticks_per_second();
        let mut total = CpuTime::default();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return total;
        };
        for entry in dir.flatten() {
            let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            if let Some(s) = parse_stat(&text) {
                if s.pgrp == pgid {
                    total.user_s += s.utime as f64 / hz;
                    total.system_s += s.stime as f64 / hz;
                }
            }
        }
        total
    }
}

/// The fields of /proc/PID/stat that the workloads use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub state: char,
    pub pgrp: libc::pid_t,
    pub utime: u64,
    pub stime: u64,
}

/// Parses /proc/PID/stat (the command name may hold spaces and parentheses: the fields start
/// after the last ')').
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    Some(ProcStat {
        state: f.first()?.chars().next()?,
        pgrp: f.get(2)?.parse().ok()?,
        utime: f.get(11)?.parse().ok()?,
        stime: f.get(12)?.parse().ok()?,
    })
}

/// True while process `pid` exists and has not ended (a zombie has ended).
pub fn alive(pid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|t| parse_stat(&t))
        .is_some_and(|s| s.state != 'Z' && s.state != 'X')
}

/// The pids of the live processes in process group `pgid`.
pub fn live_in_group(pgid: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: libc::pid_t = e.file_name().to_str()?.parse().ok()?;
            let s = parse_stat(&std::fs::read_to_string(e.path().join("stat")).ok()?)?;
            (s.pgrp == pgid && s.state != 'Z' && s.state != 'X').then_some(pid)
        })
        .collect()
}

/// Single-quotes a word for `sh -c`.
pub fn shell_word(s: &std::ffi::OsStr) -> String {
    format!("'{}'", s.to_string_lossy().replace('\'', r"'\''"))
}

/// The unprivileged account a server started by root runs as: `nobody`, with its own group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unprivileged {
    pub user: String,
    pub group: String,
    pub gid: u32,
}

/// `Some` when this process is root (a server must then drop to `nobody`), `None` when it is not
/// (the server runs as this user, which is unprivileged already).
pub fn unprivileged_account() -> anyhow::Result<Option<Unprivileged>> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let gid = passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.first() == Some(&"nobody"))
        .and_then(|f| f.get(3)?.parse::<u32>().ok())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "running as root, the web server would drop to the user nobody, which this \
                 system lacks: add it (adduser --system nobody) or run osmeter as a normal user"
            )
        })?;
    let groups = std::fs::read_to_string("/etc/group").unwrap_or_default();
    let group = groups
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(gid))
        .and_then(|f| f.first().map(|s| s.to_string()))
        .unwrap_or_else(|| gid.to_string());
    Ok(Some(Unprivileged {
        user: "nobody".into(),
        group,
        gid,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_fields_after_a_name_with_parentheses() {
        let text = "42 (a (b) c) S 1 40 40 0 -1 4194560 10 0 0 0 7 3 0 0 20 0 1 0 5 0 0";
        assert_eq!(
            parse_stat(text),
            Some(ProcStat {
                state: 'S',
                pgrp: 40,
                utime: 7,
                stime: 3
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        assert!(alive(std::process::id() as libc::pid_t));
    }

    #[test]
    fn shell_words_survive_quotes() {
        let w = shell_word(std::ffi::OsStr::new("a b'c"));
        let out = crate::programs::command("sh")
            .arg("-c")
            .arg(format!("printf %s {w}"))
            .output()
            .unwrap();
        assert_eq!(out.stdout, b"a b'c");
    }
}
