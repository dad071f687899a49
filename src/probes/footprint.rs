//! What a probe variant takes from the machine beyond its own few pages: memory it holds and
//! disk space it writes in the scratch directory, from its parameters. `osmeter run` compares it
//! with what the machine has before measuring anything ([`crate::budget`]).

use crate::results::model::Params;

/// Bytes of memory and of scratch disk space one variant uses at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    pub memory: u64,
    pub disk: u64,
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
}
