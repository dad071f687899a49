//! Names for sampled addresses: kernel addresses from /proc/kallsyms, user addresses from the
//! mappings of the process that was sampled (`binary+0xOFFSET` into the mapped file). An address
//! nothing names stays an address: a wrong name would send the reader after the wrong function.
//! Unnamed kernel code is named by its 4 KiB page (`0xffffffffc0025xxx`): the JIT-compiled BPF
//! programs that kallsyms does not list (seccomp's) each fill pages of their own, so one program
//! stays one frame instead of one per instruction sampled.

use crate::kernel_parts::{component_of, Component, SymbolTable};
use std::collections::HashMap;
use std::path::Path;

/// A named frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub name: String,
    /// Kernel frames with a symbol only.
    pub component: Option<Component>,
}

/// One mapping of a process: [start, end) maps `path` from file offset `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub path: String,
}

/// A user address of a process and its name, found in the worker (where the process lived) and
/// handed to the run with the samples.
pub type UserName = (u32, u64, String);

#[derive(Default)]
pub struct Symbolizer<'k> {
    kernel: Option<&'k SymbolTable>,
    maps: HashMap<u32, Vec<Mapping>>,
    /// Function symbols of each mapped file, read once (None: none to read).
    files: HashMap<String, Option<crate::elf::ElfSymbols>>,
    cache: HashMap<(bool, u32, u64), Frame>,
}

/// Kernel symbols from `kallsyms` (normally /proc/kallsyms), or why kernel addresses will stay
/// unnamed (unreadable, or hidden by kptr_restrict or perf_event_paranoid: which, and the fix).
pub fn kernel_symbols(kallsyms: &Path) -> Result<SymbolTable, String> {
    SymbolTable::load(kallsyms).map_err(|e| {
        if e.root_cause()
            .is::<crate::kernel_parts::hidden::HiddenAddresses>()
        {
            format!(
                "kernel functions are addresses: {} hides them: {}",
                kallsyms.display(),
                crate::kernel_parts::hidden::why_here()
            )
        } else {
            format!("kernel functions are addresses: {e:#}")
        }
    })
}

impl<'k> Symbolizer<'k> {
    pub fn with_kernel(table: Option<&'k SymbolTable>) -> Symbolizer<'k> {
        Symbolizer {
            kernel: table,
            ..Symbolizer::default()
        }
    }

    /// Names found elsewhere (in the worker) for user addresses.
    pub fn preset_user(&mut self, names: Vec<UserName>) {
        for (pid, addr, name) in names {
            let frame = Frame {
                name,
                component: None,
            };
            self.cache.insert((false, pid, addr), frame);
        }
    }

    /// Every user address named so far.
    pub fn user_names(&self) -> Vec<UserName> {
        self.cache
            .iter()
            .filter(|((kernel, _, _), _)| !kernel)
            .map(|(&(_, pid, addr), f)| (pid, addr, f.name.clone()))
            .collect()
    }

    /// Reads the mappings of `pid` while it is alive; a process already gone leaves its user
    /// addresses unnamed.
    pub fn read_maps(&mut self, pid: u32) {
        if self.maps.contains_key(&pid) {
            return;
        }
        if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/maps")) {
            self.maps.insert(pid, parse_maps(&text));
        }
    }

    pub fn set_maps(&mut self, pid: u32, maps: Vec<Mapping>) {
        self.maps.insert(pid, maps);
    }

    pub fn kernel(&mut self, addr: u64) -> Frame {
        let table = self.kernel;
        self.cache
            .entry((true, 0, addr))
            .or_insert_with(|| match table.and_then(|t| t.lookup(addr)) {
                Some(f) => Frame {
                    name: match &f.module {
                        Some(m) => format!("{} [{m}]", f.name),
                        None => f.name.clone(),
                    },
                    // A BPF program counts where it was run from (seccomp, a tracepoint, ...).
                    component: (!runs_bpf(&f.name)).then(|| component_of(&f.name)),
                },
                None => Frame {
                    name: format!("{:x}xxx", addr >> 12).replacen("", "0x", 1),
                    component: None,
                },
            })
            .clone()
    }

    pub fn user(&mut self, pid: u32, addr: u64) -> Frame {
        if let Some(f) = self.cache.get(&(false, pid, addr)) {
            return f.clone();
        }
        let mapping = self
            .maps
            .get(&pid)
            .and_then(|m| m.iter().find(|m| m.start <= addr && addr < m.end))
            .filter(|m| m.path.starts_with('/'));
        let name = match mapping {
            Some(m) => {
                let offset = addr - m.start + m.offset;
                let symbols = self
                    .files
                    .entry(m.path.clone())
                    .or_insert_with(|| crate::elf::ElfSymbols::read(&m.path));
                match symbols.as_ref().and_then(|s| s.at_file_offset(offset)) {
                    Some(name) => name,
                    None => {
                        let file = m.path.rsplit('/').next().unwrap_or(&m.path);
                        format!("{file}+{offset:#x}")
                    }
                }
            }
            None => format!("{addr:#x}"),
        };
        let frame = Frame {
            name,
            component: None,
        };
        self.cache.insert((false, pid, addr), frame.clone());
        frame
    }
}

/// A BPF program (JIT-compiled and listed, or the interpreter running one).
fn runs_bpf(name: &str) -> bool {
    name.starts_with("bpf_prog_")
        || name.starts_with("___bpf_prog_run")
        || name.starts_with("__bpf_prog_run")
        || name.starts_with("bpf_dispatcher_")
}

/// `/proc/PID/maps` lines: `start-end perms offset dev inode [path]`.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (start, end) = f.next()?.split_once('-')?;
            let _perms = f.next()?;
            let offset = u64::from_str_radix(f.next()?, 16).ok()?;
            let _dev = f.next()?;
            let _inode = f.next()?;
            let path = f.collect::<Vec<_>>().join(" ");
            Some(Mapping {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                offset,
                path,
            })
        })
        .collect()
}
