//! Names of user-space functions, for the user stacks of cause capture: a small reader of an ELF
//! object's symbol tables (`.symtab`, else `.dynsym`) and of where its code is mapped.
//!
//! tracefs writes a user frame as `OBJECT[+0xOFF]`, OFF being the instruction's distance from the
//! start of the memory area it lies in (`vm_start`). Code lies in the object's executable load
//! segment, mapped from its page-aligned virtual address, so the address in the object is that
//! page plus OFF; the function is the symbol whose range holds it. Only 64-bit little-endian
//! objects are read (x86-64, arm64); others, stripped objects and files gone since stay unnamed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const PT_LOAD: u32 = 1;
const PF_X: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;
const STT_FUNC: u8 = 2;
const STT_GNU_IFUNC: u8 = 10;

/// The functions of one object and where its code is mapped.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectSymbols {
    /// (address, size, name), by address.
    functions: Vec<(u64, u64, String)>,
    /// Executable load segments: (virtual address, memory size).
    code: Vec<(u64, u64)>,
}

fn u16_at(d: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(d.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(d.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(d: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(d.get(at..at + 8)?.try_into().ok()?))
}

fn c_str(d: &[u8], at: usize) -> Option<&str> {
    let rest = d.get(at..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    std::str::from_utf8(&rest[..end]).ok()
}

impl ObjectSymbols {
    /// Reads an object's symbols; None when it is no 64-bit little-endian ELF object.
    pub fn parse(d: &[u8]) -> Option<ObjectSymbols> {
        if d.get(..4)? != b"\x7fELF" || *d.get(4)? != 2 || *d.get(5)? != 1 {
            return None;
        }
        let (phoff, shoff) = (u64_at(d, 0x20)? as usize, u64_at(d, 0x28)? as usize);
        let (phentsize, phnum) = (u16_at(d, 0x36)? as usize, u16_at(d, 0x38)? as usize);
        let (shentsize, shnum) = (u16_at(d, 0x3a)? as usize, u16_at(d, 0x3c)? as usize);
        let mut code = Vec::new();
        for i in 0..phnum {
            let p = phoff + i * phentsize;
            if u32_at(d, p)? == PT_LOAD && u32_at(d, p + 4)? & PF_X != 0 {
                code.push((u64_at(d, p + 16)?, u64_at(d, p + 40)?));
            }
        }
        let section = |i: usize| -> Option<(u32, usize, usize, u32, usize)> {
            let s = shoff + i * shentsize;
            Some((
                u32_at(d, s + 4)?,
                u64_at(d, s + 24)? as usize,
                u64_at(d, s + 32)? as usize,
                u32_at(d, s + 40)?,
                u64_at(d, s + 56)? as usize,
            ))
        };
        let tables: Vec<_> = (0..shnum).filter_map(section).collect();
        // The full table when the object has one, else the dynamic one.
        let table = tables
            .iter()
            .find(|t| t.0 == SHT_SYMTAB)
            .or_else(|| tables.iter().find(|t| t.0 == SHT_DYNSYM));
        let mut functions = Vec::new();
        if let Some(&(_, offset, size, link, entsize)) = table {
            let (_, strings, _, _, _) = section(link as usize)?;
            let entsize = if entsize == 0 { 24 } else { entsize };
            for k in 0..size / entsize {
                let s = offset + k * entsize;
                let kind = *d.get(s + 4)? & 0xf;
                let (value, len) = (u64_at(d, s + 8)?, u64_at(d, s + 16)?);
                if (kind == STT_FUNC || kind == STT_GNU_IFUNC) && value != 0 && len > 0 {
                    if let Some(name) = c_str(d, strings + u32_at(d, s)? as usize) {
                        functions.push((value, len, name.to_string()));
                    }
                }
            }
        }
        functions.sort();
        functions.dedup_by(|a, b| a.0 == b.0);
        Some(ObjectSymbols { functions, code })
    }

    pub fn read(path: &str) -> Option<ObjectSymbols> {
        ObjectSymbols::parse(&std::fs::read(path).ok()?)
    }

    /// The function holding the instruction `offset` bytes into the object's mapped code, and
    /// the instruction's distance from the function's start.
    pub fn function_at(&self, offset: u64) -> Option<(&str, u64)> {
        let page = page_size();
        self.code.iter().find_map(|&(vaddr, size)| {
            let addr = (vaddr & !(page - 1)) + offset;
            if addr < vaddr || addr >= vaddr + size {
                return None;
            }
            let i = self
                .functions
                .partition_point(|f| f.0 <= addr)
                .checked_sub(1)?;
            let (start, len, name) = &self.functions[i];
            (addr < start + len).then(|| (name.as_str(), addr - start))
        })
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// A mangled C++ or (legacy) Rust name made readable where it is a plain nested name
/// (`_ZN3std2io5stdio6_print17h0123456789abcdefE` -> `std::io::stdio::_print`); other names as
/// they are.
pub fn demangle(name: &str) -> String {
    let Some(mut rest) = name.strip_prefix("_ZN") else {
        return name.to_string();
    };
    let mut parts: Vec<String> = Vec::new();
    while !rest.starts_with('E') {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        let Ok(len) = rest[..digits].parse::<usize>() else {
            return name.to_string();
        };
        let Some(part) = rest.get(digits..digits + len) else {
            return name.to_string();
        };
        parts.push(part.to_string());
        rest = &rest[digits + len..];
    }
    // Rust's hash of the crate, last.
    if parts.last().is_some_and(|p| {
        p.len() == 17 && p.starts_with('h') && p[1..].chars().all(|c| c.is_ascii_hexdigit())
    }) {
        parts.pop();
    }
    let joined = parts.join("::");
    let mut out = joined;
    for (from, to) in [
        ("$LT$", "<"),
        ("$GT$", ">"),
        ("$RF$", "&"),
        ("$BP$", "*"),
        ("$C$", ","),
        ("$u20$", " "),
        ("$u7b$", "{"),
        ("$u7d$", "}"),
        ("$u27$", "'"),
        ("$u5b$", "["),
        ("$u5d$", "]"),
        ("..", "::"),
    ] {
        out = out.replace(from, to);
    }
    out
}

/// A user frame as tracefs writes it: the object's path and the offset into its mapped area.
pub fn parse_frame(frame: &str) -> Option<(&str, u64)> {
    let (object, rest) = frame.split_once("[+0x")?;
    let hex = rest.split(']').next()?;
    object
        .starts_with('/')
        .then_some(())
        .and(u64::from_str_radix(hex, 16).ok().map(|o| (object, o)))
}

/// The objects read so far (a run's samples name the same few many times).
static CACHE: Mutex<Option<HashMap<String, Option<Arc<ObjectSymbols>>>>> = Mutex::new(None);

/// The function a user frame was in and the object's file name, where the object has symbols.
pub fn name_frame(frame: &str) -> Option<(String, String)> {
    let (object, offset) = parse_frame(frame)?;
    let symbols = {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get_or_insert_with(HashMap::new)
            .entry(object.to_string())
            .or_insert_with(|| ObjectSymbols::read(object).map(Arc::new))
            .clone()?
    };
    let (name, _) = symbols.function_at(offset)?;
    let file = object.rsplit('/').next().unwrap_or(object).to_string();
    Some((demangle(name), file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_plain_nested_names_and_leaves_others() {
        assert_eq!(
            demangle("_ZN3std2io5stdio6_print17h0123456789abcdefE"),
            "std::io::stdio::_print"
        );
        assert_eq!(
            demangle("_ZN4core3ptr23drop_in_place$LT$u8$GT$17h0123456789abcdefE"),
            "core::ptr::drop_in_place<u8>"
        );
        assert_eq!(demangle("memcpy"), "memcpy");
        assert_eq!(demangle("_ZN3bad99E"), "_ZN3bad99E");
    }

    #[test]
    fn frames_give_their_object_and_offset() {
        assert_eq!(
            parse_frame("/usr/bin/hog[+0x1139]"),
            Some(("/usr/bin/hog", 0x1139))
        );
        assert_eq!(
            parse_frame("/usr/lib/libc.so.6[+0x2a] <00007f00>"),
            Some(("/usr/lib/libc.so.6", 0x2a))
        );
        assert_eq!(parse_frame("<00007ffd12345678>"), None);
        assert_eq!(parse_frame("[vdso][+0x10]"), None);
    }

    /// This test's own function, found in the test binary's symbol table from the offset the
    /// kernel would print for it: its address minus the start of the executable mapping.
    #[inline(never)]
    #[no_mangle]
    extern "C" fn osmeter_elfsyms_probe(x: u64) -> u64 {
        std::hint::black_box(x).wrapping_mul(3)
    }

    #[test]
    fn a_function_of_this_binary_is_named_from_its_mapped_offset() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let ip = osmeter_elfsyms_probe as *const () as u64 + 4;
        assert_eq!(osmeter_elfsyms_probe(2), 6);
        // The mapping holding the function, as the kernel's find_vma would give it.
        let start = maps
            .lines()
            .find_map(|l| {
                let range = l.split_whitespace().next()?;
                let (a, b) = range.split_once('-')?;
                let (a, b) = (
                    u64::from_str_radix(a, 16).ok()?,
                    u64::from_str_radix(b, 16).ok()?,
                );
                (a <= ip && ip < b).then_some(a)
            })
            .expect("the mapping of this test's code");
        let frame = format!("{}[+0x{:x}]", exe.display(), ip - start);
        let (name, file) = name_frame(&frame).unwrap_or_else(|| panic!("{frame} unnamed"));
        assert_eq!(name, "osmeter_elfsyms_probe");
        assert_eq!(file, exe.file_name().unwrap().to_string_lossy());
        // An offset past the code, and a file that is no ELF object, stay unnamed.
        assert_eq!(
            name_frame(&format!("{}[+0xffffffffff]", exe.display())),
            None
        );
        assert_eq!(name_frame("/proc/self/status[+0x10]"), None);
    }
}
