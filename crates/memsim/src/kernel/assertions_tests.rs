//! Known answers: small synthetic traces built so that each assertion must hold, and so that it
//! must not.

use super::*;
use crate::memsim::config::preset;
use crate::memsim::kernel::attrib::Attributed;
use crate::memsim::kernel::mcpi::simulate;
use crate::memsim::kernel::symbols::SymbolTable;
use crate::memsim::kernel::testutil::VecSource;
use crate::memsim::trace::{Kind, Mode, Ref};

const SYMS: &str = "\
ffffffff81000000 T do_syscall_64
ffffffff81100000 T memcpy
ffffffff81200000 D kernel_data
";
const KTEXT: u64 = 0xffff_ffff_8100_0000;
const MEMCPY: u64 = 0xffff_ffff_8110_0000;
const KDATA: u64 = 0xffff_8880_0000_0000;
const UTEXT: u64 = 0x40_0000;
const UDATA: u64 = 0x1000_0000;

#[derive(Default)]
struct Trace(Vec<Ref>);

impl Trace {
    fn push(&mut self, kind: Kind, mode: Mode, a: u64) {
        self.0.push(Ref::new(kind, mode, 1, 4, a));
    }
    /// `n` instructions of one mode; `code(j)` and, if given, a data reference per instruction.
    fn phase(
        &mut self,
        mode: Mode,
        n: u64,
        code: impl Fn(u64) -> u64,
        data: Option<(Kind, &dyn Fn(u64) -> u64)>,
    ) {
        for j in 0..n {
            self.push(Kind::Instr, mode, code(j));
            if let Some((k, d)) = data {
                self.push(k, mode, d(j));
            }
        }
    }
}

fn evaluate_trace(t: Trace, symbols: bool) -> AssertionsDoc {
    let mut src = VecSource::new(t.0);
    let mut jobs = vec![Job::plain(preset("ds5000-200").unwrap(), symbols)];
    let plan = plan(&mut jobs, 0);
    let results = if symbols {
        let mut tagged = Attributed::new(&mut src, SymbolTable::parse(SYMS).unwrap(), true);
        simulate(&mut tagged, &jobs, 2).unwrap().1
    } else {
        simulate(&mut src, &jobs, 2).unwrap().1
    };
    let ctx = Context {
        machine: "ds5000-200",
        results: &results,
        symbols,
        physical_trace: false,
        write_buffer: true,
    };
    evaluate(&ctx, &plan)
}

fn verdict(doc: &AssertionsDoc, n: usize) -> String {
    let a = &doc.assertions[n - 1];
    assert_eq!(a.number as usize, n);
    format!("{}: {}", a.verdict.as_str(), a.detail)
}

fn holds(doc: &AssertionsDoc, n: usize) -> bool {
    let v = verdict(doc, n);
    assert!(!v.starts_with("not measurable"), "{v}");
    v.starts_with("holds")
}

/// A small loop: 1 KB of code or data, always the same lines.
fn small(base: u64) -> impl Fn(u64) -> u64 {
    move |j| base + 4 * (j % 256)
}

/// A sweep that keeps moving through `span` bytes, continuing across phases from `start`.
fn sweep(base: u64, start: u64, span: u64) -> impl Fn(u64) -> u64 {
    move |j| base + (4 * (start + j)) % span
}

/// User and kernel phases of 256 instructions; the closures give each phase's code and data.
fn alternate(rounds: u64, user_big: (bool, bool), kernel_big: (bool, bool)) -> Trace {
    let mut t = Trace::default();
    for r in 0..rounds {
        let s = r * 256;
        let pick = |big: bool, base: u64| -> Box<dyn Fn(u64) -> u64> {
            if big {
                Box::new(sweep(base, s, 512 * 1024))
            } else {
                Box::new(small(base))
            }
        };
        let (uc, ud) = (pick(user_big.0, UTEXT), pick(user_big.1, UDATA));
        t.phase(Mode::User, 256, uc, Some((Kind::Read, &*ud)));
        let (kc, kd) = (pick(kernel_big.0, KTEXT), pick(kernel_big.1, KDATA));
        t.phase(Mode::Kernel, 256, kc, Some((Kind::Read, &*kd)));
    }
    t
}

#[test]
fn one_locality_both_ways() {
    let doc = evaluate_trace(alternate(80, (false, false), (true, true)), true);
    assert!(holds(&doc, 1), "{}", verdict(&doc, 1));
    let doc = evaluate_trace(alternate(80, (true, true), (false, false)), true);
    assert!(!holds(&doc, 1), "{}", verdict(&doc, 1));
    // Worse for instructions only is not the assertion.
    let doc = evaluate_trace(alternate(80, (false, true), (true, false)), true);
    let v = verdict(&doc, 1);
    assert!(
        v.starts_with("does not hold") && v.contains("instructions only"),
        "{v}"
    );
}

#[test]
fn two_icache_dependence_both_ways() {
    let doc = evaluate_trace(alternate(80, (false, true), (true, false)), true);
    assert!(holds(&doc, 2), "{}", verdict(&doc, 2));
    let doc = evaluate_trace(alternate(80, (true, false), (false, true)), true);
    assert!(!holds(&doc, 2), "{}", verdict(&doc, 2));
}

/// User and kernel each loop over 4 KB of code; `offset` places the kernel's loop in the cache
/// relative to the user's (0: the same sets).
fn colliding_loops(offset: u64) -> Trace {
    let mut t = Trace::default();
    for _ in 0..100 {
        t.phase(Mode::User, 1024, |j| UTEXT + 4 * j, None);
        t.phase(Mode::Kernel, 1024, |j| KTEXT + offset + 4 * j, None);
    }
    t
}

#[test]
fn three_collisions_both_ways() {
    let doc = evaluate_trace(colliding_loops(0), true);
    assert!(holds(&doc, 3), "{}", verdict(&doc, 3));
    let f = &doc.assertions[2].figures;
    assert!(f["competition_mcpi_icache"].unwrap() > 0.1, "{f:?}");
    let doc = evaluate_trace(colliding_loops(32 * 1024), true);
    assert!(!holds(&doc, 3), "{}", verdict(&doc, 3));
    assert_eq!(
        doc.assertions[2].figures["competition_mcpi_icache"],
        Some(0.0)
    );
}

#[test]
fn four_self_interference_both_ways() {
    // Two 1 KB blocks of kernel code 64 KB apart: they evict each other in a direct-mapped
    // cache and fit together in a 2-way one.
    let mut t = Trace::default();
    for r in 0..200 {
        t.phase(Mode::User, 64, small(UTEXT), None);
        let block = if r % 2 == 0 { 0 } else { 64 * 1024 };
        t.phase(Mode::Kernel, 256, |j| KTEXT + block + 4 * j, None);
    }
    let doc = evaluate_trace(t, true);
    assert!(holds(&doc, 4), "{}", verdict(&doc, 4));
    // A sweep through 512 KB misses whatever the associativity.
    let doc = evaluate_trace(alternate(80, (false, false), (true, false)), true);
    assert!(!holds(&doc, 4), "{}", verdict(&doc, 4));
}

/// A system call that runs `do_syscall_64` then `memcpy`; `copy_misses` makes the copy touch
/// new memory every time (else it copies the same 256 bytes), `code_misses` makes the system
/// call's own code sweep.
fn syscalls(copy_misses: bool, code_misses: bool) -> Trace {
    let mut t = Trace::default();
    for r in 0..200u64 {
        t.phase(Mode::User, 256, small(UTEXT), None);
        let code: Box<dyn Fn(u64) -> u64> = if code_misses {
            Box::new(sweep(KTEXT, r * 256, 512 * 1024))
        } else {
            Box::new(small(KTEXT))
        };
        t.phase(Mode::Kernel, 256, code, None);
        let src = move |j: u64| {
            if copy_misses {
                KDATA + 4 * (r * 64 + j)
            } else {
                KDATA + 4 * (j % 64)
            }
        };
        t.phase(
            Mode::Kernel,
            64,
            |j| MEMCPY + 4 * (j % 8),
            Some((Kind::Read, &src)),
        );
    }
    t
}

#[test]
fn five_block_operations_both_ways() {
    let doc = evaluate_trace(syscalls(true, false), true);
    assert!(holds(&doc, 5), "{}", verdict(&doc, 5));
    let doc = evaluate_trace(syscalls(false, true), true);
    assert!(!holds(&doc, 5), "{}", verdict(&doc, 5));
    // Without symbols nothing says which code copies.
    let doc = evaluate_trace(syscalls(true, false), false);
    let v = verdict(&doc, 5);
    assert!(
        v.starts_with("not measurable") && v.contains("symbols"),
        "{v}"
    );
}

/// A write per instruction, each to another of four pages: never page-mode, so the buffer fills
/// (four pages, so that TLB misses do not give it time to drain).
fn hopping_writes(kernel_writes: bool) -> Trace {
    let mut t = Trace::default();
    let hop = |j: u64| 0x2000_0000 + 4096 * (j % 4) + 4 * (j % 1024);
    for _ in 0..100 {
        let user_data = (Kind::Write, &hop as &dyn Fn(u64) -> u64);
        t.phase(
            Mode::User,
            256,
            small(UTEXT),
            (!kernel_writes).then_some(user_data),
        );
        let kernel_data = (Kind::Write, &hop as &dyn Fn(u64) -> u64);
        t.phase(
            Mode::Kernel,
            256,
            small(KTEXT),
            kernel_writes.then_some(kernel_data),
        );
    }
    t
}

#[test]
fn six_write_buffer_both_ways() {
    let doc = evaluate_trace(hopping_writes(true), true);
    assert!(holds(&doc, 6), "{}", verdict(&doc, 6));
    let doc = evaluate_trace(hopping_writes(false), true);
    assert!(!holds(&doc, 6), "{}", verdict(&doc, 6));
}

#[test]
fn seven_page_mapping_both_ways() {
    // Two 16 KB arrays exactly one cache size apart, read in step: a colour-preserving mapping
    // puts them on the same sets of the direct-mapped cache, a random one mostly does not.
    let mut t = Trace::default();
    for _ in 0..8 {
        for j in 0..4096u64 {
            t.push(Kind::Instr, Mode::User, UTEXT + 4 * (j % 64));
            t.push(Kind::Read, Mode::User, UDATA + 4 * j);
            t.push(Kind::Read, Mode::User, UDATA + 64 * 1024 + 4 * j);
        }
    }
    let doc = evaluate_trace(t, false);
    assert!(holds(&doc, 7), "{}", verdict(&doc, 7));
    let f = &doc.assertions[6].figures;
    assert!(f["mcpi_deterministic"] > f["mcpi_random"], "{f:?}");
    // A kilobyte of code and one of data (separate caches): every policy gives the same misses.
    let mut t = Trace::default();
    t.phase(
        Mode::User,
        50_000,
        small(UTEXT),
        Some((Kind::Read, &small(UDATA))),
    );
    let doc = evaluate_trace(t, false);
    assert!(!holds(&doc, 7), "{}", verdict(&doc, 7));
}

#[test]
fn a_user_only_trace_measures_only_the_mapping() {
    let mut t = Trace::default();
    t.phase(
        Mode::User,
        20_000,
        small(UTEXT),
        Some((Kind::Read, &small(UDATA))),
    );
    let doc = evaluate_trace(t, true);
    for n in 1..=6 {
        let v = verdict(&doc, n);
        assert!(
            v.starts_with("not measurable") && v.contains("kernel"),
            "{n}: {v}"
        );
    }
    assert!(!verdict(&doc, 7).starts_with("not measurable"));
    let text = render(&doc);
    assert!(
        text.contains("NOT MEASURABLE") && text.contains("7. Virtual page mapping"),
        "{text}"
    );
}

#[test]
fn colours_and_doubling_follow_the_geometry() {
    let ds = preset("ds5000-200").unwrap();
    assert_eq!(colours(&ds), 16);
    assert_eq!(colours(&preset("x86-modern").unwrap()), 8192 / 4 / 16);
    let mut jobs = vec![Job::plain(ds, false)];
    let p = plan(&mut jobs, 0);
    assert_eq!(jobs.len(), 7);
    assert!(p.assoc_changed && p.physical_caches);
    assert_eq!(jobs[p.kernel_only_assoc].cfg.l1i.as_ref().unwrap().assoc, 2);
    assert_eq!(jobs[p.kernel_only_assoc].stream, Stream::KernelOnly);
    assert!(jobs[p.mappings[1].1].own_mapping);
}
