//! The layer map in src/lib.rs is kept true: every `crate::` path in src/ points to a module of the
//! same layer or a lower one, except the arrows listed in [`STILL_UP`], and every arrow listed there
//! is still needed (so the list only shrinks as modules move). A layer moved out into a crate of
//! its own stays on the map under the names src/lib.rs re-exports it as (`stats`, base's `units`,
//! `console`, ..., kernel's `tracefs`, ...); tests/crates.rs keeps the crates themselves in order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Imports that still point up: (file under src/, the module it reaches), and the move that will
/// take the arrow away.
const STILL_UP: &[(&str, &str, &str)] = &[];

/// Layer of each top-level module, read from the map in src/lib.rs's documentation.
fn layers(root: &Path) -> BTreeMap<String, u32> {
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let map = lib
        .split("```text")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("src/lib.rs documents the layers in a ```text block");
    let mut out = BTreeMap::new();
    let mut level = 0;
    for line in map.lines() {
        let words: Vec<&str> = line.trim_start_matches("//!").split_whitespace().collect();
        // `N name module...`, or a line of more modules of the layer above it.
        let modules = match words.first().and_then(|w| w.parse::<u32>().ok()) {
            Some(n) => {
                level = n;
                words.get(2..).unwrap_or_default()
            }
            None => &words[..],
        };
        for &module in modules {
            assert!(
                out.insert(module.to_string(), level).is_none(),
                "{module} is in two layers of src/lib.rs's map"
            );
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules a file names through `crate::` (in paths and in `use crate::{a, b}`),
/// comments left out.
fn reached(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let name = ident(item.trim());
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn imports_point_down_the_layers_of_the_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let layer = layers(root);
    let src = root.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut up = BTreeSet::new();
    for file in &files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        if rel == "lib.rs" || rel == "main.rs" {
            continue;
        }
        let own = rel.split('/').next().unwrap().trim_end_matches(".rs");
        let own_layer = *layer
            .get(own)
            .unwrap_or_else(|| panic!("src/{own} is in no layer of src/lib.rs's map"));
        for target in reached(&std::fs::read_to_string(file).unwrap()) {
            let Some(&target_layer) = layer.get(&target) else {
                continue; // a crate:: macro or an item of lib.rs
            };
            if target_layer > own_layer {
                up.insert((rel.clone(), target));
            }
        }
    }
    let listed: BTreeSet<(String, String)> = STILL_UP
        .iter()
        .map(|(f, m, _)| (f.to_string(), m.to_string()))
        .collect();
    let new: Vec<_> = up.difference(&listed).collect();
    assert!(
        new.is_empty(),
        "imports from a higher layer (see the map in src/lib.rs; move the code down or the \
         import's target up): {new:?}"
    );
    let gone: Vec<_> = listed.difference(&up).collect();
    assert!(
        gone.is_empty(),
        "these arrows no longer point up: take them out of STILL_UP in tests/layers.rs: {gone:?}"
    );
}

#[test]
fn every_module_of_src_is_on_the_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let layer = layers(root);
    for entry in std::fs::read_dir(root.join("src")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        let module = name.trim_end_matches(".rs");
        if matches!(module, "lib" | "main") || (!name.ends_with(".rs") && module.contains('.')) {
            continue;
        }
        assert!(
            layer.contains_key(module),
            "src/{name} is in no layer of the map in src/lib.rs"
        );
    }
}

/// The names lib.rs re-exports at the top level: `pub use a::b as name;`, `pub use a::name;` and
/// the names of a group, `pub use a::{x, y as name};` (rustfmt may spread one over lines).
fn reexported(lib: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for item in lib.split("\npub use ").skip(1) {
        let item = item.split(';').next().unwrap_or("");
        let names = match item.split_once('{') {
            Some((_, group)) => group.split('}').next().unwrap_or("").split(',').collect(),
            None => vec![item],
        };
        for name in names {
            let last = name.split_whitespace().last().unwrap_or("");
            let last = last.rsplit("::").next().unwrap_or("");
            if !last.is_empty() {
                out.insert(last.to_string());
            }
        }
    }
    out
}

#[test]
fn every_name_on_the_map_is_a_module_of_src_or_a_crate_reexported_there() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let names = reexported(&std::fs::read_to_string(root.join("src/lib.rs")).unwrap());
    for name in layers(root).keys() {
        let module = root.join(format!("src/{name}.rs")).is_file()
            || root.join(format!("src/{name}")).is_dir();
        assert!(
            module || names.contains(name),
            "{name} is on the map in src/lib.rs but is neither a module of src/ nor re-exported \
             there from a crate (`pub use osmeter_{name} as {name};`, `pub use krate::{{{name}}};`)"
        );
    }
}

#[test]
fn the_reexports_are_read_in_every_shape() {
    let lib = concat!(
        "//! pub use not::this;\n",
        "pub use osmeter_stats as stats;\n",
        "pub use a::{\n    b, c as d,\n    e,\n};\n",
        "pub use f::g;\n",
    );
    assert_eq!(
        reexported(lib).into_iter().collect::<Vec<_>>(),
        ["b", "d", "e", "g", "stats"]
    );
}

#[test]
fn the_scanner_sees_paths_and_groups() {
    let seen = reached("use crate::{a::b, c};\nlet x = crate::d::e(); // crate::f\n");
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        vec!["a".to_string(), "c".to_string(), "d".to_string()]
    );
}

/// Where a lib.rs declares its first module.
fn first_module(text: &str) -> usize {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(at, _)| at + 1))
        .find(|&at| text[at..].starts_with("pub mod ") || text[at..].starts_with("mod "))
        .expect("lib.rs declares a module")
}

/// Every module writes to stderr through osmeter's `eprintln!`, which a closed stderr cannot turn
/// into a panic, never through std's: a `macro_rules!` reaches only the modules declared after it,
/// so in each lib.rs it stands before the first module (osmeter-base's in its console module,
/// declared first with `#[macro_use]`; the root crate's, osmeter-kernel's and osmeter-memsim's
/// forwarding to it), and
/// nothing names std's by path.
#[test]
fn every_module_gets_osmeters_eprintln() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for forwarding in ["src", "crates/kernel/src", "crates/memsim/src"] {
        let lib = std::fs::read_to_string(root.join(forwarding).join("lib.rs")).unwrap();
        let at = lib
            .find("\nmacro_rules! eprintln")
            .unwrap_or_else(|| panic!("{forwarding}/lib.rs defines no eprintln!"));
        assert!(
            at < first_module(&lib),
            "{forwarding}/lib.rs must define eprintln! before its first module"
        );
    }
    let base = std::fs::read_to_string(root.join("crates/base/src/lib.rs")).unwrap();
    let first = first_module(&base);
    assert!(
        base[first..].starts_with("pub mod console;")
            && base[..first].trim_end().ends_with("#[macro_use]"),
        "crates/base/src/lib.rs must declare `#[macro_use] pub mod console;` before any module"
    );
    let mut files = Vec::new();
    for dir in [
        "src",
        "crates/base/src",
        "crates/kernel/src",
        "crates/memsim/src",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains("std::eprintln!"),
            "{} names std's eprintln!, which panics on a closed stderr",
            file.display()
        );
    }
}
