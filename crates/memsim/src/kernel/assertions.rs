//! The seven assertions of Chen and Bershad's Table 1-1, each judged on one trace.
//!
//! The base machine is the first one simulated (the `ds5000-200` preset unless another is
//! named). Around it the same pass runs the variants the assertions need:
//! - the base fed only kernel references and only user references (separate system and user
//!   caches and TLBs): collisions between the two are the difference to the base (assertion 3);
//! - the kernel-only machine with every cache's associativity doubled (assertion 4, the paper's
//!   2-way experiment on its direct-mapped caches);
//! - the base placing user pages by its own policy instead of the trace's physical addresses
//!   (the kernel's own memory stays where the trace has it, as the paper's kernel ran unmapped),
//!   under three policies: deterministic (colour-preserving hash, the paper's default), random,
//!   and page colouring (assertion 7); a trace with physical addresses adds the guest's own
//!   placement as a fourth.
//!
//! A verdict is "holds", "does not hold" or "not measurable" (with the reason). Where the paper
//! says "significant" or "large", a figure must reach [`SIGNIFICANT`] of the base MCPI (or of the
//! misses, for associativity).

use super::category::Category;
use super::mcpi::{Job, JobResult, Stream};
use crate::memsim::document::{AssertionDoc, AssertionVerdict, AssertionsDoc};
use crate::memsim::machine::{MachineConfig, ModeStats, Stats};
use crate::memsim::mapping::Mapping;
use crate::units;
use std::collections::BTreeMap;

/// The figures behind one verdict, by name.
type Figures = BTreeMap<String, Option<f64>>;

/// Builds [`Figures`] from `name => value` pairs (counts and rates alike).
macro_rules! figures {
    ($($name:literal => $value:expr),* $(,)?) => {{
        let mut f = Figures::new();
        $( f.insert($name.to_string(), Some($value as f64)); )*
        f
    }};
}

/// The share that counts as significant.
pub const SIGNIFICANT: f64 = 0.10;

const ICACHE: usize = 0;
const DCACHE: usize = 1;
const WBUF: usize = 2;
const TLB: usize = 3;

pub const TEXTS: [(&str, &str); 7] = [
    (
        "The operating system has less instruction and data locality than user programs.",
        "system code gains less from faster processors than user code",
    ),
    (
        "System execution is more dependent on instruction cache behavior than is user execution.",
        "a cache balanced for user programs may not be balanced for the system",
    ),
    (
        "Collisions between user and system references lead to significant performance degradation.",
        "a split user/system cache could help",
    ),
    (
        "Self-interference is a problem in system instruction reference streams.",
        "more associativity or text placement could help",
    ),
    (
        "System block memory operations are responsible for a large percentage of memory system reference costs.",
        "programs that make the system move many blocks run slower than expected",
    ),
    (
        "Write buffers are less effective for system (as opposed to user) reference streams.",
        "a write buffer adequate for user code may not be for system code",
    ),
    (
        "Virtual page mapping strategies can have significant impact on cache performance.",
        "systems should let the page mapping be chosen and avoid pathological defaults",
    ),
];

/// Where each variant sits in the job list.
#[derive(Debug, Clone)]
pub struct Plan {
    pub base: usize,
    pub kernel_only: usize,
    pub user_only: usize,
    pub kernel_only_assoc: usize,
    /// (policy label, job index)
    pub mappings: Vec<(&'static str, usize)>,
    pub physical_caches: bool,
    pub assoc_changed: bool,
}

fn doubled(c: &mut crate::memsim::cache::CacheConfig) -> bool {
    if c.assoc == 0 {
        return false;
    }
    let lines = c.size / u64::from(c.line);
    c.assoc = if u64::from(c.assoc) * 2 >= lines {
        0
    } else {
        c.assoc * 2
    };
    true
}

/// Page colours of the machine: pages per way of its largest physically indexed cache.
pub fn colours(cfg: &MachineConfig) -> u64 {
    cfg.l1i
        .iter()
        .chain([&cfg.l1d])
        .chain(&cfg.lower)
        .filter(|c| c.physical)
        .map(|c| {
            let ways = if c.assoc == 0 {
                c.size / u64::from(c.line)
            } else {
                u64::from(c.assoc)
            };
            (c.size / ways / cfg.page_size).max(1)
        })
        .max()
        .unwrap_or(1)
}

/// Appends the variants of `jobs[base]` to `jobs` and says where they are.
pub fn plan(jobs: &mut Vec<Job>, base: usize) -> Plan {
    let cfg = jobs[base].cfg.clone();
    let push = |jobs: &mut Vec<Job>, cfg: MachineConfig, stream, own_mapping| {
        jobs.push(Job {
            cfg,
            stream,
            own_mapping,
            categories: false,
        });
        jobs.len() - 1
    };
    let named = |suffix: &str| {
        let mut c = cfg.clone();
        c.name = format!("{}/{suffix}", cfg.name);
        c
    };
    let kernel_only = push(jobs, named("system-only"), Stream::KernelOnly, false);
    let user_only = push(jobs, named("user-only"), Stream::UserOnly, false);
    let mut assoc = named("system-only,assoc-x2");
    let mut assoc_changed = false;
    if let Some(c) = assoc.l1i.as_mut() {
        assoc_changed |= doubled(c);
    }
    assoc_changed |= doubled(&mut assoc.l1d);
    for c in &mut assoc.lower {
        assoc_changed |= doubled(c);
    }
    let kernel_only_assoc = push(jobs, assoc, Stream::KernelOnly, false);
    let n = colours(&cfg);
    let mut mappings = Vec::new();
    for (label, m) in [
        ("deterministic", Mapping::Hash { colours: n }),
        ("random", Mapping::Random { seed: 1 }),
        ("colouring", Mapping::Colour { colours: n }),
    ] {
        let mut c = named(&format!("mapping={label}"));
        c.mapping = m;
        mappings.push((label, push(jobs, c, Stream::All, true)));
    }
    let physical_caches = cfg
        .l1i
        .iter()
        .chain([&cfg.l1d])
        .chain(&cfg.lower)
        .any(|c| c.physical);
    Plan {
        base,
        kernel_only,
        user_only,
        kernel_only_assoc,
        mappings,
        physical_caches,
        assoc_changed,
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn miss_rate(m: &ModeStats, instr: bool) -> f64 {
    let c = if instr { &m.l1i } else { &m.l1d };
    ratio(c.misses, c.accesses)
}

fn instructions(s: &Stats) -> u64 {
    s.mode[0].instructions + s.mode[1].instructions
}

fn total_stall(s: &Stats) -> u64 {
    s.mode.iter().flat_map(|m| m.stall).sum()
}

fn mcpi(s: &Stats) -> f64 {
    ratio(total_stall(s), instructions(s))
}

enum Verdict {
    Holds(String),
    DoesNot(String),
    Unmeasurable(String),
}

fn judge(holds: bool, text: String) -> Verdict {
    if holds {
        Verdict::Holds(text)
    } else {
        Verdict::DoesNot(text)
    }
}

/// What the evaluation knows besides the simulation results.
pub struct Context<'a> {
    pub machine: &'a str,
    pub results: &'a [JobResult],
    pub symbols: bool,
    pub physical_trace: bool,
    pub write_buffer: bool,
}

fn needs_both(base: &Stats) -> Option<Verdict> {
    let [u, k] = &base.mode;
    if k.instructions == 0 {
        return Some(Verdict::Unmeasurable(
            "the trace has no kernel instructions (a user-only capture)".into(),
        ));
    }
    if u.instructions == 0 {
        return Some(Verdict::Unmeasurable(
            "the trace has no user instructions".into(),
        ));
    }
    None
}

fn locality(base: &Stats) -> (Verdict, Figures) {
    let [u, k] = &base.mode;
    let f = figures! {
        "system_icache_miss_rate" => miss_rate(k, true), "user_icache_miss_rate" => miss_rate(u, true),
        "system_dcache_miss_rate" => miss_rate(k, false), "user_dcache_miss_rate" => miss_rate(u, false),
        "system_share_of_instructions" => ratio(k.l1i.accesses, k.l1i.accesses + u.l1i.accesses),
        "system_share_of_icache_misses" => ratio(k.l1i.misses, k.l1i.misses + u.l1i.misses),
        "system_share_of_data_refs" => ratio(k.l1d.accesses, k.l1d.accesses + u.l1d.accesses),
        "system_share_of_dcache_misses" => ratio(k.l1d.misses, k.l1d.misses + u.l1d.misses),
    };
    if let Some(v) = needs_both(base) {
        return (v, f);
    }
    let i = miss_rate(k, true) > miss_rate(u, true);
    let d = miss_rate(k, false) > miss_rate(u, false);
    let text = format!(
        "miss rate system vs user: instructions {} vs {}, data {} vs {}{}",
        units::percent(miss_rate(k, true)),
        units::percent(miss_rate(u, true)),
        units::percent(miss_rate(k, false)),
        units::percent(miss_rate(u, false)),
        match (i, d) {
            (true, false) => " (worse for instructions only)",
            (false, true) => " (worse for data only)",
            _ => "",
        }
    );
    (judge(i && d, text), f)
}

fn icache_dependence(base: &Stats) -> (Verdict, Figures) {
    let [u, k] = &base.mode;
    let share = |m: &ModeStats| ratio(m.stall[ICACHE], m.stall[ICACHE] + m.stall[DCACHE]);
    let f = figures! {
        "system_icache_own_mcpi" => ratio(k.stall[ICACHE], k.instructions),
        "system_dcache_own_mcpi" => ratio(k.stall[DCACHE], k.instructions),
        "user_icache_own_mcpi" => ratio(u.stall[ICACHE], u.instructions),
        "user_dcache_own_mcpi" => ratio(u.stall[DCACHE], u.instructions),
        "system_icache_share_of_cache_stall" => share(k),
        "user_icache_share_of_cache_stall" => share(u),
    };
    if let Some(v) = needs_both(base) {
        return (v, f);
    }
    let text = format!(
        "instruction cache's share of cache stalls: system {}, user {} (own MCPI i/d: system {:.3}/{:.3}, user {:.3}/{:.3})",
        units::percent(share(k)),
        units::percent(share(u)),
        ratio(k.stall[ICACHE], k.instructions),
        ratio(k.stall[DCACHE], k.instructions),
        ratio(u.stall[ICACHE], u.instructions),
        ratio(u.stall[DCACHE], u.instructions)
    );
    (judge(share(k) > share(u), text), f)
}

fn competition(base: &Stats, kernel_only: &Stats, user_only: &Stats) -> (Verdict, Figures) {
    let all = instructions(base);
    let extra = |c: usize| -> i64 {
        let together = (base.mode[0].stall[c] + base.mode[1].stall[c]) as i64;
        let apart = (kernel_only.mode[1].stall[c] + user_only.mode[0].stall[c]) as i64;
        together - apart
    };
    let per = |x: i64| if all == 0 { 0.0 } else { x as f64 / all as f64 };
    let (i, d, t) = (extra(ICACHE), extra(DCACHE), extra(TLB));
    let share = if mcpi(base) > 0.0 {
        per(i + d) / mcpi(base)
    } else {
        0.0
    };
    let f = figures! {
        "competition_mcpi_icache" => per(i), "competition_mcpi_dcache" => per(d),
        "competition_mcpi_cache" => per(i + d), "competition_mcpi_tlb" => per(t),
        "base_mcpi" => mcpi(base), "share_of_base_mcpi" => share,
    };
    if let Some(v) = needs_both(base) {
        return (v, f);
    }
    let text = format!(
        "user/system collisions add {:.4} MCPI to the caches (instructions {:.4}, data {:.4}), {} of the base MCPI {:.4}; TLB {:.4}",
        per(i + d),
        per(i),
        per(d),
        units::percent(share),
        mcpi(base),
        per(t)
    );
    (judge(share >= SIGNIFICANT, text), f)
}

fn self_interference(dm: &Stats, assoc: &Stats, changed: bool) -> (Verdict, Figures) {
    let (a, b) = (&dm.mode[1], &assoc.mode[1]);
    let gone = |x: u64, y: u64| {
        if x == 0 {
            0.0
        } else {
            (x as f64 - y as f64) / x as f64
        }
    };
    let f = figures! {
        "system_icache_misses" => a.l1i.misses, "system_icache_misses_assoc_x2" => b.l1i.misses,
        "icache_misses_removed" => gone(a.l1i.misses, b.l1i.misses),
        "system_dcache_misses" => a.l1d.misses, "system_dcache_misses_assoc_x2" => b.l1d.misses,
        "dcache_misses_removed" => gone(a.l1d.misses, b.l1d.misses),
        "system_icache_conflict_share" => ratio(a.l1i.classes[2], a.l1i.misses),
    };
    if a.instructions == 0 {
        return (
            Verdict::Unmeasurable(
                "the trace has no kernel instructions (a user-only capture)".into(),
            ),
            f,
        );
    }
    if !changed {
        return (
            Verdict::Unmeasurable("the base machine's caches are fully associative".into()),
            f,
        );
    }
    if a.l1i.misses == 0 {
        return (
            Verdict::Unmeasurable("the system instruction stream never misses".into()),
            f,
        );
    }
    let text = format!(
        "doubling associativity (system references alone) removes {} of system instruction misses ({} -> {}) and {} of data misses",
        units::percent(gone(a.l1i.misses, b.l1i.misses)),
        a.l1i.misses,
        b.l1i.misses,
        units::percent(gone(a.l1d.misses, b.l1d.misses))
    );
    (
        judge(gone(a.l1i.misses, b.l1i.misses) >= SIGNIFICANT, text),
        f,
    )
}

fn block_ops(
    base: &Stats,
    by_tag: &[crate::memsim::kernel::mcpi::TagStats],
    symbols: bool,
) -> (Verdict, Figures) {
    let block = by_tag
        .get(usize::from(Category::Block.tag()))
        .copied()
        .unwrap_or_default();
    let stall: u64 = block.stall.iter().sum();
    let kernel_refs: u64 = by_tag
        .get(1..)
        .unwrap_or_default()
        .iter()
        .map(|t| t.instructions + t.reads + t.writes)
        .sum();
    let share = ratio(stall, total_stall(base));
    let f = figures! {
        "block_mcpi" => ratio(stall, instructions(base)), "base_mcpi" => mcpi(base),
        "share_of_base_mcpi" => share,
        "block_share_of_kernel_refs" => ratio(block.instructions + block.reads + block.writes, kernel_refs),
    };
    if !symbols {
        return (
            Verdict::Unmeasurable(
                "no kernel symbols (give --symbols FILE or put TRACE.kallsyms beside the trace)"
                    .into(),
            ),
            f,
        );
    }
    if base.mode[1].instructions == 0 {
        return (
            Verdict::Unmeasurable(
                "the trace has no kernel instructions (a user-only capture)".into(),
            ),
            f,
        );
    }
    let text = format!(
        "block copy and clear cost {:.4} MCPI, {} of the base MCPI {:.4} (its own stalls, not the later misses it causes)",
        ratio(stall, instructions(base)),
        units::percent(share),
        mcpi(base)
    );
    (judge(share >= SIGNIFICANT, text), f)
}

fn write_buffer(base: &Stats, present: bool) -> (Verdict, Figures) {
    let [u, k] = &base.mode;
    let (ks, us) = (
        ratio(k.stall[WBUF], k.instructions),
        ratio(u.stall[WBUF], u.instructions),
    );
    let f = figures! {
        "system_wbuffer_stall_per_instruction" => ks, "user_wbuffer_stall_per_instruction" => us,
        "system_full_stalls" => k.wbuf_full_stalls, "user_full_stalls" => u.wbuf_full_stalls,
    };
    if !present {
        return (
            Verdict::Unmeasurable("the base machine has no write buffer".into()),
            f,
        );
    }
    if let Some(v) = needs_both(base) {
        return (v, f);
    }
    let text =
        format!("write-buffer stall cycles per own instruction: system {ks:.4}, user {us:.4}");
    (judge(ks > us, text), f)
}

fn mapping(ctx: &Context, plan: &Plan) -> (Verdict, Figures) {
    let mut figures = Figures::new();
    let mut values = Vec::new();
    for (label, i) in &plan.mappings {
        let m = mcpi(&ctx.results[*i].stats);
        figures.insert(format!("mcpi_{label}"), Some(m));
        values.push((label.to_string(), m));
    }
    if ctx.physical_trace {
        let m = mcpi(&ctx.results[plan.base].stats);
        figures.insert("mcpi_traced_physical".into(), Some(m));
        values.push(("the trace's physical addresses".into(), m));
    }
    let lo = values.iter().map(|v| v.1).fold(f64::INFINITY, f64::min);
    let hi = values.iter().map(|v| v.1).fold(0.0, f64::max);
    let spread = if lo > 0.0 {
        (hi - lo) / lo
    } else if hi > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    figures.insert("spread".into(), spread.is_finite().then_some(spread));
    let f = figures;
    if !plan.physical_caches {
        return (
            Verdict::Unmeasurable(
                "the base machine's caches are virtually indexed, so mapping cannot matter".into(),
            ),
            f,
        );
    }
    if instructions(&ctx.results[plan.base].stats) == 0 {
        return (
            Verdict::Unmeasurable("the trace has no instructions".into()),
            f,
        );
    }
    let list: Vec<String> = values.iter().map(|(l, m)| format!("{l} {m:.4}")).collect();
    let text = format!(
        "MCPI by page mapping: {}; the worst is {} above the best",
        list.join(", "),
        if spread.is_finite() {
            units::percent(spread)
        } else {
            "infinitely".into()
        }
    );
    (judge(spread >= SIGNIFICANT, text), f)
}

/// The `assertions` document. `idle_excluded` and `variants` are the caller's to fill.
pub fn evaluate(ctx: &Context, plan: &Plan) -> AssertionsDoc {
    let r = ctx.results;
    let base = &r[plan.base].stats;
    let verdicts = [
        locality(base),
        icache_dependence(base),
        competition(base, &r[plan.kernel_only].stats, &r[plan.user_only].stats),
        self_interference(
            &r[plan.kernel_only].stats,
            &r[plan.kernel_only_assoc].stats,
            plan.assoc_changed,
        ),
        block_ops(base, &r[plan.base].by_tag, ctx.symbols),
        write_buffer(base, ctx.write_buffer),
        mapping(ctx, plan),
    ];
    let assertions = verdicts
        .into_iter()
        .zip(TEXTS)
        .zip(1..)
        .map(|(((v, figures), (text, implication)), number)| {
            let (verdict, detail) = match v {
                Verdict::Holds(d) => (AssertionVerdict::Holds, d),
                Verdict::DoesNot(d) => (AssertionVerdict::DoesNotHold, d),
                Verdict::Unmeasurable(d) => (AssertionVerdict::NotMeasurable, d),
            };
            AssertionDoc {
                number,
                assertion: text.to_string(),
                implication: implication.to_string(),
                verdict,
                detail,
                figures,
            }
        })
        .collect();
    AssertionsDoc {
        machine: ctx.machine.to_string(),
        significant: SIGNIFICANT,
        assertions,
        idle_excluded: false,
        variants: Vec::new(),
    }
}

/// The assertions table.
pub fn render(doc: &AssertionsDoc) -> String {
    let mut t = format!(
        "\nThe paper's assertions on {} (Chen and Bershad 1993, Table 1-1; significant = at least {:.0}%)\n",
        doc.machine,
        100.0 * doc.significant
    );
    for a in &doc.assertions {
        t.push_str(&format!(
            "{}. {}\n   {}: {}\n",
            a.number,
            a.assertion,
            a.verdict.as_str().to_uppercase(),
            a.detail
        ));
    }
    t
}

#[cfg(test)]
#[path = "assertions_tests.rs"]
mod tests;
