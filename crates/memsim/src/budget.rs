//! What simulating a machine costs in memory, checked against what this computer has before
//! anything is allocated.
//!
//! Sizes on the command line and in configuration files are the user's to choose, and a real
//! design can be large (a memory-side cache of many gigabytes), so there is no fixed bound: the
//! models' worst case (every line of every cache, every TLB entry, every write-buffer slot in
//! use) is added up and compared with the memory available now. The stores allocate lazily, so a
//! big machine that passes takes only what the trace fills; one that cannot fit is refused with
//! the part that is too big, instead of failing an allocation halfway (which aborts the process).

use super::cache::CacheConfig;
use super::machine::MachineConfig;
use crate::units;
use std::fmt;

/// Bytes per entry of a set-associative store: the tag and its dirty flag.
const SET_ENTRY: u64 = 9;
/// Bytes per entry of a fully associative LRU store at its fullest: a 16-byte slot (key and
/// links) and a dirty flag, in a table that doubles when it would be more than half full, so
/// that it is at worst a quarter full.
const FULL_ENTRY: u64 = 4 * (16 + 1);
/// Bytes per write-buffer slot (an entry of 24 bytes in a queue that may double when it grows).
const WBUF_ENTRY: u64 = 48;

/// The part of a machine that needs the most memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    L1i,
    L1d,
    /// A level below the first, 0 for the second level.
    Lower(usize),
    Tlb,
    WriteBuffer,
}

impl Part {
    /// The command-line option that sets this part of a custom machine, if any.
    pub fn option(&self) -> Option<&'static str> {
        match self {
            Part::L1i => Some("--l1i"),
            Part::L1d => Some("--l1d"),
            Part::Lower(0) => Some("--l2"),
            Part::Lower(_) => None,
            Part::Tlb => Some("--tlb"),
            Part::WriteBuffer => None,
        }
    }

    /// The part's name in a machine configuration file.
    fn field(&self) -> String {
        match self {
            Part::L1i => "l1i".into(),
            Part::L1d => "l1d".into(),
            Part::Lower(i) => format!("lower[{i}]"),
            Part::Tlb => "tlb".into(),
            Part::WriteBuffer => "write_buffer".into(),
        }
    }
}

/// A machine, or several, that would not fit in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooBig {
    /// The biggest part, with what it alone needs and how it is described.
    pub part: Part,
    pub part_bytes: u64,
    pub what: String,
    /// Whether the 3C shadow is most of the part's cost (`--no-3c` would help).
    pub three_c: bool,
    /// Everything the simulation would need, and what is available.
    pub needed: u64,
    pub available: u64,
}

impl fmt::Display for TooBig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "simulating it needs up to {} of memory but {} is available: {} ({}) alone needs {}",
            units::bytes(self.needed),
            units::bytes(self.available),
            self.part.field(),
            self.what,
            units::bytes(self.part_bytes)
        )?;
        if self.three_c {
            write!(f, ", most of it for the 3C classification; use --no-3c")?;
        } else {
            write!(f, "; make it smaller")?;
        }
        Ok(())
    }
}

/// Bytes of a store of `entries` keys in `ways` ways (0: fully associative), as `Store::new`
/// builds it.
fn store_bytes(entries: u64, ways: u32, lru: bool) -> u64 {
    let full = ways == 0 || u64::from(ways) == entries;
    if full && lru && entries > 16 {
        entries.saturating_mul(FULL_ENTRY)
    } else {
        entries.saturating_mul(SET_ENTRY)
    }
}

/// A cache's worst case, and the part of it that is the 3C shadow.
fn cache_bytes(c: &CacheConfig, three_c: bool) -> (u64, u64) {
    use super::cache::Replacement;
    let lines = c.lines();
    let store = store_bytes(lines, c.assoc, c.replacement == Replacement::Lru);
    let shadow = if three_c {
        lines.saturating_mul(FULL_ENTRY)
    } else {
        0
    };
    (store.saturating_add(shadow), shadow)
}

/// Each part of a machine with its worst-case bytes, a description, and whether the 3C shadow is
/// most of it.
fn parts(m: &MachineConfig) -> Vec<(Part, u64, String, bool)> {
    let mut out = Vec::new();
    let mut cache = |part: Part, c: &CacheConfig| {
        let (bytes, shadow) = cache_bytes(c, m.three_c);
        let what = format!(
            "a {} cache of {}-byte lines, {} lines",
            units::bytes(c.size),
            c.line,
            c.lines()
        );
        // `bytes` saturates, so "more than half" is asked without doubling.
        out.push((part, bytes, what, shadow > bytes - shadow));
    };
    if let Some(c) = &m.l1i {
        cache(Part::L1i, c);
    }
    cache(Part::L1d, &m.l1d);
    for (i, c) in m.lower.iter().enumerate() {
        cache(Part::Lower(i), c);
    }
    if let Some(t) = &m.tlb {
        use super::cache::Replacement;
        let lru = t.replacement == Replacement::Lru;
        let shared = u64::from(t.entries - t.kernel_entries.min(t.entries));
        let bytes = store_bytes(shared, t.assoc, lru).saturating_add(store_bytes(
            u64::from(t.kernel_entries),
            0,
            lru,
        ));
        out.push((
            Part::Tlb,
            bytes,
            format!("a TLB of {} entries", t.entries),
            false,
        ));
    }
    if let Some(w) = &m.write_buffer {
        out.push((
            Part::WriteBuffer,
            u64::from(w.depth).saturating_mul(WBUF_ENTRY),
            format!("a write buffer of depth {}", w.depth),
            false,
        ));
    }
    out
}

/// Worst-case bytes of the stores of a miss-ratio curve (one per size).
pub fn curve_bytes(spec: &super::curve::CurveSpec) -> u64 {
    spec.sizes()
        .iter()
        .map(|s| store_bytes(s / u64::from(spec.line), spec.assoc, true))
        .fold(0u64, u64::saturating_add)
}

/// Checks that `curves` fit beside machines needing `machines_bytes`; returns what is left of
/// `available` for the machines, or the biggest curve and why when the curves are most of an
/// excess.
pub fn check_curves(
    curves: &[super::curve::CurveSpec],
    machines_bytes: u64,
    available: u64,
) -> Result<u64, (String, String)> {
    let each: Vec<u64> = curves.iter().map(curve_bytes).collect();
    let all = each.iter().fold(0u64, |a, &b| a.saturating_add(b));
    if all.saturating_add(machines_bytes) > available && all >= machines_bytes {
        let (c, bytes) = curves
            .iter()
            .zip(&each)
            .max_by_key(|(_, b)| **b)
            .expect("curves exceed the memory");
        return Err((
            c.label(),
            format!(
                "its {} sizes need up to {} of memory ({} with everything else simulated) but {} is available; narrow the range",
                c.sizes().len(),
                units::bytes(*bytes),
                units::bytes(all.saturating_add(machines_bytes)),
                units::bytes(available)
            ),
        ));
    }
    Ok(available.saturating_sub(all))
}

/// Worst-case bytes of one machine.
pub fn machine_bytes(m: &MachineConfig) -> u64 {
    parts(m).iter().fold(0u64, |sum, p| sum.saturating_add(p.1))
}

/// Checks that `machines`, simulated together, fit in `available` bytes; otherwise names the
/// biggest part of the machine at the index returned with the error.
pub fn check(machines: &[MachineConfig], available: u64) -> Result<(), (usize, TooBig)> {
    let needed = machines
        .iter()
        .fold(0u64, |sum, m| sum.saturating_add(machine_bytes(m)));
    if needed <= available {
        return Ok(());
    }
    let (index, (part, part_bytes, what, three_c)) = machines
        .iter()
        .enumerate()
        .flat_map(|(i, m)| parts(m).into_iter().map(move |p| (i, p)))
        // The first of equals: the one the user wrote first.
        .reduce(|best, p| if p.1 .1 > best.1 .1 { p } else { best })
        .expect("a machine has an l1d");
    Err((
        index,
        TooBig {
            part,
            part_bytes,
            what,
            three_c,
            needed,
            available,
        },
    ))
}

/// Memory available to a new program now (`MemAvailable`, or what osmeter's memory cgroup leaves
/// when that is less), or None when neither says.
pub fn available_memory() -> Option<u64> {
    crate::memory_room::now().map(|r| r.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsim::config::{parse_cache, parse_tlb, preset};

    const GIB: u64 = 1 << 30;

    #[test]
    fn presets_need_little() {
        for name in ["ds5000-200", "x86-modern", "pentium"] {
            let m = preset(name).unwrap();
            assert!(machine_bytes(&m) < 64 << 20, "{name}");
        }
        // x86-modern with 3C: 8 MB LLC = 131072 lines in the store (9 B) and the shadow (68 B).
        let m = preset("x86-modern").unwrap();
        let llc = cache_bytes(&m.lower[1], true);
        assert_eq!(llc, (131072 * 77, 131072 * 68));
    }

    #[test]
    fn absurd_caches_tlbs_and_write_buffers_are_named() {
        let mut m = preset("ds5000-200").unwrap();
        m.l1d = parse_cache("1024G:8:64", Some(&m.l1d)).unwrap();
        let (i, e) = check(&[m.clone()], 20 * GIB).unwrap_err();
        assert_eq!((i, &e.part, e.three_c), (0, &Part::L1d, true));
        assert_eq!(e.part.option(), Some("--l1d"));
        let text = e.to_string();
        assert!(
            text.contains("l1d (a 1 TiB cache of 64-byte lines"),
            "{text}"
        );
        assert!(text.contains("20 GiB is available") && text.contains("--no-3c"));
        m.three_c = false;
        let (_, e) = check(&[m], 20 * GIB).unwrap_err();
        assert!(!e.three_c && e.part_bytes == (1u64 << 34) * 9);

        let mut m = preset("x86-modern").unwrap();
        m.tlb = Some(parse_tlb("4294967295:full:4K", m.tlb.as_ref()).unwrap());
        let (_, e) = check(&[m], 20 * GIB).unwrap_err();
        assert_eq!(e.part, Part::Tlb);
        assert!(e.to_string().contains("4294967295 entries"));

        let mut m = preset("ds5000-200").unwrap();
        m.write_buffer.as_mut().unwrap().depth = u32::MAX;
        let (_, e) = check(&[m], 20 * GIB).unwrap_err();
        assert_eq!((e.part.clone(), e.part.option()), (Part::WriteBuffer, None));
        assert!(e
            .to_string()
            .contains("write_buffer (a write buffer of depth 4294967295)"));
    }

    /// A cache whose worst case does not fit 64 bits (the fuzz target found it): refused in
    /// words, with the 3C shadow named as most of it, not an arithmetic overflow.
    #[test]
    fn a_cache_past_any_count_of_bytes_is_refused() {
        let mut m = preset("ds5000-200").unwrap();
        m.l1d = crate::memsim::cache::CacheConfig::new(3_025_031_451_285_317_296, 0, 1);
        let (i, e) = check(&[m], 20 * GIB).unwrap_err();
        assert_eq!((i, &e.part, e.three_c), (0, &Part::L1d, true));
        assert_eq!(e.part_bytes, u64::MAX);
    }

    #[test]
    fn machines_are_counted_together() {
        let mut m = preset("ds5000-200").unwrap();
        m.three_c = false;
        m.l1d = parse_cache("1G:1:64", Some(&m.l1d)).unwrap();
        let one = machine_bytes(&m);
        assert!(check(std::slice::from_ref(&m), one).is_ok());
        let small = preset("pentium").unwrap();
        let (i, e) = check(&[small, m.clone(), m], 2 * one).unwrap_err();
        assert_eq!((i, e.part), (1, Part::L1d));
        assert!(e.needed > 2 * one);
    }

    #[test]
    fn curves_are_counted_beside_the_machines() {
        use crate::memsim::curve::CurveSpec;
        let c = CurveSpec::parse("l1d:1M-1G:8:64").unwrap();
        // 16 K + 32 K + ... + 16 M lines of 9 bytes.
        assert_eq!(curve_bytes(&c), ((16384u64 << 11) - 16384) * 9);
        assert_eq!(
            check_curves(std::slice::from_ref(&c), 1000, 4 * GIB),
            Ok(4 * GIB - curve_bytes(&c))
        );
        let (label, why) = check_curves(&[c], 1000, 100 << 20).unwrap_err();
        assert_eq!(label, "l1d:1M-1G:8:64");
        assert!(
            why.contains("11 sizes") && why.contains("narrow the range"),
            "{why}"
        );
        let full = CurveSpec::parse("unified:64K-64K:full:64").unwrap();
        assert_eq!(curve_bytes(&full), 1024 * FULL_ENTRY);
    }
}
