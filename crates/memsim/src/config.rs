//! Presets and command-line geometry (`SIZE:ASSOC:LINE`, `ENTRIES:ASSOC:PAGE`).

use super::cache::{CacheConfig, Replacement};
use super::machine::MachineConfig;
use super::mapping::Mapping;
use super::tlb::TlbConfig;
use super::wbuf::WriteBufferConfig;

/// Preset names with a one-line description.
pub const PRESETS: &[(&str, &str)] = &[
    (
        "ds5000-200",
        "DECstation 5000/200 as simulated by Chen and Bershad (1993)",
    ),
    (
        "ds5000-200-2way",
        "the same with 2-way LRU caches (the paper's self-interference experiment)",
    ),
    (
        "ds5000-200-random",
        "the same with random page mapping (the paper's mapping experiment)",
    ),
    (
        "ds5000-200-unified",
        "the same with one 128 KB unified direct-mapped cache",
    ),
    (
        "ds5000-200-merge",
        "the same with a write buffer that merges writes into a waiting 16-byte block (not in the paper)",
    ),
    (
        "pentium",
        "a 1995 Pentium PC: 8K+8K 2-way L1, 256 KB L2 (as in Chen et al. 1996)",
    ),
    (
        "x86-modern",
        "a current x86 core: 32K+32K 8-way L1, 1 MB L2, 8 MB LLC",
    ),
];

/// A `--preset` value: a preset, or a sweep standing for several presets. Its possible values are
/// the names in [`PRESETS`] and [`SWEEPS`] ([`PresetName::all`]), which the binary's command line
/// checks and lists in its error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PresetName(pub &'static str);

/// Every `--preset` value, presets first, then sweeps.
static PRESET_NAMES: std::sync::LazyLock<Vec<PresetName>> = std::sync::LazyLock::new(|| {
    PRESETS
        .iter()
        .map(|p| PresetName(p.0))
        .chain(SWEEPS.iter().map(|s| PresetName(s.0)))
        .collect()
});

impl PresetName {
    /// Every `--preset` value, presets first, then sweeps.
    pub fn all() -> &'static [PresetName] {
        &PRESET_NAMES
    }

    /// The presets it stands for: itself, or the presets of its sweep.
    pub fn presets(self) -> Vec<&'static str> {
        match SWEEPS.iter().find(|(s, _)| *s == self.0) {
            Some((_, names)) => names.to_vec(),
            None => vec![self.0],
        }
    }
}

/// Named groups of presets simulated together in one pass.
pub const SWEEPS: &[(&str, &[&str])] = &[
    (
        "paper",
        &[
            "ds5000-200",
            "ds5000-200-2way",
            "ds5000-200-random",
            "ds5000-200-unified",
        ],
    ),
    // The paper's machine with both first-level caches resized and made more associative: 16,
    // 32, 64 and 128 KB each, direct-mapped, 2-, 4- and 8-way LRU. Everything else (line and
    // fetch sizes, write buffer, TLB, mapping) stays the ds5000-200's.
    (
        "sweep16",
        &[
            "ds5000-200-16K-dm",
            "ds5000-200-16K-2way",
            "ds5000-200-16K-4way",
            "ds5000-200-16K-8way",
            "ds5000-200-32K-dm",
            "ds5000-200-32K-2way",
            "ds5000-200-32K-4way",
            "ds5000-200-32K-8way",
            "ds5000-200-64K-dm",
            "ds5000-200-64K-2way",
            "ds5000-200-64K-4way",
            "ds5000-200-64K-8way",
            "ds5000-200-128K-dm",
            "ds5000-200-128K-2way",
            "ds5000-200-128K-4way",
            "ds5000-200-128K-8way",
        ],
    ),
];

/// `ds5000-200-<SIZE>K-<dm|Nway>`: the ds5000-200 with both first-level caches of that size and
/// associativity (LRU). None for other names or an impossible geometry.
fn ds5000_resized(name: &str) -> Option<MachineConfig> {
    let rest = name.strip_prefix("ds5000-200-")?;
    let (size, ways) = rest.split_once("K-")?;
    let size: u64 = size.parse().ok()?;
    let ways: u32 = match ways {
        "dm" => 1,
        w => w.strip_suffix("way")?.parse().ok()?,
    };
    let mut m = ds5000();
    for c in [m.l1i.as_mut()?, &mut m.l1d] {
        c.size = size.checked_mul(1024)?;
        c.assoc = ways;
        c.replacement = Replacement::Lru;
    }
    m.validate().ok()?;
    Some(m)
}

/// The DECstation 5000/200 of the paper's Table 2-1. The paper does not print TLB miss costs;
/// 10 cycles for a user miss (the short UTLB refill handler) and 50 for a kernel miss (the
/// general handler) are consistent with the ratios of its Table 4-3 (UTLB MCPI over misses per
/// instruction gives roughly 8 to 14 cycles).
pub fn ds5000() -> MachineConfig {
    let mut i = CacheConfig::new(64 * 1024, 1, 16);
    i.write_back = false;
    let mut d = CacheConfig::new(64 * 1024, 1, 4);
    d.fetch = 16;
    d.write_back = false;
    d.write_allocate = true;
    MachineConfig {
        name: "ds5000-200".into(),
        l1i: Some(i),
        l1d: d,
        lower: vec![],
        memory_cycles: 15,
        uncached_cycles: 15,
        write_cycles: 0,
        write_buffer: Some(WriteBufferConfig {
            depth: 6,
            page_cycles: 1,
            other_cycles: 5,
            page_size: 4096,
            merge_bytes: 0,
        }),
        tlb: Some(TlbConfig {
            entries: 64,
            assoc: 0,
            page_size: 4096,
            kernel_entries: 8,
            replacement: Replacement::Random,
            seed: 1,
            user_miss_cycles: 10,
            kernel_miss_cycles: 50,
        }),
        // Colour-preserving across the 64 KB cache (16 pages of 4 KB).
        mapping: Mapping::Hash { colours: 16 },
        page_size: 4096,
        // MIPS kseg0 (cached) and kseg1 (uncached) bypass the TLB. On an x86-64 Linux trace (from
        // `trace --system`) the kernel's direct map and its image play kseg0's part: linear, and
        // held by a few global large pages that practically never miss. Their base addresses are
        // the nokaslr ones, so address minus base is the physical address there too. vmalloc,
        // module and per-CPU space stay mapped, like kseg2.
        kernel_unmapped: vec![
            (0x8000_0000, 0xc000_0000),
            (0xffff_8880_0000_0000, 0xffff_c880_0000_0000),
            (0xffff_ffff_8000_0000, 0xffff_ffff_c000_0000),
        ],
        kernel_uncached: vec![(0xa000_0000, 0xc000_0000)],
        three_c: true,
    }
}

pub fn preset(name: &str) -> Option<MachineConfig> {
    let mut m = match name {
        "ds5000-200" => ds5000(),
        "ds5000-200-2way" => {
            let mut m = ds5000();
            m.l1i.as_mut().unwrap().assoc = 2;
            m.l1d.assoc = 2;
            m
        }
        "ds5000-200-random" => {
            let mut m = ds5000();
            m.mapping = Mapping::Random { seed: 1 };
            m
        }
        "ds5000-200-merge" => {
            let mut m = ds5000();
            if let Some(w) = m.write_buffer.as_mut() {
                w.merge_bytes = 16;
            }
            m
        }
        "ds5000-200-unified" => {
            let mut m = ds5000();
            m.l1i = None;
            m.l1d.size = 128 * 1024;
            m
        }
        "pentium" => {
            let mut i = CacheConfig::new(8 * 1024, 2, 32);
            i.write_back = false;
            let mut d = CacheConfig::new(8 * 1024, 2, 32);
            d.write_allocate = false;
            let mut l2 = CacheConfig::new(256 * 1024, 1, 32);
            l2.hit_cycles = 6;
            MachineConfig {
                name: String::new(),
                l1i: Some(i),
                l1d: d,
                lower: vec![l2],
                memory_cycles: 30,
                uncached_cycles: 30,
                write_cycles: 0,
                write_buffer: None,
                tlb: Some(TlbConfig {
                    entries: 64,
                    assoc: 4,
                    page_size: 4096,
                    kernel_entries: 0,
                    replacement: Replacement::Lru,
                    seed: 0,
                    user_miss_cycles: 20,
                    kernel_miss_cycles: 20,
                }),
                mapping: Mapping::Random { seed: 1 },
                page_size: 4096,
                kernel_unmapped: vec![],
                kernel_uncached: vec![],
                three_c: true,
            }
        }
        "x86-modern" => {
            let i = CacheConfig::new(32 * 1024, 8, 64);
            let d = CacheConfig::new(32 * 1024, 8, 64);
            let mut l2 = CacheConfig::new(1024 * 1024, 16, 64);
            l2.hit_cycles = 14;
            let mut l3 = CacheConfig::new(8 * 1024 * 1024, 16, 64);
            l3.hit_cycles = 45;
            MachineConfig {
                name: String::new(),
                l1i: Some(i),
                l1d: d,
                lower: vec![l2, l3],
                memory_cycles: 250,
                uncached_cycles: 250,
                write_cycles: 0,
                write_buffer: None,
                tlb: Some(TlbConfig {
                    entries: 64,
                    assoc: 4,
                    page_size: 4096,
                    kernel_entries: 0,
                    replacement: Replacement::Lru,
                    seed: 0,
                    user_miss_cycles: 30,
                    kernel_miss_cycles: 30,
                }),
                mapping: Mapping::Random { seed: 1 },
                page_size: 4096,
                kernel_unmapped: vec![],
                kernel_uncached: vec![],
                three_c: true,
            }
        }
        other => ds5000_resized(other)?,
    };
    m.name = name.to_string();
    Some(m)
}

/// `64K`, `1M`, `4096`: bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1024),
        Some((i, 'M' | 'm')) => (&t[..i], 1024 * 1024),
        Some((i, 'G' | 'g')) => (&t[..i], 1024 * 1024 * 1024),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{s:?} is not a size (e.g. 4096, 64K, 2M)"))
}

fn parse_assoc(s: &str) -> Result<u32, String> {
    match s {
        "full" | "fa" => Ok(0),
        "dm" => Ok(1),
        _ => {
            s.parse::<u32>().ok().filter(|&a| a > 0).ok_or_else(|| {
                format!("{s:?} is not an associativity (a number of ways, dm or full)")
            })
        }
    }
}

fn three(s: &str, what: &str) -> Result<[String; 3], String> {
    let parts: Vec<&str> = s.split(':').collect();
    match parts.as_slice() {
        [a, b, c] => Ok([a.to_string(), b.to_string(), c.to_string()]),
        _ => Err(format!(
            "{what} {s:?} must have three fields separated by colons"
        )),
    }
}

/// A cache's `SIZE:ASSOC:LINE` as written on the command line (e.g. `32K:8:64`, `64K:dm:16`),
/// read and checked on its own by the argument parser; [`CacheGeometry::apply`] puts it on the
/// cache of the machine it changes.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheGeometry {
    /// As given, to name the machine and the option in messages.
    pub text: String,
    size: u64,
    assoc: u32,
    line: u32,
}

impl CacheGeometry {
    pub fn parse(s: &str) -> Result<CacheGeometry, String> {
        let [size, assoc, line] = three(s, "cache geometry")?;
        let geometry = CacheGeometry {
            text: s.to_string(),
            size: parse_size(&size)?,
            assoc: parse_assoc(&assoc)?,
            line: u32::try_from(parse_size(&line)?)
                .map_err(|_| format!("line size {line} too large"))?,
        };
        geometry.apply(None)?;
        Ok(geometry)
    }

    /// `base` with this size, associativity and line; its other fields kept.
    pub fn apply(&self, base: Option<&CacheConfig>) -> Result<CacheConfig, String> {
        let mut c = base.cloned().unwrap_or_else(|| CacheConfig::new(1, 1, 1));
        c.size = self.size;
        c.assoc = self.assoc;
        c.line = self.line;
        if c.fetch != 0 && c.fetch < c.line {
            c.fetch = 0;
        }
        c.validate()
            .map_err(|e| format!("cache geometry {:?}: {e}", self.text))?;
        Ok(c)
    }
}

/// `SIZE:ASSOC:LINE` put on `base` (see [`CacheGeometry`]).
pub fn parse_cache(s: &str, base: Option<&CacheConfig>) -> Result<CacheConfig, String> {
    CacheGeometry::parse(s)?.apply(base)
}

/// A TLB's `ENTRIES:ASSOC:PAGE` (e.g. `64:full:4K`) as written on the command line; the
/// counterpart of [`CacheGeometry`].
#[derive(Debug, Clone, PartialEq)]
pub struct TlbGeometry {
    pub text: String,
    entries: u32,
    assoc: u32,
    page_size: u64,
}

impl TlbGeometry {
    pub fn parse(s: &str) -> Result<TlbGeometry, String> {
        let [entries, assoc, page] = three(s, "TLB geometry")?;
        let geometry = TlbGeometry {
            text: s.to_string(),
            entries: entries
                .parse()
                .ok()
                .filter(|&e| e > 0)
                .ok_or_else(|| format!("TLB entries {entries:?} is not a positive number"))?,
            assoc: parse_assoc(&assoc)?,
            page_size: parse_size(&page)?,
        };
        geometry.apply(None)?;
        Ok(geometry)
    }

    /// `base` with these entries, associativity and page size; its other fields kept.
    pub fn apply(&self, base: Option<&TlbConfig>) -> Result<TlbConfig, String> {
        let mut t = base.cloned().unwrap_or(TlbConfig {
            entries: 0,
            assoc: 0,
            page_size: 4096,
            kernel_entries: 0,
            replacement: Replacement::Lru,
            seed: 0,
            user_miss_cycles: 20,
            kernel_miss_cycles: 20,
        });
        t.entries = self.entries;
        t.assoc = self.assoc;
        t.page_size = self.page_size;
        if t.kernel_entries >= t.entries {
            t.kernel_entries = 0;
        }
        t.validate()
            .map_err(|e| format!("TLB geometry {:?}: {e}", self.text))?;
        Ok(t)
    }
}

/// `ENTRIES:ASSOC:PAGE` put on `base` (see [`TlbGeometry`]).
pub fn parse_tlb(s: &str, base: Option<&TlbConfig>) -> Result<TlbConfig, String> {
    TlbGeometry::parse(s)?.apply(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_name_stands_for_machines_that_exist() {
        for name in PresetName::all() {
            let presets = name.presets();
            assert!(!presets.is_empty(), "{name:?}");
            for p in presets {
                assert!(
                    preset(p).is_some(),
                    "{name:?} names {p}, which is no preset"
                );
            }
        }
    }

    #[test]
    fn every_preset_is_valid() {
        for (name, _) in PRESETS {
            let m = preset(name).unwrap();
            assert_eq!(m.validate(), Ok(()), "{name}");
            assert_eq!(&m.name, name);
        }
        for (_, names) in SWEEPS {
            assert!(names.iter().all(|n| preset(n).is_some()));
        }
        assert!(preset("vax").is_none());
        let sweep16 = SWEEPS.iter().find(|s| s.0 == "sweep16").unwrap().1;
        assert_eq!(sweep16.len(), 16);
        let distinct: std::collections::BTreeSet<_> = sweep16
            .iter()
            .map(|n| {
                let m = preset(n).unwrap();
                (m.l1d.size, m.l1d.assoc, m.l1i.unwrap().size)
            })
            .collect();
        assert_eq!(distinct.len(), 16, "sixteen different geometries");
    }

    #[test]
    fn resized_ds5000_names() {
        let m = preset("ds5000-200-128K-4way").unwrap();
        let i = m.l1i.as_ref().unwrap();
        assert_eq!(
            (i.size, i.assoc, m.l1d.size, m.l1d.assoc),
            (131072, 4, 131072, 4)
        );
        // Only the geometry changes: the data cache keeps 4-byte lines and 16-byte fetches.
        assert_eq!((m.l1d.line, m.l1d.fetch_bytes(), i.line), (4, 16, 16));
        let base = ds5000();
        assert_eq!(
            (&m.write_buffer, &m.tlb, &m.mapping),
            (&base.write_buffer, &base.tlb, &base.mapping)
        );
        let dm = preset("ds5000-200-64K-dm").unwrap();
        assert_eq!((dm.l1d.clone(), dm.l1i.clone()), (base.l1d, base.l1i));
        for bad in [
            "ds5000-200-0K-dm",
            "ds5000-200-64K-3way",
            "ds5000-200-64K",
            "ds5000-200-xK-dm",
        ] {
            assert!(preset(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_ds5000_translates_x86_kernel_space_as_it_did_kseg0_and_kseg2() {
        use crate::memsim::machine::Machine;
        use crate::memsim::trace::{Kind, Mode, Ref};
        let mut m = Machine::new(&ds5000());
        for vaddr in [
            0xffff_ffff_8100_0000u64, // kernel text
            0xffff_8880_0123_4000,    // direct map
            0x8000_1000,              // MIPS kseg0
        ] {
            m.access(&Ref::new(Kind::Read, Mode::Kernel, 0, 4, vaddr));
        }
        assert_eq!(m.stats().mode[1].tlb_refs, 0);
        m.access(&Ref::new(
            Kind::Read,
            Mode::Kernel,
            0,
            4,
            0xffff_c900_0000_0000,
        )); // vmalloc
        m.access(&Ref::new(Kind::Read, Mode::User, 1, 4, 0x7fff_0000_0000));
        let s = m.stats();
        assert_eq!((s.mode[1].tlb_refs, s.mode[0].tlb_refs), (1, 1));
    }

    #[test]
    fn geometry_strings() {
        let c = parse_cache("32K:8:64", None).unwrap();
        assert_eq!((c.size, c.assoc, c.line), (32768, 8, 64));
        assert_eq!(parse_cache("64K:dm:16", None).unwrap().assoc, 1);
        assert_eq!(parse_cache("4K:full:64", None).unwrap().assoc, 0);
        assert!(parse_cache("33000:8:64", None)
            .unwrap_err()
            .contains("multiple"));
        assert!(parse_cache("32K:8", None)
            .unwrap_err()
            .contains("three fields"));
        assert!(parse_cache("32X:8:64", None)
            .unwrap_err()
            .contains("not a size"));
        let t = parse_tlb("64:full:4K", None).unwrap();
        assert_eq!((t.entries, t.assoc, t.page_size), (64, 0, 4096));
        assert!(parse_tlb("64:3:4K", None).is_err());
    }

    #[test]
    fn machine_config_round_trips_through_json() {
        let m = ds5000();
        let text = serde_json::to_string(&m).unwrap();
        let back: MachineConfig = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
    }
}
