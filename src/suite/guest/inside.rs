//! The part of a guest run that runs inside the guest (`osmeter guest-inside`, started by the
//! guest's init): every point of the plan's probes is built, warmed up once, then run twice
//! between marker instructions, with `n` and `2n` operations. The plugin's totals at the
//! markers give each window's counts; their difference over `n` is one operation, free of the
//! fixed cost of a window (the markers, the call into the workload, its set-up). One JSON line per
//! point goes to the report port, so the host can pair windows with points.

use super::plan::Plan;
use crate::capture::system::marker;
use crate::harness::{NullWorkload, Workload};
use crate::probes::{self, Built, FileSystems, ProbeEnv, Scale};
use crate::results::model::Params;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// The id under which the empty timed loop is reported.
pub const LOOP: &str = "harness.loop";

/// One line of the guest's report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(tag = "line", rename_all = "lowercase")]
pub enum ReportLine {
    /// First: the guest is up and osmeter runs.
    Start {
        release: String,
        /// "release" or "debug": a debug build's loops cost several times the instructions.
        #[serde(default)]
        build: String,
        /// The comparisons of the seccomp filter every probe runs under (`osmeter.seccomp=` on
        /// the kernel command line), when there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seccomp_rules: Option<u32>,
    },
    Point {
        probe: String,
        params: Params,
        /// Marker pairs executed for this point, in order (0 when it did not run).
        windows: u32,
        outcome: Outcome,
    },
    /// Last: every point was reported.
    Done,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Outcome {
    Ok {
        iterations: u64,
        subtract_loop: bool,
        /// Which of the point's windows (from 0) counted n and 2n operations.
        short: u32,
        long: u32,
        /// No window of some size passed without an interrupt: the counts include one.
        disturbed: bool,
    },
    Skipped {
        reason: String,
    },
    Failed {
        error: String,
    },
}

struct Reporter(std::fs::File);

impl Reporter {
    fn line(&mut self, l: &ReportLine) -> Result<()> {
        let mut text = serde_json::to_string(l)?;
        text.push('\n');
        self.0.write_all(text.as_bytes())?;
        self.0.flush()?;
        Ok(())
    }
}

/// Attempts at a window without an interrupt in it, per window size, before the window is made
/// shorter.
pub const TRIES: u32 = 3;

/// Interrupts the guest kernel has taken so far (the total of /proc/stat's `intr` line); 0
/// where it cannot be read, which makes every window look clean.
fn interrupts() -> u64 {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("intr "))
                .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// Counts windows of one workload. A timer tick that lands in a window adds its tens of
/// thousands of kernel instructions to it, and where it lands moves with any change to the
/// guest; so each window is repeated until one passes without an interrupt (read before and
/// after it, outside the markers), and that one is used.
struct Windows<'a> {
    w: &'a mut dyn Workload,
    /// Marker pairs executed so far.
    executed: u32,
    disturbed: bool,
}

impl Windows<'_> {
    fn once(&mut self, k: u64, counted: bool) -> Result<bool> {
        self.w.prepare(k)?;
        let before = interrupts();
        if counted {
            marker::start();
        }
        let ran = self.w.run(k);
        if counted {
            marker::end();
            self.executed += 1;
        }
        let clean = interrupts() == before;
        ran?;
        self.w.finish()?;
        Ok(clean)
    }

    /// The index of a clean window of `k` operations (the last tried when none was clean).
    fn clean(&mut self, k: u64) -> Result<u32> {
        for _ in 0..TRIES {
            if self.once(k, true)? {
                return Ok(self.executed - 1);
            }
        }
        self.disturbed = true;
        Ok(self.executed - 1)
    }
}

impl Windows<'_> {
    /// Clean windows of n and 2n operations, n made four times smaller while a window of some
    /// size cannot pass without a timer tick (an operation of tens of thousands of instructions,
    /// two thousand times, is longer than the tick's period). Returns n and the two windows.
    fn pair(&mut self, mut n: u64) -> Result<(u64, u32, u32)> {
        loop {
            self.disturbed = false;
            let short = self.clean(n)?;
            let long = self.clean(2 * n)?;
            if !self.disturbed || n == 1 {
                return Ok((n, short, long));
            }
            n = (n / 4).max(1);
        }
    }
}

/// Operations per window after a warm-up of `n` that `ticks` interrupts fell into: the longer
/// window (2n) made an eighth of the time between two of them or less, so that most windows pass
/// clean at the first try. Without it an operation of a million instructions (an exec) would run
/// windows of hundreds, each tried and shortened several times before one passed.
fn fit_between_ticks(n: u64, ticks: u64) -> u64 {
    if ticks == 0 {
        return n;
    }
    (n / ticks.saturating_mul(8)).max(1)
}

/// Runs one workload: a warm-up (first-touch page faults and lazy binding belong to no
/// operation), then clean windows of n and 2n operations, n fitted between timer ticks by what
/// the warm-up saw. Returns the windows executed and the outcome.
fn count(w: &mut dyn Workload, iterations: u64) -> (u32, Outcome) {
    let n = iterations.min(w.max_iters() / 2).max(1);
    let subtract_loop = w.subtract_loop_overhead();
    let mut ws = Windows {
        w,
        executed: 0,
        disturbed: false,
    };
    let before = interrupts();
    let result = ws
        .once(n, false)
        .and_then(|_| ws.pair(fit_between_ticks(n, interrupts() - before)));
    let outcome = match result {
        Ok((n, short, long)) => Outcome::Ok {
            iterations: n,
            subtract_loop,
            short,
            long,
            disturbed: ws.disturbed,
        },
        Err(e) => Outcome::Failed {
            error: format!("{e:#}"),
        },
    };
    (ws.executed, outcome)
}

fn point(
    def: &probes::ProbeDef,
    params: &Params,
    scratch: &Path,
    iterations: u64,
) -> (u32, Outcome) {
    let env = ProbeEnv {
        scratch,
        cpu: 0,
        scale: Scale::Quick,
        file_systems: FileSystems::Scratch,
    };
    match (def.build)(&env, params) {
        Ok(Built::Ready(mut w)) => count(w.as_mut(), iterations),
        Ok(Built::Skip(reason)) => (0, Outcome::Skipped { reason }),
        Err(e) => (
            0,
            Outcome::Failed {
                error: format!("{e:#}"),
            },
        ),
    }
}

/// Counts the plan's points, reporting to `report` (the guest's second serial port).
pub fn run(plan: &Plan, report: &Path) -> Result<()> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(report)
        .with_context(|| format!("cannot open the report port {}", report.display()))?;
    let mut out = Reporter(file);
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string();
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let seccomp_rules = super::seccomp::rules_in(&cmdline)?;
    if let Some(rules) = seccomp_rules {
        super::seccomp::install(rules)?;
    }
    out.line(&ReportLine::Start {
        release,
        build: build.into(),
        seccomp_rules,
    })?;
    let (windows, outcome) = count(&mut NullWorkload, plan.iterations);
    out.line(&ReportLine::Point {
        probe: LOOP.into(),
        params: Params::new(),
        windows,
        outcome,
    })?;
    let base = std::env::temp_dir();
    for (i, planned) in plan.probes.iter().enumerate() {
        let id = &planned.probe;
        let Some(def) = probes::find(id) else {
            out.line(&ReportLine::Point {
                probe: id.clone(),
                params: Params::new(),
                windows: 0,
                outcome: Outcome::Failed {
                    error: "no such probe in this osmeter".into(),
                },
            })?;
            continue;
        };
        let points = match &planned.params {
            Some(one) => vec![one.clone()],
            None => (def.variants)(Scale::Quick),
        };
        for params in points {
            let scratch = base.join(format!("osmeter-point-{i}"));
            let _ = std::fs::remove_dir_all(&scratch);
            std::fs::create_dir_all(&scratch)?;
            let (windows, outcome) = point(def, &params, &scratch, plan.iterations);
            let _ = std::fs::remove_dir_all(&scratch);
            out.line(&ReportLine::Point {
                probe: id.clone(),
                params,
                windows,
                outcome,
            })?;
        }
    }
    out.line(&ReportLine::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_guest_the_windows_still_run_and_report() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("report");
        std::fs::write(&report, b"").unwrap();
        let plan = Plan {
            iterations: 10,
            probes: vec![
                super::super::plan::Planned::probe("syscall.null"),
                super::super::plan::Planned::probe("no.such"),
            ],
        };
        run(&plan, &report).unwrap();
        let text = std::fs::read_to_string(&report).unwrap();
        let lines: Vec<ReportLine> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(matches!(lines[0], ReportLine::Start { .. }));
        // On the host interrupts come all the time: windows may be repeated, up to TRIES a size.
        match &lines[1] {
            ReportLine::Point {
                probe,
                windows,
                outcome:
                    Outcome::Ok {
                        iterations,
                        short,
                        long,
                        ..
                    },
                ..
            } => {
                assert_eq!(probe, LOOP);
                assert!((1..=10).contains(iterations));
                assert!(short < long && long < windows);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(&lines[2], ReportLine::Point { probe, windows, .. }
                if probe == "syscall.null" && *windows >= 2));
        assert!(matches!(
            &lines[3],
            ReportLine::Point {
                windows: 0,
                outcome: Outcome::Failed { .. },
                ..
            }
        ));
        assert_eq!(lines.last(), Some(&ReportLine::Done));
    }

    #[test]
    fn windows_are_fitted_between_ticks_by_the_warm_up() {
        assert_eq!(fit_between_ticks(1000, 0), 1000);
        assert_eq!(fit_between_ticks(1000, 1), 125);
        assert_eq!(fit_between_ticks(100, 25), 1);
        assert_eq!(fit_between_ticks(1, 3), 1);
    }
}
