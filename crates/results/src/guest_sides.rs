//! Several systems on one machine: guests of one kernel version (its flavours, generic, cloud
//! and RT, or one kernel with several parameter sets such as `mitigations=off`) set side by side
//! against the first, every instruction count that differs in one table, then the kernel
//! functions that differ (where the runs hold the split, `--preset`). Counts are exact: every
//! difference is real.

use crate::columns::{Align, Table};
use crate::results::guest::{GuestDoc, GuestProbe, KernelParts};
use crate::results::kernel_timeline::text::{count, signed};
use crate::results::kernel_timeline::{moved_functions, version_and_flavour};
use crate::results::model::Status;

/// Whether the guests are one kernel version in several flavours or parameter sets (a side by
/// side), rather than a history over versions.
pub fn one_version(docs: &[&GuestDoc]) -> bool {
    docs.len() >= 2
        && docs
            .windows(2)
            .all(|w| version_and_flavour(w[0]).0 == version_and_flavour(w[1]).0)
}

fn counted<'d>(doc: &'d GuestDoc, label: &str) -> Option<&'d GuestProbe> {
    doc.probes
        .iter()
        .find(|p| p.status == Status::Ok && p.per_op.is_some() && p.label() == label)
}

fn difference(base: f64, v: f64) -> String {
    if v == base {
        "=".to_string()
    } else if base != 0.0 {
        format!("{} ({:+.1} %)", signed(v - base), 100.0 * (v - base) / base)
    } else {
        signed(v - base)
    }
}

/// The table of counts that differ from guest [1] in some guest, and the functions that differ.
/// Empty when there is nothing to set side by side.
pub fn render(docs: &[&GuestDoc]) -> String {
    let Some(first) = docs.first().filter(|_| docs.len() >= 2) else {
        return String::new();
    };
    let mut header = vec!["count per operation".to_string(), "[1]".to_string()];
    header.extend((2..=docs.len()).map(|k| format!("[{k}]-[1]")));
    let align: Vec<Align> = std::iter::once(Align::Left)
        .chain(std::iter::repeat_n(Align::Right, docs.len()))
        .collect();
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Table::new(&h, &align, 1);
    let mut rows = 0;
    let mut split: Vec<(String, Vec<Option<&KernelParts>>)> = Vec::new();
    for p in first.probes.iter().filter(|p| p.per_op.is_some()) {
        let label = p.label();
        let others: Vec<Option<&GuestProbe>> = docs.iter().map(|d| counted(d, &label)).collect();
        let value = |q: &GuestProbe, mode: &str| {
            let c = q.per_op.unwrap_or_default();
            if mode == "kernel" {
                c.kernel.instructions
            } else {
                c.user.instructions
            }
        };
        for mode in ["kernel", "user"] {
            let base = value(p, mode);
            let differs = others.iter().flatten().any(|q| value(q, mode) != base);
            if !differs {
                continue;
            }
            let mut row = vec![format!("{label} {mode}.instructions"), count(base)];
            row.extend(
                others
                    .iter()
                    .skip(1)
                    .map(|q| q.map_or("-".to_string(), |q| difference(base, value(q, mode)))),
            );
            table.push(row);
            rows += 1;
            if mode == "kernel" {
                let parts = others
                    .iter()
                    .map(|q| q.and_then(|q| q.kernel_parts.as_ref()));
                split.push((label.clone(), parts.collect()));
            }
        }
    }
    let mut out = format!(
        "Side by side against [1] (one kernel version: flavours and parameters; exact counts, \
         every difference is real): {rows} instruction count(s) differ\n"
    );
    if rows == 0 {
        return out;
    }
    out.push_str(&table.render(crate::columns::width()));
    out.push_str(&functions(docs.len(), &split));
    out
}

/// Per changed kernel count, the functions whose instructions per operation differ from [1]
/// in some guest, with every guest's count.
fn functions(n: usize, split: &[(String, Vec<Option<&KernelParts>>)]) -> String {
    let mut out = String::new();
    let mut unsplit = 0;
    for (label, parts) in split {
        let Some(Some(base)) = parts.first() else {
            unsplit += 1;
            continue;
        };
        let mut names: Vec<String> = Vec::new();
        for p in parts.iter().skip(1).flatten() {
            for m in moved_functions(base, p) {
                if !names.contains(&m.function) {
                    names.push(m.function);
                }
            }
        }
        if names.is_empty() {
            continue;
        }
        let mut header = vec![format!("{label}: function")];
        header.extend((1..=n).map(|k| format!("[{k}]")));
        let h: Vec<&str> = header.iter().map(String::as_str).collect();
        let align: Vec<Align> = std::iter::once(Align::Left)
            .chain(std::iter::repeat_n(Align::Right, n))
            .collect();
        let mut t = Table::new(&h, &align, 1).indented("  ");
        for f in names.iter().take(12) {
            let mut row = vec![f.clone()];
            row.extend(parts.iter().map(|p| {
                p.map_or("-".to_string(), |p| {
                    count(p.functions.get(f).copied().unwrap_or(0.0))
                })
            }));
            t.push(row);
        }
        out.push_str(&t.render(crate::columns::width()));
    }
    if !out.is_empty() {
        out = format!(
            "\nKernel functions that differ (kernel instructions per operation in each guest):\n\
             {out}"
        );
    }
    if unsplit > 0 {
        out.push_str(&format!(
            "({unsplit} changed kernel count(s) not split by function: count with --preset \
             NAME to name the functions)\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::guest_doc;

    fn side(kernel: &str, append: &str, ins: f64, thunk: f64) -> GuestDoc {
        let mut d = guest_doc(kernel, ins);
        d.release = Some("6.1.0-56-cloud-amd64".into());
        d.append = append.into();
        d.probes[0].kernel_parts = Some(KernelParts {
            categories: Default::default(),
            functions: [
                ("its_return_thunk".to_string(), thunk),
                ("entry".to_string(), 297.0),
            ]
            .into(),
        });
        d
    }

    #[test]
    fn parameters_side_by_side_name_the_functions_that_differ() {
        let (a, b) = (
            side("linux-image-6.1.0-56-cloud-amd64", "", 318.0, 10.0),
            side(
                "linux-image-6.1.0-56-cloud-amd64",
                "mitigations=off",
                307.0,
                0.0,
            ),
        );
        assert!(one_version(&[&a, &b]));
        let text = render(&[&a, &b]);
        assert!(text.contains("1 instruction count(s) differ"), "{text}");
        let row = text
            .lines()
            .find(|l| l.starts_with("syscall.null kernel.instructions"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            row.contains("318") && row.contains("-11 (-3.5 %)"),
            "{text}"
        );
        let f = text
            .lines()
            .find(|l| l.trim_start().starts_with("its_return_thunk"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(f.contains("10") && f.trim_end().ends_with('0'), "{text}");
        assert!(!text.contains("  entry"), "{text}");
        let mut c = b.clone();
        c.release = Some("6.12.100+deb12-cloud-amd64".into());
        assert!(!one_version(&[&a, &c]));
    }
}
