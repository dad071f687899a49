//! The values each parameter of each probe may take (a range of numbers, a set of words, or a
//! flag), checked when `--set` gives them, before anything is measured: a value outside them is a
//! mistake on the command line (exit 2, naming what is taken), not a figure that fails after
//! minutes of measuring the others (exit 1).
//!
//! The probes still check their parameters when they build (a stored run replayed, a paper's
//! plan); this table says the same up front, and a test holds every probe's own variants
//! inside it.

use crate::results::model::Params;
use crate::usage;
use anyhow::Result;

/// What one parameter accepts.
pub enum Allowed {
    /// A whole number from `min` to `max`, a multiple of `step`.
    Range { min: u64, max: u64, step: u64 },
    /// A whole number from `min` to `max`, or this word.
    RangeOr {
        min: u64,
        max: u64,
        word: &'static str,
    },
    /// One of these numbers.
    OneOf(&'static [u64]),
    /// One of these words, each with what it means.
    Words(&'static [(&'static str, &'static str)]),
    /// `true` or `false`.
    Flag,
}

const fn range(min: u64, max: u64) -> Allowed {
    Allowed::Range { min, max, step: 1 }
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// (probe, parameter, what it accepts, what the parameter is).
pub const TABLE: &[(&str, &str, Allowed, &str)] = &[
    (
        "fs.open_close",
        "depth",
        range(1, 26),
        "directory levels of the path opened",
    ),
    (
        "fs.read_cached",
        "file_size",
        Allowed::Range {
            min: 16 * KIB,
            max: u64::MAX,
            step: 16 * KIB,
        },
        "bytes of the file read, in 16 KiB blocks",
    ),
    ("fs.read_128k", "files", range(1, 4096), "files read"),
    (
        "fs.create_delete",
        "size",
        range(0, 64 * MIB),
        "bytes written and read back",
    ),
    (
        "fs.write_fsync",
        "size",
        range(1, 64 * MIB),
        "bytes written before each fsync",
    ),
    (
        "fs.small_files",
        "files",
        range(1, 65536),
        "files made and removed",
    ),
    (
        "select.select",
        "fds",
        range(1, 100_000),
        "pipes in the set",
    ),
    ("select.poll", "fds", range(1, 100_000), "pipes in the set"),
    ("select.epoll", "fds", range(1, 100_000), "pipes in the set"),
    (
        "ipc.pipe_bandwidth",
        "size",
        range(1, GIB),
        "bytes per write",
    ),
    ("memory.copy", "size", range(1, u64::MAX), "bytes per copy"),
    (
        "memory.latency",
        "size",
        Allowed::Range {
            min: 256,
            max: u64::MAX,
            step: 128,
        },
        "bytes of the chain, in 128-byte nodes",
    ),
    (
        "memory.mmap_munmap",
        "size",
        range(1, u64::MAX),
        "bytes mapped",
    ),
    (
        "cpu.reference",
        "instructions",
        range(100, 1_000_000_000),
        "instructions of the mix per operation",
    ),
    (
        "net.tcp_bandwidth",
        "rcvbuf",
        Allowed::RangeOr {
            min: 1,
            max: i32::MAX as u64,
            word: "default",
        },
        "SO_RCVBUF of the receiver",
    ),
    ("app.andrew", "sources", range(1, 2000), "source files"),
    ("app.ghostscript", "pages", range(1, 1000), "pages rendered"),
    ("app.web", "clients", range(1, 1024), "client threads"),
    ("app.wish", "panels", range(1, 10_000), "panels per run"),
    (
        "app.bitblt",
        "depth",
        Allowed::OneOf(&[1, 24]),
        "bits per pixel",
    ),
    (
        "app.bitblt",
        "path",
        Allowed::Words(&[
            ("put-image", "sent by the client with PutImage"),
            ("copy-area", "copied inside the server with CopyArea"),
        ]),
        "how the pixels reach the window",
    ),
    (
        "memory.latency",
        "pattern",
        Allowed::Words(&[
            ("stride128", "a sequential walk in 128-byte steps"),
            ("random", "a walk in random order"),
        ]),
        "the order the chain is walked in",
    ),
    (
        "memory.latency",
        "pages",
        PAGES,
        "the pages the chain lives in",
    ),
    (
        "memory.copy",
        "cache",
        Allowed::Words(&[
            ("hot", "a buffer that fits the caches"),
            ("cold", "a buffer larger than the last-level cache"),
        ]),
        "the cache regime the size was chosen for",
    ),
    (
        "memory.page_fault",
        "kind",
        Allowed::Words(&[
            ("anon", "anonymous memory"),
            ("file", "a file in the page cache"),
        ]),
        "the memory faulted in",
    ),
    (
        "memory.mmap_munmap",
        "touch",
        Allowed::Flag,
        "whether each page is touched",
    ),
    (
        "fs.create_delete",
        "fsync",
        Allowed::Flag,
        "whether each file is synced",
    ),
    (
        "select.select",
        "ready",
        Allowed::Flag,
        "whether each pipe holds a byte",
    ),
    (
        "select.poll",
        "ready",
        Allowed::Flag,
        "whether each pipe holds a byte",
    ),
    (
        "select.epoll",
        "ready",
        Allowed::Flag,
        "whether each pipe holds a byte",
    ),
    (
        "process.exec",
        "link",
        Allowed::Words(&[
            ("static", "a statically linked program"),
            ("dynamic", "a dynamically linked program"),
        ]),
        "how the program run is linked",
    ),
    (
        "process.exec",
        "method",
        Allowed::Words(&[
            ("fork", "fork then exec"),
            ("vfork", "vfork then exec"),
            ("posix_spawn", "posix_spawn"),
        ]),
        "how the child is made",
    ),
    ("ipc.pipe_pingpong", "placement", PLACEMENT, PLACEMENT_IS),
    ("ipc.pipe_bandwidth", "placement", PLACEMENT, PLACEMENT_IS),
    ("ipc.futex_roundtrip", "placement", PLACEMENT, PLACEMENT_IS),
    (
        "ipc.eventfd_roundtrip",
        "placement",
        PLACEMENT,
        PLACEMENT_IS,
    ),
    ("ipc.unix_roundtrip", "placement", PLACEMENT, PLACEMENT_IS),
    ("net.tcp_bandwidth", "placement", PLACEMENT, PLACEMENT_IS),
    ("net.tcp_roundtrip", "placement", PLACEMENT, PLACEMENT_IS),
    ("net.udp_roundtrip", "placement", PLACEMENT, PLACEMENT_IS),
    ("net.tcp_connect", "placement", PLACEMENT, PLACEMENT_IS),
    (
        "app.andrew",
        "fs",
        Allowed::Words(&[
            ("dir", "a directory of the scratch file system"),
            ("ext4", "a fresh ext4 image"),
            ("fuse", "a FUSE pass-through mount"),
        ]),
        "the file system the benchmark runs in",
    ),
    (
        "app.andrew",
        "phase",
        Allowed::Words(&[
            ("mkdir", "make the directory tree"),
            ("copy", "copy the sources"),
            ("stat", "stat every file"),
            ("read", "read every file"),
            ("compile", "compile the sources"),
            ("total", "all five phases"),
        ]),
        "the phase timed",
    ),
    (
        "app.interp",
        "interp",
        Allowed::Words(&[("python3", "Python 3"), ("perl", "Perl"), ("tclsh", "Tcl")]),
        "the interpreter started",
    ),
    (
        "app.web",
        "cache",
        Allowed::Words(&[
            ("warm", "every file read once before the run"),
            ("cold", "the tree's pages dropped from the page cache first"),
        ]),
        "the page cache state",
    ),
    (
        "app.web",
        "conn",
        Allowed::Words(&[
            ("keep-alive", "each client keeps its connection"),
            ("close", "a new connection for every request"),
        ]),
        "how clients connect",
    ),
    (
        "app.web",
        "stat",
        Allowed::Words(&[
            ("time", "time per request"),
            ("p50", "the median request"),
            ("p90", "the 90th percentile request"),
            ("p99", "the 99th percentile request"),
        ]),
        "the figure reported",
    ),
];

const PLACEMENT: Allowed = Allowed::Words(&[
    ("same", "both parties on the measuring CPU"),
    ("cross", "the partner on another CPU"),
]);
const PLACEMENT_IS: &str = "where the partner runs";
const PAGES: Allowed = Allowed::Words(&[
    ("huge", "2 MiB pages where the kernel gives them"),
    ("base", "the pages an ordinary allocation gets"),
]);

/// Checks `probe`'s parameters against [`TABLE`]; the error names the value and the range.
pub fn check(probe: &str, params: &Params) -> Result<()> {
    for (_, name, allowed, what) in TABLE.iter().filter(|l| l.0 == probe) {
        let Some(value) = params.get(*name) else {
            continue;
        };
        if fits(allowed, value) {
            continue;
        }
        let shown = match value {
            serde_json::Value::String(s) => crate::text::escape_controls(s).into_owned(),
            other => other.to_string(),
        };
        return Err(usage!(
            "--set {name}={shown}: {probe} takes {name} ({what}) {}",
            describe(allowed)
        ));
    }
    Ok(())
}

fn fits(allowed: &Allowed, value: &serde_json::Value) -> bool {
    let n = value.as_u64();
    match allowed {
        Allowed::Range { min, max, step } => {
            n.is_some_and(|n| (*min..=*max).contains(&n) && n % step == 0)
        }
        Allowed::RangeOr { min, max, word } => {
            value.as_str() == Some(*word) || n.is_some_and(|n| (*min..=*max).contains(&n))
        }
        Allowed::OneOf(set) => n.is_some_and(|n| set.contains(&n)),
        Allowed::Words(words) => value
            .as_str()
            .is_some_and(|v| words.iter().any(|(w, _)| *w == v)),
        Allowed::Flag => value.is_boolean(),
    }
}

fn describe(allowed: &Allowed) -> String {
    let span = |min: u64, max: u64| {
        if max == u64::MAX {
            format!("from {min} up (as memory and disk allow)")
        } else {
            format!("from {min} to {max}")
        }
    };
    match allowed {
        Allowed::Range { min, max, step: 1 } => span(*min, *max),
        Allowed::Range { min, max, step } => format!("{} in steps of {step}", span(*min, *max)),
        Allowed::RangeOr { min, max, word } => format!("{}, or \"{word}\"", span(*min, *max)),
        Allowed::OneOf(set) => {
            let v: Vec<String> = set.iter().map(u64::to_string).collect();
            format!("as one of {}", v.join(", "))
        }
        Allowed::Words(words) => {
            let v: Vec<String> = words
                .iter()
                .map(|(w, means)| format!("{w} ({means})"))
                .collect();
            format!("as one of: {}", v.join("; "))
        }
        Allowed::Flag => "as true or false".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params;
    use crate::probes::Scale;

    #[test]
    fn a_range_without_a_top_reads_as_one() {
        let open = Allowed::Range {
            min: 256,
            max: u64::MAX,
            step: 128,
        };
        assert_eq!(
            describe(&open),
            "from 256 up (as memory and disk allow) in steps of 128"
        );
        assert_eq!(describe(&range(1, 64)), "from 1 to 64");
    }

    #[test]
    fn every_limit_names_a_probe_and_every_probe_variant_is_inside_its_limits() {
        for (probe, name, _, _) in TABLE {
            let def = crate::probes::find(probe).unwrap_or_else(|| panic!("{probe} is no probe"));
            let variants = (def.variants)(Scale::Full);
            assert!(
                variants.iter().any(|v| v.contains_key(*name)),
                "{probe} has no parameter {name}"
            );
            for v in variants {
                check(probe, &v).unwrap();
            }
        }
    }

    /// Every parameter a probe measures is in the table, so no mistyped `--set` value reaches a
    /// probe's build to fail each of its points one by one.
    #[test]
    fn every_parameter_of_every_probe_has_its_values_declared() {
        let mut missing = Vec::new();
        for def in crate::probes::registry() {
            for scale in [Scale::Quick, Scale::Full] {
                for v in (def.variants)(scale) {
                    for key in v.keys() {
                        let declared = TABLE.iter().any(|l| l.0 == def.id && l.1 == key);
                        let entry = format!("{} {key}={}", def.id, v[key]);
                        if !declared && !missing.contains(&entry) {
                            missing.push(entry);
                        }
                    }
                }
            }
        }
        assert!(missing.is_empty(), "undeclared parameters: {missing:#?}");
    }

    /// A word the table allows is one some probe point measures, so the table cannot invent a
    /// choice the probe does not know; the exceptions are choices only `--set` makes, each tested
    /// where its probe builds it.
    #[test]
    fn every_allowed_word_is_one_the_probe_measures() {
        let only_by_set = [
            ("memory.latency", "pages", "base"),
            ("app.web", "stat", "p90"),
        ];
        for (probe, name, allowed, _) in TABLE {
            let Allowed::Words(words) = allowed else {
                continue;
            };
            let def = crate::probes::find(probe).unwrap();
            let measured: Vec<Params> = [Scale::Quick, Scale::Full]
                .into_iter()
                .flat_map(|s| (def.variants)(s))
                .collect();
            for (word, _) in *words {
                let seen = measured
                    .iter()
                    .any(|v| v.get(*name) == Some(&(*word).into()));
                assert!(
                    seen || only_by_set.contains(&(probe, name, word)),
                    "{probe} {name}={word} is allowed but never measured"
                );
            }
        }
    }

    #[test]
    fn values_out_of_range_are_usage_errors_naming_the_range() {
        let err = check("fs.open_close", &params![("depth", 100_000)]).unwrap_err();
        assert_eq!(crate::error::exit_code(&err), 2);
        let text = err.to_string();
        assert!(
            text.contains("depth=100000") && text.contains("from 1 to 26"),
            "{text}"
        );
        let err = check("net.tcp_bandwidth", &params![("rcvbuf", 0)]).unwrap_err();
        assert!(err.to_string().contains("or \"default\""), "{err}");
        assert!(check("net.tcp_bandwidth", &params![("rcvbuf", "default")]).is_ok());
        assert!(check("app.bitblt", &params![("depth", 8)]).is_err());
        assert!(check("fs.read_cached", &params![("file_size", 20000)]).is_err());
        assert!(check("syscall.null", &params![("depth", 100_000)]).is_ok());
        let err = check("memory.latency", &params![("pages", "giant")]).unwrap_err();
        assert_eq!(crate::error::exit_code(&err), 2);
        assert!(err.to_string().contains("huge (2 MiB pages"), "{err}");
        assert!(check("select.poll", &params![("ready", "yes")]).is_err());
        assert!(check("select.poll", &params![("ready", true)]).is_ok());
        assert!(check("ipc.pipe_pingpong", &params![("placement", "cross")]).is_ok());
    }
}
