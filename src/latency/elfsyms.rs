//! Names of user-space functions, for the user stacks of cause capture (the symbols themselves
//! are read by [`crate::elf`]).
//!
//! tracefs writes a user frame as `OBJECT[+0xOFF]`, OFF being the instruction's distance from the
//! start of the memory area it lies in (`vm_start`). Code lies in the object's executable load
//! segment, mapped from its page-aligned virtual address, so the address in the object is that
//! page plus OFF; the function is the symbol whose range holds it. Only 64-bit little-endian
//! objects are read (x86-64, arm64); others, stripped objects and files gone since stay unnamed.

use crate::elf::ElfSymbols;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
static CACHE: Mutex<Option<HashMap<String, Option<Arc<ElfSymbols>>>>> = Mutex::new(None);

/// The function a user frame was in and the object's file name, where the object has symbols.
pub fn name_frame(frame: &str) -> Option<(String, String)> {
    let (object, offset) = parse_frame(frame)?;
    let symbols = {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get_or_insert_with(HashMap::new)
            .entry(object.to_string())
            .or_insert_with(|| ElfSymbols::read(object).map(Arc::new))
            .clone()?
    };
    let (name, _) = symbols.in_mapped_code(offset)?;
    let file = object.rsplit('/').next().unwrap_or(object).to_string();
    Some((name, file))
}

#[cfg(test)]
mod tests {
    use super::*;

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
