//! A command, run N times, each time with counters opened before its exec: time, rusage, counters
//! (user and kernel apart) and the interference seen, as the mean with a 95 % confidence interval
//! and the coefficient of variation.

use crate::interrupt;
use crate::meter::interference::InterferenceReader;
use crate::meter::perf::{spawn_counted, CountedChild};
use anyhow::{anyhow, Result};
use std::collections::BTreeMap;
use std::process::Command;

pub mod document;
mod report;

pub use document::{FigureSummary, RunRecord, StatDoc, StatUnit, STAT_SCHEMA};
pub use report::render;

/// Where the command's own standard output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandOutput {
    /// To osmeter's standard output (the results go to a file).
    Inherit,
    /// To osmeter's standard error, so that osmeter's results alone are on standard output.
    ToStderr,
}

/// What `osmeter stat` measures.
#[derive(Debug, Clone)]
pub struct StatConfig {
    pub argv: Vec<String>,
    pub repeat: usize,
    pub output: CommandOutput,
}

impl StatConfig {
    pub fn new(argv: Vec<String>, repeat: usize, output: CommandOutput) -> Result<StatConfig> {
        if repeat == 0 {
            return Err(crate::usage!(
                "-r/--repeat must be at least 1 (the number of times the command is run)"
            ));
        }
        // Each run's record (with its counter maps) is kept until the end.
        let have = crate::budget::Have::here(&std::env::temp_dir());
        crate::budget::check_samples("-r/--repeat", repeat as u64, 1024, &have)?;
        if argv.first().is_none_or(|a| a.is_empty()) {
            return Err(crate::usage!(
                "no command given: osmeter stat -- CMD [ARGS...]"
            ));
        }
        Ok(StatConfig {
            argv,
            repeat,
            output,
        })
    }
}

/// Runs the command `repeat` times (fewer when a run fails or Ctrl-C comes) and summarises. An
/// error means the command could not be started at all.
pub fn measure(config: &StatConfig) -> Result<StatDoc> {
    let argv = &config.argv;
    let mut interference = InterferenceReader::new();
    let mut runs = Vec::with_capacity(config.repeat);
    let mut unavailable = BTreeMap::new();
    let mut failure = None;
    for i in 0..config.repeat {
        if interrupt::requested() {
            break;
        }
        let (record, missing) = run_once(config, &mut interference)?;
        if i == 0 {
            unavailable = missing;
        }
        let failed = record.failed();
        runs.push(record);
        if failed {
            failure = Some(describe_failure(argv, &runs[i], i, config.repeat));
            break;
        }
    }
    let interrupted = interrupt::requested();
    Ok(StatDoc::new(
        argv,
        config.repeat,
        runs,
        unavailable,
        failure,
        interrupted,
    ))
}

/// The command once more under sampling (`stat --profile`), its output where the timed runs' went.
pub fn profile(config: &StatConfig) -> Result<crate::results::profile::Profiles> {
    let argv = &config.argv;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    if config.output == CommandOutput::ToStderr {
        cmd.stdout(std::io::stderr());
    }
    interrupt::die_with_parent(&mut cmd);
    crate::profile::command::profile_command(cmd, &shown(argv))
}

/// The command line as a user would type it, for messages.
pub fn shown(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                a.clone()
            } else {
                // Quoted for a shell, and control characters shown escaped: a stored command is
                // printed in tables, and a line feed in it would start a new row.
                let quoted = format!("'{}'", a.replace('\'', r"'\''"));
                crate::text::escape_controls(&quoted).into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn start_error(program: &str, e: std::io::Error) -> anyhow::Error {
    let hint = match e.kind() {
        std::io::ErrorKind::NotFound => "; check the name, and that it is installed and on PATH",
        std::io::ErrorKind::PermissionDenied => "; is it an executable file?",
        _ => "",
    };
    anyhow!("cannot start `{program}`: {e}{hint}")
}

/// Waits for the child with wait4, so its rusage (and that of the descendants it reaped) comes
/// back. Ctrl-C reaches the child through the terminal; it is forwarded in case it did not.
fn wait_child(pid: libc::pid_t) -> Result<(libc::c_int, libc::rusage)> {
    let mut forwarded = false;
    loop {
        let mut status = 0;
        // SAFETY: rusage is plain old data, filled by wait4.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers to locals.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            return Ok((status, ru));
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(anyhow!("waiting for the command (pid {pid}): {err}"));
        }
        if interrupt::requested() && !forwarded {
            forwarded = true;
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGINT) };
        }
    }
}

fn tv_ns(tv: libc::timeval) -> u64 {
    tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000
}

/// Runs the command once. Returns the record and the events that could not be counted.
fn run_once(
    config: &StatConfig,
    interference: &mut InterferenceReader,
) -> Result<(RunRecord, BTreeMap<String, String>)> {
    let argv = &config.argv;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    if config.output == CommandOutput::ToStderr {
        cmd.stdout(std::io::stderr());
    }
    // It stays in osmeter's process group (the terminal's Ctrl-C and job control reach it), and
    // still ends with osmeter when that is killed outright.
    interrupt::die_with_parent(&mut cmd);
    let irq0 = interference.read();
    let CountedChild {
        child,
        mut counters,
        started,
    } = spawn_counted(cmd).map_err(|e| start_error(&argv[0], e))?;
    let (status, ru) = wait_child(child.id() as libc::pid_t)?;
    let wall = started.elapsed();
    let irq = interference.read().delta(&irq0);
    let reading = counters.read();
    let record = RunRecord {
        wall_ns: wall.as_nanos() as u64,
        user_ns: tv_ns(ru.ru_utime),
        system_ns: tv_ns(ru.ru_stime),
        max_rss_kib: ru.ru_maxrss as u64,
        csw_voluntary: ru.ru_nvcsw as u64,
        csw_involuntary: ru.ru_nivcsw as u64,
        exit_code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        counters: crate::meter::counts_since_open(&reading),
        irq_timer: irq.irq_timer,
        irq_other: irq.irq_other,
        steal_ms: irq.steal_ms,
    };
    Ok((record, counters.unavailable().clone()))
}

fn describe_failure(argv: &[String], r: &RunRecord, index: usize, repeat: usize) -> String {
    let how = match (r.exit_code, r.signal) {
        (_, Some(sig)) => {
            // SAFETY: strsignal returns a pointer to a static or thread-local string.
            let name = unsafe { std::ffi::CStr::from_ptr(libc::strsignal(sig)) };
            format!("was killed by signal {sig} ({})", name.to_string_lossy())
        }
        (Some(code), None) => format!("exited with status {code}"),
        (None, None) => "ended in an unknown way".to_string(),
    };
    let rest = if index + 1 < repeat {
        "; the remaining runs were not made"
    } else {
        ""
    };
    format!(
        "`{}` {how} in run {} of {repeat}{rest}",
        shown(argv),
        index + 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_described() {
        let r = RunRecord {
            exit_code: Some(4),
            ..Default::default()
        };
        assert!(r.failed());
        let argv = ["sh".to_string(), "-c".to_string(), "exit 4".to_string()];
        let msg = describe_failure(&argv, &r, 0, 3);
        assert!(
            msg.contains("`sh -c 'exit 4'` exited with status 4 in run 1 of 3"),
            "{msg}"
        );
        let r = RunRecord {
            signal: Some(libc::SIGKILL),
            ..Default::default()
        };
        assert!(describe_failure(&argv, &r, 2, 3).contains("signal 9"));
    }
}
