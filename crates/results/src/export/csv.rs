//! One row per figure (and one per figure that could not be measured, with the reason), or with
//! `--samples` one row per raw sample with its repetition. RFC 4180 quoting.

use super::{ExportOptions, Exporter};
use crate::results::model::{Run, Status};
use std::io::{self, Write};

pub struct Csv;

/// A text field: made safe from spreadsheets (a machine name, figure key or reason comes from
/// whoever wrote the run), then quoted when it holds a comma, quote or line break, quotes inside
/// doubled.
fn field(s: &str) -> String {
    let s = crate::text::spreadsheet_safe(s);
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: Option<f64>) -> String {
    v.map(|x| format!("{x}")).unwrap_or_default()
}

fn status(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Skipped => "skipped",
        Status::Failed => "failed",
    }
}

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }
    fn write(&self, run: &Run, options: &ExportOptions, out: &mut dyn Write) -> io::Result<()> {
        let (id, kind) = (field(&run.id), run.kind());
        let figures = run.figures();
        if options.samples {
            writeln!(out, "run_id,kind,figure,unit,repetition,sample,value")?;
            for f in &figures {
                let crate::results::figure::Evidence::Rounds(rounds) = &f.evidence else {
                    continue;
                };
                for (r, samples) in rounds.iter().enumerate() {
                    for (i, v) in samples.iter().enumerate() {
                        writeln!(
                            out,
                            "{id},{kind},{},{},{r},{i},{v}",
                            field(&f.key),
                            f.unit.symbol()
                        )?;
                    }
                }
            }
            return Ok(());
        }
        writeln!(
            out,
            "run_id,kind,figure,group,unit,direction,value,ci95_low,ci95_high,cv,repetitions,samples,status,reason"
        )?;
        for f in &figures {
            let reps = f.evidence.round_values().len();
            let samples = f.evidence.samples().len();
            writeln!(
                out,
                "{id},{kind},{},{},{},{},{},{},{},{},{reps},{samples},ok,",
                field(&f.key),
                field(&f.group),
                f.unit.symbol(),
                match f.direction {
                    crate::results::figure::Direction::Lower => "lower",
                    crate::results::figure::Direction::Higher => "higher",
                },
                f.value,
                num(f.interval.map(|i| i[0])),
                num(f.interval.map(|i| i[1])),
                num(f.cv())
            )?;
        }
        for u in run.unmeasured() {
            writeln!(
                out,
                "{id},{kind},{},,,,,,,,0,0,{},{}",
                field(&u.key),
                status(u.status),
                field(&u.reason)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub mod tests {
    use super::super::*;

    /// A minimal RFC 4180 reader, to prove the output parses back into the same fields.
    pub fn parse(text: &str) -> Vec<Vec<String>> {
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
        assert_eq!(rows[2][2], "memory.copy cache=hot, \"warm\" size=16384");
        assert_eq!(rows[2][5], "higher");
        assert_eq!(rows[3][12], "skipped");
        check_snapshot("run.csv", &text);
    }

    #[test]
    fn one_row_per_sample() {
        let text = render(&csv::Csv, &sample_run(), ExportOptions { samples: true });
        let rows = parse(&text);
        assert_eq!(rows.len(), 1 + 3 + 2);
        assert_eq!(rows[1][6], "190");
        check_snapshot("samples.csv", &text);
    }
}
