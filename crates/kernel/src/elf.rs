//! Function symbols of an ELF64 object (its .symtab, or .dynsym when stripped), to name user-space
//! addresses: the samples of a profile (by file offset) and the user frames tracefs writes for
//! latency's causes (by offset into the mapped code). Only a symbol whose [value, value + size)
//! holds the address names it, never the nearest name before it. Only the headers and the symbol
//! and string tables are read, not the whole file (a debug build is hundreds of MiB). Only 64-bit
//! little-endian objects are read (x86-64, arm64); others stay unnamed.

use std::fs::File;
use std::os::unix::fs::FileExt;

const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;
const PT_LOAD: u32 = 1;
const PF_X: u32 = 1;
const STT_FUNC: u8 = 2;
const STT_GNU_IFUNC: u8 = 10;

pub struct ElfSymbols {
    /// (start, end, offset of the name in `names`) sorted by start; names are demangled only when
    /// asked for (a debug build holds hundreds of thousands).
    functions: Vec<(u64, u64, u32)>,
    names: Vec<u8>,
    segments: Vec<Segment>,
}

/// A loadable segment: where it lies in the file and where it is mapped.
struct Segment {
    offset: u64,
    file_size: u64,
    vaddr: u64,
    memory_size: u64,
    executable: bool,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn read_at(file: &File, offset: u64, len: u64) -> Option<Vec<u8>> {
    // Far larger than any symbol table: a corrupt header must not allocate gigabytes.
    if len > 1 << 30 {
        return None;
    }
    let mut buf = vec![0; len as usize];
    file.read_exact_at(&mut buf, offset).ok()?;
    Some(buf)
}

impl ElfSymbols {
    /// None for anything that is not a little-endian ELF64 file with function symbols.
    pub fn read(path: &str) -> Option<ElfSymbols> {
        let file = File::open(path).ok()?;
        let head = read_at(&file, 0, 64)?;
        if &head[..4] != b"\x7fELF" || head[4] != 2 || head[5] != 1 {
            return None;
        }
        let (phoff, shoff) = (u64_at(&head, 32)?, u64_at(&head, 40)?);
        let (phnum, shnum) = (u16_at(&head, 56)? as u64, u16_at(&head, 60)? as u64);
        let phs = read_at(&file, phoff, phnum * 56)?;
        let segments = (0..phnum as usize)
            .map(|i| &phs[i * 56..i * 56 + 56])
            .filter(|p| u32_at(p, 0) == Some(PT_LOAD))
            .filter_map(|p| {
                Some(Segment {
                    offset: u64_at(p, 8)?,
                    file_size: u64_at(p, 32)?,
                    vaddr: u64_at(p, 16)?,
                    memory_size: u64_at(p, 40)?,
                    executable: u32_at(p, 4)? & PF_X != 0,
                })
            })
            .collect();
        let shs = read_at(&file, shoff, shnum * 64)?;
        let section = |i: usize| shs.get(i * 64..i * 64 + 64);
        let table = [SHT_SYMTAB, SHT_DYNSYM].into_iter().find_map(|kind| {
            (0..shnum as usize).find(|&i| section(i).and_then(|s| u32_at(s, 4)) == Some(kind))
        })?;
        let sym = section(table)?;
        let strings = section(u32_at(sym, 40)? as usize)?;
        let symbols = read_at(&file, u64_at(sym, 24)?, u64_at(sym, 32)?)?;
        let names = read_at(&file, u64_at(strings, 24)?, u64_at(strings, 32)?)?;
        let mut functions: Vec<(u64, u64, u32)> = symbols
            .chunks_exact(24)
            .filter(|s| matches!(s[4] & 0xf, STT_FUNC | STT_GNU_IFUNC))
            .filter_map(|s| {
                let (value, size) = (u64_at(s, 8)?, u64_at(s, 16)?);
                if value == 0 || size == 0 {
                    return None;
                }
                Some((value, value + size, u32_at(s, 0)?))
            })
            .collect();
        functions.sort_by_key(|f| f.0);
        functions.dedup_by_key(|f| f.0);
        (!functions.is_empty()).then_some(ElfSymbols {
            functions,
            names,
            segments,
        })
    }

    /// The function at `offset` into the file, if a symbol covers it.
    pub fn at_file_offset(&self, offset: u64) -> Option<String> {
        let s = self
            .segments
            .iter()
            .find(|s| s.offset <= offset && offset < s.offset + s.file_size)?;
        Some(self.function_at(offset - s.offset + s.vaddr)?.0)
    }

    /// The function holding the instruction `offset` bytes into the object's mapped code (as
    /// tracefs writes a user frame: from the start of the memory area, which begins at the page
    /// of the executable segment), and the instruction's distance from the function's start.
    pub fn in_mapped_code(&self, offset: u64) -> Option<(String, u64)> {
        let page = osmeter_base::system::page_size() as u64;
        self.segments
            .iter()
            .filter(|s| s.executable)
            .find_map(|s| {
                let addr = (s.vaddr & !(page - 1)) + offset;
                (s.vaddr <= addr && addr < s.vaddr + s.memory_size).then_some(addr)
            })
            .and_then(|addr| self.function_at(addr))
    }

    /// The demangled name of the function holding virtual address `addr`, and the distance.
    fn function_at(&self, addr: u64) -> Option<(String, u64)> {
        let i = self.functions.partition_point(|f| f.0 <= addr);
        let &(start, end, name_at) = self.functions.get(i.checked_sub(1)?)?;
        if addr >= end {
            return None;
        }
        let raw = self.names.get(name_at as usize..)?;
        let raw = &raw[..raw.iter().position(|&b| b == 0)?];
        Some((demangle(std::str::from_utf8(raw).ok()?), addr - start))
    }
}

/// Rust's legacy mangling (`_ZN3std2io5stdio6_print17h0123456789abcdefE` -> `std::io::stdio::_print`);
/// anything else is returned as it is.
pub fn demangle(name: &str) -> String {
    let Some(mut rest) = name.strip_prefix("_ZN") else {
        return name.to_string();
    };
    let mut parts = Vec::new();
    while let Some(digits) = rest.find(|c: char| !c.is_ascii_digit()).filter(|&d| d > 0) {
        let Ok(len) = rest[..digits].parse::<usize>() else {
            return name.to_string();
        };
        let Some(part) = rest.get(digits..digits + len) else {
            return name.to_string();
        };
        parts.push(part);
        rest = &rest[digits + len..];
    }
    if !rest.starts_with('E') || parts.is_empty() {
        return name.to_string();
    }
    let is_hash = |p: &str| {
        p.len() == 17 && p.starts_with('h') && p[1..].bytes().all(|b| b.is_ascii_hexdigit())
    };
    if parts.last().is_some_and(|p| is_hash(p)) {
        parts.pop();
    }
    let joined = parts.join("::");
    let mut out = joined
        .strip_prefix('_')
        .filter(|s| s.starts_with('$'))
        .unwrap_or(&joined)
        .to_string();
    for (from, to) in [
        ("$LT$", "<"),
        ("$GT$", ">"),
        ("$RF$", "&"),
        ("$BP$", "*"),
        ("$C$", ","),
        ("$u20$", " "),
        ("$u27$", "'"),
        ("$u5b$", "["),
        ("$u5d$", "]"),
        ("$u7b$", "{"),
        ("$u7d$", "}"),
        ("$u7e$", "~"),
        ("..", "::"),
    ] {
        out = out.replace(from, to);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_rust_names_lose_their_hash_and_escapes() {
        assert_eq!(
            demangle("_ZN3std2io5stdio6_print17h0123456789abcdefE"),
            "std::io::stdio::_print"
        );
        assert_eq!(
            demangle("_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure$u7d$$u7d$$GT$17h0123456789abcdefE"),
            "core::ptr::drop_in_place<std::rt::lang_start<$LP$$RP$>::{{closure}}>"
        );
        assert_eq!(
            demangle("_ZN4core3ptr23drop_in_place$LT$u8$GT$17h0123456789abcdefE"),
            "core::ptr::drop_in_place<u8>"
        );
        assert_eq!(demangle("_ZN3bad99E"), "_ZN3bad99E");
        assert_eq!(demangle("getppid"), "getppid");
        assert_eq!(demangle("_ZN3foo"), "_ZN3foo");
        assert_eq!(demangle("_ZN99fooE"), "_ZN99fooE");
    }

    /// This test's own executable: its symbol table names the function that is running.
    #[test]
    fn the_running_test_binary_names_its_own_functions() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let syms = ElfSymbols::read(exe.to_str().unwrap()).expect("test binaries keep symbols");
        let here = the_running_test_binary_names_its_own_functions as *const () as usize as u64;
        // The mapping holding it (start-end perms offset ...), as the kernel lists it.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let (start, offset) = maps
            .lines()
            .find_map(|l| {
                let mut fields = l.split_whitespace();
                let (a, b) = fields.next()?.split_once('-')?;
                let offset = u64::from_str_radix(fields.nth(1)?, 16).ok()?;
                let (a, b) = (
                    u64::from_str_radix(a, 16).ok()?,
                    u64::from_str_radix(b, 16).ok()?,
                );
                (a <= here && here < b).then_some((a, offset))
            })
            .expect("the mapping of this test's code");
        let name = syms.at_file_offset(here - start + offset).unwrap();
        assert!(
            name.ends_with("the_running_test_binary_names_its_own_functions"),
            "{name}"
        );
        assert!(ElfSymbols::read("/proc/self/maps").is_none());
        assert!(ElfSymbols::read("/nonexistent").is_none());
    }
}
