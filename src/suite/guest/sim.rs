//! `run --guest --preset`: every reference of the guest's windows goes through memsim's machines
//! and, where the kernel's symbols are known, is attributed to a kernel function.
//!
//! Every window is simulated on fresh (empty) machines: what a window costs then depends on its
//! own references only, which a deterministic guest repeats exactly, and not on how many
//! windows came before it (a window disturbed by an interrupt is repeated, and how often can
//! differ between boots). Per operation is taken as the counts are: the window of 2n operations
//! less the window of n, over n. Both start empty, so the compulsory misses of the loop's working
//! set cancel and what remains is the loop's steady state: for a working set that fits, no
//! misses; for one that does not, the misses each turn brings. Kernel instructions by function
//! are exact counts taken the same way, so they add up to the kernel instructions per operation.

use crate::capture::system::count::Mark;
use crate::capture::system::windows::WindowSink;
use crate::kernel_parts::{classify, Category, SymbolTable};
use crate::memsim::machine::{Machine, MachineConfig, Stats};
use crate::memsim::trace::{Kind, Mode, Ref};
use crate::results::guest::{KernelParts, SimulatedMode, SimulatedOp, StallParts};
use std::collections::{BTreeMap, HashMap};

/// Function index standing for kernel code outside every known function.
const NO_SYMBOL: u32 = u32::MAX;

/// Functions below this many kernel instructions per operation are left out of the document
/// (their category still holds them).
const SMALLEST_FUNCTION: f64 = 0.01;

/// One mode's running totals of one machine at a marker.
#[derive(Debug, Clone, Default, PartialEq)]
struct ModeSnap {
    instructions: u64,
    l1i_misses: u64,
    l1d_misses: u64,
    lower_misses: Vec<u64>,
    tlb_misses: u64,
    /// By component, in the order of memsim's `COMPONENTS`.
    stall: [u64; 5],
}

impl ModeSnap {
    fn of(s: &Stats) -> [ModeSnap; 2] {
        s.mode.clone().map(|m| ModeSnap {
            instructions: m.instructions,
            l1i_misses: m.l1i.misses,
            l1d_misses: m.l1d.misses,
            lower_misses: m.lower.iter().map(|c| c.misses).collect(),
            tlb_misses: m.tlb_misses,
            stall: m.stall,
        })
    }
}

pub struct Simulation {
    names: Vec<String>,
    presets: Vec<MachineConfig>,
    machines: Vec<Machine>,
    symbols: Option<SymbolTable>,
    /// Per closed window, per machine, user and kernel.
    windows: Vec<Vec<[ModeSnap; 2]>>,
    /// Per closed window, its kernel instructions by function index.
    window_functions: Vec<HashMap<u32, u64>>,
    current: HashMap<u32, u64>,
    /// The last lookup: function index and the address range it holds for.
    last: (u32, u64, u64),
}

impl Simulation {
    pub fn new(presets: &[MachineConfig], symbols: Option<SymbolTable>) -> Simulation {
        Simulation {
            names: presets.iter().map(|c| c.name.clone()).collect(),
            presets: presets.to_vec(),
            machines: presets.iter().map(Machine::new).collect(),
            symbols,
            windows: Vec::new(),
            window_functions: Vec::new(),
            current: HashMap::new(),
            last: (NO_SYMBOL, 1, 0),
        }
    }

    pub fn presets(&self) -> &[String] {
        &self.names
    }

    fn function_of(&mut self, addr: u64) -> u32 {
        let (idx, lo, hi) = self.last;
        if addr >= lo && addr < hi {
            return idx;
        }
        let Some(t) = &self.symbols else {
            return NO_SYMBOL;
        };
        let (idx, lo, hi) = t.lookup_range(addr);
        self.last = (idx.unwrap_or(NO_SYMBOL), lo, hi);
        self.last.0
    }

    /// What one operation cost on each machine, and in which kernel functions, from global
    /// windows `short` (n operations) and `long` (2n). None when a window is missing.
    pub fn per_op(
        &self,
        short: usize,
        long: usize,
        n: u64,
    ) -> Option<(Vec<SimulatedOp>, Option<KernelParts>)> {
        let per = |x: u64, y: u64| (y as i64 - x as i64) as f64 / n as f64;
        let mut simulated = Vec::new();
        for (m, name) in self.names.iter().enumerate() {
            let (s, l) = (
                self.windows.get(short)?.get(m)?,
                self.windows.get(long)?.get(m)?,
            );
            let mode = |s: &ModeSnap, l: &ModeSnap| {
                let stalls: [f64; 5] = std::array::from_fn(|i| per(s.stall[i], l.stall[i]));
                let stall_cycles: f64 = stalls.iter().sum();
                let instructions = per(s.instructions, l.instructions);
                SimulatedMode {
                    l1i_misses: per(s.l1i_misses, l.l1i_misses),
                    l1d_misses: per(s.l1d_misses, l.l1d_misses),
                    lower_misses: s
                        .lower_misses
                        .iter()
                        .zip(&l.lower_misses)
                        .map(|(x, y)| per(*x, *y))
                        .collect(),
                    tlb_misses: per(s.tlb_misses, l.tlb_misses),
                    stall_cycles,
                    stalls: StallParts {
                        icache: stalls[0],
                        dcache: stalls[1],
                        wbuffer: stalls[2],
                        tlb: stalls[3],
                        uncached: stalls[4],
                    },
                    mcpi: if instructions > 0.0 {
                        stall_cycles / instructions
                    } else {
                        0.0
                    },
                }
            };
            simulated.push(SimulatedOp {
                preset: name.clone(),
                user: mode(&s[0], &l[0]),
                kernel: mode(&s[1], &l[1]),
            });
        }
        let parts = self.symbols.as_ref().map(|t| {
            let empty = HashMap::new();
            let s = self.window_functions.get(short).unwrap_or(&empty);
            let l = self.window_functions.get(long).unwrap_or(&empty);
            let mut parts = KernelParts::default();
            let mut categories: BTreeMap<Category, f64> = BTreeMap::new();
            for idx in s
                .keys()
                .chain(l.keys())
                .collect::<std::collections::BTreeSet<_>>()
            {
                let v = per(
                    s.get(idx).copied().unwrap_or(0),
                    l.get(idx).copied().unwrap_or(0),
                );
                let (name, category) = match t.functions().get(*idx as usize) {
                    Some(f) => (f.name.clone(), classify(&f.name)),
                    None => ("(no symbol)".to_string(), Category::NoSymbol),
                };
                *categories.entry(category).or_default() += v;
                if v.abs() >= SMALLEST_FUNCTION {
                    *parts.functions.entry(name).or_default() += v;
                }
            }
            parts.categories = categories
                .into_iter()
                .filter(|(_, v)| *v != 0.0)
                .map(|(c, v)| (c.name().to_string(), v))
                .collect();
            parts
        });
        Some((simulated, parts))
    }
}

impl WindowSink for Simulation {
    fn reference(&mut self, r: &Ref) {
        for m in &mut self.machines {
            m.access(r);
        }
        if r.mode == Mode::Kernel && r.kind == Kind::Instr && self.symbols.is_some() {
            let f = self.function_of(r.vaddr);
            *self.current.entry(f).or_default() += 1;
        }
    }

    fn mark(&mut self, mark: &Mark) {
        if mark.code == 1 {
            self.machines = self.presets.iter().map(Machine::new).collect();
            self.current.clear();
        } else {
            self.windows.push(
                self.machines
                    .iter_mut()
                    .map(|m| ModeSnap::of(&m.stats()))
                    .collect(),
            );
            self.window_functions
                .push(std::mem::take(&mut self.current));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsim::config::preset;

    fn mark(sim: &mut Simulation, code: u8) {
        sim.mark(&Mark {
            code,
            totals: Default::default(),
        });
    }

    fn fetch(sim: &mut Simulation, addr: u64) {
        let mut r = Ref::new(Kind::Instr, Mode::Kernel, 0, 4, addr);
        r.paddr = Some(addr & 0xffff_ffff);
        sim.reference(&r);
    }

    /// A window of `ops` operations, each fetching `lines` distinct 64-byte lines of kernel
    /// code starting at the same address.
    fn window(sim: &mut Simulation, ops: u64, lines: u64) {
        mark(sim, 1);
        for _ in 0..ops {
            for l in 0..lines {
                fetch(sim, 0xffff_ffff_8100_0000 + l * 64);
            }
        }
        mark(sim, 2);
    }

    #[test]
    fn a_loop_that_fits_misses_nothing_per_operation_and_one_that_does_not_misses_every_line() {
        // A 48 KiB loop of code: more than the small machine's 16 KiB instruction cache holds,
        // less than the big one's 128 KiB.
        let small = preset("ds5000-200-16K-dm").unwrap();
        let big = preset("ds5000-200-128K-8way").unwrap();
        let mut sim = Simulation::new(&[small, big], None);
        let lines = 48 * 1024 / 64;
        window(&mut sim, 1, lines); // warm-up
        window(&mut sim, 10, lines);
        window(&mut sim, 20, lines);
        let (ops, parts) = sim.per_op(1, 2, 10).unwrap();
        assert!(parts.is_none(), "no symbols, no attribution");
        assert_eq!(ops[0].preset, "ds5000-200-16K-dm");
        // Direct-mapped 16 KiB under a 48 KiB loop: every line fetched is evicted before it
        // comes round again, one miss per fetch.
        assert_eq!(ops[0].kernel.l1i_misses, lines as f64);
        // 128 KiB holds the loop once it is warm.
        assert_eq!(ops[1].kernel.l1i_misses, 0.0);
        assert!(ops[0].kernel.mcpi > 0.0 && ops[1].kernel.mcpi == 0.0);
        // Code misses stall the instruction cache and nothing else.
        assert_eq!(ops[0].kernel.stalls.icache, ops[0].kernel.stall_cycles);
        assert_eq!(ops[0].kernel.stalls.dcache, 0.0);
        assert_eq!(
            ops[0].user,
            SimulatedMode {
                lower_misses: vec![],
                ..Default::default()
            }
        );
        assert!(
            sim.per_op(1, 5, 10).is_none(),
            "a window that was not there"
        );
    }

    #[test]
    fn kernel_instructions_are_split_by_function_and_category() {
        let map = "ffffffff81000000 T entry_SYSCALL_64\nffffffff81000100 T __x64_sys_getppid\n\
                   ffffffff81000200 T schedule\nffffffff81000300 T _etext\n";
        let table = SymbolTable::parse(map).unwrap();
        let mut sim = Simulation::new(&[], Some(table));
        let op = |sim: &mut Simulation| {
            fetch(sim, 0xffff_ffff_8100_0000);
            fetch(sim, 0xffff_ffff_8100_0004);
            fetch(sim, 0xffff_ffff_8100_0100);
            fetch(sim, 0xffff_ffff_9000_0000); // past every symbol
        };
        for ops in [1, 3, 6] {
            mark(&mut sim, 1);
            for _ in 0..ops {
                op(&mut sim);
            }
            // A fixed cost of the window, which the difference of windows cancels.
            fetch(&mut sim, 0xffff_ffff_8100_0200);
            mark(&mut sim, 2);
        }
        let (_, parts) = sim.per_op(1, 2, 3).unwrap();
        let parts = parts.unwrap();
        assert_eq!(parts.functions["entry_SYSCALL_64"], 2.0);
        assert_eq!(parts.functions["__x64_sys_getppid"], 1.0);
        assert!(!parts.functions.contains_key("schedule"), "{parts:?}");
        let total: f64 = parts.categories.values().sum();
        assert_eq!(total, 4.0, "{parts:?}");
        assert_eq!(parts.categories[Category::Syscall.name()], 3.0, "{parts:?}");
    }
}
