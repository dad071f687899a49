//! Guest runs (`run --guest`) side by side: per probe, instructions per operation in the kernel
//! and in user space for every guest run of the report, exact counts from a deterministic guest.

use super::html::{esc, note, table, Cell, Row};
use super::{Context, Section};
use crate::results::guest::{side_label, GuestDoc};
use crate::results::model::RunKind;
use anyhow::Result;

pub struct Guest;

fn count(v: f64) -> String {
    if v.fract() == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn rows(docs: &[&GuestDoc]) -> Vec<Row> {
    let mut labels: Vec<String> = Vec::new();
    for d in docs {
        for p in d.probes.iter().filter(|p| p.per_op.is_some()) {
            if !labels.contains(&p.label()) {
                labels.push(p.label());
            }
        }
    }
    labels
        .into_iter()
        .map(|label| {
            let mut cells = vec![Cell::from(esc(&label))];
            for d in docs {
                let c = d
                    .probes
                    .iter()
                    .find(|p| p.label() == label)
                    .and_then(|p| p.per_op);
                let shown = |v: Option<f64>| Cell::num(v.map_or_else(|| "-".into(), count));
                cells.push(shown(c.map(|c| c.kernel.instructions)));
                cells.push(shown(c.map(|c| c.user.instructions)));
            }
            Row { class: "", cells }
        })
        .collect()
}

impl Section for Guest {
    fn id(&self) -> &'static str {
        "guest"
    }
    fn title(&self) -> &'static str {
        "Kernels side by side (guest runs)"
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        if !ctx.has_kind(RunKind::Guest) {
            return Ok(None);
        }
        let mut docs = Vec::new();
        let mut names = Vec::new();
        for (i, run) in ctx.runs.iter().enumerate() {
            if let Some(d) = run.sections.get::<crate::results::guest::GuestDoc>() {
                names.push(format!("{}: {}", ctx.run_label(i), side_label(d)));
                docs.push(d);
            }
        }
        let mut out = note(
            "Instructions per operation, kernel (k) and user (u), counted by osmeter's QEMU plugin \
             inside a deterministic guest (TCG, icount): exact, so any difference between two \
             kernels is real. No times: TCG's speed says nothing about the guest kernel.",
        );
        out.push_str(&note(&names.join("; ")));
        let mut header = vec!["probe".to_string()];
        for i in 0..docs.len() {
            header.push(format!("[{}] k.ins", i + 1));
            header.push(format!("[{}] u.ins", i + 1));
        }
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        out.push_str(&table("guest", &header, &rows(&docs)));
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use crate::results::guest::tests::doc;
    use crate::results::model::{tests::empty_run, Sections};

    #[test]
    fn guest_runs_stand_side_by_side_in_the_report() {
        let runs: Vec<_> = [("A", 600.0), ("B", 1400.0)]
            .into_iter()
            .map(|(k, ins)| {
                let mut r = empty_run();
                r.sections = Sections::of(doc(k, ins));
                r
            })
            .collect();
        let html = crate::results::report::render(&runs, &[Box::new(super::Guest)]).unwrap();
        let at = html
            .find("<table class=\"guest\">")
            .expect("the guest table");
        let row = &html[at..];
        let row = &row[row.find("<td>syscall.null</td>").unwrap()..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert!(row.contains(">600<") && row.contains(">1400<"), "{row}");
        // Only counted points have rows: the skipped workload does not.
        assert!(!html[at..].contains("<td>app.make</td>"));
    }
}
