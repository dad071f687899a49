//! Simulation with stall cycles charged to kernel categories, and the per-category MCPI table.
//!
//! The machine's hot path stays as it is: between runs of references with one tag the loop reads
//! the machine's stall counters ([`Machine::stall_snapshot`]) and charges the difference to the
//! tag that just ended. A stall belongs to the reference that waits for it (a write buffer that
//! is full when a copy routine stores is that routine's stall, whoever filled it).
//!
//! The same loop also runs machine variants that the assertions need: a machine fed only the
//! kernel's or only the user's references (separate caches), and one that ignores the trace's
//! physical addresses so its own page-mapping policy decides.

use super::category::{Category, MAX_TAG};
use crate::memsim::document::{
    ratio, AttributionDoc, CategoryRow, CategoryTable, Mcpi, StallCycles,
};
use crate::memsim::interval::{IntervalResult, Intervals, Observed};
use crate::memsim::machine::{Machine, MachineConfig, Stats, COMPONENTS};
use crate::memsim::mapping::Mapper;
use crate::memsim::sweep::{self, Extras, Simulator, SweepResult};
use crate::memsim::trace::packed::Refs;
use crate::memsim::trace::{Kind, Mode, Ref, RefSource};
use anyhow::Result;

/// Which references a machine sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    All,
    KernelOnly,
    UserOnly,
}

/// One machine of an attributed pass.
#[derive(Debug, Clone)]
pub struct Job {
    pub cfg: MachineConfig,
    pub stream: Stream,
    /// Place user pages by the machine's mapping policy instead of the trace's physical
    /// addresses (see [`Runner::place`]).
    pub own_mapping: bool,
    /// Charge stalls to categories.
    pub categories: bool,
}

impl Job {
    pub fn plain(cfg: MachineConfig, categories: bool) -> Job {
        Job {
            cfg,
            stream: Stream::All,
            own_mapping: false,
            categories,
        }
    }
}

/// Counts of one tag.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TagStats {
    pub instructions: u64,
    pub reads: u64,
    pub writes: u64,
    pub stall: [u64; 5],
}

#[derive(Debug, Clone, PartialEq)]
pub struct JobResult {
    pub stats: Stats,
    /// Indexed by tag (0 user); empty without categories.
    pub by_tag: Vec<TagStats>,
}

/// User addresses lie below this on x86-64 (and the kernel's own memory above it).
const USER_TOP: u64 = 1 << 47;
/// Pages placed by a policy go this high, clear of every frame a traced guest has, so they never
/// alias its kernel's memory; the cache index bits are untouched.
const POLICY_BASE: u64 = 1 << 44;

struct Runner {
    machine: Machine,
    mapper: Option<Mapper>,
    job: Job,
    by_tag: Vec<TagStats>,
    tag: u8,
    last: [[u64; 5]; 2],
}

impl Runner {
    fn new(job: Job) -> Runner {
        Runner {
            machine: Machine::new(&job.cfg),
            mapper: job
                .own_mapping
                .then(|| Mapper::new(&job.cfg.mapping, job.cfg.page_size)),
            by_tag: if job.categories {
                vec![TagStats::default(); MAX_TAG + 1]
            } else {
                Vec::new()
            },
            job,
            tag: 0,
            last: [[0; 5]; 2],
        }
    }

    fn settle(&mut self) {
        let now = self.machine.stall_snapshot();
        let t = &mut self.by_tag[usize::from(self.tag)];
        for (n, l) in now.iter().zip(&self.last) {
            for ((s, a), b) in t.stall.iter_mut().zip(n).zip(l) {
                *s += a - b;
            }
        }
        self.last = now;
    }

    /// The physical address a machine with its own mapping uses, if not the trace's. As in the
    /// paper, the policy places user pages (also when the kernel touches them, as a copy to user
    /// does, so both see one frame) and the kernel's own memory stays where the trace puts it.
    /// Without physical addresses in the trace the machine maps everything itself.
    #[inline]
    fn place(&mut self, r: &Ref) -> Option<Option<u64>> {
        let mapper = self.mapper.as_mut()?;
        r.paddr?;
        if r.vaddr >= USER_TOP {
            return None;
        }
        Some(Some(mapper.translate(r.asid, r.vaddr) | POLICY_BASE))
    }
}

impl Simulator for Runner {
    type Output = JobResult;

    fn run(&mut self, batch: Refs<'_>) {
        for r in batch.iter() {
            let r = &r;
            match (self.job.stream, r.mode) {
                (Stream::KernelOnly, Mode::User) | (Stream::UserOnly, Mode::Kernel) => continue,
                _ => {}
            }
            if self.job.categories {
                if r.tag != self.tag {
                    self.settle();
                    self.tag = r.tag.min(MAX_TAG as u8);
                }
                let t = &mut self.by_tag[usize::from(self.tag)];
                match r.kind {
                    Kind::Instr => t.instructions += 1,
                    Kind::Read => t.reads += 1,
                    Kind::Write => t.writes += 1,
                }
            }
            match self.place(r) {
                Some(p) => self.machine.access(&Ref { paddr: p, ..*r }),
                None => self.machine.access(r),
            }
        }
    }

    fn finish(mut self) -> JobResult {
        if self.job.categories {
            self.settle();
        }
        JobResult {
            stats: self.machine.stats(),
            by_tag: self.by_tag,
        }
    }
}

impl Observed for Runner {
    fn snapshot(&mut self) -> Stats {
        self.machine.stats()
    }
    fn name(&self) -> String {
        self.job.cfg.name.clone()
    }
}

/// Runs every job over one read of the source, on up to `threads` threads. The sweep's result
/// holds the stats of all jobs in order.
pub fn simulate(
    src: &mut dyn RefSource,
    jobs: &[Job],
    threads: usize,
) -> Result<(SweepResult, Vec<JobResult>)> {
    simulate_with(src, jobs, &Extras::default(), 0, threads)
}

/// `simulate` with the curves of `extras`, and its intervals for the first `observed` jobs.
pub fn simulate_with(
    src: &mut dyn RefSource,
    jobs: &[Job],
    extras: &Extras,
    observed: usize,
    threads: usize,
) -> Result<(SweepResult, Vec<JobResult>)> {
    let start = std::time::Instant::now();
    let runners = jobs
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, j)| {
            Intervals::new(Runner::new(j), extras.interval.filter(|_| i < observed))
                .at_most(extras.max_intervals)
        })
        .collect();
    let (outputs, curves, refs) = sweep::drive_beside(src, runners, &extras.curves, threads)?;
    let (results, intervals): (Vec<JobResult>, Vec<Option<IntervalResult>>) =
        outputs.into_iter().unzip();
    let sweep = SweepResult {
        stats: results.iter().map(|r| r.stats.clone()).collect(),
        refs,
        seconds: start.elapsed().as_secs_f64(),
        meta: src.meta(),
        curves,
        intervals: intervals.into_iter().flatten().collect(),
    };
    Ok((sweep, results))
}

/// The per-category table of one machine. MCPI divides a category's stall cycles by every
/// non-idle instruction (so the rows add up to the system MCPI of the machine table, less idle);
/// `own_mcpi` divides by the category's own instructions.
pub fn categories_doc(name: &str, by_tag: &[TagStats]) -> CategoryTable {
    let idle = usize::from(Category::Idle.tag());
    let all: u64 = by_tag.iter().map(|t| t.instructions).sum();
    let non_idle = all - by_tag.get(idle).map_or(0, |t| t.instructions);
    let categories = std::iter::once(("user", 0usize))
        .chain(
            Category::ALL
                .iter()
                .map(|c| (c.name(), usize::from(c.tag()))),
        )
        .map(|(cname, i)| {
            let t = by_tag.get(i).copied().unwrap_or_default();
            CategoryRow {
                name: cname.to_string(),
                instructions: t.instructions,
                reads: t.reads,
                writes: t.writes,
                instruction_share: ratio(t.instructions, non_idle),
                stall_cycles: StallCycles::of(&t.stall),
                mcpi: Mcpi::of(&t.stall, non_idle),
                own_mcpi: ratio(t.stall.iter().sum(), t.instructions),
            }
        })
        .collect();
    CategoryTable {
        name: name.to_string(),
        non_idle_instructions: non_idle,
        categories,
    }
}

/// The per-category table of every machine (the `attribution` part of the memsim document).
pub fn render(doc: &AttributionDoc) -> String {
    let mut t = String::new();
    t.push_str(&format!(
        "\nkernel categories (symbols: {}; idle loop {})\n",
        doc.symbols,
        if doc.idle_excluded {
            format!(
                "excluded: {} instructions, {} data references dropped",
                doc.idle_dropped.instructions,
                doc.idle_dropped.reads + doc.idle_dropped.writes
            )
        } else {
            "included".to_string()
        }
    ));
    for m in &doc.machines {
        t.push_str(&format!(
            "{}: MCPI per category over {} non-idle instructions\n",
            m.name, m.non_idle_instructions
        ));
        t.push_str(&format!("  {:<12} {:>7}", "category", "instr%"));
        for c in COMPONENTS.iter().chain(["total"].iter()) {
            t.push_str(&format!(" {:>8}", c));
        }
        t.push_str(&format!(" {:>9}\n", "own MCPI"));
        for c in &m.categories {
            if c.instructions + c.reads + c.writes == 0 {
                continue;
            }
            t.push_str(&format!(
                "  {:<12} {:>6.1}%",
                c.name,
                100.0 * c.instruction_share
            ));
            for (_, v) in c.mcpi.by_name() {
                t.push_str(&format!(" {:>8.4}", v));
            }
            t.push_str(&format!(" {:>9.3}\n", c.own_mcpi));
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsim::config::preset;
    use crate::memsim::document::IdleDropped;
    use crate::memsim::sweep;
    use crate::memsim::trace::synth::Synth;

    /// Tags the synthetic trace's kernel references by address so categories are exercised.
    struct Tagged(Synth);
    impl RefSource for Tagged {
        fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<usize> {
            let start = out.len();
            let n = self.0.next_batch(out, max)?;
            for r in &mut out[start..] {
                if r.mode == Mode::Kernel {
                    r.tag = 1 + (r.vaddr >> 12 & 3) as u8;
                }
            }
            Ok(n)
        }
        fn meta(&self) -> crate::memsim::trace::TraceMeta {
            self.0.meta()
        }
    }

    #[test]
    fn categories_split_the_machines_stalls_exactly_and_match_the_plain_sweep() {
        let cfgs = [preset("ds5000-200").unwrap(), preset("pentium").unwrap()];
        let jobs: Vec<Job> = cfgs.iter().map(|c| Job::plain(c.clone(), true)).collect();
        for threads in [1, 2] {
            let (sweep_r, results) =
                simulate(&mut Tagged(Synth::new(200_000, 4)), &jobs, threads).unwrap();
            let plain = sweep::simulate(&mut Synth::new(200_000, 4), &cfgs, 1).unwrap();
            assert_eq!(sweep_r.stats, plain.stats);
            assert_eq!(sweep_r.refs, 200_000);
            for r in &results {
                let [u, k] = &r.stats.mode;
                for c in 0..5 {
                    let user = r.by_tag[0].stall[c];
                    let kernel: u64 = r.by_tag[1..].iter().map(|t| t.stall[c]).sum();
                    assert_eq!(user, u.stall[c], "user {c}");
                    assert_eq!(kernel, k.stall[c], "kernel {c}");
                }
                let instr: u64 = r.by_tag.iter().map(|t| t.instructions).sum();
                assert_eq!(instr, u.instructions + k.instructions);
                assert!(
                    r.by_tag[1..]
                        .iter()
                        .filter(|t| t.stall.iter().sum::<u64>() > 0)
                        .count()
                        >= 2
                );
            }
        }
    }

    #[test]
    fn filtered_streams_see_only_their_mode_and_own_mapping_ignores_paddr() {
        let cfg = preset("ds5000-200").unwrap();
        let mk = |stream, own_mapping| Job {
            cfg: cfg.clone(),
            stream,
            own_mapping,
            categories: false,
        };
        let jobs = [mk(Stream::KernelOnly, false), mk(Stream::UserOnly, false)];
        let (_, r) = simulate(&mut Synth::new(100_000, 2), &jobs, 1).unwrap();
        assert_eq!(r[0].stats.mode[0].instructions, 0);
        assert!(r[0].stats.mode[1].instructions > 0);
        assert_eq!(
            r[1].stats.mode[1].instructions + r[1].stats.mode[1].reads,
            0
        );
        // Physical addresses that put every page on the same cache sets (distinct frames, one
        // colour): a machine with its own mapping ignores them for user pages.
        struct Phys(Synth);
        impl RefSource for Phys {
            fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<usize> {
                let s = out.len();
                let n = self.0.next_batch(out, max)?;
                for r in &mut out[s..] {
                    r.paddr = Some((r.vaddr >> 12) << 32 | (r.vaddr & 0xfff));
                }
                Ok(n)
            }
            fn meta(&self) -> crate::memsim::trace::TraceMeta {
                self.0.meta()
            }
        }
        let (_, own) = simulate(
            &mut Phys(Synth::new(100_000, 2)),
            &[mk(Stream::All, true)],
            1,
        )
        .unwrap();
        let (_, traced) = simulate(
            &mut Phys(Synth::new(100_000, 2)),
            &[mk(Stream::All, false)],
            1,
        )
        .unwrap();
        let misses = |r: &JobResult| r.stats.mode[0].l1d.misses;
        assert!(
            misses(&own[0]) < misses(&traced[0]),
            "aliasing gone: {} vs {}",
            misses(&own[0]),
            misses(&traced[0])
        );
    }

    #[test]
    fn own_mapping_places_user_pages_for_both_modes_and_keeps_kernel_memory() {
        use crate::memsim::kernel::testutil::VecSource;
        let mut cfg = preset("x86-modern").unwrap();
        cfg.tlb = None;
        let job = Job {
            cfg,
            stream: Stream::All,
            own_mapping: true,
            categories: false,
        };
        let with = |kind, mode, v: u64, p: u64| {
            let mut r = Ref::new(kind, mode, 5, 8, v);
            r.paddr = Some(p);
            r
        };
        let refs = vec![
            with(Kind::Instr, Mode::User, 0x40_0000, 0x9000),
            // The user writes a buffer; the kernel reads it through the same virtual address
            // but a physical address the trace got wrong: the policy gives both one frame.
            with(Kind::Write, Mode::User, 0x60_0000, 0x1_0000),
            with(Kind::Instr, Mode::Kernel, 0xffff_ffff_8100_0000, 0x100_0000),
            with(Kind::Read, Mode::Kernel, 0x60_0000, 0x2_0000),
            // Two kernel addresses of one physical line stay one line.
            with(Kind::Read, Mode::Kernel, 0xffff_8880_0000_4000, 0x4000),
            with(Kind::Read, Mode::Kernel, 0xffff_c900_0000_4000, 0x4000),
        ];
        let (_, r) = simulate(&mut VecSource::new(refs), &[job], 1).unwrap();
        let k = &r[0].stats.mode[1];
        assert_eq!(k.l1d.accesses, 3);
        assert_eq!(k.l1d.misses, 1, "only the first kernel-memory read misses");
    }

    #[test]
    fn category_mcpi_rows_add_up_to_the_system_mcpi() {
        let mut by_tag = vec![TagStats::default(); MAX_TAG + 1];
        by_tag[0] = TagStats {
            instructions: 600,
            reads: 100,
            writes: 50,
            stall: [60, 30, 0, 0, 0],
        };
        by_tag[1] = TagStats {
            instructions: 300,
            reads: 20,
            writes: 10,
            stall: [90, 0, 30, 0, 0],
        };
        by_tag[4] = TagStats {
            instructions: 100,
            reads: 100,
            writes: 100,
            stall: [0, 150, 60, 0, 0],
        };
        by_tag[10] = TagStats {
            instructions: 1000,
            reads: 0,
            writes: 0,
            stall: [15, 0, 0, 0, 0],
        };
        let doc = categories_doc("m", &by_tag);
        assert_eq!(doc.non_idle_instructions, 1000);
        let row = |n: &str| doc.categories.iter().find(|r| r.name == n).unwrap();
        assert_eq!(row("syscall").mcpi.icache, 0.09);
        assert_eq!(row("syscall").mcpi.total, 0.12);
        assert_eq!(row("syscall").own_mcpi, 0.4);
        assert_eq!(row("block-copy").mcpi.total, 0.21);
        assert_eq!(row("block-copy").own_mcpi, 2.1);
        assert_eq!(row("user").mcpi.total, 0.09);
        assert_eq!(row("idle").own_mcpi, 0.015);
        let text = render(&AttributionDoc {
            symbols: "s".into(),
            idle_excluded: false,
            idle_dropped: IdleDropped::default(),
            machines: vec![doc.clone()],
        });
        assert!(
            text.contains("block-copy") && text.contains("included"),
            "{text}"
        );
        assert!(
            !text.contains("network"),
            "rows without references are left out: {text}"
        );
    }
}
