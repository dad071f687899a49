//! Kernel symbol tables: `/proc/kallsyms` text and classic `System.map` (`nm` output, with or
//! without sizes), reduced to the functions and the boundaries that end them.
//!
//! Neither format gives a function's size (except `nm -S`), so a function is taken to run up to
//! the next symbol of any kind: data and read-only symbols and linker markers (`_etext`,
//! `__entry_text_end`, ...) end a function without being one. A function that no later symbol
//! ends covers at most [`LAST_SPAN`] bytes. The padding symbols of kernels built with call
//! padding (6.2 and later, `__pfx_NAME`) name the function they precede, so code that runs in the
//! padding is charged to that function.

use anyhow::{bail, Context, Result};
use std::path::Path;

/// Extent of a function with no symbol after it.
pub const LAST_SPAN: u64 = 64 * 1024;
const NONE: u32 = u32::MAX;

/// One function: its name as the file gives it (compiler suffixes such as `.isra.0` kept) and the
/// module it belongs to, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    pub module: Option<String>,
    pub start: u64,
}

impl Function {
    /// The name without compiler suffixes (`.isra.0`, `.constprop.0`, `.cold`, `.part.0`,
    /// `.llvm.123`), as rules match it.
    pub fn base_name(&self) -> &str {
        base_name(&self.name)
    }
}

pub fn base_name(name: &str) -> &str {
    // A leading dot would leave nothing; such names are kept whole.
    match name.find('.') {
        Some(i) if i > 0 => &name[..i],
        _ => name,
    }
}

/// Functions sorted by address, with the boundaries between them.
#[derive(Debug, Clone, Default)]
pub struct SymbolTable {
    /// (start, function index or NONE for a boundary), sorted by start, one entry per address.
    entries: Vec<(u64, u32)>,
    functions: Vec<Function>,
}

/// A parsed line: address, optional size, type letter, name, module.
struct Line<'a> {
    addr: u64,
    size: Option<u64>,
    kind: char,
    name: &'a str,
    module: Option<&'a str>,
}

fn parse_line(line: &str) -> Option<Line<'_>> {
    // kallsyms puts the module after a tab: "addr t name\t[module]".
    let (main, module) = match line.split_once('\t') {
        Some((m, rest)) => {
            let rest = rest.trim();
            let module = rest.strip_prefix('[').and_then(|r| r.strip_suffix(']'))?;
            (m, Some(module))
        }
        None => (line, None),
    };
    let fields: Vec<&str> = main.split_whitespace().collect();
    let hex = |s: &str| {
        (!s.is_empty() && s.len() <= 16)
            .then(|| u64::from_str_radix(s, 16).ok())
            .flatten()
    };
    let letter = |s: &str| {
        let mut c = s.chars();
        match (c.next(), c.next()) {
            (Some(k), None) if k.is_ascii_alphabetic() || k == '?' || k == '-' => Some(k),
            _ => None,
        }
    };
    let (addr, size, kind, name, rest) = match fields.as_slice() {
        [a, k, n, rest @ ..] if letter(k).is_some() => (hex(a)?, None, letter(k)?, *n, rest),
        // nm -S: address, size, type, name.
        [a, s, k, n, rest @ ..] if letter(k).is_some() => {
            (hex(a)?, Some(hex(s)?), letter(k)?, *n, rest)
        }
        _ => return None,
    };
    // nm may print a module in brackets after a space; anything else after the name is garbage.
    let module = match (module, rest) {
        (m, []) => m,
        (None, [m]) => Some(m.strip_prefix('[').and_then(|r| r.strip_suffix(']'))?),
        _ => return None,
    };
    Some(Line {
        addr,
        size,
        kind,
        name,
        module,
    })
}

/// Linker and section markers: symbols at the edges of regions, not functions. Many real
/// functions end in `_start` or `_end`, so only the shapes the kernel's linker script uses count.
fn is_marker(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "_text",
        "_stext",
        "_etext",
        "_sinittext",
        "_einittext",
        "_end",
        "_edata",
        "_sdata",
        "__indirect_thunk_start",
        "__indirect_thunk_end",
    ];
    EXACT.contains(&name)
        || name.starts_with("__start_")
        || name.starts_with("__stop_")
        || (name.starts_with("__")
            && (name.ends_with("_text_start") || name.ends_with("_text_end")))
}

impl SymbolTable {
    /// Reads a symbol file; errors name the file.
    pub fn load(path: &Path) -> Result<SymbolTable> {
        let bytes = std::fs::read(path)
            .with_context(|| format!("cannot read kernel symbols {}", path.display()))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            anyhow::anyhow!(
                "kernel symbols {}: not text (invalid UTF-8 at byte {}): expected /proc/kallsyms or System.map",
                path.display(),
                e.utf8_error().valid_up_to()
            )
        })?;
        SymbolTable::parse(&text).with_context(|| format!("kernel symbols {}", path.display()))
    }

    /// Parses kallsyms or System.map text. Blank lines are skipped; any other line that is not
    /// `ADDRESS [SIZE] TYPE NAME [[MODULE]]` is an error naming its line number.
    pub fn parse(text: &str) -> Result<SymbolTable> {
        let mut raw: Vec<(u64, Option<u64>, bool, usize)> = Vec::new();
        let mut functions = Vec::new();
        let mut lines = 0usize;
        let mut nonzero = false;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            lines += 1;
            let l = parse_line(line).ok_or_else(|| {
                let shown: String = line.chars().take(80).collect();
                anyhow::anyhow!(
                    "line {}: {shown:?} is not a symbol line (expected \"ADDRESS TYPE NAME\" as in /proc/kallsyms or System.map)",
                    i + 1
                )
            })?;
            match l.kind {
                // Absolute symbols (per-CPU offsets, constants) and undefined ones are no places
                // in the kernel's text.
                'a' | 'A' | 'U' | 'u' | 'N' | 'n' | '?' | '-' => continue,
                _ => {}
            }
            let text_kind = matches!(l.kind, 't' | 'T' | 'w' | 'W');
            let name = match l.name.strip_prefix("__pfx_") {
                Some(rest) if text_kind && !rest.is_empty() => rest,
                _ => l.name,
            };
            let function = text_kind && !is_marker(name);
            if function {
                nonzero |= l.addr != 0;
                functions.push(Function {
                    name: name.to_string(),
                    module: l.module.map(str::to_string),
                    start: l.addr,
                });
                raw.push((l.addr, l.size, true, functions.len() - 1));
            } else {
                raw.push((l.addr, None, false, usize::MAX));
            }
        }
        if lines == 0 {
            bail!("the file is empty: expected /proc/kallsyms or System.map text");
        }
        if functions.is_empty() {
            bail!(
                "no function symbols (type t, T, w or W) in {lines} lines: not a kernel symbol table"
            );
        }
        if !nonzero {
            return Err(super::hidden::HiddenAddresses.into());
        }
        Ok(SymbolTable::build(raw, functions))
    }

    fn build(mut raw: Vec<(u64, Option<u64>, bool, usize)>, functions: Vec<Function>) -> Self {
        // Functions sort before boundaries at one address, and the first function listed wins.
        raw.sort_by_key(|&(addr, _, func, order)| (addr, !func, order));
        let mut entries: Vec<(u64, u32)> = Vec::with_capacity(raw.len());
        let mut sized_ends: Vec<u64> = Vec::new();
        for &(addr, size, func, idx) in &raw {
            if entries.last().is_some_and(|e| e.0 == addr) {
                continue;
            }
            entries.push((addr, if func { idx as u32 } else { NONE }));
            if let (true, Some(s)) = (func, size) {
                if s > 0 {
                    sized_ends.push(addr.saturating_add(s));
                }
            }
        }
        // A size from nm -S ends a function before the next symbol does.
        if !sized_ends.is_empty() {
            for end in sized_ends {
                if let Err(pos) = entries.binary_search_by_key(&end, |e| e.0) {
                    entries.insert(pos, (end, NONE));
                }
            }
        }
        let last = entries.last().copied();
        if let Some((addr, idx)) = last {
            if idx != NONE {
                entries.push((addr.saturating_add(LAST_SPAN), NONE));
            }
        }
        SymbolTable { entries, functions }
    }

    pub fn functions(&self) -> &[Function] {
        &self.functions
    }

    pub fn len(&self) -> usize {
        self.functions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    /// The function containing `addr` and the address range [lo, hi) over which that answer holds
    /// (so a caller can cache it). Outside every function the index is `None`.
    pub fn lookup_range(&self, addr: u64) -> (Option<u32>, u64, u64) {
        let pos = self.entries.partition_point(|e| e.0 <= addr);
        if pos == 0 {
            let hi = self.entries.first().map_or(u64::MAX, |e| e.0);
            return (None, 0, hi);
        }
        let (lo, idx) = self.entries[pos - 1];
        let hi = self.entries.get(pos).map_or(u64::MAX, |e| e.0);
        ((idx != NONE).then_some(idx), lo, hi)
    }

    pub fn lookup(&self, addr: u64) -> Option<&Function> {
        self.lookup_range(addr)
            .0
            .map(|i| &self.functions[i as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KALLSYMS: &str = "\
0000000000000000 A fixed_percpu_data
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000000 T startup_64
ffffffff81000070 T secondary_startup_64
ffffffff81001000 t do_one_initcall.cold
ffffffff81002000 D some_data
ffffffff81003000 T do_syscall_64
ffffffff81003080 T __entry_text_start
ffffffff81003090 T __oops_end
ffffffff81003100 T _etext
ffffffffc0100000 t e1000_probe\t[e1000]
ffffffffc0100200 t e1000_remove\t[e1000]
";

    #[test]
    fn kallsyms_functions_boundaries_and_modules() {
        let t = SymbolTable::parse(KALLSYMS).unwrap();
        let name = |a: u64| t.lookup(a).map(|f| f.name.as_str());
        assert_eq!(name(0xffffffff81000000), Some("startup_64"));
        assert_eq!(name(0xffffffff8100006f), Some("startup_64"));
        assert_eq!(name(0xffffffff81000070), Some("secondary_startup_64"));
        assert_eq!(name(0xffffffff81001fff), Some("do_one_initcall.cold"));
        // Data ends the function before it; a marker ends one without being one.
        assert_eq!(name(0xffffffff81002000), None);
        assert_eq!(name(0xffffffff8100307f), Some("do_syscall_64"));
        assert_eq!(name(0xffffffff81003080), None);
        // A function whose name merely ends in _end is a function.
        assert_eq!(name(0xffffffff810030ff), Some("__oops_end"));
        assert_eq!(name(0xffffffff81003100), None);
        assert_eq!(name(0xffffffff80ffffff), None);
        let m = t.lookup(0xffffffffc0100210).unwrap();
        assert_eq!(
            (m.name.as_str(), m.module.as_deref()),
            ("e1000_remove", Some("e1000"))
        );
        // The last function covers a bounded span.
        assert!(t.lookup(0xffffffffc0100200 + LAST_SPAN - 1).is_some());
        assert!(t.lookup(0xffffffffc0100200 + LAST_SPAN).is_none());
        assert_eq!(t.len(), 7);
        assert_eq!(t.functions()[2].base_name(), "do_one_initcall");
    }

    #[test]
    fn lookup_range_is_the_span_of_the_answer() {
        let t = SymbolTable::parse(KALLSYMS).unwrap();
        let (f, lo, hi) = t.lookup_range(0xffffffff81000080);
        assert_eq!(
            t.functions()[f.unwrap() as usize].name,
            "secondary_startup_64"
        );
        assert_eq!((lo, hi), (0xffffffff81000070, 0xffffffff81001000));
        assert_eq!(t.lookup_range(5), (None, 0, 0xffffffff81000000));
    }

    #[test]
    fn system_map_unsorted_and_nm_sizes() {
        let map = "ffffffff81000200 t b\nffffffff81000100 T a\n\nffffffff81000300 r ro\n";
        let t = SymbolTable::parse(map).unwrap();
        assert_eq!(t.lookup(0xffffffff81000150).unwrap().name, "a");
        assert_eq!(t.lookup(0xffffffff810002ff).unwrap().name, "b");
        let sized =
            "ffffffff81000100 0000000000000010 T a\nffffffff81000200 0000000000000008 t b\n";
        let t = SymbolTable::parse(sized).unwrap();
        assert_eq!(t.lookup(0xffffffff8100010f).unwrap().name, "a");
        assert!(t.lookup(0xffffffff81000110).is_none());
        assert!(t.lookup(0xffffffff81000208).is_none());
    }

    #[test]
    fn padding_belongs_to_the_function_after_it() {
        let t = SymbolTable::parse(
            "ffffffff81000000 T __pfx_foo\nffffffff81000010 T foo\nffffffff81000040 T __pfx_bar\nffffffff81000050 T bar\n",
        )
        .unwrap();
        assert_eq!(t.lookup(0xffffffff81000004).unwrap().name, "foo");
        assert_eq!(t.lookup(0xffffffff81000020).unwrap().name, "foo");
        assert_eq!(t.lookup(0xffffffff81000044).unwrap().name, "bar");
    }

    #[test]
    fn bad_files_name_the_problem_and_the_line() {
        let e = SymbolTable::parse("").unwrap_err().to_string();
        assert!(e.contains("empty"), "{e}");
        let e = SymbolTable::parse("\n  \n").unwrap_err().to_string();
        assert!(e.contains("empty"), "{e}");
        let e = SymbolTable::parse("ffffffff81000000 T a\nhello world\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("hello world"), "{e}");
        let e = SymbolTable::parse("ffffffff8100zz00 T a\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1"), "{e}");
        let e = SymbolTable::parse("ffffffff81000000 D only_data\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no function symbols"), "{e}");
        let e = SymbolTable::parse("0000000000000000 T a\n0000000000000000 t b\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("hid them"), "{e}");
        let e = SymbolTable::parse("ffffffff81000000 T a extra words\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1"), "{e}");
    }
}
