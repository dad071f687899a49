//! Which osmeter figure stands today for which of a paper's figures, and which of the paper's
//! derived columns osmeter recomputes for today.

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

/// One phase of app.andrew at the full size, on the ext4 image mounted by the kernel or served by
/// fuse2fs.
macro_rules! andrew {
    ($phase:literal, $fs:literal) => {
        probe(
            "app.andrew",
            &[
                ("phase", Param::Str($phase)),
                ("fs", Param::Str($fs)),
                ("sources", Param::Num(10)),
            ],
        )
    };
}
/// The paper's "copy" phase: everything but the compilation.
const ANDREW_COPY_EXT4: &[ProbeRef] = &[
    andrew!("mkdir", "ext4"),
    andrew!("copy", "ext4"),
    andrew!("stat", "ext4"),
    andrew!("read", "ext4"),
];
const ANDREW_COPY_FUSE: &[ProbeRef] = &[
    andrew!("mkdir", "fuse"),
    andrew!("copy", "fuse"),
    andrew!("stat", "fuse"),
    andrew!("read", "fuse"),
];
const ANDREW_EXT4: &str = "this machine, ext4 in the kernel";
const ANDREW_FUSE: &str = "this machine, the same ext4 through fuse2fs";

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
        Comparison {
            table: "7",
            cells: Cells::Column("copy"),
            label: ANDREW_EXT4,
            now: Now::Sum(ANDREW_COPY_EXT4),
        },
        Comparison {
            label: ANDREW_EXT4,
            ..fig("7", "compile", andrew!("compile", "ext4"))
        },
        Comparison {
            label: ANDREW_EXT4,
            ..fig("7", "total", andrew!("total", "ext4"))
        },
        Comparison {
            table: "7",
            cells: Cells::Column("copy"),
            label: ANDREW_FUSE,
            now: Now::Sum(ANDREW_COPY_FUSE),
        },
        Comparison {
            label: ANDREW_FUSE,
            ..fig("7", "compile", andrew!("compile", "fuse"))
        },
        Comparison {
            label: ANDREW_FUSE,
            ..fig("7", "total", andrew!("total", "fuse"))
        },
        Comparison {
            table: "8",
            cells: Cells::Column("remote_penalty"),
            label: ANDREW_FUSE,
            now: Now::PercentMore(andrew!("total", "fuse"), andrew!("total", "ext4")),
        },
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
            source: "2",
            from: "time",
            base: SUN3_UNIX,
            only: None,
        },
        Derived::MipsRelative {
            table: "3",
            column: "mips_relative",
            source: "3",
            from: "time",
            base: SUN3_UNIX,
            only: None,
        },
        Derived::MipsRelative {
            table: "4",
            column: "mips_relative",
            source: "4",
            from: "10_full",
            base: SUN3_UNIX,
            only: None,
        },
        Derived::BytesPerInstruction {
            table: "5",
            column: "bytes_per_instruction",
            from: "uncached",
        },
        Derived::MipsRelative {
            table: "6",
            column: "mips_relative",
            source: "6",
            from: "bandwidth",
            base: SUN3_UNIX,
            only: None,
        },
        Derived::MipsRelative {
            table: "8",
            column: "mips_relative_local",
            source: "7",
            from: "total",
            base: "Sun3 Sprite Local",
            only: Some(ANDREW_EXT4),
        },
    ],
    notes: &[
        ("1", "today's MIPS: instructions of osmeter's integer mix per second (see `osmeter list`, cpu.reference)"),
        ("2", "today: getppid through syscall(2), so no C library can answer from a cache"),
        ("3", "today: the same one-byte pipe echo; 'same CPU' is the single-processor case the paper measured"),
        ("4", "the M2000's 10,000 us for empty pipes is, by the paper's own guess, a select emulation that waits out a 10 ms tick"),
        ("5", "today: memcpy of 16 KiB inside the caches, and of a block 8x the last-level cache"),
        ("6", "today: 16 KB preads of the largest file measured, already in the page cache"),
        ("7", "today: app.andrew over a generated C program (10 sources, gcc -O2); 'copy' is the paper's, every phase but the compilation (mkdir, copy, stat, read); the local file system is an ext4 image mounted by the kernel, and the same image served by fuse2fs, a file server in a user process, stands where the paper had a remote file server"),
        ("8", "today: MIPS-relative from Table 7's totals against Sun3 Sprite, as the paper did; the penalty is FUSE's total over the kernel's ext4, the paper's was remote files over local ones"),
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
        ("pages", Param::Str("huge")),
        ("size", Param::Num(512)),
    ],
);
/// Ghostscript rendering a generated 13-page document, as many pages as the paper's conference
/// paper.
const GHOSTSCRIPT: ProbeRef = probe("app.ghostscript", &[("pages", Param::Num(13))]);
/// One wish run building, changing and destroying 100 panels of widgets.
const WISH: ProbeRef = probe("app.wish", &[("panels", Param::Num(100))]);
/// Time per request of nginx under 16 clients, each request on a new connection from a warm page
/// cache: the paper's HTTP/1.0 server served its trace with 8 to 32 requests at once.
const WEB: ProbeRef = probe(
    "app.web",
    &[
        ("conn", Param::Str("close")),
        ("cache", Param::Str("warm")),
        ("clients", Param::Num(16)),
        ("stat", Param::Str("time")),
    ],
);
/// Requests in the paper's web trace (and in osmeter's at the quick size).
const WEB_TRACE_REQUESTS: f64 = 1024.0;
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
        Comparison {
            table: "VII",
            cells: Cells::Where {
                rows: Sel::Is("Ghostscript"),
                columns: Sel::StartsWith("time_"),
            },
            // One row of today's per workload: the three share the table's time columns.
            label: "this machine, Ghostscript",
            now: Now::Figure(GHOSTSCRIPT),
        },
        Comparison {
            table: "VII",
            cells: Cells::Where {
                rows: Sel::Is("Wish"),
                columns: Sel::StartsWith("time_"),
            },
            label: "this machine, Wish",
            now: Now::Figure(WISH),
        },
        Comparison {
            table: "VII",
            cells: Cells::Where {
                rows: Sel::Is("Web Server"),
                columns: Sel::StartsWith("time_"),
            },
            label: "this machine, web server",
            now: Now::Scaled(WEB, WEB_TRACE_REQUESTS),
        },
        Comparison {
            table: "5.3",
            cells: Cells::Row("throughput"),
            label: HERE,
            now: Now::Figure(WEB),
        },
    ],
    derived: &[],
    notes: &[
        ("4.3", "today: vfork and exec of a helper that exits at once, dynamically over statically linked"),
        ("4.4", "today: lmbench's stride walk (lat_mem_rd, 128-byte stride) in 512 bytes, in cycles: an L1 hit, where no prefetcher has anything to add, so it is a load latency; past the L1 the stride walk is helped by the prefetchers and pattern=random is the latency"),
        ("VII", "today: app.ghostscript renders a generated 13-page document (text, curves, fills, images) at 150 dpi to a file, counted whole; the paper's previewed a 13-page, 372 KB conference paper on screen, so the speed-up is indicative; Wish: one wish run building, changing and destroying 100 panels of Tk widgets on Xvfb (the paper's script is not published); Web Server: nginx's time per request with 16 clients, a new connection per request and a warm page cache, times the 1024 requests of the paper's trace"),
        ("5.3", "today: nginx on loopback with 16 clients, a new connection per request, warm page cache, osmeter's Zipf trace; the paper's server sat behind 10 Mb/s Ethernet"),
        ("4.7", "today: 256 KB over loopback TCP to a process on another CPU, 24 KB receive buffer; the paper's 10 Mb/s Ethernet capped all three systems"),
    ],
    elsewhere: None,
    cpu_relative: false,
};

const fn memsim(
    table: &'static str,
    cells: Cells,
    label: &'static str,
    get: fn(&MemsimDoc, &MachineDoc) -> Option<f64>,
) -> Comparison {
    Comparison {
        table,
        cells,
        label,
        now: Now::Memsim(MemsimFigure {
            get: MemsimGet::Doc(get),
        }),
    }
}

const TRACE: &str = "this trace";

#[derive(Clone, Copy)]
enum Mode {
    User,
    System,
}

/// A Table 2-4 component of one mode (the paper's rows ending in "user" or "system"), per
/// instruction of that mode.
const fn own(mode: Mode, column: &'static str, get: fn(&MachineDoc) -> f64) -> Comparison {
    let (rows, label) = match mode {
        Mode::User => ("user", "this trace, user"),
        Mode::System => ("system", "this trace, system"),
    };
    Comparison {
        table: "2-4",
        cells: Cells::Where {
            rows: Sel::EndsWith(rows),
            columns: Sel::Is(column),
        },
        label,
        now: Now::Memsim(MemsimFigure {
            get: MemsimGet::Machine(get),
        }),
    }
}

fn thousands(n: u64) -> Option<f64> {
    Some(n as f64 / 1e3)
}

fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| 100.0 * part as f64 / whole as f64)
}

fn cache(m: &crate::memsim::document::ModeDoc, level: &str) -> (u64, u64) {
    m.caches
        .get(level)
        .map(|c| (c.misses, c.read_misses))
        .unwrap_or_default()
}

/// A TLB figure, when the simulated machine has a TLB.
fn tlb(m: &MachineDoc, get: fn(&MachineDoc) -> Option<f64>) -> Option<f64> {
    if m.user.tlb.present || m.system.tlb.present {
        get(m)
    } else {
        None
    }
}

/// The kernel's block copies and clears in memsim's attribution (needs kernel symbols).
fn block<'a>(d: &'a MemsimDoc, m: &MachineDoc) -> Option<&'a crate::memsim::document::CategoryRow> {
    let table = d
        .attribution
        .as_ref()?
        .machines
        .iter()
        .find(|t| t.name == m.name)?;
    table.categories.iter().find(|c| c.name == "block-copy")
}

/// MCPI of the kernel's block copies and clears, over every instruction.
fn block_mcpi(d: &MemsimDoc, m: &MachineDoc) -> Option<f64> {
    block(d, m).map(|c| c.mcpi.total)
}

/// A figure behind the verdict on Chen and Bershad's third assertion (user/system competition),
/// judged on this machine: memsim runs the trace's user and kernel references each alone beside
/// the mixed trace, and the stalls the mixed one adds are the competition's.
fn competition(d: &MemsimDoc, m: &MachineDoc, figure: &str) -> Option<f64> {
    let judged = d.assertions.as_ref().filter(|a| a.machine == m.name)?;
    judged
        .assertions
        .iter()
        .find(|a| a.number == 3)?
        .figures
        .get(figure)
        .copied()
        .flatten()
}

/// The block operations' share of the machine's MCPI, percent.
fn block_share(d: &MemsimDoc, m: &MachineDoc) -> Option<f64> {
    let total = m.mcpi.total.total;
    block_mcpi(d, m)
        .filter(|_| total > 0.0)
        .map(|b| 100.0 * b / total)
}

/// Today's figures stand under Ultrix's columns: Linux, like Ultrix, is a monolithic kernel.
static CHEN_BERSHAD: Spec = Spec {
    comparisons: &[
        memsim("2-3", Cells::Column("instr_u"), TRACE, |_, m| thousands(m.instructions)),
        memsim("2-3", Cells::Column("instr_u_sys"), TRACE, |_, m| {
            Some(100.0 * m.system_fraction)
        }),
        memsim("2-3", Cells::Column("idle_u"), TRACE, |d, _| {
            thousands(d.attribution.as_ref()?.idle_dropped.instructions)
        }),
        memsim("2-3", Cells::Column("imiss_u"), TRACE, |_, m| {
            thousands(cache(&m.user, "l1i").0 + cache(&m.system, "l1i").0)
        }),
        memsim("2-3", Cells::Column("imiss_u_sys"), TRACE, |_, m| {
            let (u, k) = (cache(&m.user, "l1i").0, cache(&m.system, "l1i").0);
            share(k, u + k)
        }),
        memsim("2-3", Cells::Column("dread_u"), TRACE, |_, m| {
            thousands(m.user.reads + m.system.reads)
        }),
        memsim("2-3", Cells::Column("dread_u_sys"), TRACE, |_, m| {
            share(m.system.reads, m.user.reads + m.system.reads)
        }),
        memsim("2-3", Cells::Column("dmiss_u"), TRACE, |_, m| {
            thousands(cache(&m.user, "l1d").1 + cache(&m.system, "l1d").1)
        }),
        memsim("2-3", Cells::Column("dmiss_u_sys"), TRACE, |_, m| {
            let (u, k) = (cache(&m.user, "l1d").1, cache(&m.system, "l1d").1);
            share(k, u + k)
        }),
        own(Mode::User, "icache", |m| m.own_mcpi.user.icache),
        own(Mode::User, "dcache", |m| m.own_mcpi.user.dcache),
        own(Mode::User, "tlb", |m| m.own_mcpi.user.tlb),
        own(Mode::User, "wbuffer", |m| m.own_mcpi.user.wbuffer),
        own(Mode::System, "icache", |m| m.own_mcpi.system.icache),
        own(Mode::System, "dcache", |m| m.own_mcpi.system.dcache),
        own(Mode::System, "tlb", |m| m.own_mcpi.system.tlb),
        own(Mode::System, "wbuffer", |m| m.own_mcpi.system.wbuffer),
        memsim("4-1", Cells::Column("i_u_sys"), TRACE, |_, m| Some(m.mcpi.system.icache)),
        memsim("4-1", Cells::Column("i_u_user"), TRACE, |_, m| Some(m.mcpi.user.icache)),
        memsim("4-1", Cells::Column("d_u_sys"), TRACE, |_, m| Some(m.mcpi.system.dcache)),
        memsim("4-1", Cells::Column("d_u_user"), TRACE, |_, m| Some(m.mcpi.user.dcache)),
        memsim("4-3", Cells::Column("refs_user"), TRACE, |_, m| {
            tlb(m, |m| thousands(m.user.tlb.refs))
        }),
        memsim("4-3", Cells::Column("refs_u"), TRACE, |_, m| {
            tlb(m, |m| thousands(m.system.tlb.refs))
        }),
        memsim("4-3", Cells::Column("utlb_uuser"), TRACE, |_, m| {
            tlb(m, |m| thousands(m.user.tlb.misses))
        }),
        memsim("4-3", Cells::Column("ktlb_u"), TRACE, |_, m| {
            tlb(m, |m| Some(m.system.tlb.misses as f64))
        }),
        memsim("4-3", Cells::Column("utlb_mcpi_u"), TRACE, |_, m| {
            tlb(m, |m| Some(m.mcpi.user.tlb))
        }),
        memsim("4-3", Cells::Column("ktlb_mcpi_u"), TRACE, |_, m| {
            tlb(m, |m| Some(m.mcpi.system.tlb))
        }),
        memsim("4-4", Cells::Column("u_mcpi"), TRACE, block_mcpi),
        memsim("4-2", Cells::Column("u_inst"), TRACE, |d, m| {
            competition(d, m, "competition_mcpi_icache")
        }),
        memsim("4-2", Cells::Column("u_data"), TRACE, |d, m| {
            competition(d, m, "competition_mcpi_dcache")
        }),
        memsim("4-2", Cells::Column("u_total"), TRACE, |d, m| {
            competition(d, m, "competition_mcpi_cache")
        }),
        memsim("4-4", Cells::Column("u_share"), TRACE, block_share),
        memsim("4-5", Cells::Column("u_mcpi"), TRACE, block_mcpi),
        memsim("4-5", Cells::Column("u_share"), TRACE, block_share),
        memsim("4-5", Cells::Column("u_cacheable"), TRACE, |d, m| {
            block(d, m).and_then(|c| thousands(c.reads))
        }),
        memsim("4-6", Cells::Column("u_sys"), TRACE, |_, m| Some(m.own_mcpi.system.wbuffer)),
        memsim("4-6", Cells::Column("u_user"), TRACE, |_, m| Some(m.own_mcpi.user.wbuffer)),
    ],
    derived: &[],
    notes: &[
        ("2-3", "today: the trace on the ds5000-200 preset; Linux stands under Ultrix's columns (both monolithic); idle instructions only when kernel symbols were known"),
        ("2-4", "today: stall cycles per instruction of each mode's own instructions"),
        ("4-1", "today: the same stalls over all non-idle instructions, so user and system add up"),
        ("4-3", "today: the trace's TLB references and misses per mode on the ds5000-200 preset; memsim does not split the kernel's misses by the address they miss on, so every system-mode miss stands under KTLB (Ultrix); the MCPI are over all non-idle instructions"),
        ("4-2", "today: the stalls of the mixed trace less those of its user and kernel references each simulated alone (memsim --assertions, assertion 3), over all instructions"),
        ("4-4", "today: the kernel's block copy and clear routines (needs kernel symbols)"),
        ("4-5", "today: the same routines' MCPI, share and data reads (every read of theirs: memsim does not keep, per routine, which reads were uncacheable or went to memory, so those columns stay the paper's)"),
    ],
    elsewhere: Some(
        "today's side is a memsim run of a full-system trace: `osmeter paper chen-bershad93` makes \
         one (the grep workload traced under QEMU, simulated on ds5000-200 with the assertions; \
         --workload and --install change it), or `--run ID` reuses a stored one, made by `osmeter \
         trace --system --workload NAME --install -o T.osmt`, then `osmeter memsim T.osmt --preset \
         ds5000-200 --assertions`",
    ),
    cpu_relative: false,
};

const fn worst(
    row: &'static str,
    suffix: &'static str,
    label: &'static str,
    class: ClassName,
    path: Path,
    horizon_s: f64,
) -> Comparison {
    Comparison {
        table: "3",
        cells: Cells::Where {
            rows: Sel::Is(row),
            columns: Sel::EndsWith(suffix),
        },
        label,
        now: Now::Latency(LatencyFigure {
            class,
            path,
            horizon_s,
        }),
    }
}

const HOUR: f64 = 3600.0;
const DAY: f64 = 86_400.0;
const WEEK: f64 = 7.0 * DAY;
const HIGH_TIMER: &str = "interrupt to high-priority RT thread";
const MEDIUM_TIMER: &str = "interrupt to medium-priority RT thread";
const HIGH_WAKE: &str = "DPC to high-priority RT thread (added)";
const MEDIUM_WAKE: &str = "DPC to medium-priority RT thread (added)";

const fn underruns(row: &'static str, ask: Underrun) -> Comparison {
    Comparison {
        table: "mttf",
        cells: Cells::Where {
            rows: Sel::Is(row),
            columns: Sel::Is("value"),
        },
        label: "this machine",
        now: Now::Underruns(UnderrunFigure {
            class: ClassName::High,
            path: Path::Timer,
            ask,
        }),
    }
}

static COTA_ROBLES: Spec = Spec {
    comparisons: &[
        underruns(
            "DPC datapump, 3D game, 12 ms of buffering: time between underruns",
            Underrun::MttfAt { tolerance_ms: 12.0 },
        ),
        underruns(
            "DPC datapump, 3D game, 20 ms of buffering: time between underruns",
            Underrun::MttfAt { tolerance_ms: 20.0 },
        ),
        underruns(
            "thread datapump, 3D game: buffering for an hour between underruns",
            Underrun::ToleranceFor { mttf_s: HOUR },
        ),
        worst(HIGH_TIMER, "_hour", "this machine, hour", ClassName::High, Path::Timer, HOUR),
        worst(HIGH_TIMER, "_day", "this machine, day", ClassName::High, Path::Timer, DAY),
        worst(HIGH_TIMER, "_week", "this machine, week", ClassName::High, Path::Timer, WEEK),
        worst(MEDIUM_TIMER, "_hour", "this machine, hour", ClassName::Medium, Path::Timer, HOUR),
        worst(MEDIUM_TIMER, "_day", "this machine, day", ClassName::Medium, Path::Timer, DAY),
        worst(MEDIUM_TIMER, "_week", "this machine, week", ClassName::Medium, Path::Timer, WEEK),
        worst(HIGH_WAKE, "_hour", "this machine, hour", ClassName::High, Path::Futex, HOUR),
        worst(HIGH_WAKE, "_day", "this machine, day", ClassName::High, Path::Futex, DAY),
        worst(HIGH_WAKE, "_week", "this machine, week", ClassName::High, Path::Futex, WEEK),
        worst(MEDIUM_WAKE, "_hour", "this machine, hour", ClassName::Medium, Path::Futex, HOUR),
        worst(MEDIUM_WAKE, "_day", "this machine, day", ClassName::Medium, Path::Futex, DAY),
        worst(MEDIUM_WAKE, "_week", "this machine, week", ClassName::Medium, Path::Futex, WEEK),
    ],
    derived: &[],
    notes: &[
        (
            "3",
            "today: the median worst case expected over an hour, a day and a week of continuous \
             running, from a Gumbel fit of the per-second maxima of the latency run, under the load \
             that run had; timer path for interrupt-to-thread, futex wake for DPC-to-thread",
        ),
        (
            "mttf",
            "today: the buffer model (an underrun whenever a wake is later than the buffering \
             absorbs) over the Gumbel fit of the per-second maxima of the high-priority class's \
             timer path in the latency run, under that run's load: the mean time between \
             underruns is a window's width over the chance its maximum exceeds the buffering; a \
             Linux real-time thread stands for both of the paper's datapumps; measured underruns \
             of a computing thread are `osmeter latency --compute`",
        ),
    ],
    elsewhere: Some(
        "today's side is a latency run of the high and medium SCHED_FIFO classes on the timer \
         and futex paths: `osmeter paper cota-robles99` measures one (60 s under the desktop load; \
         --duration and --load change them), or `--run ID` reuses a stored `osmeter latency` run",
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
