//! The terminal view of a paper: each table as the paper laid it out, today's rows (or column)
//! added, then the speed-ups since the paper and the speed-ups relative to the CPU's.

use super::data::{Paper, Source, Table};
use super::quantity::{format_number, Quantity, Unit};
use super::view::{CellPair, PaperDoc};
use std::fmt::Write;

/// Columns of text, the first row the header; on a terminal the first column is left-aligned and
/// the rest right-aligned. The HTML report sets the same grids as tables.
pub struct Grid {
    pub rows: Vec<Vec<String>>,
}

impl Grid {
    fn new(header: Vec<String>) -> Grid {
        Grid { rows: vec![header] }
    }
    fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }
    /// Fitted to the terminal like every table (stacked blocks that repeat the first column).
    pub fn render(&self, out: &mut String) {
        use crate::columns::{Align, Table};
        let Some((header, rows)) = self.rows.split_first() else {
            return;
        };
        let n = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let header: Vec<&str> = (0..n)
            .map(|i| header.get(i).map(String::as_str).unwrap_or(""))
            .collect();
        let mut align = vec![Align::Right; n];
        if let Some(first) = align.first_mut() {
            *first = Align::Left;
        }
        let mut table = Table::new(&header, &align, 1).indented("  ");
        for r in rows {
            table.push(r.clone());
        }
        out.push_str(&table.render(crate::columns::width()));
    }
}

fn times(v: f64) -> String {
    format!("{}x", format_number(v))
}

/// The labels of today's rows of a table, in the order the comparisons list them.
fn now_labels<'a>(doc: &'a PaperDoc, table: &str) -> Vec<&'a str> {
    let mut labels: Vec<&str> = Vec::new();
    for p in doc.cells.iter().filter(|p| p.table == table) {
        if !labels.contains(&p.now_label.as_str()) {
            labels.push(&p.now_label);
        }
    }
    labels
}

fn pairs<'a>(doc: &'a PaperDoc, table: &'a str) -> impl Iterator<Item = &'a CellPair> + 'a {
    doc.cells.iter().filter(move |p| p.table == table)
}

/// The unit every column shares, when the rows carry none of their own.
fn common_unit(t: &Table) -> Option<Unit> {
    let first = t.columns.first()?.unit?;
    (t.rows.iter().all(|r| r.unit.is_none()) && t.columns.iter().all(|c| c.unit == Some(first)))
        .then_some(first)
}

pub fn heading(t: &Table) -> String {
    let unit = common_unit(t)
        .filter(|u| !matches!(u, Unit::Ratio | Unit::Count | Unit::Index))
        .map(|u| format!(" [{}]", u.symbol()))
        .unwrap_or_default();
    match t.source {
        Source::Table => format!("Table {}. {}{unit}", t.id, t.title),
        Source::Text => format!("Section {}. {}{unit}", t.id, t.title),
    }
}

fn paper_cells(t: &Table, r: &super::data::Row) -> Vec<String> {
    r.values
        .iter()
        .zip(&t.columns)
        .map(|(v, c)| match (v, r.unit.or(c.unit)) {
            // Event selectors read as the hexadecimal numbers they are.
            (Some(Quantity::Exact { value }), Some(Unit::Index)) => {
                format!("0x{:02x}", *value as u64)
            }
            (Some(q), _) => q.to_string(),
            (None, _) => String::new(),
        })
        .collect()
}

/// Ratios, counts and indices need no unit, nor does a label or title that names it already.
fn label_names_unit(t: &Table, label: &str, unit: Unit) -> bool {
    matches!(unit, Unit::Ratio | Unit::Count | Unit::Index)
        || label == unit.symbol()
        || (unit == Unit::Percent && label.contains('%'))
        || (unit == Unit::Thousands && t.title.contains("thousands"))
        || (unit == Unit::CyclesPerInstruction
            && (label.contains("MCPI") || t.title.contains("MCPI")))
}

fn header(t: &Table, lead: &[&str]) -> Vec<String> {
    let mut h: Vec<String> = lead.iter().map(|s| s.to_string()).collect();
    for c in &t.columns {
        let unit = t.rows.iter().find_map(|r| r.unit).or(c.unit);
        h.push(match unit {
            Some(u)
                if common_unit(t).is_none()
                    && t.rows.iter().all(|r| r.unit.is_none())
                    && !label_names_unit(t, &c.label, u) =>
            {
                format!("{} ({})", c.label, u.symbol())
            }
            _ => c.label.clone(),
        });
    }
    h
}

/// A table whose rows are the paper's machines: today's rows below, then the speed-ups.
fn by_rows(paper: &Paper, t: &Table, doc: &PaperDoc) -> Vec<Grid> {
    // A MIPS column beside each row, unless the table is the ratings themselves.
    let rated = t.rows.iter().any(|r| {
        r.machine
            .as_deref()
            .and_then(|m| paper.machine(m))
            .is_some_and(|m| m.mips.is_some())
    }) && !t.columns.iter().any(|c| c.unit == Some(Unit::Mips));
    let lead: Vec<&str> = if rated { vec!["", "MIPS"] } else { vec![""] };
    let mut g = Grid::new(header(t, &lead));
    for r in &t.rows {
        let mut row = vec![r.id.clone()];
        if rated {
            let m = r.machine.as_deref().and_then(|m| paper.machine(m));
            row.push(
                m.and_then(|m| m.mips)
                    .map(format_number)
                    .unwrap_or_default(),
            );
        }
        row.extend(paper_cells(t, r));
        g.push(row);
    }
    for label in now_labels(doc, &t.id) {
        let mut row = vec![label.to_string()];
        if rated {
            row.push(
                doc.cpu
                    .as_ref()
                    .map(|c| format_number(c.mips))
                    .unwrap_or("?".into()),
            );
        }
        for c in &t.columns {
            let p = pairs(doc, &t.id).find(|p| p.now_label == label && p.column == c.id);
            row.push(match p {
                None => String::new(),
                Some(p) => p.now_value.map(format_number).unwrap_or("-".into()),
            });
        }
        g.push(row);
    }
    let mut grids = vec![g];
    grids.extend(speedups(t, doc));
    grids
}

/// The speed-ups of today's first row against each paper row, and relative to the CPU's; a paper
/// row that today's first row does not stand beside (Table VII's Wish against today's Wish, its
/// web server against today's) takes the first of today's rows that does.
fn speedups(t: &Table, doc: &PaperDoc) -> Option<Grid> {
    let labels = now_labels(doc, &t.id);
    let first = labels.first().copied()?;
    let label_of = |row: &str| {
        labels.iter().copied().find(|l| {
            pairs(doc, &t.id).any(|p| p.now_label == *l && p.row == row && p.speedup.is_some())
        })
    };
    let row_labels: Vec<Option<&str>> = t.rows.iter().map(|r| label_of(&r.id)).collect();
    let cols: Vec<&super::data::Column> = t
        .columns
        .iter()
        .filter(|c| {
            pairs(doc, &t.id).any(|p| {
                row_labels.contains(&Some(p.now_label.as_str()))
                    && p.column == c.id
                    && p.speedup.is_some()
            })
        })
        .collect();
    if cols.is_empty() {
        return None;
    }
    let relative = pairs(doc, &t.id).any(|p| p.speedup_relative_to_cpu.is_some());
    let one_label = row_labels.iter().flatten().all(|l| *l == first);
    let mut head = vec![if one_label {
        format!("speed-up to {first}")
    } else {
        "speed-up to today's row of the same workload".to_string()
    }];
    if relative {
        head.push("CPU".into());
    }
    for c in &cols {
        head.push(c.label.clone());
        if relative {
            head.push("÷CPU".into());
        }
    }
    let mut g = Grid::new(head);
    for (r, label) in t.rows.iter().zip(&row_labels) {
        let label = label.unwrap_or(first);
        let find = |c: &str| {
            pairs(doc, &t.id).find(|p| p.now_label == label && p.row == r.id && p.column == c)
        };
        let mut row = vec![r.id.clone()];
        if relative {
            let cpu = cols
                .iter()
                .find_map(|c| find(&c.id).and_then(|p| p.cpu_speedup));
            row.push(cpu.map(times).unwrap_or_default());
        }
        for c in &cols {
            let p = find(&c.id);
            row.push(p.and_then(|p| p.speedup).map(times).unwrap_or_default());
            if relative {
                row.push(
                    p.and_then(|p| p.speedup_relative_to_cpu)
                        .map(format_number)
                        .unwrap_or_default(),
                );
            }
        }
        g.push(row);
    }
    Some(g)
}

/// A table whose columns are the paper's systems: today's value in a column of its own.
fn by_columns(t: &Table, doc: &PaperDoc) -> Grid {
    let labels = now_labels(doc, &t.id);
    let with_unit = t.rows.iter().any(|r| r.unit.is_some());
    let mut h = header(t, &[""]);
    if with_unit {
        h.insert(1, "unit".into());
    }
    for l in &labels {
        h.push(l.to_string());
    }
    let speedup = pairs(doc, &t.id).any(|p| p.speedup.is_some());
    if speedup {
        h.push("speed-up".into());
    }
    let mut g = Grid::new(h);
    for r in &t.rows {
        let mut row = vec![r.id.clone()];
        if with_unit {
            row.push(r.unit.map(|u| u.symbol().to_string()).unwrap_or_default());
        }
        row.extend(paper_cells(t, r));
        for l in &labels {
            let p = pairs(doc, &t.id).find(|p| p.row == r.id && p.now_label == *l);
            row.push(match p {
                None => String::new(),
                Some(p) => p.now_value.map(format_number).unwrap_or("-".into()),
            });
        }
        if speedup {
            let ups: Vec<f64> = pairs(doc, &t.id)
                .filter(|p| p.row == r.id)
                .filter_map(|p| p.speedup)
                .collect();
            let lo = ups.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = ups.iter().copied().fold(0.0, f64::max);
            row.push(match ups.len() {
                0 => String::new(),
                _ if (hi - lo).abs() <= 1e-9 * hi => times(lo),
                _ => format!("{}-{}", format_number(lo), times(hi)),
            });
        }
        g.push(row);
    }
    g
}

/// The grids of one table: the paper's values with today's beside them, then (for tables whose rows
/// are the paper's machines) the speed-ups.
pub fn table_grids(paper: &Paper, t: &Table, doc: &PaperDoc) -> Vec<Grid> {
    if by_machine(paper, t, doc) {
        by_rows(paper, t, doc)
    } else {
        vec![by_columns(t, doc)]
    }
}

/// The notes of a table, and why today's figures are missing.
pub fn table_notes<'a>(doc: &'a PaperDoc, t: &'a Table) -> (Vec<&'a str>, Vec<&'a str>) {
    let notes = doc
        .notes
        .iter()
        .filter(|n| n.table == t.id)
        .map(|n| n.note.as_str())
        .collect();
    let mut why: Vec<&str> = pairs(doc, &t.id)
        .filter_map(|p| p.missing.as_deref())
        .collect();
    why.dedup();
    (notes, why)
}

/// Whether the table's rows are machines (rated ones, or today's figures stand under whole columns)
/// rather than quantities measured on each of the paper's systems.
fn by_machine(paper: &Paper, t: &Table, doc: &PaperDoc) -> bool {
    let rated = t.rows.iter().any(|r| {
        r.machine
            .as_deref()
            .and_then(|m| paper.machine(m))
            .is_some_and(|m| m.mips.is_some())
    });
    let whole_column = t.columns.iter().any(|c| {
        let paired: Vec<&str> = pairs(doc, &t.id)
            .filter(|p| p.column == c.id)
            .map(|p| p.row.as_str())
            .collect();
        !paired.is_empty() && t.rows.iter().all(|r| paired.contains(&r.id.as_str()))
    });
    rated || (whole_column && t.rows.len() > 1)
}

/// The text view; `only` limits it to one table.
pub fn render(paper: &Paper, doc: &PaperDoc, only: Option<&str>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", doc.name, doc.title);
    if !doc.runs.is_empty() {
        let mut what = vec![format!("run {}", doc.runs.join(", "))];
        what.extend(doc.host.clone());
        what.extend(doc.cpu_model.clone());
        what.extend(doc.kernel.as_ref().map(|k| format!("Linux {k}")));
        let _ = writeln!(out, "Today: {}", what.join(", "));
        match (&doc.cpu, &doc.cpu_missing) {
            (Some(c), _) => {
                let _ = write!(
                    out,
                    "CPU: {} MIPS (95 % CI {}-{}) from {}",
                    format_number(c.mips),
                    format_number(c.mips_ci95[0]),
                    format_number(c.mips_ci95[1]),
                    c.figure
                );
                if let Some(p) = c.mips_pmu {
                    let _ = write!(out, "; {} MIPS by the hardware counter", format_number(p));
                }
                out.push('\n');
            }
            (None, Some(why)) => {
                let _ = writeln!(out, "CPU: no MIPS figure ({why})");
            }
            _ => {}
        }
    }
    match (&doc.today_source, &doc.elsewhere) {
        (Some(t), _) => {
            let _ = writeln!(out, "Today's side: {t}");
        }
        (None, Some(e)) if doc.runs.is_empty() => {
            let _ = writeln!(out, "Today's side: {e}.");
        }
        _ => {}
    }
    for t in &paper.tables {
        if only.is_some_and(|o| o != t.id) {
            continue;
        }
        let _ = writeln!(out, "\n{}", heading(t));
        for (i, g) in table_grids(paper, t, doc).iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            g.render(&mut out);
        }
        let (notes, missing) = table_notes(doc, t);
        for n in notes {
            let _ = writeln!(out, "  ({n})");
        }
        for w in missing {
            let _ = writeln!(out, "  - no figure today: {w}");
        }
    }
    out.push_str(&super::split::render_for(doc.paper, &doc.mode_split, only));
    if !doc.assertions.is_empty() && only.is_none() {
        let _ = writeln!(
            out,
            "\nThe seven assertions (Table 1-1, in osmeter's words)"
        );
        let mut g = Grid::new(vec![
            "".into(),
            "assertion".into(),
            "paper".into(),
            "this trace".into(),
        ]);
        for a in &doc.assertions {
            g.push(vec![
                a.number.to_string(),
                a.claim.clone(),
                match a.paper {
                    super::data::Verdict::Holds => "holds".into(),
                    super::data::Verdict::DoesNotHold => "does not hold".into(),
                },
                a.today.map(|v| v.as_str().to_string()).unwrap_or_default(),
            ]);
        }
        g.render(&mut out);
        for a in doc.assertions.iter().filter(|a| a.today_detail.is_some()) {
            let _ = writeln!(
                out,
                "  {}: {}",
                a.number,
                a.today_detail.as_deref().unwrap_or("")
            );
        }
    }
    if let (Some(g), None) = (relative_grid(doc), only) {
        let _ = writeln!(out, "\n{RELATIVE_HEADING}:");
        g.render(&mut out);
        if let Some(line) = os_mean_line(doc) {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

pub const RELATIVE_HEADING: &str = "Speed-up relative to the CPU's, over the paper's machines \
     (below 1: the primitive gained less than the processor)";

/// One row per primitive: its speed-up since the paper and relative to the CPU's (geometric mean
/// over the paper's rated machines, and the range), and against how many machines it fell behind.
pub fn relative_grid(doc: &PaperDoc) -> Option<Grid> {
    if doc.relative_to_cpu.is_empty() {
        return None;
    }
    let mut g = Grid::new(
        [
            "primitive",
            "table",
            "today's figure",
            "speed-up",
            "÷CPU",
            "÷CPU range",
            "behind",
        ]
        .map(String::from)
        .to_vec(),
    );
    for s in &doc.relative_to_cpu {
        g.push(vec![
            s.marked_name(),
            s.table.clone(),
            s.figure.clone(),
            format!("{}-{}", format_number(s.speedup_min), times(s.speedup_max)),
            format_number(s.relative_geomean),
            format!(
                "{}-{}",
                format_number(s.relative_min),
                format_number(s.relative_max)
            ),
            format!("{} of {}", s.rows_behind, s.rows),
        ]);
    }
    Some(g)
}

/// The OS primitives' mean relative speed-up in a sentence, naming what it leaves out.
pub fn os_mean_line(doc: &PaperDoc) -> Option<String> {
    let m = doc.os_relative_to_cpu.as_ref()?;
    let left_out = if m.left_out.is_empty() {
        String::new()
    } else {
        format!("; left out as not OS primitives: {}", m.left_out.join(", "))
    };
    Some(format!(
        "OS primitives relative to the CPU, geometric mean of {}: {}{left_out}",
        m.primitives,
        format_number(m.relative_geomean)
    ))
}
