//! Which osmeter figure stands today for which of a paper's figures, and which of the paper's
//! derived columns osmeter recomputes for today.

use super::source::{probe, Param, ProbeRef};
use super::PaperId;

/// Today's side of a comparison.
#[derive(Debug, Clone, Copy)]
pub enum Now {
    /// One osmeter figure, in the paper's unit.
    Figure(ProbeRef),
    /// Two figures' ratio, set against a factor the paper states ("dynamic costs twice static").
    Ratio(ProbeRef, ProbeRef),
    /// This machine's speed in MIPS (from `cpu.reference`).
    Mips,
    /// Processor cycles of one operation: counted cycles where the run has them, else the time at
    /// this machine's nominal clock.
    Cycles(ProbeRef),
}

/// Which of the paper's cells a comparison stands beside.
#[derive(Debug, Clone, Copy)]
pub enum Cells {
    /// Every row of a column (the rows are the paper's machines).
    Column(&'static str),
    /// Every column of a row (the columns are the paper's systems).
    Row(&'static str),
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
    /// Ousterhout's MIPS-relative speed of column `from` against the row `base`.
    MipsRelative {
        table: &'static str,
        column: &'static str,
        from: &'static str,
        base: &'static str,
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
    pub fn column(&self) -> &'static str {
        match *self {
            Derived::MipsRelative { column, .. } | Derived::BytesPerInstruction { column, .. } => {
                column
            }
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
                Now::Figure(r) | Now::Cycles(r) => push(r),
                Now::Ratio(a, b) => {
                    push(a);
                    push(b)
                }
                Now::Mips => {}
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
}

pub fn spec(paper: PaperId) -> &'static Spec {
    match paper {
        PaperId::Ousterhout89 => &OUSTERHOUT,
        PaperId::Chen96 => &CHEN96,
        PaperId::ChenBershad93 => &CHEN_BERSHAD,
        PaperId::CotaRobles99 => &COTA_ROBLES,
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

const GETPID: ProbeRef = probe("syscall.null", &[]);
const PINGPONG_SAME: ProbeRef = probe("ipc.pipe_pingpong", &[("placement", Param::Str("same"))]);
const PINGPONG_CROSS: ProbeRef = probe("ipc.pipe_pingpong", &[("placement", Param::Str("cross"))]);
const SELECT_1: ProbeRef = probe(
    "select.select",
    &[("fds", Param::Num(1)), ("ready", Param::Bool(false))],
);
const SELECT_10_EMPTY: ProbeRef = probe(
    "select.select",
    &[("fds", Param::Num(10)), ("ready", Param::Bool(false))],
);
const SELECT_10_FULL: ProbeRef = probe(
    "select.select",
    &[("fds", Param::Num(10)), ("ready", Param::Bool(true))],
);
const COPY_HOT: ProbeRef = probe("memory.copy", &[("cache", Param::Str("hot"))]);
const COPY_COLD: ProbeRef = probe("memory.copy", &[("cache", Param::Str("cold"))]);
/// The largest file measured: Ousterhout chose files past every hardware cache.
const READ_CACHED: ProbeRef = ProbeRef {
    largest: Some("file_size"),
    ..probe("fs.read_cached", &[])
};
const OPEN_1: ProbeRef = probe("fs.open_close", &[("depth", Param::Num(1))]);
const OPEN_4: ProbeRef = probe("fs.open_close", &[("depth", Param::Num(4))]);
const fn create_delete(size: u64, fsync: bool) -> ProbeRef {
    probe(
        "fs.create_delete",
        match (size, fsync) {
            (0, false) => &[("size", Param::Num(0)), ("fsync", Param::Bool(false))],
            (10240, false) => &[("size", Param::Num(10240)), ("fsync", Param::Bool(false))],
            (102400, false) => &[("size", Param::Num(102400)), ("fsync", Param::Bool(false))],
            (0, true) => &[("size", Param::Num(0)), ("fsync", Param::Bool(true))],
            (10240, true) => &[("size", Param::Num(10240)), ("fsync", Param::Bool(true))],
            _ => &[("size", Param::Num(102400)), ("fsync", Param::Bool(true))],
        },
    )
}
const WITH_FSYNC: &str = "this machine, fsync before close";

/// The Sun-3 under SunOS: Ousterhout's base for the UNIX derivatives, which Linux is one of.
const SUN3_UNIX: &str = "Sun3 SunOS 3.5";

static OUSTERHOUT: Spec = Spec {
    comparisons: &[
        Comparison {
            table: "1",
            cells: Cells::Column("mips"),
            label: HERE,
            now: Now::Mips,
        },
        fig("2", "time", GETPID),
        fig("3", "time", PINGPONG_SAME),
        Comparison {
            label: "this machine, across CPUs",
            ..fig("3", "time", PINGPONG_CROSS)
        },
        fig("4", "1_pipe", SELECT_1),
        fig("4", "10_empty", SELECT_10_EMPTY),
        fig("4", "10_full", SELECT_10_FULL),
        fig("5", "cached", COPY_HOT),
        fig("5", "uncached", COPY_COLD),
        fig("6", "bandwidth", READ_CACHED),
        fig("9", "foo", OPEN_1),
        fig("9", "a_b_c_foo", OPEN_4),
        fig("10", "no_data", create_delete(0, false)),
        fig("10", "10_kbytes", create_delete(10240, false)),
        fig("10", "100_kbytes", create_delete(102400, false)),
        Comparison {
            label: WITH_FSYNC,
            ..fig("10", "no_data", create_delete(0, true))
        },
        Comparison {
            label: WITH_FSYNC,
            ..fig("10", "10_kbytes", create_delete(10240, true))
        },
        Comparison {
            label: WITH_FSYNC,
            ..fig("10", "100_kbytes", create_delete(102400, true))
        },
    ],
    derived: &[
        Derived::MipsRelative {
            table: "2",
            column: "mips_relative",
            from: "time",
            base: SUN3_UNIX,
        },
        Derived::MipsRelative {
            table: "3",
            column: "mips_relative",
            from: "time",
            base: SUN3_UNIX,
        },
        Derived::MipsRelative {
            table: "4",
            column: "mips_relative",
            from: "10_full",
            base: SUN3_UNIX,
        },
        Derived::BytesPerInstruction {
            table: "5",
            column: "bytes_per_instruction",
            from: "uncached",
        },
        Derived::MipsRelative {
            table: "6",
            column: "mips_relative",
            from: "bandwidth",
            base: SUN3_UNIX,
        },
    ],
    notes: &[
        ("1", "today's MIPS: instructions of osmeter's integer mix per second (see `osmeter list`, cpu.reference)"),
        ("2", "today: getppid through syscall(2), so no C library can answer from a cache"),
        ("3", "today: the same one-byte pipe echo; 'same CPU' is the single-processor case the paper measured"),
        ("4", "the M2000's 10,000 us for empty pipes is, by the paper's own guess, a select emulation that waits out a 10 ms tick"),
        ("5", "today: memcpy of 16 KiB inside the caches, and of a block 8x the last-level cache"),
        ("6", "today: 16 KB preads of the largest file measured, already in the page cache"),
        ("7", "osmeter has no Andrew benchmark (copy a source tree, stat and read every file, compile it): no figure today"),
        ("8", "derived from Table 7: no figure today"),
        ("9", "today: openat of a relative path of 1 and 4 components, then close"),
        ("10", "the UNIX systems of 1989 wrote metadata to disk synchronously; Linux file systems do not unless asked (the fsync row)"),
    ],
    elsewhere: None,
    cpu_relative: true,
};

const BANDWIDTH_24K: ProbeRef = probe(
    "net.tcp_bandwidth",
    &[
        ("rcvbuf", Param::Num(24576)),
        ("placement", Param::Str("cross")),
    ],
);
const STRIDE_512: ProbeRef = probe(
    "memory.latency",
    &[
        ("pattern", Param::Str("stride128")),
        ("size", Param::Num(512)),
    ],
);
const EXEC_STATIC: ProbeRef = probe(
    "process.exec",
    &[
        ("link", Param::Str("static")),
        ("method", Param::Str("vfork")),
    ],
);
const EXEC_DYNAMIC: ProbeRef = probe(
    "process.exec",
    &[
        ("link", Param::Str("dynamic")),
        ("method", Param::Str("vfork")),
    ],
);

static CHEN96: Spec = Spec {
    comparisons: &[
        Comparison {
            table: "4.3",
            cells: Cells::Row("dynamic exec cost over static"),
            label: HERE,
            now: Now::Ratio(EXEC_DYNAMIC, EXEC_STATIC),
        },
        Comparison {
            table: "4.4",
            cells: Cells::Row("minimum cycles per memory reference"),
            label: HERE,
            now: Now::Cycles(STRIDE_512),
        },
        Comparison {
            table: "4.7",
            cells: Cells::Row("throughput"),
            label: HERE,
            now: Now::Figure(BANDWIDTH_24K),
        },
    ],
    derived: &[],
    notes: &[
        ("4.3", "today: vfork and exec of a helper that exits at once, dynamically over statically linked"),
        ("4.4", "today: a pointer chase with a 128-byte stride in 512 bytes, in cycles"),
        ("4.7", "today: 256 KB over loopback TCP to a process on another CPU, 24 KB receive buffer; the paper's 10 Mb/s Ethernet capped all three systems"),
    ],
    elsewhere: None,
    cpu_relative: false,
};

static CHEN_BERSHAD: Spec = Spec {
    comparisons: &[],
    derived: &[],
    notes: &[],
    elsewhere: Some(
        "today's side comes from full-system traces: `osmeter trace --system --workload NAME -o T.osmt` then \
         `osmeter memsim T.osmt --preset ds5000-200 --assertions`; the side-by-side view of those \
         documents is not built yet",
    ),
    cpu_relative: false,
};

static COTA_ROBLES: Spec = Spec {
    comparisons: &[],
    derived: &[],
    notes: &[],
    elsewhere: Some(
        "today's side comes from `osmeter latency --load ...` (worst cases per window, buffer \
         underruns); the side-by-side view of those documents is not built yet",
    ),
    cpu_relative: false,
};

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
                match c.cells {
                    Cells::Column(col) => {
                        assert!(t.column(col).is_some(), "{id:?} {} {col}", c.table)
                    }
                    Cells::Row(row) => assert!(t.row(row).is_some(), "{id:?} {} {row}", c.table),
                }
            }
            for d in spec.derived {
                let t = paper.table(d.table()).unwrap();
                assert!(t.column(d.column()).is_some() && t.column(d.from()).is_some());
                if let Derived::MipsRelative { base, .. } = d {
                    assert!(t.row(base).is_some(), "{id:?} {} {base}", d.table());
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
        assert!(spec(PaperId::Ousterhout89).probes_of(Some("7")).is_empty());
        assert_eq!(
            spec(PaperId::Chen96).probes_of(Some("4.7")),
            vec!["net.tcp_bandwidth"]
        );
    }
}
