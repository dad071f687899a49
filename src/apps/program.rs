//! Running one program of a workload: started with a fixed environment, waited for with a time
//! limit (a hung program is killed, not waited for forever), and checked: a program that fails
//! fails the figure with what it said on stderr.

use anyhow::{anyhow, bail, Context, Result};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A program ready to run again and again.
pub struct Program {
    command: Command,
    /// Where its stderr goes (a file in the scratch directory), read back when it fails.
    log: File,
    limit: Duration,
    name: String,
}

impl Program {
    /// `argv[0]` with arguments, run in `dir` with only PATH and LANG set (so the user's
    /// environment changes nothing), stdout discarded, stderr kept in an unnamed temporary file.
    pub fn new(argv: &[&str], dir: &Path, limit: Duration) -> Result<Program> {
        let (first, rest) = argv.split_first().context("an empty command")?;
        let log = tempfile::tempfile().context("cannot make a file for a program's messages")?;
        let mut command = crate::programs::command(first);
        command
            .args(rest)
            .current_dir(dir)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("LANG", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log.try_clone()?);
        // A workload's programs are what is measured, counted whole; they run as any program would,
        // not at the real-time class of a `--fifo` measuring thread (whose CPU-time limit would
        // also end a long compile with SIGXCPU).
        // SAFETY: sched_setscheduler is async-signal-safe and touches only the child.
        unsafe {
            command.pre_exec(|| {
                let param = libc::sched_param { sched_priority: 0 };
                if libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        crate::interrupt::die_with_parent(&mut command);
        Ok(Program {
            command,
            log,
            limit,
            name: first.rsplit('/').next().unwrap_or(first).to_string(),
        })
    }

    /// Adds an environment variable (after [`Program::new`] cleared them).
    pub fn env(&mut self, key: &str, value: &str) -> &mut Program {
        self.command.env(key, value);
        self
    }

    /// Runs it once and waits; an error names how it ended and the end of its stderr.
    pub fn run(&mut self) -> Result<()> {
        let mut child = self
            .command
            .spawn()
            .map_err(|e| crate::system::processes::cannot_start(&self.name, &e))?;
        let ended = wait_with_limit(child.id() as libc::pid_t, self.limit);
        if !ended {
            let _ = child.kill();
            let _ = child.wait();
            let said = self.said();
            bail!(
                "{} did not finish within {:?} and was killed{said}",
                self.name,
                self.limit
            );
        }
        let status = child
            .wait()
            .with_context(|| format!("cannot wait for {}", self.name))?;
        if !status.success() {
            let said = self.said();
            bail!("{} failed ({status}){said}", self.name);
        }
        Ok(())
    }

    /// The last lines the program wrote on stderr, for an error message.
    fn said(&mut self) -> String {
        let mut text = String::new();
        let _ = self.log.seek(SeekFrom::Start(0));
        let _ = self.log.read_to_string(&mut text);
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        if tail.is_empty() {
            String::new()
        } else {
            let lines: Vec<&str> = tail.into_iter().rev().collect();
            format!(": {}", lines.join(" / "))
        }
    }
}

/// Waits until process `pid` ends or `limit` passes (true when it ended), without reaping it.
/// A pidfd wakes the waiter the moment the process ends; without one, short sleeps.
fn wait_with_limit(pid: libc::pid_t, limit: Duration) -> bool {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd >= 0 {
        // SAFETY: the descriptor was just returned to us.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        let deadline = std::time::Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let mut pfd = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(&mut pfd, 1, ms) };
            if n > 0 {
                return true;
            }
            // Interrupted by Ctrl-C: the child got the signal too; keep waiting for it to end.
            if n == 0 && left.is_zero() {
                return false;
            }
        }
    }
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter; WNOWAIT leaves the child to be
        // reaped by Child::wait.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: si_pid is valid to read for a waitid result.
        if r == 0 && unsafe { info.si_pid() } == pid {
            return true;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    false
}

/// Checks that `argv` runs and succeeds once (a smoke test at set-up, so that a broken install
/// fails the figure before any timing), returning its first line of output.
pub fn version_line(argv: &[&str]) -> Result<String> {
    let out = crate::programs::command(argv[0])
        .args(&argv[1..])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "C")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| crate::system::processes::cannot_start(argv[0], &e))?;
    let text = String::from_utf8_lossy(if out.stdout.is_empty() {
        &out.stderr
    } else {
        &out.stdout
    })
    .into_owned();
    if !out.status.success() {
        return Err(anyhow!(
            "{} failed ({}): {}",
            argv.join(" "),
            out.status,
            text.trim()
        ));
    }
    Ok(text.lines().next().unwrap_or("").trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_that_fails_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = Program::new(
            &["/bin/sh", "-c", "echo broken input >&2; exit 3"],
            dir.path(),
            Duration::from_secs(10),
        )
        .unwrap();
        let e = p.run().unwrap_err().to_string();
        assert!(e.contains("sh failed") && e.contains("broken input"), "{e}");
    }

    #[test]
    fn a_program_runs_again_and_again_and_a_hung_one_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let mut ok = Program::new(&["/bin/true"], dir.path(), Duration::from_secs(10)).unwrap();
        for _ in 0..3 {
            ok.run().unwrap();
        }
        let mut hung = Program::new(
            &["/bin/sleep", "30"],
            dir.path(),
            Duration::from_millis(100),
        )
        .unwrap();
        let t = std::time::Instant::now();
        let e = hung.run().unwrap_err().to_string();
        assert!(e.contains("did not finish") && e.contains("killed"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(20));
        assert!(version_line(&["/bin/sh", "-c", "echo v1.2; echo x"]).unwrap() == "v1.2");
        assert!(version_line(&["/bin/false"]).is_err());
    }

    /// A program started from a thread at SCHED_FIFO (a `--fifo` worker) runs at SCHED_OTHER.
    #[test]
    fn a_program_started_from_a_real_time_thread_runs_at_the_normal_class() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = Program::new(
            &["/bin/sh", "-c", "grep ^policy /proc/$$/sched > policy"],
            dir.path(),
            Duration::from_secs(10),
        )
        .unwrap();
        let child_policy = std::thread::spawn(move || {
            let fifo = libc::sched_param { sched_priority: 10 };
            // SAFETY: changes only this short-lived test thread's class.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &fifo) } != 0 {
                return None;
            }
            p.run().unwrap();
            Some(std::fs::read_to_string(dir.path().join("policy")).unwrap())
        })
        .join()
        .unwrap();
        let Some(line) = child_policy else {
            eprintln!("skipped: this thread may not use SCHED_FIFO here");
            return;
        };
        // /proc/PID/sched writes the policy as a number: 0 is SCHED_OTHER, 1 SCHED_FIFO.
        assert_eq!(line.split(':').nth(1).map(str::trim), Some("0"), "{line}");
    }
}
