//! Kernel categories and the classification of a function name into one (the rules themselves
//! are in `rules.rs`; the root crate's `memsim::kernel` documents them).

use super::rules::{Pat, EXACT, PATTERNS, SYSCALLS, SYSCALL_WRAPPERS};
use super::symbols::base_name;
use std::collections::HashMap;
use std::sync::OnceLock;

/// What kernel code does, after Chen and Bershad's breakdown of system time. The value is the
/// `tag` a reference carries; 0 is user code (or a trace read without symbols).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Category {
    Syscall = 1,
    Exception = 2,
    Memory = 3,
    Block = 4,
    Sched = 5,
    Process = 6,
    Fs = 7,
    Net = 8,
    Irq = 9,
    Idle = 10,
    Other = 11,
    /// A kernel address that no function symbol covers (or data before any kernel instruction).
    NoSymbol = 12,
}

/// Tags run from 0 (user) to this, inclusive.
pub const MAX_TAG: usize = Category::NoSymbol as usize;

impl Category {
    pub const ALL: [Category; 12] = [
        Category::Syscall,
        Category::Exception,
        Category::Memory,
        Category::Block,
        Category::Sched,
        Category::Process,
        Category::Fs,
        Category::Net,
        Category::Irq,
        Category::Idle,
        Category::Other,
        Category::NoSymbol,
    ];

    /// Short name, used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Category::Syscall => "syscall",
            Category::Exception => "exception",
            Category::Memory => "memory",
            Category::Block => "block-copy",
            Category::Sched => "scheduler",
            Category::Process => "process",
            Category::Fs => "filesystem",
            Category::Net => "network",
            Category::Irq => "interrupt",
            Category::Idle => "idle",
            Category::Other => "other",
            Category::NoSymbol => "no-symbol",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Category::Syscall => "system call entry, dispatch and exit",
            Category::Exception => "exceptions and page faults",
            Category::Memory => "memory management: pages, slabs, mappings, page tables, TLB",
            Category::Block => "block copy and clear: memcpy, memset, user copies, page clear",
            Category::Sched => "scheduler, wake-ups and context switch",
            Category::Process => "process creation, exec, exit and signals",
            Category::Fs => "file system, page cache and block I/O",
            Category::Net => "network stack and sockets",
            Category::Irq => "interrupts, hard and soft, timers and IPIs",
            Category::Idle => "the idle loop",
            Category::Other => "everything else (locks, RCU, tracing, security, drivers)",
            Category::NoSymbol => "kernel code no symbol covers",
        }
    }

    pub fn tag(self) -> u8 {
        self as u8
    }

    pub fn from_tag(tag: u8) -> Option<Category> {
        Category::ALL.get(usize::from(tag).wrapping_sub(1)).copied()
    }

    pub fn parse(name: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.name() == name)
    }
}

fn exact_map() -> &'static HashMap<&'static str, Category> {
    static MAP: OnceLock<HashMap<&'static str, Category>> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut m = HashMap::new();
        for (cat, names) in EXACT {
            for n in *names {
                // The first listing wins, as everywhere in the rules.
                m.entry(*n).or_insert(*cat);
            }
        }
        m
    })
}

fn matches(pat: &Pat, name: &str) -> bool {
    match pat {
        Pat::Exact(list) => list.contains(&name),
        Pat::Prefix(list) => list.iter().any(|p| name.starts_with(p)),
        Pat::Word(list) => name.split('_').any(|token| list.contains(&token)),
    }
}

/// The category of a system call by its name (`read`, `mmap`, ...).
pub fn classify_syscall(name: &str) -> Category {
    SYSCALLS
        .iter()
        .find(|(_, pat)| matches(pat, name))
        .map_or(Category::Syscall, |(cat, _)| *cat)
}

/// The category of a kernel function, by name (compiler suffixes such as `.isra.0` ignored).
pub fn classify(name: &str) -> Category {
    let base = base_name(name);
    if let Some(c) = exact_map().get(base) {
        return *c;
    }
    for wrapper in SYSCALL_WRAPPERS {
        if let Some(call) = base.strip_prefix(wrapper) {
            return classify_syscall(call);
        }
    }
    for (cat, pat) in PATTERNS {
        if matches(pat, base) {
            return *cat;
        }
    }
    Category::Other
}

#[cfg(test)]
#[path = "category_tests.rs"]
mod tests;
