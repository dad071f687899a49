//! One row per figure, or with `--samples` one row per raw sample (RFC 4180 quoting).

use super::{params_text, ExportOptions, Exporter};
use crate::results::model::Run;
use std::io::{self, Write};

pub struct Csv;

/// Quotes a field when it holds a comma, quote or line break; quotes inside are doubled.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: Option<f64>) -> String {
    v.map(|x| format!("{x}")).unwrap_or_default()
}

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }
    fn write(&self, run: &Run, options: &ExportOptions, out: &mut dyn Write) -> io::Result<()> {
        if options.samples {
            writeln!(out, "run_id,probe,params,unit,sample,value")?;
            for m in &run.measurements {
                for (i, v) in m.samples.iter().enumerate() {
                    let p = field(&params_text(&m.params));
                    writeln!(
                        out,
                        "{},{},{},{},{i},{v}",
                        field(&run.id),
                        field(&m.probe),
                        p,
                        m.unit.symbol()
                    )?;
                }
            }
            return Ok(());
        }
        writeln!(out, "run_id,probe,params,unit,status,median,ci95_low,ci95_high,cv,mean,stddev,min,max,samples,reason")?;
        for m in &run.measurements {
            let s = m.summary.as_ref();
            let status = serde_json::to_value(m.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            writeln!(
                out,
                "{},{},{},{},{status},{},{},{},{},{},{},{},{},{},{}",
                field(&run.id),
                field(&m.probe),
                field(&params_text(&m.params)),
                m.unit.symbol(),
                num(s.map(|s| s.median)),
                num(s.map(|s| s.ci95[0])),
                num(s.map(|s| s.ci95[1])),
                num(s.map(|s| s.cv)),
                num(s.map(|s| s.mean)),
                num(s.map(|s| s.stddev)),
                num(s.map(|s| s.min)),
                num(s.map(|s| s.max)),
                m.samples.len(),
                field(m.reason.as_deref().unwrap_or(""))
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;

    /// A minimal RFC 4180 reader, to prove the output parses back into the same fields.
    fn parse(text: &str) -> Vec<Vec<String>> {
        let mut rows = vec![];
        let mut row = vec![];
        let mut cur = String::new();
        let mut quoted = false;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    cur.push('"');
                    chars.next();
                }
                ('"', _) => quoted = !quoted,
                (',', false) => row.push(std::mem::take(&mut cur)),
                ('\n', false) => {
                    row.push(std::mem::take(&mut cur));
                    rows.push(std::mem::take(&mut row));
                }
                (c, _) => cur.push(c),
            }
        }
        rows
    }

    #[test]
    fn one_row_per_figure() {
        let text = render(&csv::Csv, &sample_run(), ExportOptions::default());
        let rows = parse(&text);
        assert_eq!(rows.len(), 4);
        assert!(rows.iter().all(|r| r.len() == rows[0].len()));
        assert_eq!(rows[2][2], "cache=hot, \"warm\",size=16384");
        assert_eq!(rows[3][4], "skipped");
        check_snapshot("run.csv", &text);
    }

    #[test]
    fn one_row_per_sample() {
        let text = render(&csv::Csv, &sample_run(), ExportOptions { samples: true });
        let rows = parse(&text);
        assert_eq!(rows.len(), 1 + 3 + 2);
        assert_eq!(rows[1][5], "190");
        check_snapshot("samples.csv", &text);
    }
}
