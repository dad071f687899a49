//! A command, run N times, each time with counters opened before its exec: time, rusage, counters
//! (user and kernel apart) and the interference seen, as the mean with a 95 % confidence interval
//! and the coefficient of variation.

use crate::guard::command::{nanos_between, GuardedChild, Stream};
use crate::interrupt;
use crate::meter::interference::InterferenceReader;
use crate::meter::perf::CounterSet;
use crate::text::command_line;
use anyhow::{anyhow, Result};
use std::collections::BTreeMap;

pub mod document;
pub mod figures;
pub mod html;
mod text;

pub use document::{FigureSummary, RunRecord, StatDoc, StatUnit, STAT_SCHEMA};
pub use text::{render, render_comparison};

/// Where the command's own standard output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandOutput {
    /// Nowhere (standard output and error): the default, as printing would be timed too.
    Discard,
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
    /// Runs before the measured ones, not kept (caches, page cache, CPU frequency settle).
    pub warmup: usize,
    /// A shell command run before every run (warm-up ones too), not measured.
    pub prepare: Option<String>,
}

/// How long a command has to end after the SIGINT passed on to it, before it is killed.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Most warm-up runs of a command (`--warmup`).
pub const MAX_WARMUP_RUNS: usize = 10_000;

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
            warmup: 0,
            prepare: None,
        })
    }

    /// With `warmup` discarded runs first (at most [`MAX_WARMUP_RUNS`]).
    pub fn with_warmup(mut self, warmup: usize) -> Result<StatConfig> {
        if warmup > MAX_WARMUP_RUNS {
            return Err(crate::usage!(
                "--warmup {warmup} is more than {MAX_WARMUP_RUNS} runs; a few settle caches"
            ));
        }
        self.warmup = warmup;
        Ok(self)
    }

    /// With `prepare` run by /bin/sh before every run.
    pub fn with_prepare(mut self, prepare: Option<String>) -> Result<StatConfig> {
        if prepare.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err(crate::usage!(
                "--prepare is empty: give a shell command, or leave it out"
            ));
        }
        self.prepare = prepare;
        Ok(self)
    }
}

/// Runs the command `repeat` times (fewer when a run fails or Ctrl-C comes) and summarises. An
/// error means the command could not be started at all.
pub fn measure(config: &StatConfig) -> Result<StatDoc> {
    Ok(measure_each(std::slice::from_ref(config))?.remove(0))
}

/// Runs several commands `repeat` times each, in turns (A B C A B C ...), so that a machine that
/// changes during the measurement changes every command's runs alike; each command's warm-up runs
/// come first. A command that fails is not run again; the others go on.
pub fn measure_each(configs: &[StatConfig]) -> Result<Vec<StatDoc>> {
    let mut interference = InterferenceReader::new();
    for config in configs {
        for _ in 0..config.warmup {
            if interrupt::requested() {
                break;
            }
            prepare(config)?;
            run_once(config, &mut interference)?;
        }
    }
    struct PerCommand {
        runs: Vec<RunRecord>,
        unavailable: BTreeMap<String, String>,
        failure: Option<String>,
    }
    let mut got: Vec<PerCommand> = configs
        .iter()
        .map(|c| PerCommand {
            runs: Vec::with_capacity(c.repeat),
            unavailable: BTreeMap::new(),
            failure: None,
        })
        .collect();
    let most = configs.iter().map(|c| c.repeat).max().unwrap_or(0);
    'turns: for i in 0..most {
        for (config, got) in configs.iter().zip(got.iter_mut()) {
            if interrupt::requested() {
                break 'turns;
            }
            if i >= config.repeat || got.failure.is_some() {
                continue;
            }
            prepare(config)?;
            let (record, missing) = run_once(config, &mut interference)?;
            if i == 0 {
                got.unavailable = missing;
            }
            let failed = record.failed();
            got.runs.push(record);
            if failed {
                got.failure = Some(describe_failure(
                    &config.argv,
                    &got.runs[i],
                    i,
                    config.repeat,
                ));
            }
        }
    }
    let interrupted = interrupt::requested();
    Ok(configs
        .iter()
        .zip(got)
        .map(|(config, got)| {
            StatDoc::new(
                &config.argv,
                config.repeat,
                got.runs,
                got.unavailable,
                got.failure,
                interrupted,
            )
        })
        .collect())
}

/// Runs `--prepare`'s command, which must succeed.
fn prepare(config: &StatConfig) -> Result<()> {
    let Some(prepare) = &config.prepare else {
        return Ok(());
    };
    // Under a guardian as the command is: what it starts ends with osmeter, SIGKILL included.
    let what = format!("--prepare `{prepare}` with /bin/sh");
    let mut child = GuardedChild::spawn(
        &["/bin/sh", "-c", prepare],
        Stream::Null,
        Stream::Inherit,
        None,
    )
    .and_then(|mut c| c.release().map(|_| c))
    .map_err(|e| crate::system::processes::cannot_start(&what, &e))?;
    let ended = child
        .wait(|child| {
            if interrupt::requested() {
                child.stop();
            }
        })
        .map_err(|e| anyhow!("waiting for --prepare `{prepare}`: {e}"))?;
    drop(child);
    let status: std::process::ExitStatus =
        std::os::unix::process::ExitStatusExt::from_raw(ended.status);
    if !status.success() && !interrupt::requested() {
        return Err(anyhow!(
            "--prepare `{prepare}` failed ({status}) before a run of `{}`; nothing after it was \
             measured",
            command_line(&config.argv)
        ));
    }
    Ok(())
}

/// Every command measured in turns (`measure_each`), then, with `profile`, each that ended well
/// once more under sampling; a Ctrl-C stops the sampling where it is.
pub fn measure_all(
    configs: &[StatConfig],
    profile: bool,
) -> Result<Vec<(StatDoc, Option<crate::results::profile::Profiles>)>> {
    let docs = measure_each(configs)?;
    let mut out = Vec::with_capacity(docs.len());
    for (config, doc) in configs.iter().zip(docs) {
        let wanted = profile && !doc.interrupted && doc.failure.is_none();
        let sampled = match wanted && !interrupt::requested() {
            true => Some(self::profile(config, &doc)?),
            false => None,
        };
        out.push((doc, sampled));
    }
    Ok(out)
}

/// The command once more under sampling (`stat --profile`), its output where the timed runs' went;
/// `timed`'s runs say how long it takes unsampled.
pub fn profile(config: &StatConfig, timed: &StatDoc) -> Result<crate::results::profile::Profiles> {
    let argv = &config.argv;
    let stdout = match config.output {
        CommandOutput::ToStderr => Stream::Stderr,
        CommandOutput::Discard | CommandOutput::Inherit => Stream::Inherit,
    };
    let mut walls: Vec<f64> = timed.runs.iter().map(|r| r.wall_ns as f64).collect();
    walls.sort_by(f64::total_cmp);
    let median = Some(crate::stats::summary::median(&walls)).filter(|ns| *ns > 0.0);
    crate::profile::command::profile_command(argv, stdout, &command_line(argv), median)
}

/// Why the command could not start: a limit of the system's named as such (see
/// crate::system::processes), else what exec said, with a hint.
fn start_error(program: &str, e: std::io::Error) -> anyhow::Error {
    let hint = match e.kind() {
        std::io::ErrorKind::NotFound => "; check the name, and that it is installed and on PATH",
        std::io::ErrorKind::PermissionDenied => "; is it an executable file?",
        _ => return crate::system::processes::cannot_start(&format!("`{program}`"), &e),
    };
    anyhow!("cannot start `{program}`: {e}{hint}")
}

fn tv_ns(tv: libc::timeval) -> u64 {
    tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000
}

/// Runs the command once. Returns the record and the events that could not be counted.
///
/// The command runs under a guardian (crate::guard::command), so that nothing it starts outlives
/// osmeter, SIGKILL included; the guardian only reports: the counters are opened here on the held
/// command, the start is taken here just before its exec, and the end, status and rusage are its
/// wait4's, exactly what a wait4 of osmeter's own gave.
fn run_once(
    config: &StatConfig,
    interference: &mut InterferenceReader,
) -> Result<(RunRecord, BTreeMap<String, String>)> {
    let argv = &config.argv;
    let (stdout, stderr) = match config.output {
        CommandOutput::ToStderr => (Stream::Stderr, Stream::Inherit),
        CommandOutput::Discard => (Stream::Null, Stream::Null),
        CommandOutput::Inherit => (Stream::Inherit, Stream::Inherit),
    };
    let irq0 = interference.read();
    let mut child =
        GuardedChild::spawn(argv, stdout, stderr, None).map_err(|e| start_error(&argv[0], e))?;
    let mut counters = CounterSet::open_for_process(child.pid());
    let started = child.release().map_err(|e| start_error(&argv[0], e))?;
    // Ctrl-C reaches the command through the terminal; it is passed on in case it did not (a
    // SIGTERM or SIGHUP sent to osmeter alone). A command still running a second later (a shell
    // waiting for a child that never saw the signal) is ended with all it started.
    let mut asked: Option<std::time::Instant> = None;
    let ended = child
        .wait(|child| match asked {
            None if interrupt::requested() => {
                asked = Some(std::time::Instant::now());
                child.signal(libc::SIGINT);
            }
            Some(t) if t.elapsed() >= STOP_GRACE => child.stop(),
            _ => {}
        })
        .map_err(|e| anyhow!("waiting for `{}`: {e}", command_line(argv)))?;
    let irq = interference.read().delta(&irq0);
    let reading = counters.read();
    // What the command left running ends now, before the next run.
    drop(child);
    let (status, ru) = (ended.status, ended.rusage);
    let record = RunRecord {
        wall_ns: nanos_between(started, ended.at),
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
        command_line(argv),
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
