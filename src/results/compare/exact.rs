//! Comparing guest runs: their counts are exact (a deterministic guest executes the same
//! instructions every time), so every difference is real and is shown as it is, without
//! intervals or a false discovery rate.

use crate::results::guest::GuestDoc;
use crate::results::model::Run;
use crate::text::escape_controls;
use crate::usage;
use serde::Serialize;
use std::fmt::Write;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ExactRow {
    /// The probe and its parameters.
    pub figure: String,
    /// `user` or `kernel`.
    pub mode: String,
    /// `instructions`, `loads` or `stores`, per operation.
    pub event: String,
    pub a: f64,
    pub b: f64,
    /// b - a.
    pub difference: f64,
    /// b / a, where a is not zero.
    pub ratio: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ExactComparison {
    pub runs_a: Vec<String>,
    pub runs_b: Vec<String>,
    /// What differs between the two guests: (field, A, B).
    pub guest_differences: Vec<(String, String, String)>,
    /// Every count present on both sides, in A's order.
    pub rows: Vec<ExactRow>,
    /// Probe points counted on one side only.
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// Runs of one side whose counts differ from the side's first run: the guest was not
    /// deterministic (another QEMU, or a probe that depends on something outside the guest).
    pub not_repeatable: Vec<String>,
}

impl ExactComparison {
    pub fn changed(&self) -> impl Iterator<Item = &ExactRow> {
        self.rows.iter().filter(|r| r.difference != 0.0)
    }
}

fn doc(run: &Run) -> anyhow::Result<&GuestDoc> {
    run.sections.guest.as_ref().ok_or_else(|| {
        usage!(
            "run {} is not a guest run: compare guest runs with guest runs",
            run.id
        )
    })
}

fn rows(a: &GuestDoc, b: &GuestDoc) -> (Vec<ExactRow>, Vec<String>, Vec<String>) {
    let counted = |d: &GuestDoc| -> Vec<(String, crate::results::guest::OpCounts)> {
        d.probes
            .iter()
            .filter_map(|p| Some((p.label(), p.per_op?)))
            .collect()
    };
    let (ca, cb) = (counted(a), counted(b));
    let mut out = Vec::new();
    for (label, x) in &ca {
        let Some((_, y)) = cb.iter().find(|(l, _)| l == label) else {
            continue;
        };
        for ((mode, mx), (_, my)) in x.modes().into_iter().zip(y.modes()) {
            for ((event, va), (_, vb)) in mx.by_name().into_iter().zip(my.by_name()) {
                out.push(ExactRow {
                    figure: label.clone(),
                    mode: mode.into(),
                    event: event.into(),
                    a: va,
                    b: vb,
                    difference: vb - va,
                    ratio: (va != 0.0).then(|| vb / va),
                });
            }
        }
    }
    let only = |x: &[(String, _)], y: &[(String, _)]| -> Vec<String> {
        x.iter()
            .filter(|(l, _)| !y.iter().any(|(m, _)| m == l))
            .map(|(l, _)| l.clone())
            .collect()
    };
    let (oa, ob) = (only(&ca, &cb), only(&cb, &ca));
    (out, oa, ob)
}

fn guest_differences(a: &GuestDoc, b: &GuestDoc) -> Vec<(String, String, String)> {
    let fields = |d: &GuestDoc| {
        [
            ("kernel", d.kernel.clone()),
            ("kernel image", d.kernel_key.clone()),
            ("release", d.release.clone().unwrap_or_default()),
            ("append", d.append.clone()),
            ("qemu", d.qemu.clone()),
            ("cpu", d.cpu.clone().unwrap_or_else(|| "qemu64".into())),
            ("iterations", d.iterations.to_string()),
            ("osmeter build", d.build.clone()),
        ]
    };
    fields(a)
        .into_iter()
        .zip(fields(b))
        .filter(|((_, x), (_, y))| x != y)
        .map(|((k, x), (_, y))| {
            let shown = |v: String| if v.is_empty() { "(none)".into() } else { v };
            (k.to_string(), shown(x), shown(y))
        })
        .collect()
}

/// Runs of a side whose counts are not those of its first run.
fn not_repeatable(side: &[&Run]) -> anyhow::Result<Vec<String>> {
    let first = doc(side[0])?;
    let mut out = Vec::new();
    for r in &side[1..] {
        let (rs, _, _) = rows(first, doc(r)?);
        if rs.iter().any(|x| x.difference != 0.0) {
            out.push(r.id.clone());
        }
    }
    Ok(out)
}

/// Compares the first run of each side, count by count; further runs of a side are checked to
/// give the same counts as its first.
pub fn compare(a: &[&Run], b: &[&Run]) -> anyhow::Result<ExactComparison> {
    let (Some(fa), Some(fb)) = (a.first(), b.first()) else {
        return Err(usage!("compare needs a run on each side"));
    };
    let (da, db) = (doc(fa)?, doc(fb)?);
    let (rows, only_in_a, only_in_b) = rows(da, db);
    let mut not = not_repeatable(a)?;
    not.extend(not_repeatable(b)?);
    Ok(ExactComparison {
        runs_a: a.iter().map(|r| r.id.clone()).collect(),
        runs_b: b.iter().map(|r| r.id.clone()).collect(),
        guest_differences: guest_differences(da, db),
        rows,
        only_in_a,
        only_in_b,
        not_repeatable: not,
    })
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

pub fn render(c: &ExactComparison, all: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "A: {}\nB: {}  (guest runs)",
        escape_controls(&c.runs_a.join(" ")),
        escape_controls(&c.runs_b.join(" "))
    );
    if !c.guest_differences.is_empty() {
        let _ = writeln!(out, "\nGuest differences:");
        for (k, a, b) in &c.guest_differences {
            let _ = writeln!(
                out,
                "  {k}: {} -> {}",
                escape_controls(a),
                escape_controls(b)
            );
        }
    }
    let changed = c.changed().count();
    let _ = writeln!(
        out,
        "\n{changed} of {} counts differ. Counts per operation in a deterministic guest are \
         exact: every difference is real (no intervals, no false discovery rate).",
        c.rows.len()
    );
    let shown: Vec<&ExactRow> = c
        .rows
        .iter()
        .filter(|r| all || r.difference != 0.0)
        .collect();
    if !shown.is_empty() {
        let w = shown
            .iter()
            .map(|r| escape_controls(&r.figure).chars().count() + r.mode.len() + r.event.len() + 2)
            .max()
            .unwrap_or(6);
        let _ = writeln!(
            out,
            "{:w$}  {:>12} {:>12} {:>12} {:>8}",
            "count per operation", "A", "B", "B-A", "B/A"
        );
        for r in shown {
            let key = format!("{} {}.{}", escape_controls(&r.figure), r.mode, r.event);
            let ratio = r.ratio.map_or_else(|| "-".into(), |x| format!("{x:.3}"));
            let _ = writeln!(
                out,
                "{key:w$}  {:>12} {:>12} {:>12} {ratio:>8}",
                num(r.a),
                num(r.b),
                num(r.difference)
            );
        }
    }
    for (side, only) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
        if !only.is_empty() {
            let _ = writeln!(
                out,
                "Counted only in {side}: {}",
                escape_controls(&only.join(", "))
            );
        }
    }
    if !c.not_repeatable.is_empty() {
        let _ = writeln!(
            out,
            "warning: run(s) {} do not repeat their side's first run: the guest was not \
             deterministic (another QEMU, or a probe that depends on the host)",
            c.not_repeatable.join(", ")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::guest::tests::doc as guest_doc;
    use crate::results::model::{tests::empty_run, Sections};

    fn run(id: &str, kernel_ins: f64) -> Run {
        let mut r = empty_run();
        r.id = id.into();
        r.sections = Sections {
            guest: Some(guest_doc("K", kernel_ins)),
            ..Sections::default()
        };
        r
    }

    #[test]
    fn every_difference_counts_and_a_side_that_does_not_repeat_is_named() {
        let (a, b, b2) = (run("a", 600.0), run("b", 601.0), run("b2", 700.0));
        let c = compare(&[&a], &[&b, &b2]).unwrap();
        let changed: Vec<&ExactRow> = c.changed().collect();
        assert_eq!(changed.len(), 1);
        assert_eq!(changed[0].difference, 1.0);
        assert_eq!(changed[0].mode, "kernel");
        assert_eq!(c.not_repeatable, vec!["b2".to_string()]);
        let text = render(&c, false);
        assert!(text.contains("1 of 6 counts differ"), "{text}");
        assert!(text.contains("syscall.null kernel.instructions"), "{text}");
        assert!(text.contains("b2 do not repeat"), "{text}");
        let same = compare(&[&a], &[&a]).unwrap();
        assert_eq!(same.changed().count(), 0);
        assert!(render(&same, true).contains("user.loads"));
    }

    #[test]
    fn a_run_that_is_not_a_guest_run_is_refused() {
        let (a, plain) = (run("a", 1.0), empty_run());
        assert!(compare(&[&a], &[&plain]).is_err());
    }
}
