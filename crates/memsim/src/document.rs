//! The memsim document (`osmeter.memsim/1`): what one `osmeter memsim` simulated, as typed
//! structs that are stored as they serialise and read back as the same types.
//!
//! MCPI follows Chen and Bershad: stall cycles over instructions. `mcpi.user` and `mcpi.system`
//! divide each mode's stalls by ALL instructions, so they add up to `mcpi.total` and stack into one
//! bar; `own_mcpi` divides by the mode's own instructions (the paper's S-MCPI).

use super::curve::CurveResult;
use super::interval::IntervalResult;
use super::machine::{CacheCounts, MachineConfig, ModeStats, Stats, COMPONENTS};
use super::sweep::SweepResult;
use super::trace::Format;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA: &str = "osmeter.memsim/1";

// This crate's kinds of JSON document, with the version of their schema (`osmeter schema`): a
// kind of a layer's type is that layer's to name.
crate::results::described! {
    crate::memsim::document::MemsimDoc => "memsim", 1;
    crate::memsim::trace::summary::TraceSummary => "trace-info", 1;
}

pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemsimDoc {
    pub schema: String,
    pub trace: TraceRef,
    pub references: u64,
    /// The capture saw no kernel references.
    pub user_only: bool,
    /// The capture ended early (Ctrl-C, a timeout): the trace is a prefix.
    pub incomplete: bool,
    pub seconds: f64,
    pub references_per_second: f64,
    pub machines: Vec<MachineDoc>,
    /// MCPI per kernel category, when kernel symbols were known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<AttributionDoc>,
    /// Chen and Bershad's seven assertions, when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertions: Option<AssertionsDoc>,
    /// Miss-ratio curves (`--curve`), user and kernel apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curves: Vec<CurveResult>,
    /// Per-interval miss rates and MCPI of each machine (`--interval`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<IntervalResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceRef {
    pub path: String,
    /// The input format as the user named it; `None` when it was detected.
    pub format: Option<Format>,
}

impl MemsimDoc {
    pub fn new(trace: TraceRef, cfgs: &[MachineConfig], r: &SweepResult) -> MemsimDoc {
        MemsimDoc {
            schema: SCHEMA.to_string(),
            trace,
            references: r.refs,
            user_only: r.meta.user_only(),
            incomplete: r.meta.incomplete(),
            seconds: r.seconds,
            references_per_second: if r.seconds > 0.0 {
                r.refs as f64 / r.seconds
            } else {
                0.0
            },
            machines: cfgs
                .iter()
                .zip(&r.stats)
                .map(|(c, s)| MachineDoc::new(c, s))
                .collect(),
            attribution: None,
            assertions: None,
            curves: r.curves.clone(),
            intervals: r.intervals.clone(),
        }
    }
}

/// Stall cycles per instruction by component, and their sum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Mcpi {
    pub icache: f64,
    pub dcache: f64,
    pub wbuffer: f64,
    pub tlb: f64,
    pub uncached: f64,
    pub total: f64,
}

impl Mcpi {
    pub fn of(stall: &[u64; 5], instructions: u64) -> Mcpi {
        let r = |i: usize| ratio(stall[i], instructions);
        Mcpi {
            icache: r(0),
            dcache: r(1),
            wbuffer: r(2),
            tlb: r(3),
            uncached: r(4),
            total: ratio(stall.iter().sum(), instructions),
        }
    }

    /// The components in the order of [`COMPONENTS`], then the total.
    pub fn by_name(&self) -> [(&'static str, f64); 6] {
        [
            (COMPONENTS[0], self.icache),
            (COMPONENTS[1], self.dcache),
            (COMPONENTS[2], self.wbuffer),
            (COMPONENTS[3], self.tlb),
            (COMPONENTS[4], self.uncached),
            ("total", self.total),
        ]
    }
}

/// Stall cycles by component.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StallCycles {
    pub icache: u64,
    pub dcache: u64,
    pub wbuffer: u64,
    pub tlb: u64,
    pub uncached: u64,
}

impl StallCycles {
    pub fn of(stall: &[u64; 5]) -> StallCycles {
        StallCycles {
            icache: stall[0],
            dcache: stall[1],
            wbuffer: stall[2],
            tlb: stall[3],
            uncached: stall[4],
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModeMcpi {
    pub user: Mcpi,
    pub system: Mcpi,
    pub total: Mcpi,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OwnMcpi {
    pub user: Mcpi,
    pub system: Mcpi,
}

/// Misses by class: compulsory, capacity, conflict (zero when not classified).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MissClasses {
    pub compulsory: u64,
    pub capacity: u64,
    pub conflict: u64,
}

impl MissClasses {
    pub fn total(&self) -> u64 {
        self.compulsory + self.capacity + self.conflict
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CacheDoc {
    pub accesses: u64,
    pub misses: u64,
    pub miss_rate: f64,
    pub read_misses: u64,
    pub write_misses: u64,
    pub writebacks: u64,
    pub classes: MissClasses,
}

impl CacheDoc {
    fn of(c: &CacheCounts) -> CacheDoc {
        CacheDoc {
            accesses: c.accesses,
            misses: c.misses,
            miss_rate: ratio(c.misses, c.accesses),
            read_misses: c.read_misses,
            write_misses: c.write_misses,
            writebacks: c.writebacks,
            classes: MissClasses {
                compulsory: c.classes[0],
                capacity: c.classes[1],
                conflict: c.classes[2],
            },
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TlbDoc {
    pub refs: u64,
    pub misses: u64,
    pub miss_rate: f64,
    /// False when the machine has no TLB (the counts are then zero).
    pub present: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WriteBufferDoc {
    pub writes: u64,
    pub merged: u64,
    pub full_stalls: u64,
    pub read_waits: u64,
}

/// One mode's (user or system) counts on one machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModeDoc {
    pub instructions: u64,
    pub reads: u64,
    pub writes: u64,
    pub uncached: u64,
    pub stall_cycles: StallCycles,
    /// By level name: l1i, l1d, l2, l3 ... (see [`ModeDoc::caches_in_order`]).
    pub caches: BTreeMap<String, CacheDoc>,
    pub tlb: TlbDoc,
    pub write_buffer: WriteBufferDoc,
}

impl ModeDoc {
    fn of(m: &ModeStats, cfg: &MachineConfig) -> ModeDoc {
        let mut caches = BTreeMap::new();
        caches.insert("l1i".to_string(), CacheDoc::of(&m.l1i));
        caches.insert("l1d".to_string(), CacheDoc::of(&m.l1d));
        for (i, c) in m.lower.iter().enumerate() {
            caches.insert(format!("l{}", i + 2), CacheDoc::of(c));
        }
        ModeDoc {
            instructions: m.instructions,
            reads: m.reads,
            writes: m.writes,
            uncached: m.uncached,
            stall_cycles: StallCycles::of(&m.stall),
            caches,
            tlb: TlbDoc {
                refs: m.tlb_refs,
                misses: m.tlb_misses,
                miss_rate: ratio(m.tlb_misses, m.tlb_refs),
                present: cfg.tlb.is_some(),
            },
            write_buffer: WriteBufferDoc {
                writes: m.wbuf_writes,
                merged: m.wbuf_merges,
                full_stalls: m.wbuf_full_stalls,
                read_waits: m.wbuf_read_waits,
            },
        }
    }

    /// The caches from the first level down: l1i, l1d, l2, l3 ...
    pub fn caches_in_order(&self) -> Vec<(&str, &CacheDoc)> {
        let mut v: Vec<(&str, &CacheDoc)> =
            self.caches.iter().map(|(k, c)| (k.as_str(), c)).collect();
        let rank = |name: &str| match name {
            "l1i" => (1, 0),
            "l1d" => (1, 1),
            other => (
                other
                    .strip_prefix('l')
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(u32::MAX),
                0,
            ),
        };
        v.sort_by_key(|(k, _)| rank(k));
        v
    }
}

/// Stalls of the references of one address space.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SpaceDoc {
    pub asid: u32,
    pub instructions: u64,
    pub stall_cycles: u64,
    pub mcpi: f64,
}

/// One simulated machine's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MachineDoc {
    pub name: String,
    pub config: MachineConfig,
    pub instructions: u64,
    pub system_fraction: f64,
    pub mcpi: ModeMcpi,
    pub own_mcpi: OwnMcpi,
    pub user: ModeDoc,
    pub system: ModeDoc,
    #[serde(default)]
    pub by_address_space: Vec<SpaceDoc>,
}

/// One cache of a machine with its user and system halves side by side, and their misses by
/// cause (compulsory, capacity, conflict) added up: what the text and the HTML tables both show.
pub struct CacheBoth<'a> {
    pub name: &'a str,
    pub user: &'a CacheDoc,
    pub system: CacheDoc,
    pub accesses: u64,
    pub classes: [u64; 3],
}

impl CacheBoth<'_> {
    /// Each cause's share of the classified misses; `None` when no miss was classified.
    pub fn class_shares(&self) -> Option<[f64; 3]> {
        let all: u64 = self.classes.iter().sum();
        (all > 0).then(|| self.classes.map(|c| c as f64 / all as f64))
    }
}

impl MachineDoc {
    /// The caches from the first level down with user and system together, those that saw no
    /// access left out.
    pub fn caches_both(&self) -> Vec<CacheBoth<'_>> {
        self.user
            .caches_in_order()
            .into_iter()
            .filter_map(|(name, u)| {
                let s = self.system.caches.get(name).cloned().unwrap_or_default();
                let accesses = u.accesses + s.accesses;
                (accesses > 0).then(|| CacheBoth {
                    name,
                    user: u,
                    classes: [
                        u.classes.compulsory + s.classes.compulsory,
                        u.classes.capacity + s.classes.capacity,
                        u.classes.conflict + s.classes.conflict,
                    ],
                    system: s,
                    accesses,
                })
            })
            .collect()
    }
}

impl MachineDoc {
    pub fn new(cfg: &MachineConfig, s: &Stats) -> MachineDoc {
        let [u, k] = &s.mode;
        let all = u.instructions + k.instructions;
        let mut total = u.stall;
        for (t, x) in total.iter_mut().zip(k.stall) {
            *t += x;
        }
        MachineDoc {
            name: cfg.name.clone(),
            config: cfg.clone(),
            instructions: all,
            system_fraction: ratio(k.instructions, all),
            mcpi: ModeMcpi {
                user: Mcpi::of(&u.stall, all),
                system: Mcpi::of(&k.stall, all),
                total: Mcpi::of(&total, all),
            },
            own_mcpi: OwnMcpi {
                user: Mcpi::of(&u.stall, u.instructions),
                system: Mcpi::of(&k.stall, k.instructions),
            },
            user: ModeDoc::of(u, cfg),
            system: ModeDoc::of(k, cfg),
            by_address_space: s
                .by_asid
                .iter()
                .map(|(a, v)| SpaceDoc {
                    asid: *a,
                    instructions: v.instructions,
                    stall_cycles: v.stall,
                    mcpi: ratio(v.stall, v.instructions),
                })
                .collect(),
        }
    }
}

/// References of the idle loop left out of the simulation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IdleDropped {
    pub instructions: u64,
    pub reads: u64,
    pub writes: u64,
}

/// MCPI per kernel category (from the kernel's symbols), for every simulated machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AttributionDoc {
    pub symbols: String,
    pub idle_excluded: bool,
    pub idle_dropped: IdleDropped,
    pub machines: Vec<CategoryTable>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CategoryTable {
    pub name: String,
    pub non_idle_instructions: u64,
    pub categories: Vec<CategoryRow>,
}

/// One category's references and stalls. `mcpi` divides its stalls by every non-idle instruction
/// (the rows add up to the machine's MCPI less idle); `own_mcpi` by the category's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CategoryRow {
    pub name: String,
    pub instructions: u64,
    pub reads: u64,
    pub writes: u64,
    pub instruction_share: f64,
    pub stall_cycles: StallCycles,
    pub mcpi: Mcpi,
    pub own_mcpi: f64,
}

/// The verdict on one assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum AssertionVerdict {
    #[serde(rename = "holds")]
    Holds,
    #[serde(rename = "does not hold")]
    DoesNotHold,
    #[serde(rename = "not measurable")]
    NotMeasurable,
}

impl AssertionVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            AssertionVerdict::Holds => "holds",
            AssertionVerdict::DoesNotHold => "does not hold",
            AssertionVerdict::NotMeasurable => "not measurable",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AssertionDoc {
    pub number: u32,
    pub assertion: String,
    pub implication: String,
    pub verdict: AssertionVerdict,
    /// The figures behind the verdict, in words; for "not measurable", the reason.
    pub detail: String,
    /// The figures behind the verdict by name; `None` where a figure is undefined (a spread over a
    /// zero MCPI).
    pub figures: BTreeMap<String, Option<f64>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AssertionsDoc {
    pub machine: String,
    pub significant: f64,
    pub assertions: Vec<AssertionDoc>,
    pub idle_excluded: bool,
    /// The variants of the machine simulated in the same pass.
    pub variants: Vec<String>,
}
