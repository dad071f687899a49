//! The figures of `osmeter stat`: time, rusage and counters of the command, each run of the
//! command one repetition. The interrupts and stolen time seen during the runs are conditions, not
//! figures of the command: they explain the wall time instead.

use crate::results::figure::{Direction, Evidence, Figure, Role};
use crate::stat::StatDoc;
use std::collections::BTreeMap;

pub fn figures(doc: &StatDoc) -> Vec<Figure> {
    let all = doc.figures();
    let conditions: BTreeMap<String, f64> = all
        .iter()
        .filter(|f| f.key.starts_with("system:"))
        .filter_map(|f| {
            let s = doc.summary.get(&f.key)?;
            Some((f.key.clone(), s.mean))
        })
        .collect();
    all.into_iter()
        .filter(|f| !f.key.starts_with("system:"))
        .filter_map(|f| {
            let summary = doc.summary.get(&f.key)?;
            let (unit, factor) = f.unit.general();
            let direction = if f.key.ends_with("insn-per-cycle") {
                Direction::Higher
            } else {
                Direction::Lower
            };
            Some(Figure {
                group: f.key.split(':').next().unwrap_or("").to_string(),
                unit,
                direction,
                role: Role::Other,
                value: summary.mean * factor,
                interval: (summary.n >= 2)
                    .then(|| [summary.ci95[0] * factor, summary.ci95[1] * factor]),
                evidence: Evidence::Rounds(f.values.iter().map(|v| vec![v * factor]).collect()),
                explain: if f.key == "time:wall" {
                    conditions.clone()
                } else {
                    BTreeMap::new()
                },
                key: f.key,
            })
        })
        .collect()
}

impl crate::results::document::Document for StatDoc {
    const KIND: crate::results::model::RunKind = crate::results::model::RunKind::Stat;

    fn figures(&self) -> Vec<Figure> {
        figures(self)
    }

    fn how(&self) -> String {
        format!(
            "`{}`, {} of {} runs",
            crate::text::command_line(&self.command),
            self.runs.len(),
            self.repeat
        )
    }

    fn text(&self) -> String {
        crate::stat::render(self)
    }
}
