//! `osmeter stat [-r N] [--json] -- CMD ARGS...`: run a command N times, each time with counters
//! opened before its exec, and report time, rusage, counters (user and kernel apart) and the
//! interference seen, as the mean with a 95 % confidence interval and the coefficient of variation.

use crate::cli::StatArgs;
use crate::error::{EXIT_COMMAND_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::interrupt;
use crate::meter::interference::InterferenceReader;
use crate::meter::perf::{spawn_counted, CountedChild};
use crate::results::model::CounterScopes;
use anyhow::{anyhow, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::process::Command;

mod report;

use report::document;
pub use report::{render, FigureSummary};

pub const STAT_SCHEMA: &str = "osmeter.stat/1";

/// What one run of the command measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunRecord {
    pub wall_ns: u64,
    /// CPU time of the command and the descendants it waited for (wait4 rusage).
    pub user_ns: u64,
    pub system_ns: u64,
    pub max_rss_kib: u64,
    pub csw_voluntary: u64,
    pub csw_involuntary: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Whole counts over the run, scaled where the kernel multiplexed them.
    pub counters: CounterScopes,
    /// System-wide, during the run: interrupts on all CPUs and time stolen by the hypervisor.
    pub irq_timer: u64,
    pub irq_other: u64,
    pub steal_ms: f64,
}

impl RunRecord {
    fn failed(&self) -> bool {
        self.signal.is_some() || self.exit_code != Some(0)
    }
}

#[derive(Debug, Serialize)]
pub struct StatDoc {
    pub schema: &'static str,
    pub command: Vec<String>,
    /// Runs asked for; `runs` holds those that happened (fewer after a failure or Ctrl-C).
    pub repeat: usize,
    pub runs: Vec<RunRecord>,
    /// Figure key (`time:wall`, `software:page-faults`, `user:instructions`, ...) to its summary.
    pub summary: serde_json::Map<String, serde_json::Value>,
    pub counters_unavailable: BTreeMap<String, String>,
    /// True when some count was extrapolated from time enabled / time running.
    pub counters_scaled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    pub interrupted: bool,
}

/// The command line as a user would type it, for messages.
pub(super) fn shown(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
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
    argv: &[String],
    interference: &mut InterferenceReader,
) -> Result<(RunRecord, BTreeMap<String, String>)> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
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

pub fn stat(args: &StatArgs) -> Result<i32> {
    if args.repeat == 0 {
        return Err(crate::usage!(
            "-r/--repeat must be at least 1 (the number of times the command is run)"
        ));
    }
    let argv = &args.command;
    if argv.is_empty() || argv[0].is_empty() {
        return Err(crate::usage!(
            "no command given: osmeter stat -- CMD [ARGS...]"
        ));
    }
    crate::config::parse_tags(&args.keep.tags)?;
    if !args.keep.no_store {
        crate::results::store::Location::resolve(args.keep.store.store.as_deref())?;
    }
    interrupt::install();
    let started_at = super::run::now_rfc3339();
    let mut interference = InterferenceReader::new();
    let mut runs = Vec::with_capacity(args.repeat);
    let mut unavailable = BTreeMap::new();
    let mut failure = None;
    for i in 0..args.repeat {
        if interrupt::requested() {
            break;
        }
        let (record, missing) = run_once(argv, &mut interference)?;
        if i == 0 {
            unavailable = missing;
        }
        let failed = record.failed();
        runs.push(record);
        if failed {
            failure = Some(describe_failure(argv, &runs[i], i, args.repeat));
            break;
        }
    }
    let interrupted = interrupt::requested();
    let doc = document(argv, args.repeat, runs, unavailable, failure, interrupted);
    let text = if args.output.json {
        serde_json::to_string_pretty(&doc)? + "\n"
    } else {
        render(&doc)
    };
    super::emit(&text)?;
    if !doc.runs.is_empty() {
        super::keep_section(
            &args.keep,
            crate::results::model::Sections {
                other: [("stat".to_string(), serde_json::to_value(&doc)?)].into(),
                ..Default::default()
            },
            started_at,
            interrupted,
        )?;
    }
    if interrupted {
        eprintln!("osmeter: interrupted; the runs above are all that was measured");
        return Ok(EXIT_INTERRUPTED);
    }
    if let Some(f) = &doc.failure {
        eprintln!("osmeter: {f}");
        return Ok(EXIT_COMMAND_FAILED);
    }
    Ok(EXIT_OK)
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
