//! Miss-ratio curves: the LRU misses of one first-level cache at every power-of-two size in a
//! range, in one pass over a trace.
//!
//! With the line size and the associativity fixed, the sizes differ only in their number of
//! sets, and each size doubles the sets of the one before. For LRU that is a set refinement: the
//! lines a set of the smaller cache holds (the `ways` most recently used of the lines that map to
//! it) include those of either set it splits into, so a hit in a smaller cache is a hit in every
//! larger one (Mattson's inclusion, extended to sets as Hill and Smith did). Each size keeps its
//! own per-set LRU stacks of depth `ways`; a reference that is the most recent line of its set in
//! the smallest cache is the most recent of its set in every size (its set's lines are a subset
//! of the smaller set's), so it is a hit everywhere that changes nothing, and the pass goes on
//! without touching the other sizes. That is most references. The fully associative curve is the
//! same with one set per size: a single LRU stack, cut at every size.
//!
//! A line is what the machine simulator's first level would look up: physical addresses when the
//! trace has them, virtual addresses keyed by address space otherwise; uncached references are
//! left out; an access spanning lines counts once per line, as there.

use super::cache::{Replacement, Store};
use super::machine::space_key;
use super::sweep::Simulator;
use super::trace::packed::Refs;
use super::trace::{Kind, Mode};
use crate::units;
use serde::{Deserialize, Serialize};

/// Which references a curve's cache sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CurveCache {
    /// Instruction fetches.
    L1i,
    /// Loads and stores.
    L1d,
    /// Everything, as one unified cache.
    Unified,
}

impl CurveCache {
    fn sees(self, kind: Kind) -> bool {
        match self {
            CurveCache::L1i => kind == Kind::Instr,
            CurveCache::L1d => kind != Kind::Instr,
            CurveCache::Unified => true,
        }
    }

    fn name(self) -> &'static str {
        match self {
            CurveCache::L1i => "l1i",
            CurveCache::L1d => "l1d",
            CurveCache::Unified => "unified",
        }
    }
}

/// Sizes in one curve at most (2^40 / 2^0 would be 41).
pub const MAX_POINTS: usize = 32;

/// `CACHE:MIN-MAX:ASSOC:LINE`, e.g. `l1d:8K-1M:8:64` or `unified:4K-64M:full:64`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurveSpec {
    pub cache: CurveCache,
    pub min: u64,
    pub max: u64,
    /// Ways; 0 for fully associative.
    pub assoc: u32,
    pub line: u32,
}

impl CurveSpec {
    pub fn parse(s: &str) -> Result<CurveSpec, String> {
        let form = "CACHE:MIN-MAX:ASSOC:LINE, e.g. l1d:8K-1M:8:64 (CACHE is l1i, l1d or unified; ASSOC a number of ways or full)";
        let fields: Vec<&str> = s.split(':').collect();
        let [cache, range, assoc, line] = fields.as_slice() else {
            return Err(format!("curve {s:?} must be {form}"));
        };
        let cache = match *cache {
            "l1i" => CurveCache::L1i,
            "l1d" => CurveCache::L1d,
            "unified" | "l1" => CurveCache::Unified,
            other => {
                return Err(format!(
                    "curve {s:?}: cache {other:?} is not l1i, l1d or unified"
                ))
            }
        };
        let Some((min, max)) = range.split_once('-') else {
            return Err(format!(
                "curve {s:?}: sizes {range:?} must be MIN-MAX, e.g. 8K-1M"
            ));
        };
        let size = |t: &str| super::config::parse_size(t).map_err(|e| format!("curve {s:?}: {e}"));
        let (min, max) = (size(min)?, size(max)?);
        let assoc = match *assoc {
            "full" | "fa" => 0,
            "dm" => 1,
            a => a.parse::<u32>().ok().filter(|&a| a > 0).ok_or_else(|| {
                format!("curve {s:?}: {a:?} is not an associativity (a number of ways, dm or full)")
            })?,
        };
        let line = u32::try_from(size(line)?)
            .map_err(|_| format!("curve {s:?}: line size {line} is too large"))?;
        let spec = CurveSpec {
            cache,
            min,
            max,
            assoc,
            line,
        };
        spec.validate().map_err(|e| format!("curve {s:?}: {e}"))?;
        Ok(spec)
    }

    fn validate(&self) -> Result<(), String> {
        if !self.line.is_power_of_two() {
            return Err(format!("line size {} is not a power of two", self.line));
        }
        if !self.min.is_power_of_two() || !self.max.is_power_of_two() || self.min > self.max {
            return Err(format!(
                "sizes {}-{} must be powers of two, the smaller first",
                self.min, self.max
            ));
        }
        let set_bytes = u64::from(self.line) * u64::from(self.assoc.max(1));
        if self.min < set_bytes || !u64::from(self.assoc).is_power_of_two() && self.assoc != 0 {
            return Err(format!(
                "every size needs whole sets: the associativity must be a power of two and the smallest size at least {} ways x {} bytes",
                self.assoc.max(1),
                self.line
            ));
        }
        if self.sizes().len() > MAX_POINTS {
            return Err(format!("more than {MAX_POINTS} sizes; narrow the range"));
        }
        super::cache::check_ways(
            self.min / u64::from(self.line),
            self.assoc,
            Replacement::Lru,
        )
    }

    /// The sizes of the curve, smallest first.
    pub fn sizes(&self) -> Vec<u64> {
        let (lo, hi) = (self.min.trailing_zeros(), self.max.trailing_zeros());
        (lo..=hi).map(|b| 1u64 << b).collect()
    }

    /// Lines of all sizes together: what the pass holds at most.
    pub fn total_lines(&self) -> u64 {
        self.sizes().iter().map(|s| s / u64::from(self.line)).sum()
    }

    /// The text it was given as, normalised.
    pub fn label(&self) -> String {
        let assoc = match self.assoc {
            0 => "full".to_string(),
            a => a.to_string(),
        };
        format!(
            "{}:{}-{}:{assoc}:{}",
            self.cache.name(),
            size_spec(self.min),
            size_spec(self.max),
            self.line
        )
    }
}

/// A size as the curve syntax writes it ("8K", "1M", "3G", "1000"), so a label reads back.
fn size_spec(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

/// One size of a curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CurvePoint {
    /// Bytes.
    pub size: u64,
    pub misses: u64,
    /// Misses per line access.
    pub miss_rate: f64,
}

/// A miss-ratio curve: all references, and user and kernel apart (one cache serves both).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CurveResult {
    /// As given, e.g. `l1d:8K-1M:8:64`.
    pub spec: String,
    pub cache: CurveCache,
    /// Ways; 0 for fully associative.
    pub assoc: u32,
    pub line: u32,
    /// Lines were physical addresses (the trace had them) rather than virtual ones.
    pub physical: bool,
    /// Line accesses (the denominator of every miss rate), user and kernel.
    pub accesses: ModeCount,
    pub points: Vec<CurvePoint>,
    pub user: Vec<CurvePoint>,
    pub kernel: Vec<CurvePoint>,
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct ModeCount {
    pub user: u64,
    pub kernel: u64,
}

/// The one-pass simulation behind a curve.
pub struct CurveSim {
    spec: CurveSpec,
    line_bits: u32,
    /// One LRU store per size, smallest first.
    stores: Vec<Store>,
    /// Misses by mode (user, kernel) and size.
    misses: [Vec<u64>; 2],
    accesses: [u64; 2],
    physical: bool,
}

impl CurveSim {
    pub fn new(spec: &CurveSpec) -> CurveSim {
        let line = u64::from(spec.line);
        let stores: Vec<Store> = spec
            .sizes()
            .iter()
            .map(|s| Store::new(s / line, spec.assoc, Replacement::Lru, 0))
            .collect();
        let n = stores.len();
        CurveSim {
            spec: spec.clone(),
            line_bits: spec.line.trailing_zeros(),
            stores,
            misses: [vec![0; n], vec![0; n]],
            accesses: [0; 2],
            physical: false,
        }
    }

    #[inline]
    fn line_access(&mut self, line: u64, mode: usize) {
        self.accesses[mode] += 1;
        if self.stores[0].is_first(line) {
            return;
        }
        for (s, m) in self.stores.iter_mut().zip(&mut self.misses[mode]) {
            if !s.touch(line, false) {
                s.insert(line, false);
                *m += 1;
            }
        }
    }

    fn result(&self) -> CurveResult {
        let points = |misses: &dyn Fn(usize) -> u64, accesses: u64| {
            self.spec
                .sizes()
                .iter()
                .enumerate()
                .map(|(i, &size)| CurvePoint {
                    size,
                    misses: misses(i),
                    miss_rate: if accesses == 0 {
                        0.0
                    } else {
                        misses(i) as f64 / accesses as f64
                    },
                })
                .collect::<Vec<_>>()
        };
        let [u, k] = &self.misses;
        CurveResult {
            spec: self.spec.label(),
            cache: self.spec.cache,
            assoc: self.spec.assoc,
            line: self.spec.line,
            physical: self.physical,
            accesses: ModeCount {
                user: self.accesses[0],
                kernel: self.accesses[1],
            },
            points: points(&|i| u[i] + k[i], self.accesses[0] + self.accesses[1]),
            user: points(&|i| u[i], self.accesses[0]),
            kernel: points(&|i| k[i], self.accesses[1]),
        }
    }
}

impl Simulator for CurveSim {
    type Output = CurveResult;

    fn run(&mut self, batch: Refs<'_>) {
        for r in batch.iter() {
            if r.uncached || !self.spec.cache.sees(r.kind) {
                continue;
            }
            let addr = match r.paddr {
                Some(p) => {
                    self.physical = true;
                    p
                }
                None => r.vaddr ^ space_key(r.asid),
            };
            let end = addr.saturating_add(u64::from(r.size.max(1)) - 1);
            let mode = usize::from(r.mode == Mode::Kernel);
            for line in addr >> self.line_bits..=end >> self.line_bits {
                self.line_access(line, mode);
            }
        }
    }

    fn finish(self) -> CurveResult {
        self.result()
    }
}

/// The curves as a table: one row per size, miss rates of all, user and kernel references.
pub fn render(curves: &[CurveResult]) -> String {
    let mut t = String::new();
    for c in curves {
        t.push_str(&format!(
            "miss-ratio curve {} (LRU, {} addresses; {} user and {} kernel line accesses)\n",
            c.spec,
            if c.physical { "physical" } else { "virtual" },
            c.accesses.user,
            c.accesses.kernel
        ));
        t.push_str("  size          misses   miss rate      user    kernel\n");
        for ((p, u), k) in c.points.iter().zip(&c.user).zip(&c.kernel) {
            t.push_str(&format!(
                "  {:<8} {:>12} {:>10.3}% {:>8.3}% {:>8.3}%\n",
                units::bytes(p.size),
                p.misses,
                100.0 * p.miss_rate,
                100.0 * u.miss_rate,
                100.0 * k.miss_rate
            ));
        }
    }
    t
}

#[cfg(test)]
#[path = "curve_tests.rs"]
mod tests;
