//! Comparing guest runs: their counts are exact (a deterministic guest executes the same
//! instructions every time), so every difference is real and is shown as it is, without
//! intervals or a false discovery rate.

use crate::results::guest::GuestDoc;
use crate::results::model::Run;
use crate::text::escape_controls;
use crate::usage;
use serde::Serialize;
use std::fmt::Write;

#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
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
    /// A figure of a memsim simulation (`--preset`), not a count: with a guest CPU model that
    /// offers RDRAND it can move a little between boots (see `render`).
    #[serde(default)]
    pub simulated: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
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
    /// Where the kernel instructions per operation moved, by memsim's category and by kernel
    /// function, for every probe point whose count differs and whose references were
    /// attributed on both sides (`run --guest --preset`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explained: Vec<KernelMove>,
    /// Probe points whose kernel instructions differ but that cannot be explained: their
    /// references were not attributed on both sides.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unexplained: Vec<String>,
}

/// The change of one probe point's kernel instructions per operation, split.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct KernelMove {
    pub figure: String,
    /// Kernel instructions per operation, B - A.
    pub difference: f64,
    /// Every category whose count differs, largest change first.
    pub categories: Vec<PartMove>,
    /// The kernel functions whose counts changed most, largest first.
    pub functions: Vec<PartMove>,
}

#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct PartMove {
    pub name: String,
    pub a: f64,
    pub b: f64,
    pub difference: f64,
}

/// Functions named per explained change.
const FUNCTIONS_SHOWN: usize = 8;

impl ExactComparison {
    /// The instruction counts that grew by more than `pct` percent (`compare --fail-if-slower`
    /// of guest runs), named by figure, mode and event.
    pub fn grown_beyond(&self, pct: f64) -> Vec<String> {
        self.changed()
            .filter(|r| r.event == "instructions" && r.ratio.is_some_and(|x| x > 1.0 + pct / 100.0))
            .map(|r| format!("{} {}.{}", r.figure, r.mode, r.event))
            .collect()
    }

    /// Counts that differ (simulated figures are not counts).
    pub fn changed(&self) -> impl Iterator<Item = &ExactRow> {
        self.rows
            .iter()
            .filter(|r| !r.simulated && r.difference != 0.0)
    }
}

fn doc(run: &Run) -> anyhow::Result<&GuestDoc> {
    run.sections
        .get::<crate::results::guest::GuestDoc>()
        .ok_or_else(|| {
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
    let row = |figure: &str, mode: String, event: String, va: f64, vb: f64| ExactRow {
        figure: figure.to_string(),
        mode,
        event,
        a: va,
        b: vb,
        difference: vb - va,
        ratio: (va != 0.0).then(|| vb / va),
        simulated: false,
    };
    for (label, x) in &ca {
        let Some((_, y)) = cb.iter().find(|(l, _)| l == label) else {
            continue;
        };
        for ((mode, mx), (_, my)) in x.modes().into_iter().zip(y.modes()) {
            for ((event, va), (_, vb)) in mx.by_name().into_iter().zip(my.by_name()) {
                out.push(row(label, mode.into(), event.into(), va, vb));
            }
        }
        // Simulated figures of the presets both sides were simulated on.
        let (pa, pb) = (point(a, label), point(b, label));
        for sa in pa.map_or(&[][..], |p| &p.simulated) {
            let Some(sb) = pb.and_then(|p| p.simulated.iter().find(|s| s.preset == sa.preset))
            else {
                continue;
            };
            for ((mode, ma), (_, mb)) in sa.modes().into_iter().zip(sb.modes()) {
                for ((event, va), (_, vb)) in ma.by_name().into_iter().zip(mb.by_name()) {
                    out.push(ExactRow {
                        simulated: true,
                        ..row(label, format!("{}.{mode}", sa.preset), event, va, vb)
                    });
                }
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

fn point<'a>(d: &'a GuestDoc, label: &str) -> Option<&'a crate::results::guest::GuestProbe> {
    d.probes.iter().find(|p| p.label() == label)
}

/// The parts of two maps that differ, largest change first.
fn moves(
    a: &std::collections::BTreeMap<String, f64>,
    b: &std::collections::BTreeMap<String, f64>,
) -> Vec<PartMove> {
    let mut out: Vec<PartMove> = a
        .keys()
        .chain(b.keys().filter(|k| !a.contains_key(*k)))
        .map(|name| {
            let (va, vb) = (
                a.get(name).copied().unwrap_or(0.0),
                b.get(name).copied().unwrap_or(0.0),
            );
            PartMove {
                name: name.clone(),
                a: va,
                b: vb,
                difference: vb - va,
            }
        })
        .filter(|m| m.difference != 0.0)
        .collect();
    out.sort_by(|x, y| {
        y.difference
            .abs()
            .total_cmp(&x.difference.abs())
            .then_with(|| x.name.cmp(&y.name))
    });
    out
}

/// Each changed kernel instruction count split by category and function where both sides carry
/// the split; the changed points that do not, by label.
fn explain(a: &GuestDoc, b: &GuestDoc, rows: &[ExactRow]) -> (Vec<KernelMove>, Vec<String>) {
    let mut explained = Vec::new();
    let mut unexplained = Vec::new();
    for r in rows
        .iter()
        .filter(|r| r.mode == "kernel" && r.event == "instructions" && r.difference != 0.0)
    {
        let (pa, pb) = (point(a, &r.figure), point(b, &r.figure));
        let (Some(pa), Some(pb)) = (
            pa.and_then(|p| p.kernel_parts.as_ref()),
            pb.and_then(|p| p.kernel_parts.as_ref()),
        ) else {
            unexplained.push(r.figure.clone());
            continue;
        };
        let mut functions = moves(&pa.functions, &pb.functions);
        functions.truncate(FUNCTIONS_SHOWN);
        explained.push(KernelMove {
            figure: r.figure.clone(),
            difference: r.difference,
            categories: moves(&pa.categories, &pb.categories),
            functions,
        });
    }
    (explained, unexplained)
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
        if rs.iter().any(|x| !x.simulated && x.difference != 0.0) {
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
    let (explained, unexplained) = explain(da, db, &rows);
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
        explained,
        unexplained,
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
    let counts = c.rows.iter().filter(|r| !r.simulated).count();
    let _ = writeln!(
        out,
        "\n{changed} of {counts} counts differ. Counts per operation in a deterministic guest \
         are exact: every difference is real (no intervals, no false discovery rate)."
    );
    let simulated = c.rows.iter().filter(|r| r.simulated).count();
    if simulated > 0 {
        let moved = c
            .rows
            .iter()
            .filter(|r| r.simulated && r.difference != 0.0)
            .count();
        let _ = writeln!(
            out,
            "{moved} of {simulated} simulated figures differ. They repeat exactly on a guest \
             CPU model without RDRAND (such as the default qemu64); with RDRAND the guest kernel \
             seeds its randomness from the host, places objects differently each boot, and a \
             few misses per operation move."
        );
    }
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
    render_explained(&mut out, c);
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

fn render_explained(out: &mut String, c: &ExactComparison) {
    if !c.explained.is_empty() {
        let _ = writeln!(
            out,
            "\nWhere the kernel instructions per operation moved (memsim's categories, then the \
             kernel functions that moved most):"
        );
    }
    for m in &c.explained {
        let _ = writeln!(
            out,
            "  {}: {:+} kernel instructions",
            escape_controls(&m.figure),
            num(m.difference)
        );
        for (what, parts) in [("category", &m.categories), ("function", &m.functions)] {
            for p in parts {
                let _ = writeln!(
                    out,
                    "    {what:8} {:32} {:>10} -> {:>10}  {:>+10}",
                    escape_controls(&p.name),
                    num(p.a),
                    num(p.b),
                    num(p.difference)
                );
            }
        }
    }
    if !c.unexplained.is_empty() {
        let _ = writeln!(
            out,
            "Kernel counts of {} differ without a split by kernel function: run the guests with \
             --preset NAME to attribute their references",
            escape_controls(&c.unexplained.join(", "))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::guest::tests::doc as guest_doc;
    use crate::results::model::{tests::empty_run, Sections};

    fn run(id: &str, kernel_ins: f64) -> Run {
        let mut r = empty_run();
        r.id = id.into();
        r.sections = Sections::of(guest_doc("K", kernel_ins));
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
    fn a_changed_kernel_count_is_split_by_category_and_function() {
        use crate::results::guest::tests::simulated_doc;
        let with = |id: &str, d: GuestDoc| {
            let mut r = empty_run();
            r.id = id.into();
            r.sections = Sections::of(d);
            r
        };
        let a = with("a", simulated_doc("K", 0.25));
        let mut db = simulated_doc("K", 0.5);
        // B: 30 more kernel instructions, 25 of them in a new function of the syscall path.
        db.probes[0].per_op.as_mut().unwrap().kernel.instructions += 30.0;
        let parts = db.probes[0].kernel_parts.as_mut().unwrap();
        parts.categories.insert("syscall".into(), 525.0);
        parts.categories.insert("other".into(), 105.0);
        parts.functions.insert("seccomp_run_filters".into(), 25.0);
        let b = with("b", db);
        let c = compare(&[&a], &[&b]).unwrap();
        assert_eq!(c.explained.len(), 1);
        let m = &c.explained[0];
        assert_eq!(m.difference, 30.0);
        assert_eq!(
            (m.categories[0].name.as_str(), m.categories[0].difference),
            ("syscall", 25.0)
        );
        assert_eq!(m.categories[1].difference, 5.0);
        assert_eq!(m.functions.len(), 1);
        assert_eq!(m.functions[0].name, "seccomp_run_filters");
        assert_eq!((m.functions[0].a, m.functions[0].b), (0.0, 25.0));
        // The simulated MCPI is a row of its own, exact like the counts.
        let mcpi = c
            .rows
            .iter()
            .find(|r| r.mode == "pentium.kernel" && r.event == "mcpi")
            .unwrap();
        assert_eq!((mcpi.a, mcpi.b), (0.25, 0.5));
        let text = render(&c, false);
        assert!(
            text.contains("Where the kernel instructions per operation moved"),
            "{text}"
        );
        assert!(text.contains("seccomp_run_filters"), "{text}");
        assert!(text.contains("syscall.null pentium.kernel.mcpi"), "{text}");
        // Counted only: the change is named as one without a split.
        let plain = run("p", 700.0);
        let c = compare(&[&a], &[&plain]).unwrap();
        assert!(c.explained.is_empty());
        assert_eq!(c.unexplained, vec!["syscall.null".to_string()]);
        assert!(render(&c, false).contains("--preset"));
    }

    #[test]
    fn a_run_that_is_not_a_guest_run_is_refused() {
        let (a, plain) = (run("a", 1.0), empty_run());
        assert!(compare(&[&a], &[&plain]).is_err());
    }
}
