//! The values a probe's numeric parameters may take, checked when `--set` gives them, before
//! anything is measured: an out-of-range value is a mistake on the command line (exit 2, naming
//! the range), not a figure that fails after minutes of measuring the others (exit 1).
//!
//! The probes still check their parameters when they build (a stored run replayed, a paper's
//! plan); this table says the same ranges up front, and a test holds every probe's own variants
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
];

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
    }
}

fn describe(allowed: &Allowed) -> String {
    let top = |max: u64| {
        if max == u64::MAX {
            "up (as memory and disk allow)".to_string()
        } else {
            max.to_string()
        }
    };
    match allowed {
        Allowed::Range { min, max, step: 1 } => format!("from {min} to {}", top(*max)),
        Allowed::Range { min, max, step } => {
            format!("from {min} to {} in steps of {step}", top(*max))
        }
        Allowed::RangeOr { min, max, word } => {
            format!("from {min} to {}, or \"{word}\"", top(*max))
        }
        Allowed::OneOf(set) => {
            let v: Vec<String> = set.iter().map(u64::to_string).collect();
            format!("as one of {}", v.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params;
    use crate::probes::Scale;

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
    }
}
