//! Ousterhout 1989: the primitives of Tables 1 to 10 measured by probes today, relative to the CPU.

use super::*;

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

pub(super) static SPEC: Spec = Spec {
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
