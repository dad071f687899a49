//! Attribution of each reference to a kernel function and category, and a reference source that
//! tags a stream with it (dropping the idle loop on request).

use super::category::{classify, Category};
use super::symbols::SymbolTable;
use crate::memsim::trace::{Kind, Mode, Ref, RefSource, TraceMeta};
use anyhow::Result;
use std::path::{Path, PathBuf};

/// No function: user code, or kernel code outside every symbol.
pub const NO_FUNCTION: u32 = u32::MAX;
const UNCLASSIFIED: u8 = u8::MAX;

/// Maps references to (category tag, function). An instruction is looked up by its address; a
/// load or store belongs to the latest instruction, which the trace format places just before it.
pub struct Attributor {
    symbols: SymbolTable,
    /// Category tag per function, filled the first time the function is seen.
    tags: Vec<u8>,
    /// The last lookup: [lo, hi) answers (function, tag).
    cache: (u64, u64, u32, u8),
    /// Attribution of the latest instruction; tag 0 after a user instruction.
    current: (u8, u32),
}

impl Attributor {
    pub fn new(symbols: SymbolTable) -> Attributor {
        Attributor {
            tags: vec![UNCLASSIFIED; symbols.len()],
            symbols,
            cache: (1, 0, NO_FUNCTION, 0),
            current: (0, NO_FUNCTION),
        }
    }

    pub fn symbols(&self) -> &SymbolTable {
        &self.symbols
    }

    /// The category of a function (index into the symbol table's functions).
    pub fn category(&mut self, function: u32) -> Category {
        let i = function as usize;
        if self.tags[i] == UNCLASSIFIED {
            self.tags[i] = classify(&self.symbols.functions()[i].name).tag();
        }
        Category::from_tag(self.tags[i]).unwrap_or(Category::Other)
    }

    fn lookup(&mut self, addr: u64) -> (u8, u32) {
        let (lo, hi, f, t) = self.cache;
        if addr >= lo && addr < hi {
            return (t, f);
        }
        let (f, lo, hi) = self.symbols.lookup_range(addr);
        let (tag, f) = match f {
            Some(f) => (self.category(f).tag(), f),
            None => (Category::NoSymbol.tag(), NO_FUNCTION),
        };
        self.cache = (lo, hi, f, tag);
        (tag, f)
    }

    /// The tag (0 for user references) and function of one reference of the stream, in order.
    #[inline]
    pub fn attribute(&mut self, r: &Ref) -> (u8, u32) {
        match (r.mode, r.kind) {
            (Mode::User, Kind::Instr) => {
                self.current = (0, NO_FUNCTION);
                (0, NO_FUNCTION)
            }
            (Mode::User, _) => (0, NO_FUNCTION),
            (Mode::Kernel, Kind::Instr) => {
                self.current = self.lookup(r.vaddr);
                self.current
            }
            (Mode::Kernel, _) => {
                if self.current.0 == 0 {
                    // No kernel instruction made it (the trace starts with it, or a user one
                    // came last): nothing to charge it to.
                    (Category::NoSymbol.tag(), NO_FUNCTION)
                } else {
                    self.current
                }
            }
        }
    }
}

/// Counts of dropped idle references by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropped {
    pub instructions: u64,
    pub reads: u64,
    pub writes: u64,
}

/// A source whose references carry their category tag; with `exclude_idle`, references of the
/// idle loop are left out (as Chen and Bershad did: the idle loop rarely misses, and counting it
/// would make any busy-waiting system look cheap per instruction).
pub struct Attributed<'a> {
    inner: &'a mut dyn RefSource,
    attributor: Attributor,
    exclude_idle: bool,
    buf: Vec<Ref>,
    dropped: Dropped,
}

impl<'a> Attributed<'a> {
    pub fn new(inner: &'a mut dyn RefSource, symbols: SymbolTable, exclude_idle: bool) -> Self {
        Attributed {
            inner,
            attributor: Attributor::new(symbols),
            exclude_idle,
            buf: Vec::new(),
            dropped: Dropped::default(),
        }
    }

    pub fn dropped(&self) -> Dropped {
        self.dropped
    }

    pub fn exclude_idle(&self) -> bool {
        self.exclude_idle
    }
}

impl RefSource for Attributed<'_> {
    fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<usize> {
        let idle = Category::Idle.tag();
        loop {
            self.buf.clear();
            if self.inner.next_batch(&mut self.buf, max)? == 0 {
                return Ok(0);
            }
            let before = out.len();
            for r in &self.buf {
                let (tag, _) = self.attributor.attribute(r);
                if tag == idle && self.exclude_idle {
                    match r.kind {
                        Kind::Instr => self.dropped.instructions += 1,
                        Kind::Read => self.dropped.reads += 1,
                        Kind::Write => self.dropped.writes += 1,
                    }
                    continue;
                }
                out.push(Ref { tag, ..*r });
            }
            // Zero means the end, so a batch that was all idle must not end the stream.
            if out.len() > before {
                return Ok(out.len() - before);
            }
        }
    }

    fn meta(&self) -> TraceMeta {
        self.inner.meta()
    }
}

/// The sidecar a system capture writes beside its trace: `TRACE.kallsyms`.
pub fn sidecar(trace: &Path) -> Option<PathBuf> {
    if trace.as_os_str() == "-" {
        return None;
    }
    let mut s = trace.as_os_str().to_owned();
    s.push(".kallsyms");
    Some(PathBuf::from(s))
}

/// The kernel symbols for a trace: the file given, else the trace's sidecar if it exists, else
/// none. A file that exists but does not parse is an error either way.
pub fn find_symbols(trace: &Path, given: Option<&Path>) -> Result<Option<(PathBuf, SymbolTable)>> {
    if let Some(p) = given {
        return Ok(Some((p.to_path_buf(), SymbolTable::load(p)?)));
    }
    match sidecar(trace) {
        Some(p) if p.is_file() => {
            let t = SymbolTable::load(&p).map_err(|e| {
                e.context(format!(
                    "the trace's symbol file {} (found beside it) is unusable; fix it, remove it, or pass --symbols FILE",
                    p.display()
                ))
            })?;
            Ok(Some((p, t)))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsim::kernel::testutil::VecSource;
    use crate::memsim::trace::read_all;

    const SYMS: &str = "\
ffffffff81000000 T do_syscall_64
ffffffff81000100 T memcpy
ffffffff81000200 T default_idle
ffffffff81000300 T vfs_read
ffffffff81000400 D some_data
";

    fn k(kind: Kind, a: u64) -> Ref {
        Ref::new(kind, Mode::Kernel, 0, 4, a)
    }
    fn u(kind: Kind, a: u64) -> Ref {
        Ref::new(kind, Mode::User, 1, 4, a)
    }

    #[test]
    fn data_belongs_to_the_latest_kernel_instruction() {
        let refs = vec![
            k(Kind::Read, 0x1000),                 // before any instruction: no symbol
            u(Kind::Instr, 0x40_0000),             // user
            u(Kind::Read, 0x1000),                 // user
            k(Kind::Instr, 0xffffffff81000010),    // do_syscall_64
            k(Kind::Write, 0x7fff_0000),           // syscall (kernel writes a user address)
            k(Kind::Instr, 0xffffffff81000104),    // memcpy
            k(Kind::Read, 0x40_1000),              // block
            k(Kind::Write, 0xffff_8880_0000_0000), // block
            k(Kind::Instr, 0xffffffff81000410),    // data symbol: no function
            k(Kind::Read, 0x2000),                 // no symbol
            u(Kind::Instr, 0x40_0004),             // user again
            k(Kind::Read, 0x3000),                 // kernel data after a user instruction
        ];
        let mut a = Attributor::new(SymbolTable::parse(SYMS).unwrap());
        let tags: Vec<u8> = refs.iter().map(|r| a.attribute(r).0).collect();
        use Category::*;
        let n = NoSymbol.tag();
        assert_eq!(
            tags,
            vec![
                n,
                0,
                0,
                1,
                Syscall.tag(),
                4,
                Block.tag(),
                Block.tag(),
                n,
                n,
                0,
                n
            ]
        );
        let f = a.attribute(&k(Kind::Instr, 0xffffffff81000300)).1;
        assert_eq!(a.symbols().functions()[f as usize].name, "vfs_read");
    }

    #[test]
    fn idle_is_dropped_or_kept_and_an_all_idle_batch_does_not_end_the_stream() {
        let mut refs = Vec::new();
        for i in 0..100 {
            refs.push(k(Kind::Instr, 0xffffffff81000200 + 4 * (i % 8)));
            refs.push(k(Kind::Read, 0x5000));
        }
        refs.push(k(Kind::Instr, 0xffffffff81000300));
        refs.push(k(Kind::Write, 0x6000));
        let syms = SymbolTable::parse(SYMS).unwrap();
        let mut src = VecSource::new(refs.clone());
        let mut a = Attributed::new(&mut src, syms.clone(), true);
        // Batches of 10: the first ten are all idle.
        let mut out = Vec::new();
        while a.next_batch(&mut out, 10).unwrap() > 0 {}
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|r| r.tag == Category::Fs.tag()));
        assert_eq!(
            a.dropped(),
            Dropped {
                instructions: 100,
                reads: 100,
                writes: 0
            }
        );
        let mut src = VecSource::new(refs);
        let mut kept = Attributed::new(&mut src, syms, false);
        let all = read_all(&mut kept).unwrap();
        assert_eq!(all.len(), 202);
        assert_eq!(
            all.iter().filter(|r| r.tag == Category::Idle.tag()).count(),
            200
        );
    }

    #[test]
    fn sidecar_is_found_and_a_bad_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.osmt");
        assert!(find_symbols(&trace, None).unwrap().is_none());
        assert!(sidecar(Path::new("-")).is_none());
        let side = dir.path().join("t.osmt.kallsyms");
        std::fs::write(&side, SYMS).unwrap();
        let (p, t) = find_symbols(&trace, None).unwrap().unwrap();
        assert_eq!((p, t.len()), (side.clone(), 4));
        std::fs::write(&side, "garbage\n").unwrap();
        let e = format!("{:#}", find_symbols(&trace, None).unwrap_err());
        assert!(e.contains("line 1") && e.contains("--symbols"), "{e}");
        let e = format!(
            "{:#}",
            find_symbols(&trace, Some(&dir.path().join("missing"))).unwrap_err()
        );
        assert!(e.contains("cannot read kernel symbols"), "{e}");
    }
}

#[cfg(test)]
mod real_kallsyms {
    use super::*;

    /// Lines of the Debian 6.1 cloud kernel's /proc/kallsyms (absolute per-CPU symbols, markers
    /// sharing an address with a function, `.isra`/`.constprop` suffixes, data after text).
    fn excerpt() -> SymbolTable {
        // The workspace's test data, two levels above this crate.
        let p =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/kallsyms-6.1-excerpt.txt");
        SymbolTable::load(&p).unwrap()
    }

    #[test]
    fn real_addresses_attribute_to_their_function_and_category() {
        let table = excerpt();
        let start = |name: &str| {
            table
                .functions()
                .iter()
                .find(|f| f.name == name)
                .unwrap_or_else(|| panic!("{name}"))
                .start
        };
        use Category::*;
        let cases = [
            ("startup_64", Other),
            ("entry_SYSCALL_64", Syscall),
            ("do_syscall_64", Syscall),
            ("asm_exc_page_fault", Exception),
            ("handle_mm_fault", Exception),
            ("get_page_from_freelist", Memory),
            ("copy_user_enhanced_fast_string", Block),
            ("clear_page_erms", Block),
            ("memcpy", Block),
            ("finish_task_switch.isra.0", Sched),
            ("copy_process", Process),
            ("vfs_read", Fs),
            ("filemap_read", Fs),
            ("tcp_sendmsg", Net),
            ("__netif_receive_skb_core.constprop.0", Net),
            ("asm_sysvec_apic_timer_interrupt", Irq),
            ("__do_softirq", Irq),
            ("default_idle", Idle),
            ("do_idle", Idle),
            ("cpu_idle_poll.isra.0", Idle),
            ("_raw_spin_lock", Other),
        ];
        let addrs: Vec<u64> = cases.iter().map(|(n, _)| start(n) + 2).collect();
        let mut a = Attributor::new(table);
        for ((name, cat), addr) in cases.iter().zip(addrs) {
            let (tag, f) = a.attribute(&Ref::new(Kind::Instr, Mode::Kernel, 0, 4, addr));
            assert_eq!(a.symbols().functions()[f as usize].name, *name);
            assert_eq!(Category::from_tag(tag), Some(*cat), "{name}");
        }
        // startup_64 wins over the markers _stext and _text at its address.
        assert_eq!(
            a.symbols().lookup(0xffffffff81000000).unwrap().name,
            "startup_64"
        );
        assert!(a
            .symbols()
            .functions()
            .iter()
            .all(|f| !f.name.starts_with("_stext")));
    }
}
