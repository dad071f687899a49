//! Attribution of kernel references to functions and to categories like Chen and Bershad's
//! breakdown of system time, and the paper's seven assertions evaluated on a trace.
//!
//! # Symbols
//! `symbols` reads `/proc/kallsyms` text (the sidecar `TRACE.kallsyms` a system capture writes)
//! or a `System.map`. Functions are the text symbols (types t, T, w, W); each runs up to the next
//! symbol of any kind.
//!
//! # Attribution
//! An instruction fetch in kernel mode belongs to the function whose range holds its address; a
//! kernel load or store belongs to the latest kernel instruction (a capture writes each data
//! record right after the instruction that made it). User references carry tag 0. A kernel
//! address no function covers is `no-symbol`: many of those mean the symbols are not the
//! traced kernel's.
//!
//! # Categories
//! A function's category comes from its name (compiler suffixes such as `.isra.0` and `.cold`
//! ignored), by rules tried in this order; the first that matches decides:
//! 1. **Exact names** (`rules::EXACT`), for functions a pattern would misplace: e.g.
//!    `clear_page_dirty_for_io` is memory management, not a page clear; `schedule_idle` is idle.
//! 2. **System call wrappers** (`__x64_sys_NAME`, `__ia32_sys_NAME`, `__do_sys_NAME`, ...): on
//!    x86-64 the compiler usually inlines the call's body into the wrapper, so the call's name
//!    decides (`read` file system, `mmap` memory, `clone` process, `sendto` network,
//!    `sched_yield` scheduler; calls not listed, such as `getpid`, stay `syscall`).
//! 3. **Patterns** (`rules::PATTERNS`), prefixes or whole `_`-separated words, in this order:
//!    idle (`default_idle*`, `acpi_idle_*`, `cpuidle_*`, `tick_nohz_idle_*`, ...); tracing,
//!    security hooks and spinlocks as `other` (their names carry other subsystems' words);
//!    system call entry and exit (`entry_SYSCALL*`, `syscall_*_user_mode*`,
//!    `exit_to_user_mode*`); exceptions (`asm_exc_*`, `exc_*`, `irqentry_*`, and any name with
//!    the word `fault`, which puts the page-fault path here); block copy and clear (`memcpy*`,
//!    `memset*`, `memmove*`, `copy_user_*`, `_copy_to_*`, `_copy_from_*`, `rep_movs*`,
//!    `clear_user*`); scheduler (`schedule*`, `sched_*`, `enqueue_*`, `pick_next_*`, wake-ups,
//!    futexes, CPU-time accounting); process (fork, exec, exit, wait, signals); memory
//!    management (slab and page allocators, LRU, memcg, VMAs, page tables, TLB flushes);
//!    file system (VFS, path walk, dcache, page cache, block layer, ext4, shmem, pipes, poll);
//!    network (`tcp*`, `udp*`, `ip_*`, `inet*`, `sock_*`, `skb_*`, `netif_*`, ..., and the
//!    words `sock`, `skb`, `tcp`, `udp`); interrupts (`sysvec_*`, `irq_*`, `tick_*`, APIC, the
//!    words `interrupt` and `softirq`).
//! 4. Anything else is **other** (locks, RCU, timekeeping, tracing, security, kthreads, most
//!    drivers).
//!
//! Work done in a softirq is classified by what it is (network receive is `network`, timer
//! expiry `interrupt`), not by the context it runs in. The return path that interrupts and
//! exceptions share (`common_interrupt_return`) counts with exceptions, which use it most in a
//! user workload (page faults); the FPU save and restore and the address-space switch of a
//! context switch count with the scheduler; the hardened-usercopy check with block copies. The categories follow the paper's spirit
//! with one addition, `process`, so that a fork-and-exec workload does not vanish into `other`.
//!
//! # Idle
//! The paper left idle-loop references out of its figures. With symbols, `memsim` drops them
//! before simulating (`--include-idle` keeps them); `trace info` shows them as their own row.

pub mod analysis;
pub mod assertions;
pub mod attrib;
pub mod info;
pub mod mcpi;
// The taxonomy and the symbol reader stand below, shared with profiles.
pub use crate::kernel_parts::{category, symbols};

pub use attrib::{find_symbols, sidecar, Attributed, Attributor, NO_FUNCTION};
pub use category::{classify, Category, MAX_TAG};
pub use symbols::SymbolTable;

#[cfg(test)]
pub(crate) mod testutil {
    use crate::memsim::trace::{Ref, RefSource, TraceMeta};

    /// References from memory, handed out in the batch sizes asked for.
    pub struct VecSource {
        refs: Vec<Ref>,
        pos: usize,
    }

    impl VecSource {
        pub fn new(refs: Vec<Ref>) -> VecSource {
            VecSource { refs, pos: 0 }
        }
    }

    impl RefSource for VecSource {
        fn next_batch(&mut self, out: &mut Vec<Ref>, max: usize) -> anyhow::Result<usize> {
            let n = max.min(self.refs.len() - self.pos);
            out.extend_from_slice(&self.refs[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
        fn meta(&self) -> TraceMeta {
            TraceMeta::default()
        }
    }
}
