//! The system each run came from: for several runs the fields that differ first (the usual
//! explanation of a changed figure), then the whole fingerprint in the sections `osmeter info` prints.

use super::html::{esc, note, table};
use super::{Context, Section};
use crate::results::compare::fingerprint_differences;
use crate::results::fingerprint::text;
use anyhow::Result;
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub struct Fingerprint;

/// One titled block of `text::render`'s output: rows of label and value lines.
struct Block {
    title: String,
    rows: Vec<(String, Vec<String>)>,
}

/// Reads the aligned text of `text::render` back into blocks, so the HTML shows the same sections
/// and labels as the terminal without a second list of fields to keep in step.
fn blocks(rendered: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    for line in rendered.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with(' ') {
            out.push(Block {
                title: line.trim().to_string(),
                rows: Vec::new(),
            });
            continue;
        }
        let Some(block) = out.last_mut() else {
            continue;
        };
        let body = &line[2..];
        if let Some(item) = body.strip_prefix("- ") {
            block.rows.push((String::new(), vec![item.to_string()]));
        } else if body.starts_with(' ') {
            // A continuation line (vulnerability details) belongs to the row above.
            match block.rows.last_mut() {
                Some((_, values)) => values.push(body.trim().to_string()),
                None => block
                    .rows
                    .push((String::new(), vec![body.trim().to_string()])),
            }
        } else if let Some((label, value)) = body.split_once(':') {
            block
                .rows
                .push((label.to_string(), vec![value.trim().to_string()]));
        } else {
            block.rows.push((String::new(), vec![body.to_string()]));
        }
    }
    out
}

fn full(fp: &crate::results::fingerprint::Fingerprint) -> String {
    let mut out = String::from("<div class=\"grid\">\n");
    for b in blocks(&text::render(fp)) {
        let _ = write!(out, "<div>\n<h3>{}</h3>\n", esc(&b.title));
        let rows: Vec<Vec<String>> = b
            .rows
            .iter()
            .map(|(label, values)| {
                let v: Vec<String> = values.iter().map(|v| esc(v)).collect();
                vec![esc(label), v.join("<br>")]
            })
            .collect();
        out.push_str(&table("kv", &[], &rows));
        out.push_str("</div>\n");
    }
    out.push_str("</div>\n");
    out
}

impl Section for Fingerprint {
    fn id(&self) -> &'static str {
        "fingerprint"
    }
    fn title(&self) -> &'static str {
        "System fingerprint"
    }
    // The kernel command line and the vulnerability list matter when runs differ, and then the
    // runs section and the comparison say so; the full description waits behind a click.
    fn collapsed(&self) -> bool {
        true
    }
    fn render(&self, ctx: &Context) -> Result<Option<String>> {
        let mut out = String::new();
        let base = ctx.runs[0].fingerprint.as_ref();
        if ctx.runs.len() > 1 {
            // field -> value per run; a run without a difference has the baseline's value.
            let mut fields: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
            for (i, other) in ctx.runs.iter().enumerate().skip(1) {
                for (field, a, b) in fingerprint_differences(base, other.fingerprint.as_ref()) {
                    let row = fields
                        .entry(field)
                        .or_insert_with(|| vec![None; ctx.runs.len()]);
                    row[0] = Some(a);
                    row[i] = Some(b);
                }
            }
            if fields.is_empty() {
                out.push_str(&note(
                    "All runs come from systems with the same fingerprint.",
                ));
            } else {
                let header: Vec<String> = std::iter::once("field".to_string())
                    .chain((0..ctx.runs.len()).map(|i| ctx.run_label(i)))
                    .collect();
                let header: Vec<&str> = header.iter().map(String::as_str).collect();
                let rows: Vec<Vec<String>> = fields
                    .iter()
                    .map(|(field, values)| {
                        let baseline = values[0].clone().unwrap_or_default();
                        std::iter::once(format!("<code>{}</code>", esc(field)))
                            .chain(values.iter().map(|v| {
                                let v = v.clone().unwrap_or_else(|| baseline.clone());
                                esc(&v)
                            }))
                            .collect()
                    })
                    .collect();
                let _ = write!(
                    out,
                    "<h3>Fields that differ between the runs</h3>\n{}",
                    table("diff", &header, &rows)
                );
            }
            let _ = write!(
                out,
                "<h3>Fingerprint of R1</h3>\n{}",
                note("The other runs match it except for the fields listed above.")
            );
        }
        match base {
            None => out.push_str(&note("This run has no stored fingerprint.")),
            Some(fp) => out.push_str(&full(fp)),
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_text_reads_back_into_blocks() {
        let fp = crate::results::fingerprint::Fingerprint::from_json(serde_json::json!({
            "kernel_release": "6.1.0-test",
            "cpu_vulnerabilities": {"spectre_v1": "Mitigation: x", "mds": "Not affected"},
            "notes": ["cpufreq: none here"],
        }))
        .unwrap();
        let b = blocks(&text::render(&fp));
        let titles: Vec<&str> = b.iter().map(|b| b.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "System",
                "CPU",
                "Memory",
                "Clock",
                "Scratch directory",
                "Notes"
            ]
        );
        let system = &b[0];
        assert!(system
            .rows
            .iter()
            .any(|(l, v)| l == "kernel release" && v == &["6.1.0-test"]));
        let cpu = &b[1];
        let (_, vuln) = cpu
            .rows
            .iter()
            .find(|(l, _)| l == "vulnerabilities")
            .unwrap();
        assert_eq!(vuln.len(), 3, "{vuln:?}");
        assert!(vuln[1].contains("spectre_v1:"));
        assert_eq!(b[5].rows[0].1[0], "cpufreq: none here");
    }
}
