//! The papers' published numbers, kept as data files laid out like the papers' tables
//! (`src/papers/data/*.json`, compiled in), read into typed structs and checked on load.
//!
//! A file holds the machines (with the paper's speed rating where it gives one), the tables (each
//! with its columns and rows of values), and for Chen and Bershad the seven assertions. Figures the
//! papers give only in running text (or as numbers the text reads off a bar chart) are kept as
//! tables with `"source": "text"`. [`Paper::cells`] flattens a paper into one typed record per
//! value, naming its table, row, column, unit, machine and rating.

use super::quantity::{Quantity, Unit};
use super::PaperId;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    pub id: String,
    pub name: String,
    pub isa: Option<String>,
    /// The paper's integer speed rating, millions of instructions per second.
    pub mips: Option<f64>,
    /// The processor clock, where the paper gives that instead of a rating.
    pub mhz: Option<f64>,
}

impl Machine {
    /// "20 MIPS", "90 MHz", or nothing.
    pub fn rating(&self) -> Option<String> {
        match (self.mips, self.mhz) {
            (Some(m), _) => Some(format!("{} MIPS", super::quantity::format_number(m))),
            (None, Some(f)) => Some(format!("{} MHz", super::quantity::format_number(f))),
            _ => None,
        }
    }
}

/// Where in the paper a table's numbers are printed.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A numbered table.
    #[default]
    Table,
    /// Figures stated in the running text (often about a bar chart that prints no numbers).
    Text,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    pub id: String,
    pub label: String,
    pub unit: Option<Unit>,
    pub os: Option<String>,
    pub machine: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// The row's label in the paper, unique within its table.
    pub id: String,
    pub unit: Option<Unit>,
    pub os: Option<String>,
    pub machine: Option<String>,
    /// One per column; `None` where the paper leaves the cell empty.
    #[serde(deserialize_with = "super::quantity::cells_in_notation")]
    pub values: Vec<Option<Quantity>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    /// The paper's own numbering ("2", "IV", "4-1"), or the section for text figures ("4.3").
    pub id: String,
    /// What the table shows, in osmeter's words.
    pub title: String,
    /// A name of a word or two for plots and lists ("getpid", "bcopy").
    #[serde(default)]
    pub short: Option<String>,
    #[serde(default)]
    pub source: Source,
    pub os: Option<String>,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

impl Table {
    pub fn column(&self, id: &str) -> Option<(usize, &Column)> {
        self.columns.iter().enumerate().find(|(_, c)| c.id == id)
    }
    pub fn row(&self, id: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.id == id)
    }
    /// The value in `row`, `column`, if both exist and the cell is not empty.
    pub fn value(&self, row: &str, column: &str) -> Option<Quantity> {
        let (i, _) = self.column(column)?;
        self.row(row)?.values.get(i).copied().flatten()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Holds,
    DoesNotHold,
}

/// One of Chen and Bershad's assertions, in osmeter's words, with the paper's verdict.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Assertion {
    pub number: u8,
    pub claim: String,
    pub verdict: Verdict,
    /// Tables the paper rests the verdict on.
    pub evidence: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Paper {
    pub paper: PaperId,
    pub machines: Vec<Machine>,
    /// The machine of every value that names none (the papers measured on one machine).
    pub machine: Option<String>,
    #[serde(default)]
    pub assertions: Vec<Assertion>,
    pub tables: Vec<Table>,
}

/// One published value with everything needed to read it alone.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Cell<'a> {
    pub paper: PaperId,
    pub table: &'a str,
    pub row: &'a str,
    pub column: &'a str,
    pub unit: Unit,
    pub machine: &'a Machine,
    pub os: Option<&'a str>,
    pub source: Source,
    pub value: Quantity,
}

fn text(id: PaperId) -> &'static str {
    match id {
        PaperId::Ousterhout89 => include_str!("data/ousterhout89.json"),
        PaperId::Chen96 => include_str!("data/chen96.json"),
        PaperId::CotaRobles99 => include_str!("data/cota-robles99.json"),
        PaperId::ChenBershad93 => include_str!("data/chen-bershad93.json"),
    }
}

impl Paper {
    /// Reads and checks a paper's data file.
    pub fn load(id: PaperId) -> Result<Paper> {
        let paper: Paper = serde_json::from_str(text(id))
            .with_context(|| format!("the data file of {} does not parse", id.name()))?;
        if paper.paper != id {
            bail!(
                "the data file of {} says it holds {}",
                id.name(),
                paper.paper.name()
            );
        }
        paper
            .check()
            .with_context(|| format!("the data file of {} is inconsistent", id.name()))?;
        Ok(paper)
    }

    pub fn table(&self, id: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.id == id)
    }

    pub fn machine(&self, id: &str) -> Option<&Machine> {
        self.machines.iter().find(|m| m.id == id)
    }

    /// Every value, in table, row, column order.
    pub fn cells(&self) -> Result<Vec<Cell<'_>>> {
        let mut out = Vec::new();
        for t in &self.tables {
            for r in &t.rows {
                for (c, v) in t.columns.iter().zip(&r.values) {
                    let Some(value) = *v else { continue };
                    let unit = match (r.unit, c.unit) {
                        (Some(u), None) | (None, Some(u)) => u,
                        (Some(_), Some(_)) => {
                            bail!("table {} row {:?}: unit given twice", t.id, r.id)
                        }
                        (None, None) => {
                            bail!("table {} row {:?} column {:?}: no unit", t.id, r.id, c.id)
                        }
                    };
                    let machine_id = r
                        .machine
                        .as_deref()
                        .or(c.machine.as_deref())
                        .or(self.machine.as_deref())
                        .with_context(|| format!("table {} row {:?}: no machine", t.id, r.id))?;
                    let machine = self.machine(machine_id).with_context(|| {
                        format!(
                            "table {} row {:?}: unknown machine {machine_id:?}",
                            t.id, r.id
                        )
                    })?;
                    out.push(Cell {
                        paper: self.paper,
                        table: &t.id,
                        row: &r.id,
                        column: &c.id,
                        unit,
                        machine,
                        os: r.os.as_deref().or(c.os.as_deref()).or(t.os.as_deref()),
                        source: t.source,
                        value,
                    });
                }
            }
        }
        Ok(out)
    }

    fn check(&self) -> Result<()> {
        let mut seen = HashSet::new();
        for m in &self.machines {
            if !seen.insert(m.id.as_str()) {
                bail!("machine {:?} listed twice", m.id);
            }
        }
        let mut tables = HashSet::new();
        for t in &self.tables {
            if !tables.insert(t.id.as_str()) {
                bail!("table {:?} listed twice", t.id);
            }
            if t.columns.is_empty() || t.rows.is_empty() {
                bail!("table {:?} has no columns or no rows", t.id);
            }
            let mut cols = HashSet::new();
            for c in &t.columns {
                if !cols.insert(c.id.as_str()) {
                    bail!("table {}: column {:?} twice", t.id, c.id);
                }
            }
            let mut rows = HashSet::new();
            for r in &t.rows {
                if !rows.insert(r.id.as_str()) {
                    bail!("table {}: row {:?} twice", t.id, r.id);
                }
                if r.values.len() != t.columns.len() {
                    bail!(
                        "table {} row {:?}: {} values for {} columns",
                        t.id,
                        r.id,
                        r.values.len(),
                        t.columns.len()
                    );
                }
                if r.values.iter().all(Option::is_none) {
                    bail!("table {} row {:?}: every cell is empty", t.id, r.id);
                }
            }
        }
        for a in &self.assertions {
            for e in &a.evidence {
                if self.table(e).is_none() {
                    bail!(
                        "assertion {} rests on table {e:?}, which is not here",
                        a.number
                    );
                }
            }
        }
        // Units and machines resolve for every value.
        self.cells().map(|_| ())
    }
}
