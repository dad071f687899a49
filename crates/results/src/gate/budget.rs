//! Instruction budgets of guest runs (`run --guest K --fail-if-over
//! syscall.null=kernel.instructions:320`): counts in a deterministic guest are exact, so a
//! budget never flakes, and a CI job can hold a kernel (or a patch to one) to it as to a test.
//! Each budget against each guest run is a case of a [`Gate`], written as JUnit or KTAP as the
//! comparisons' gates are.

use super::{Case, Gate, Outcome};
use crate::results::guest::{side_label, GuestDoc};
use crate::results::model::Status;

/// `PROBE=MODE.EVENT:LIMIT`: at most LIMIT per operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    pub probe: String,
    /// "user" or "kernel".
    pub mode: String,
    /// "instructions", "loads" or "stores".
    pub event: String,
    pub limit: f64,
}

const FORM: &str = "give PROBE=MODE.EVENT:LIMIT, e.g. syscall.null=kernel.instructions:320 \
    (MODE user or kernel; EVENT instructions, loads or stores; LIMIT per operation)";

impl Budget {
    pub fn parse(text: &str) -> Result<Budget, String> {
        let t = text.trim();
        let (probe, rest) = t
            .split_once('=')
            .ok_or_else(|| format!("{t:?} has no `=`: {FORM}"))?;
        let (figure, limit) = rest
            .rsplit_once(':')
            .ok_or_else(|| format!("{t:?} has no `:LIMIT`: {FORM}"))?;
        let (mode, event) = figure
            .split_once('.')
            .ok_or_else(|| format!("{t:?}: {figure:?} is not MODE.EVENT: {FORM}"))?;
        if !matches!(mode, "user" | "kernel") {
            return Err(format!(
                "{t:?}: mode {mode:?} is neither user nor kernel: {FORM}"
            ));
        }
        if !matches!(event, "instructions" | "loads" | "stores") {
            return Err(format!(
                "{t:?}: event {event:?} is not instructions, loads or stores: {FORM}"
            ));
        }
        let limit: f64 = limit
            .trim()
            .parse()
            .ok()
            .filter(|l: &f64| l.is_finite() && *l >= 0.0)
            .ok_or_else(|| format!("{t:?}: the limit {limit:?} is no count: {FORM}"))?;
        if probe.trim().is_empty() {
            return Err(format!("{t:?} names no probe: {FORM}"));
        }
        Ok(Budget {
            probe: probe.trim().to_string(),
            mode: mode.to_string(),
            event: event.to_string(),
            limit,
        })
    }

    /// The budgets of a file: one a line, `#` comments and blank lines ignored.
    pub fn parse_file(text: &str) -> Result<Vec<Budget>, String> {
        text.lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or("").trim()))
            .filter(|(_, l)| !l.is_empty())
            .map(|(n, l)| Budget::parse(l).map_err(|e| format!("line {n}: {e}")))
            .collect()
    }

    pub fn name(&self) -> String {
        format!(
            "{} {}.{} <= {}",
            self.probe, self.mode, self.event, self.limit
        )
    }
}

/// Every budget against every guest run: a case per run, budget and point of the probe.
pub fn of_guests(docs: &[&GuestDoc], budgets: &[Budget]) -> Gate {
    let mut cases = Vec::new();
    for doc in docs {
        let side = side_label(doc);
        for b in budgets {
            let points: Vec<_> = doc.probes.iter().filter(|p| p.probe == b.probe).collect();
            if points.is_empty() {
                cases.push(Case {
                    group: side.clone(),
                    name: b.name(),
                    outcome: Outcome::Error,
                    message: format!("{} was not counted in this guest", b.probe),
                });
            }
            for p in points {
                let counts = p.per_op.filter(|_| p.status == Status::Ok);
                let Some(c) = counts else {
                    cases.push(Case {
                        group: side.clone(),
                        name: format!("{} {}", p.label(), b.name()),
                        outcome: Outcome::Error,
                        message: format!(
                            "{} not counted: {}",
                            p.label(),
                            p.reason.as_deref().unwrap_or("no counts")
                        ),
                    });
                    continue;
                };
                let mode = if b.mode == "user" { &c.user } else { &c.kernel };
                let value = mode
                    .by_name()
                    .iter()
                    .find(|(n, _)| *n == b.event)
                    .map_or(0.0, |(_, v)| *v);
                let over = value > b.limit;
                cases.push(Case {
                    group: side.clone(),
                    name: format!("{} {}.{} <= {}", p.label(), b.mode, b.event, b.limit),
                    outcome: if over {
                        Outcome::Failed
                    } else {
                        Outcome::Passed
                    },
                    message: format!(
                        "{} {} {}.{} per operation, budget {}{}",
                        p.label(),
                        crate::units::number(value),
                        b.mode,
                        b.event,
                        b.limit,
                        if over {
                            format!(": over by {}", crate::units::number(value - b.limit))
                        } else {
                            String::new()
                        }
                    ),
                });
            }
        }
    }
    Gate {
        name: "osmeter run --guest budgets".into(),
        failure: "over budget",
        cases,
    }
}

/// The lines for the table's foot: how many cases held, and every one that did not.
pub fn render(gate: &Gate) -> String {
    let bad: Vec<&Case> = gate
        .cases
        .iter()
        .filter(|c| c.outcome != Outcome::Passed)
        .collect();
    let mut out = format!(
        "Budgets: {} of {} held",
        gate.cases.len() - bad.len(),
        gate.cases.len()
    );
    if bad.is_empty() {
        out.push('\n');
        return out;
    }
    out.push_str(&format!("; {} did not:\n", bad.len()));
    for c in bad {
        let what = if c.outcome == Outcome::Failed {
            "over budget"
        } else {
            "not judged"
        };
        out.push_str(&format!("  {what}: {}: {}\n", c.group, c.message));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::guest::tests::doc;

    #[test]
    fn budgets_parse_and_bad_ones_say_the_form() {
        let b = Budget::parse("syscall.null=kernel.instructions:320").unwrap();
        assert_eq!(
            (b.probe.as_str(), b.mode.as_str(), b.limit),
            ("syscall.null", "kernel", 320.0)
        );
        for bad in [
            "syscall.null",
            "syscall.null=kernel.instructions",
            "syscall.null=kernel:3",
            "syscall.null=both.instructions:3",
            "syscall.null=kernel.cycles:3",
            "syscall.null=kernel.loads:-1",
            "=kernel.loads:1",
        ] {
            let e = Budget::parse(bad).unwrap_err();
            assert!(e.contains("PROBE=MODE.EVENT:LIMIT"), "{bad}: {e}");
        }
        let file = "# kernel budgets\nsyscall.null=kernel.instructions:320\n\n\
                    syscall.dup=user.loads:9 # user\n";
        assert_eq!(Budget::parse_file(file).unwrap().len(), 2);
        assert!(Budget::parse_file("a=b")
            .unwrap_err()
            .starts_with("line 1:"));
    }

    #[test]
    fn a_budget_holds_on_one_kernel_and_not_on_another() {
        let (a, b) = (doc("cloud", 307.0), doc("rt", 330.0));
        let budgets = vec![
            Budget::parse("syscall.null=kernel.instructions:320").unwrap(),
            Budget::parse("syscall.dup=kernel.instructions:1").unwrap(),
        ];
        let gate = of_guests(&[&a, &b], &budgets);
        assert_eq!(gate.cases.len(), 4);
        assert_eq!(gate.count(Outcome::Passed), 1);
        assert_eq!(gate.count(Outcome::Failed), 1);
        assert_eq!(gate.count(Outcome::Error), 2);
        let text = render(&gate);
        assert!(
            text.starts_with("Budgets: 1 of 4 held; 3 did not:"),
            "{text}"
        );
        assert!(
            text.contains("over budget: rt: syscall.null 330 kernel.instructions"),
            "{text}"
        );
        assert!(text.contains("over by 10"), "{text}");
        assert!(
            text.contains("not judged: cloud: syscall.dup was not counted"),
            "{text}"
        );
    }
}
