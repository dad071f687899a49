//! Load latency across the memory hierarchy by pointer chasing (Chen et al. 1996 section 4.4;
//! lmbench lat_mem_rd): every load's address is the value of the previous load, so loads cannot
//! overlap. Two walks, which mean two things:
//! - `random` visits the buffer's cache lines in one random cycle: no prefetcher can guess the next
//!   line, so the time per load is the latency of whichever level holds the buffer;
//! - `stride128` is lmbench's walk (lat_mem_rd's default, re-implemented from its description):
//!   node after node 128 bytes apart in address order, wrapping to the start. The hardware's stride
//!   prefetchers learn that step and fetch ahead, so past a cache level the figure is below that
//!   level's latency, exactly as lmbench's is: it is the figure to set beside lmbench's, not a
//!   latency. What the prefetchers see is part of the walk, so it copies lat_mem_rd in two more
//!   ways: its loop body is a hundred loads (a prefetcher that tracks each load instruction sees
//!   a step of a hundred nodes, as in lmbench, not of the eight an ordinary unrolled loop gives),
//!   and with `pages=base` its buffer is in the pages an ordinary allocation gets, as lmbench's is
//!   (4 KiB unless the kernel's THP policy is `always`: the streamers stop at every page
//!   boundary, and past the TLB's reach a walk on 2 MiB pages reads several times faster).
//!
//! Both walks run on 2 MiB pages by default (`pages=huge`, where the kernel gives them): on 4 KiB
//! pages which cache sets and page boundaries the nodes meet depends on where the kernel placed
//! each page, and on this VM the stride walk over 32 MiB read about 7 ns in some rounds and 25 ns
//! in others. `scripts/vs-lmbench` sets `pages=base` to stand beside lat_mem_rd.

use super::{llc_bytes, Region};
use crate::harness::Workload;
use crate::params;
use crate::probes::util::{param_str, param_u64};
use crate::probes::{Built, ProbeEnv, Scale};
use crate::results::model::Params;
use anyhow::{bail, Result};

const SMALLEST: u64 = 512;
/// The largest buffer of the quick suite (a power of two on its every-other-power ladder).
const QUICK_TOP: u64 = 128 << 20;
/// Node spacing of the stride pattern (lmbench's default stride).
const STRIDE: usize = 128;
/// Slot size of the random pattern: one cache line, so every load touches a new line.
const SLOT: usize = 64;
/// Fixed so that every run chases the same cycle.
const SEED: u64 = 0x6f73_6d65_7465_7221;

/// Which pages the buffer is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PageKind {
    /// 2 MiB pages where the kernel gives them: the placement of one run is that of the next.
    Huge,
    /// What an ordinary allocation gets, as lmbench's malloc does.
    Base,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pattern {
    Stride,
    Random,
}

/// Buffer sizes: powers of two from 512 B up to the first one at least 4x the last-level cache.
fn sizes(scale: Scale) -> Vec<u64> {
    let top = (4 * llc_bytes()).next_power_of_two().max(SMALLEST);
    let all: Vec<u64> = (0..)
        .map(|k| SMALLEST << k)
        .take_while(|&s| s <= top)
        .collect();
    match scale {
        Scale::Full => all,
        Scale::Quick => {
            // Every other power still lands at least one point on each cache level's plateau, up
            // to QUICK_TOP: building a chain of gigabytes in every round of a one-minute suite
            // cost most of its time on a VM that reports a 480 MiB cache.
            let top = top.min(QUICK_TOP);
            let mut q: Vec<u64> = all
                .iter()
                .copied()
                .step_by(2)
                .filter(|&s| s <= top)
                .collect();
            if q.last() != Some(&top) {
                q.push(top);
            }
            q
        }
    }
}

pub fn variants(scale: Scale) -> Vec<Params> {
    ["stride128", "random"]
        .iter()
        .flat_map(|pat| {
            sizes(scale)
                .into_iter()
                .map(move |s| params![("pattern", pat), ("pages", "huge"), ("size", s)])
        })
        .collect()
}

pub fn build(_: &ProbeEnv, p: &Params) -> Result<Built> {
    let pattern = match param_str(p, "pattern")? {
        "stride128" => Pattern::Stride,
        "random" => Pattern::Random,
        other => bail!("pattern={other}: expected stride128 or random"),
    };
    // Figures stored before the parameter existed had 2 MiB pages for `random` and base pages for
    // `stride128`; a probe reference without it means that.
    let pages = match (p.get("pages"), pattern) {
        (None, Pattern::Random) => PageKind::Huge,
        (None, Pattern::Stride) => PageKind::Base,
        (Some(v), _) => match v.as_str() {
            Some("huge") => PageKind::Huge,
            Some("base") => PageKind::Base,
            _ => bail!(
                "pages={v}: expected huge (2 MiB pages where the kernel gives them) or base \
                 (the pages an ordinary allocation gets)"
            ),
        },
    };
    let size = usize::try_from(param_u64(p, "size")?)?;
    if size < 2 * STRIDE || size % STRIDE != 0 {
        bail!(
            "size={size}: must be a multiple of {STRIDE} bytes, at least {}",
            2 * STRIDE
        );
    }
    Ok(Built::Ready(Box::new(Chase::new(pattern, pages, size)?)))
}

struct Chase {
    pattern: Pattern,
    /// Owns the nodes; read only through `at` outside the tests.
    #[cfg_attr(not(test), allow(dead_code))]
    region: Region,
    /// Where the chase stands; kept between samples so each sample continues the cycle.
    at: *const usize,
    /// Which pages the nodes got.
    pages: Option<crate::meter::pages::Pages>,
}

impl Chase {
    fn new(pattern: Pattern, pages: PageKind, size: usize) -> Result<Chase> {
        let region = match pages {
            PageKind::Huge => Region::huge(size)?,
            PageKind::Base => Region::anon(size)?,
        };
        let base = region.ptr as usize;
        let link = |from: usize, to: usize| {
            // SAFETY: both offsets are inside the mapping and word-aligned; writing every node
            // also faults its page in before timing.
            unsafe { *((base + from) as *mut usize) = base + to };
        };
        let start = match pattern {
            Pattern::Stride => {
                let nodes = size / STRIDE;
                for i in 0..nodes {
                    link(i * STRIDE, lmbench_next(i, nodes) * STRIDE);
                }
                0
            }
            Pattern::Random => {
                let next = sattolo(size / SLOT, SEED);
                for (i, &j) in next.iter().enumerate() {
                    link(i * SLOT, j as usize * SLOT);
                }
                0
            }
        };
        Ok(Chase {
            pattern,
            at: (base + start) as *const usize,
            pages: region.pages(),
            region,
        })
    }
}

/// The node that follows node `i` of `n` in lmbench's stride walk: the next one up in address
/// order, and after the last the first. lat_mem_rd links each node to the one a stride above it
/// and the last back to the buffer's start, and starts its chase at the start.
fn lmbench_next(i: usize, n: usize) -> usize {
    if i + 1 < n {
        i + 1
    } else {
        0
    }
}

/// A random cyclic permutation of 0..n (Sattolo's variant of the Fisher-Yates shuffle): following
/// i -> next[i] from any slot visits every slot once before returning.
fn sattolo(n: usize, seed: u64) -> Vec<u32> {
    let mut next: Vec<u32> = (0..n as u32).collect();
    let mut rng = crate::stats::rng::SplitMix64(seed);
    for i in (1..n).rev() {
        // Drawing j strictly below i (never i itself) is what makes the result a single cycle.
        let j = rng.scaled(i as u64) as usize;
        next.swap(i, j);
    }
    next
}

/// One link of a chase: `p` becomes the address its node holds.
macro_rules! step {
    ($p:ident) => {
        // SAFETY: every node holds the address of another node of the same live mapping.
        $p = unsafe { *$p } as *const usize
    };
}

/// Follows `n` links from `p`. Unrolled so the loop's own counter and branch cost next to nothing
/// per load.
#[inline(never)]
fn chase(mut p: *const usize, n: u64) -> *const usize {
    for _ in 0..n / 8 {
        step!(p);
        step!(p);
        step!(p);
        step!(p);
        step!(p);
        step!(p);
        step!(p);
        step!(p);
    }
    for _ in 0..n % 8 {
        step!(p);
    }
    p
}

/// Follows `n` links from `p` in a body of a hundred loads, as lat_mem_rd does: each load
/// instruction of the body sees every hundredth node, which decides what a prefetcher that tracks
/// instructions can learn.
#[inline(never)]
fn chase_by_hundreds(mut p: *const usize, n: u64) -> *const usize {
    macro_rules! ten {
        () => {
            step!(p);
            step!(p);
            step!(p);
            step!(p);
            step!(p);
            step!(p);
            step!(p);
            step!(p);
            step!(p);
            step!(p);
        };
    }
    for _ in 0..n / 100 {
        ten!();
        ten!();
        ten!();
        ten!();
        ten!();
        ten!();
        ten!();
        ten!();
        ten!();
        ten!();
    }
    chase(p, n % 100)
}

impl Workload for Chase {
    fn run(&mut self, iters: u64) -> Result<()> {
        let walk = match self.pattern {
            Pattern::Stride => chase_by_hundreds,
            Pattern::Random => chase,
        };
        self.at = std::hint::black_box(walk(self.at, iters));
        Ok(())
    }
    /// The chase is unrolled and its loop control runs beside the dependent loads.
    fn subtract_loop_overhead(&self) -> bool {
        false
    }
    fn pages(&self) -> Option<crate::meter::pages::Pages> {
        self.pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Length of the cycle through the start node, and whether every hop stayed inside the buffer.
    fn cycle(c: &Chase, limit: usize) -> (usize, bool) {
        let base = c.region.ptr as usize;
        let start = base as *const usize;
        let (mut p, mut n, mut inside) = (start, 0, true);
        loop {
            p = chase(p, 1);
            n += 1;
            inside &= (p as usize) >= base && (p as usize) < base + c.region.len;
            if p == start || n > limit {
                return (n, inside);
            }
        }
    }

    #[test]
    fn stride_walks_lmbench_s_order_128_bytes_up_and_back_to_the_start() {
        // Known answer: lat_mem_rd with stride 128 over 512 bytes chases offsets 0, 128, 256, 384
        // and then 0 again.
        let c = Chase::new(Pattern::Stride, PageKind::Base, 512).unwrap();
        let base = c.region.ptr as usize;
        assert_eq!(c.at as usize, base);
        let mut p = c.at;
        let mut offsets = Vec::new();
        for _ in 0..5 {
            p = chase(p, 1);
            offsets.push(p as usize - base);
        }
        assert_eq!(offsets, [128, 256, 384, 0, 128]);
        // Every size: one cycle over every 128th byte, each hop 128 bytes up but the last.
        for size in [1024usize, 3 * 4096 + 1024, 1 << 20] {
            let c = Chase::new(Pattern::Stride, PageKind::Base, size).unwrap();
            assert_eq!(cycle(&c, size), (size / 128, true), "size {size}");
            let mut p = c.at;
            for hop in 1..size / 128 {
                let next = chase(p, 1);
                assert_eq!(next as usize - p as usize, 128, "size {size} hop {hop}");
                p = next;
            }
            assert_eq!(
                chase(p, 1),
                c.at,
                "size {size}: the last node leads to the start"
            );
        }
        assert_eq!(lmbench_next(0, 1), 0);
    }

    #[test]
    fn pages_are_chosen_by_parameter_and_stored_figures_keep_their_meaning() {
        use crate::meter::pages::Pages;
        let dir = tempfile::tempdir().unwrap();
        let env = crate::probes::testing::env(dir.path(), Scale::Quick);
        let kind = |p: Params| match build(&env, &p) {
            Ok(Built::Ready(w)) => w.pages(),
            Ok(_) => panic!("a chase is ready at once"),
            Err(e) => panic!("{e:#}"),
        };
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        let size = 4 << 20;
        let base = kind(params![
            ("pattern", "stride128"),
            ("pages", "base"),
            ("size", size)
        ]);
        let old_stride = kind(params![("pattern", "stride128"), ("size", size)]);
        assert_eq!(
            base, old_stride,
            "a stride figure without the parameter had base pages"
        );
        if thp.contains("[madvise]") {
            // Asked for and touched at once, the default walk holds huge pages (some of them at
            // least, when the other test threads hold memory that compaction cannot move) and
            // the base one none.
            let huge = kind(params![
                ("pattern", "stride128"),
                ("pages", "huge"),
                ("size", size)
            ]);
            assert!(matches!(huge, Some(Pages::Huge | Pages::Mixed)), "{huge:?}");
            assert_eq!(base, Some(Pages::Base));
            let old_random = kind(params![("pattern", "random"), ("size", size)]);
            assert!(
                matches!(old_random, Some(Pages::Huge | Pages::Mixed)),
                "{old_random:?}"
            );
        }
        let err = build(
            &env,
            &params![("pattern", "random"), ("pages", "giant"), ("size", 4096)],
        )
        .err()
        .expect("an unknown page kind is refused");
        assert!(format!("{err:#}").contains("expected huge"), "{err:#}");
        // Every variant of the suite asks for huge pages.
        assert!(variants(Scale::Quick)
            .iter()
            .all(|v| v.get("pages").and_then(|p| p.as_str()) == Some("huge")));
    }

    #[test]
    fn random_is_one_cycle_over_every_line() {
        for size in [512usize, 8192, 1 << 20] {
            let c = Chase::new(Pattern::Random, PageKind::Huge, size).unwrap();
            assert_eq!(cycle(&c, size), (size / 64, true), "size {size}");
        }
        let p = sattolo(1000, SEED);
        let mut seen = p.clone();
        seen.sort_unstable();
        assert!(seen.iter().enumerate().all(|(i, &v)| v as usize == i));
        assert!(p.iter().enumerate().all(|(i, &v)| v as usize != i));
        assert_eq!(p, sattolo(1000, SEED), "the seed fixes the order");
    }

    #[test]
    fn run_counts_loads() {
        let mut c = Chase::new(Pattern::Stride, PageKind::Huge, 1024).unwrap();
        let base = c.region.ptr as usize;
        // 8 nodes: 8 loads return to the start, 11 (one unrolled block plus three) land on the
        // fourth node, 3 x 128 bytes up.
        assert_eq!(c.at as usize, base);
        c.run(8).unwrap();
        assert_eq!(c.at as usize, base);
        c.run(11).unwrap();
        assert_eq!(c.at as usize, base + 3 * 128);
        // The hundred-load body: 250 loads over 8 nodes are 31 cycles and 2 nodes.
        c.run(250).unwrap();
        assert_eq!(c.at as usize, base + 5 * 128);
        assert_eq!(chase_by_hundreds(c.at, 0), c.at);
    }

    #[test]
    fn sizes_span_the_hierarchy() {
        let top = (4 * llc_bytes()).next_power_of_two();
        let full = sizes(Scale::Full);
        let quick = sizes(Scale::Quick);
        assert_eq!(full.first(), Some(&512));
        assert_eq!(full.last(), Some(&top));
        assert!(full.windows(2).all(|w| w[1] == 2 * w[0]));
        assert_eq!(&quick[..3], &[512, 2048, 8192]);
        assert_eq!(quick.last(), Some(&top.min(QUICK_TOP)));
        assert!(quick.iter().all(|&s| s <= QUICK_TOP));
        assert!(quick.iter().all(|s| full.contains(s)));
        assert_eq!(variants(Scale::Full).len(), 2 * full.len());
    }
}
