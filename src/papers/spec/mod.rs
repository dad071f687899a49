//! Which osmeter figure stands today for which of a paper's figures, and which of the paper's
//! derived columns osmeter recomputes for today: the shapes here, one file per paper beside them.

use super::source::{probe, Param, ProbeRef};
use super::PaperId;
use crate::latency::threads::{ClassName, Path};
use crate::memsim::document::{MachineDoc, MemsimDoc};

/// Today's side of a comparison.
#[derive(Debug, Clone, Copy)]
pub enum Now {
    /// One osmeter figure, in the paper's unit.
    Figure(ProbeRef),
    /// Two figures' ratio, set against a factor the paper states ("dynamic costs twice static").
    Ratio(ProbeRef, ProbeRef),
    /// Several figures added up, in the paper's unit (phases the paper timed as one).
    Sum(&'static [ProbeRef]),
    /// One figure times a count, in the paper's unit: the time per request of a trace the paper
    /// timed whole.
    Scaled(ProbeRef, f64),
    /// How much more the first figure is than the second, in percent (a penalty the paper states).
    PercentMore(ProbeRef, ProbeRef),
    /// This machine's speed in MIPS (from `cpu.reference`).
    Mips,
    /// Processor cycles of one operation: counted cycles where the run has them, else the time at
    /// this machine's nominal clock.
    Cycles(ProbeRef),
    /// A figure of a stored `osmeter memsim` document, from its DECstation 5000/200 machine.
    Memsim(MemsimFigure),
    /// An estimated worst case of a stored `osmeter latency` document.
    Latency(LatencyFigure),
    /// The buffer model of a stored `osmeter latency` document: time between underruns of a
    /// pipeline that absorbs a given lateness, or the lateness to absorb for a given time
    /// between underruns.
    Underruns(UnderrunFigure),
}

/// An underrun figure of one class and path, from the Gumbel fit of its per-window maxima: a
/// window holds an underrun when its largest lateness exceeds what the buffers absorb, so the mean
/// time between underruns is the window's width over the chance of that.
#[derive(Debug, Clone, Copy)]
pub struct UnderrunFigure {
    pub class: ClassName,
    pub path: Path,
    pub ask: Underrun,
}

#[derive(Debug, Clone, Copy)]
pub enum Underrun {
    /// Mean time between underruns, seconds, when `tolerance_ms` of lateness is absorbed.
    MttfAt { tolerance_ms: f64 },
    /// The lateness to absorb, milliseconds, for `mttf_s` seconds between underruns.
    ToleranceFor { mttf_s: f64 },
}

/// One figure read off a simulated machine of a memsim document.
#[derive(Clone, Copy)]
pub struct MemsimFigure {
    pub get: MemsimGet,
}

#[derive(Clone, Copy)]
pub enum MemsimGet {
    /// From the document and its machine; `None` when the document lacks it.
    Doc(fn(&MemsimDoc, &MachineDoc) -> Option<f64>),
    /// From the machine alone, always there.
    Machine(fn(&MachineDoc) -> f64),
}

impl MemsimFigure {
    pub fn value(&self, doc: &MemsimDoc, machine: &MachineDoc) -> Option<f64> {
        match self.get {
            MemsimGet::Doc(f) => f(doc, machine),
            MemsimGet::Machine(f) => Some(f(machine)),
        }
    }
}

impl std::fmt::Debug for MemsimFigure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemsimFigure")
    }
}

/// The worst wake-up lateness of one class and path expected over `horizon_s` seconds of running,
/// from the Gumbel fit of the per-second maxima.
#[derive(Debug, Clone, Copy)]
pub struct LatencyFigure {
    pub class: ClassName,
    pub path: Path,
    pub horizon_s: f64,
}

/// What kind of stored document today's side of a paper comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Today {
    /// `osmeter run` measurements, which `osmeter paper NAME` can take itself.
    Probes,
    /// An `osmeter memsim` run, passed with `--run`.
    Memsim,
    /// A latency run: measured by `osmeter paper NAME` itself, or an `osmeter latency` run passed
    /// with `--run`.
    Latency,
}

/// Which of the paper's cells a comparison stands beside.
#[derive(Debug, Clone, Copy)]
pub enum Cells {
    /// Every row of a column (the rows are the paper's machines).
    Column(&'static str),
    /// Every column of a row (the columns are the paper's systems).
    Row(&'static str),
    /// The cells of the rows and columns selected.
    Where { rows: Sel, columns: Sel },
}

/// A choice of rows or columns by id.
#[derive(Debug, Clone, Copy)]
pub enum Sel {
    Is(&'static str),
    StartsWith(&'static str),
    EndsWith(&'static str),
}

impl Sel {
    pub fn matches(&self, id: &str) -> bool {
        match *self {
            Sel::Is(s) => id == s,
            Sel::StartsWith(s) => id.starts_with(s),
            Sel::EndsWith(s) => id.ends_with(s),
        }
    }
}

impl Cells {
    pub fn contains(&self, row: &str, column: &str) -> bool {
        match *self {
            Cells::Column(c) => c == column,
            Cells::Row(r) => r == row,
            Cells::Where { rows, columns } => rows.matches(row) && columns.matches(column),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Comparison {
    pub table: &'static str,
    pub cells: Cells,
    /// How today's row or column is labelled ("this machine", "... across CPUs").
    pub label: &'static str,
    pub now: Now,
}

/// A column the paper computed from its others, recomputed for today.
#[derive(Debug, Clone, Copy)]
pub enum Derived {
    /// Ousterhout's MIPS-relative speed of column `from` of table `source` against its row
    /// `base`, into `column` of `table` (Table 8 derives from Table 7's totals). `only` names the
    /// one of today's rows the column belongs to (Table 8's local column: the kernel's ext4, not
    /// FUSE); `None` derives it for every row of today's.
    MipsRelative {
        table: &'static str,
        column: &'static str,
        source: &'static str,
        from: &'static str,
        base: &'static str,
        only: Option<&'static str>,
    },
    /// Bandwidth of column `from` over the MIPS rating (Table 5's last column).
    BytesPerInstruction {
        table: &'static str,
        column: &'static str,
        from: &'static str,
    },
}

impl Derived {
    pub fn table(&self) -> &'static str {
        match *self {
            Derived::MipsRelative { table, .. } | Derived::BytesPerInstruction { table, .. } => {
                table
            }
        }
    }
    /// The table whose column `from` the derived column is computed from.
    pub fn source(&self) -> &'static str {
        match *self {
            Derived::MipsRelative { source, .. } => source,
            Derived::BytesPerInstruction { table, .. } => table,
        }
    }
    pub fn column(&self) -> &'static str {
        match *self {
            Derived::MipsRelative { column, .. } | Derived::BytesPerInstruction { column, .. } => {
                column
            }
        }
    }
    /// Whether today's row labelled `label` gets the derived column.
    pub fn derives_for(&self, label: &str) -> bool {
        match *self {
            Derived::MipsRelative { only, .. } => only.is_none_or(|o| o == label),
            Derived::BytesPerInstruction { .. } => true,
        }
    }
    pub fn from(&self) -> &'static str {
        match *self {
            Derived::MipsRelative { from, .. } | Derived::BytesPerInstruction { from, .. } => from,
        }
    }
}

pub struct Spec {
    pub comparisons: &'static [Comparison],
    pub derived: &'static [Derived],
    /// What a reader should know about a table's comparison (how today's figure differs).
    pub notes: &'static [(&'static str, &'static str)],
    /// What gives today's side, when it is not `osmeter run` probes.
    pub elsewhere: Option<&'static str>,
    /// Whether the paper rates its machines in MIPS, so every speed-up is also set against the
    /// CPU's (which needs `cpu.reference`).
    pub cpu_relative: bool,
}

impl Spec {
    /// Every figure today's side needs (of one table, or all), the CPU reference included when a
    /// comparison needs the CPU's speed.
    pub fn figures_of(&self, table: Option<&str>) -> Vec<ProbeRef> {
        let wanted = |t: &str| table.is_none_or(|w| w == t);
        let mut out: Vec<ProbeRef> = Vec::new();
        let mut push = |r: ProbeRef| {
            if !out
                .iter()
                .any(|o| o.probe == r.probe && o.label() == r.label())
            {
                out.push(r)
            }
        };
        let compared = self.comparisons.iter().any(|c| wanted(c.table));
        if compared && self.cpu_relative {
            push(super::cpu::REFERENCE);
        }
        for c in self.comparisons.iter().filter(|c| wanted(c.table)) {
            match c.now {
                Now::Figure(r) | Now::Cycles(r) | Now::Scaled(r, _) => push(r),
                Now::Ratio(a, b) | Now::PercentMore(a, b) => {
                    push(a);
                    push(b)
                }
                Now::Sum(parts) => parts.iter().copied().for_each(&mut push),
                Now::Mips | Now::Memsim(_) | Now::Latency(_) | Now::Underruns(_) => {}
            }
        }
        out
    }

    pub fn figures(&self) -> Vec<ProbeRef> {
        self.figures_of(None)
    }

    /// The probe ids to run (for one table, or all), in the order the figures list them.
    pub fn probes_of(&self, table: Option<&str>) -> Vec<&'static str> {
        let mut ids: Vec<&'static str> = Vec::new();
        for f in self.figures_of(table) {
            if !ids.contains(&f.probe) {
                ids.push(f.probe);
            }
        }
        ids
    }

    pub fn probes(&self) -> Vec<&'static str> {
        self.probes_of(None)
    }

    /// The classes and wake paths of a latency run that the comparisons (of one table, or all)
    /// read, each once in the order the comparisons name them; empty when none reads a latency
    /// run.
    pub fn latency_streams_of(&self, table: Option<&str>) -> (Vec<ClassName>, Vec<Path>) {
        let (mut classes, mut paths) = (Vec::new(), Vec::new());
        for c in self
            .comparisons
            .iter()
            .filter(|c| table.is_none_or(|t| t == c.table))
        {
            let (class, path) = match c.now {
                Now::Latency(f) => (f.class, f.path),
                Now::Underruns(f) => (f.class, f.path),
                _ => continue,
            };
            if !classes.contains(&class) {
                classes.push(class);
            }
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        (classes, paths)
    }

    /// Where today's side comes from.
    pub fn today(&self) -> Today {
        if self
            .comparisons
            .iter()
            .any(|c| matches!(c.now, Now::Memsim(_)))
        {
            Today::Memsim
        } else if self
            .comparisons
            .iter()
            .any(|c| matches!(c.now, Now::Latency(_) | Now::Underruns(_)))
        {
            Today::Latency
        } else {
            Today::Probes
        }
    }
}

pub fn spec(paper: PaperId) -> &'static Spec {
    match paper {
        PaperId::Ousterhout89 => &ousterhout89::SPEC,
        PaperId::Chen96 => &chen96::SPEC,
        PaperId::ChenBershad93 => &chen_bershad93::SPEC,
        PaperId::CotaRobles99 => &cota_robles99::SPEC,
    }
}

const HERE: &str = "this machine";

const fn fig(table: &'static str, column: &'static str, r: ProbeRef) -> Comparison {
    Comparison {
        table,
        cells: Cells::Column(column),
        label: HERE,
        now: Now::Figure(r),
    }
}

mod chen96;
mod chen_bershad93;
mod cota_robles99;
mod ousterhout89;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::papers::data::Paper;

    /// Every table, row, column and probe a spec names exists, and every parameter it asks for is
    /// one the probe measures at full scale.
    #[test]
    fn specs_name_only_what_exists() {
        for id in PaperId::ALL {
            let paper = Paper::load(id).unwrap();
            let spec = spec(id);
            for c in spec.comparisons {
                let t = paper
                    .table(c.table)
                    .unwrap_or_else(|| panic!("{id:?}: no table {}", c.table));
                let cells = t
                    .rows
                    .iter()
                    .flat_map(|r| t.columns.iter().map(move |col| (r, col)))
                    .filter(|(r, col)| c.cells.contains(&r.id, &col.id))
                    .count();
                let expected = match c.cells {
                    Cells::Column(_) => t.rows.len(),
                    Cells::Row(_) => t.columns.len(),
                    Cells::Where { .. } => 1,
                };
                assert!(
                    cells >= expected,
                    "{id:?} table {}: {:?} selects {cells} cells",
                    c.table,
                    c.cells
                );
            }
            for d in spec.derived {
                let (t, source) = (
                    paper.table(d.table()).unwrap(),
                    paper.table(d.source()).unwrap(),
                );
                assert!(t.column(d.column()).is_some() && source.column(d.from()).is_some());
                if let Derived::MipsRelative { base, .. } = d {
                    assert!(source.row(base).is_some(), "{id:?} {} {base}", d.source());
                }
            }
            for (table, _) in spec.notes {
                assert!(paper.table(table).is_some(), "{id:?} note on {table}");
            }
            for f in spec.figures() {
                let p = crate::probes::find(f.probe)
                    .unwrap_or_else(|| panic!("{id:?}: no probe {}", f.probe));
                let variants = (p.variants)(crate::probes::Scale::Full);
                assert!(
                    variants.iter().any(|v| f.wants(v)),
                    "{id:?}: {} is not among the variants of {}",
                    f.label(),
                    f.probe
                );
            }
        }
    }

    #[test]
    fn ousterhout_runs_the_papers_probes_and_the_reference() {
        let probes = spec(PaperId::Ousterhout89).probes();
        assert_eq!(probes[0], "cpu.reference");
        for p in [
            "syscall.null",
            "ipc.pipe_pingpong",
            "select.select",
            "memory.copy",
            "fs.read_cached",
            "fs.open_close",
            "fs.create_delete",
        ] {
            assert!(probes.contains(&p), "{p}");
        }
        assert!(spec(PaperId::ChenBershad93).probes().is_empty());
        // One table: its probe and the reference, nothing else.
        assert_eq!(
            spec(PaperId::Ousterhout89).probes_of(Some("2")),
            vec!["cpu.reference", "syscall.null"]
        );
        // Table 7 times the Andrew benchmark's phases, one probe with its variants.
        assert_eq!(
            spec(PaperId::Ousterhout89).probes_of(Some("7")),
            vec!["cpu.reference", "app.andrew"]
        );
        assert_eq!(
            spec(PaperId::Chen96).probes_of(Some("4.7")),
            vec!["net.tcp_bandwidth"]
        );
    }
}
