//! CI gates in the formats CI systems already read: a comparison's figures, or a history's latest
//! change, as test cases that pass, fail or are skipped, written as JUnit XML (GitLab, Jenkins,
//! GitHub's test reporters) or KTAP (the kernel's test output, read by KernelCI and kunit tools).
//! A case fails exactly where `--fail-if-slower` would fail the command (with no percentage given:
//! every figure called slower), so the report and the exit code never disagree.

pub mod budget;
pub mod junit;
pub mod ktap;

use crate::results::compare::{Comparison, Verdict};
use crate::results::history::FigureHistory;
use crate::units::format;

/// How one case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// Slower beyond the gate's percentage.
    Failed,
    /// Nothing to judge (no verdict possible, too few runs).
    Skipped,
    /// The whole gate could not judge (a busy machine): the case says why.
    Error,
}

/// One test case: a figure, in its group, with the verdict in words.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub group: String,
    pub name: String,
    pub outcome: Outcome,
    /// One line: the verdict and the figures behind it.
    pub message: String,
}

/// A gate: what was judged, and its cases.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// e.g. "osmeter compare A vs B".
    pub name: String,
    pub cases: Vec<Case>,
    /// What a failed case is, for JUnit's `type`: "slower" for comparisons and histories.
    pub failure: &'static str,
}

impl Gate {
    pub fn count(&self, outcome: Outcome) -> usize {
        self.cases.iter().filter(|c| c.outcome == outcome).count()
    }
}

/// Every figure of a comparison as a case; with `fail_if_slower` None, any figure called slower
/// fails. `refused`: the comparison was refused for its busy runs (not forced), and the gate is
/// one error case saying why.
pub fn of_comparison(c: &Comparison, refused: bool, fail_if_slower: Option<f64>) -> Gate {
    let name = format!(
        "osmeter compare {} vs {}",
        c.runs_a.join(","),
        c.runs_b.join(",")
    );
    if refused {
        let why: Vec<String> = c
            .busy
            .iter()
            .map(|r| format!("{} {}: {}", r.side, r.run, r.reasons.join("; ")))
            .collect();
        return Gate {
            name,
            failure: "slower",
            cases: vec![Case {
                group: "machine".into(),
                name: "quiet machine".into(),
                outcome: Outcome::Error,
                message: format!(
                    "not compared: measured on a busy machine ({}); measure again on a quiet one",
                    why.join("; ")
                ),
            }],
        };
    }
    let failing = c.slower_beyond(fail_if_slower.unwrap_or(0.0));
    let cases = c
        .figures
        .iter()
        .map(|f| {
            let interval = f.ratio_ci95.map_or(String::new(), |[lo, hi]| {
                format!(", 95 % interval {lo:.3}-{hi:.3}")
            });
            let q = f.q_value.map_or(String::new(), |q| format!(", q = {q:.3}"));
            let verdict = match f.verdict {
                Verdict::Faster => "faster",
                Verdict::Slower => "slower",
                Verdict::NoChange => "no change",
                Verdict::Untested => "not tested",
            };
            let outcome = if failing.contains(&f.key.as_str()) {
                Outcome::Failed
            } else if f.verdict == Verdict::Untested {
                Outcome::Skipped
            } else {
                Outcome::Passed
            };
            Case {
                group: f.group.clone(),
                name: f.key.clone(),
                outcome,
                message: format!(
                    "{verdict}: A {}, B {}, B/A {:.3}{interval}{q}{}",
                    format(f.value_a, f.unit),
                    format(f.value_b, f.unit),
                    f.ratio,
                    if f.reason.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", f.reason)
                    }
                ),
            }
        })
        .collect();
    Gate {
        name,
        cases,
        failure: "slower",
    }
}

/// A history's latest change as one case: failed when it made the figure slower beyond the
/// percentage (as `history --fail-if-slower`), skipped when the runs are too few to find one.
pub fn of_history(h: &FigureHistory, fail_if_slower: Option<f64>) -> Gate {
    let pct = fail_if_slower.unwrap_or(0.0);
    let group = h.figure.split('.').next().unwrap_or("").to_string();
    let (outcome, message) = if let Some(c) = h.slower_than(pct) {
        (
            Outcome::Failed,
            format!(
                "slower by more than {pct} % from run {} (from {} to {}, speed-up {:.3})",
                c.run,
                format(c.before, h.unit),
                format(c.after, h.unit),
                c.speedup
            ),
        )
    } else if h.points.len() < 2 * h.method.min_runs {
        (
            Outcome::Skipped,
            format!(
                "{} run(s) are too few to find a change ({} needed)",
                h.points.len(),
                2 * h.method.min_runs
            ),
        )
    } else {
        let last = h.changes.last().map_or("no change point".to_string(), |c| {
            format!(
                "latest change at run {}: speed-up {:.3} (from {} to {})",
                c.run,
                c.speedup,
                format(c.before, h.unit),
                format(c.after, h.unit)
            )
        });
        (
            Outcome::Passed,
            format!(
                "not slower by more than {pct} % over {} runs; {last}",
                h.points.len()
            ),
        )
    };
    Gate {
        name: format!("osmeter history {}", h.figure),
        failure: "slower",
        cases: vec![Case {
            group,
            name: h.figure.clone(),
            outcome,
            message,
        }],
    }
}

#[cfg(test)]
pub(crate) fn sample() -> Gate {
    Gate {
        name: "osmeter compare a vs b".into(),
        failure: "slower",
        cases: vec![
            Case {
                group: "syscall".into(),
                name: "syscall.null".into(),
                outcome: Outcome::Passed,
                message: "no change: A 200 ns, B 201 ns, B/A 1.005".into(),
            },
            Case {
                group: "syscall".into(),
                name: "syscall.dup # <&>\"'".into(),
                outcome: Outcome::Failed,
                message: "slower: A 500 ns, B 600 ns, B/A 1.200 <script>\u{1b}[31m".into(),
            },
            Case {
                group: "fs".into(),
                name: "fs.open_close".into(),
                outcome: Outcome::Skipped,
                message: "not tested".into(),
            },
        ],
    }
}
