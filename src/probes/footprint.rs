//! What a probe variant takes from the machine beyond its own few pages: memory it holds and
//! disk space it writes in the scratch directory, from its parameters. `osmeter run` compares it
//! with what the machine has before measuring anything ([`crate::budget`]).

pub use crate::budget::Footprint;
use crate::budget::{check_footprint, check_samples, Have, RUN_SAMPLE_BYTES};
use crate::results::model::Params;
use anyhow::Result;
use std::path::Path;

/// Checks a whole `run` request before anything starts: the samples it keeps (`--repeat`) and
/// every probe variant's memory and scratch space.
pub fn check_run<'a>(
    variants: impl IntoIterator<Item = (&'a str, &'a Params)>,
    samples: u64,
    scratch: &Path,
) -> Result<()> {
    let have = Have::here(scratch);
    check_samples("--repeat", samples, RUN_SAMPLE_BYTES, &have)?;
    for (probe, params) in variants {
        check_variant(probe, params, &have)?;
    }
    Ok(())
}

/// Checks one probe variant against the machine.
pub fn check_variant(probe: &str, params: &Params, have: &Have) -> Result<()> {
    let label = crate::results::model::label(probe, params);
    check_footprint(&label, of(probe, params), have)
}

/// Parameters whose value scales a probe's memory or disk use; every probe that has one must be
/// in [`of`] (a test checks it).
pub const SCALING_PARAMS: &[&str] = &["size", "file_size", "files"];

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// The footprint of `probe` with `params`; zero for probes that use no more than a few pages.
pub fn of(probe: &str, params: &Params) -> Footprint {
    let num = |k: &str| params.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
    let yes = |k: &str, v: &str| params.get(k).and_then(|x| x.as_str()) == Some(v);
    let (memory, disk) = match probe {
        // The file is written, then kept in the page cache.
        "fs.read_cached" => (num("file_size"), num("file_size")),
        "fs.read_128k" => (0, num("files").saturating_mul(128 * KIB)),
        "fs.create_delete" | "fs.write_fsync" => (num("size"), num("size")),
        // Each file takes at least a block of 4 KiB beside its 8 KiB.
        "fs.small_files" => (0, num("files").saturating_mul(12 * KIB)),
        // A source and a destination buffer.
        "memory.copy" | "ipc.pipe_bandwidth" => (num("size").saturating_mul(2), 0),
        "memory.latency" => (num("size"), 0),
        // Untouched mappings are only address space.
        "memory.mmap_munmap" if params.get("touch").and_then(|v| v.as_bool()) == Some(true) => {
            (num("size"), 0)
        }
        "memory.page_fault" if yes("kind", "file") => (32 * MIB, 32 * MIB),
        _ => (0, 0),
    };
    Footprint { memory, disk }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params;
    use crate::probes::{registry, Scale};

    #[test]
    fn known_answers() {
        let p = |pairs: &[(&str, serde_json::Value)]| -> Params {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect()
        };
        let big = 999_999_995_904u64;
        assert_eq!(
            of("fs.read_cached", &p(&[("file_size", big.into())])),
            Footprint {
                memory: big,
                disk: big
            }
        );
        assert_eq!(
            of("memory.copy", &p(&[("size", (1u64 << 30).into())])).memory,
            2 << 30
        );
        assert_eq!(
            of(
                "memory.mmap_munmap",
                &p(&[("size", 4096.into()), ("touch", false.into())])
            ),
            Footprint::default()
        );
        assert_eq!(
            of(
                "memory.mmap_munmap",
                &p(&[("size", 4096.into()), ("touch", true.into())])
            )
            .memory,
            4096
        );
        assert_eq!(
            of("fs.small_files", &p(&[("files", u64::MAX.into())])).disk,
            u64::MAX,
            "saturates instead of wrapping"
        );
        assert_eq!(of("syscall.null", &Params::new()), Footprint::default());
    }

    /// A probe that gains a size parameter must say here what it costs.
    #[test]
    fn every_probe_with_a_scaling_parameter_has_a_footprint() {
        for probe in registry() {
            for scale in [Scale::Quick, Scale::Full] {
                for mut params in (probe.variants)(scale) {
                    let keys: Vec<String> = params
                        .keys()
                        .filter(|k| SCALING_PARAMS.contains(&k.as_str()))
                        .cloned()
                        .collect();
                    for k in &keys {
                        params.insert(k.clone(), (1u64 << 30).into());
                    }
                    // An untouched mapping is only address space: the kernel refuses what it
                    // cannot give, with an error the probe reports.
                    let untouched = params.get("touch") == Some(&false.into());
                    if keys.is_empty() || untouched {
                        continue;
                    }
                    let f = of(probe.id, &params);
                    assert!(
                        f.memory + f.disk >= 1 << 30,
                        "{} {params:?}: footprint {f:?}",
                        probe.id
                    );
                }
            }
        }
    }

    fn machine(memory: u64, disk: u64) -> Have {
        Have {
            memory,
            memory_said: format!("this machine has {} available", crate::units::bytes(memory)),
            disk,
            scratch: std::path::PathBuf::from("/scratch"),
        }
    }

    fn exit_code(r: Result<()>) -> i32 {
        crate::error::exit_code(&r.unwrap_err())
    }

    #[test]
    fn a_file_larger_than_the_free_space_is_refused_before_it_is_written() {
        let have = machine(24 << 30, 20 << 30);
        let big = params![("file_size", 999_999_995_904u64)];
        let err = check_variant("fs.read_cached", &big, &have).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("931.3 GiB") && text.contains("/scratch") && text.contains("20 GiB"),
            "{text}"
        );
        assert_eq!(crate::error::exit_code(&err), crate::error::EXIT_USAGE);
        let fits = params![("file_size", 64u64 << 20)];
        assert!(check_variant("fs.read_cached", &fits, &have).is_ok());
        // Just over the share left free, and just under.
        let edge = (20u64 << 30) as f64 * crate::budget::DISK_SHARE;
        let over = params![("file_size", edge as u64 + (16 << 10))];
        assert_eq!(exit_code(check_variant("fs.read_cached", &over, &have)), 2);
    }

    #[test]
    fn memory_beyond_what_is_available_is_refused() {
        let have = machine(10 << 30, u64::MAX);
        // Two buffers of 5 GiB.
        let copy = params![("size", 5u64 << 30), ("cache", "cold")];
        let text = format!(
            "{:#}",
            check_variant("memory.copy", &copy, &have).unwrap_err()
        );
        assert!(text.contains("10 GiB of memory"), "{text}");
        let copy = params![("size", 1u64 << 30), ("cache", "cold")];
        assert!(check_variant("memory.copy", &copy, &have).is_ok());
        assert!(check_variant("syscall.null", &Params::new(), &machine(0, 0)).is_ok());
    }
}
