//! `ab`'s document as text: the verdict first, then each figure's two sides and paired ratio, then
//! what the machine did meanwhile and what could be found.

use super::document::AbDoc;
use crate::columns::{Align, Table};
use crate::results::compare::Verdict;
use crate::text::escape_controls;
use crate::units;
use std::fmt::Write;
use std::time::Duration;

pub fn render(doc: &AbDoc) -> String {
    let mut out = String::new();
    let changed = doc.changed().count();
    let judged = doc.figures.iter().filter(|f| f.paired.is_some()).count();
    let _ = writeln!(
        out,
        "{} of {judged} figures changed beyond the {:.1} % minimum effect ({} pairs, {}, {}; {})",
        changed,
        doc.min_effect * 100.0,
        doc.pairs,
        doc.mode.as_str(),
        crate::progress::duration(Duration::from_secs_f64(doc.elapsed_s)),
        doc.stopped
    );
    let _ = writeln!(
        out,
        "{}",
        escape_controls(&crate::results::document::Document::how(doc))
    );
    let mut table = Table::new(
        &[
            "figure",
            "A",
            "B",
            "B/A",
            "95 % interval",
            "pairs",
            "verdict",
        ],
        &[
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Left,
        ],
        1,
    );
    for f in &doc.figures {
        let side = |rounds: &Vec<Vec<f64>>| {
            super::document::side_value(rounds)
                .map_or("-".to_string(), |v| units::format(v, f.unit))
        };
        let (ratio, interval) = match f.paired {
            Some(p) => (
                format!("{:.3}", p.ratio),
                format!("{:.3}-{:.3}", p.ci95[0], p.ci95[1]),
            ),
            None => ("-".into(), "-".into()),
        };
        let verdict = match f.verdict {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoChange => "no change",
            Verdict::Untested => "untested",
        };
        table.push(vec![
            escape_controls(&f.key).into_owned(),
            side(&f.a_rounds),
            side(&f.b_rounds),
            ratio,
            interval,
            f.ratios.len().to_string(),
            verdict.to_string(),
        ]);
    }
    out.push('\n');
    out.push_str(&table.render(crate::columns::width()));
    let notes: Vec<String> = doc
        .figures
        .iter()
        .filter(|f| f.verdict != Verdict::NoChange || f.paired.is_none())
        .map(|f| {
            format!(
                "  {}: {}",
                escape_controls(&f.key),
                escape_controls(&f.reason)
            )
        })
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(out, "\n{}", notes.join("\n"));
    }
    if let Some(drift) = doc.drift() {
        let _ = writeln!(
            out,
            "\nThe machine's CPU yardstick moved {:.1} % between its fastest and slowest reading \
             over these {}: each pair's A and B were measured within seconds of each other, so \
             the verdicts rest on the pairs' ratios and not on that drift.",
            (drift - 1.0) * 100.0,
            crate::progress::duration(Duration::from_secs_f64(doc.elapsed_s))
        );
    }
    for f in &doc.findable {
        let _ = writeln!(
            out,
            "Findable: {}",
            f.sentence(Duration::from_secs_f64(doc.budget_s), doc.min_effect)
        );
    }
    if let Some(e) = &doc.failure {
        let _ = writeln!(out, "FAILED: {}", escape_controls(e));
    }
    for problem in &doc.left_changed {
        let _ = writeln!(out, "LEFT CHANGED: {}", escape_controls(problem));
    }
    out
}
