//! The crate graph is kept true to the crate map in docs/architecture.md: every crate of the
//! workspace is on the map with its layer, every crate on the map is in the workspace, and no
//! crate depends (in any kind: normal, build or dev) on a crate of a higher layer. The compiler
//! then keeps each arrow where the map puts it; this test keeps the map where the manifests are.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The section of docs/architecture.md that holds the map.
const SECTION: &str = "## The crates";

/// Crate name -> layer, from the map's lines: "- `name` (layer N, ...".
fn map(doc: &str) -> BTreeMap<String, u32> {
    let section = doc
        .split(SECTION)
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_else(|| panic!("docs/architecture.md has no section {SECTION:?}"));
    let mut out = BTreeMap::new();
    for line in section.lines() {
        let Some(rest) = line.trim_start().strip_prefix("- `") else {
            continue;
        };
        let Some((name, rest)) = rest.split_once('`') else {
            continue;
        };
        let Some(layer) = rest.trim_start().strip_prefix("(layer ") else {
            continue;
        };
        let digits: String = layer.chars().take_while(char::is_ascii_digit).collect();
        let layer = digits
            .parse()
            .unwrap_or_else(|_| panic!("the map gives {name} no layer number: {line:?}"));
        assert!(
            out.insert(name.to_string(), layer).is_none(),
            "{name} is on the crate map twice"
        );
    }
    out
}

/// `cargo metadata` of the workspace's own packages, dependencies unresolved.
fn metadata(root: &Path) -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each crate of the workspace and the crates of the workspace it depends on.
fn workspace(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let meta = metadata(root);
    // Without dependencies resolved, the packages listed are exactly the workspace's members.
    let packages = meta["packages"].as_array().unwrap();
    let members: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["name"].as_str().unwrap().to_string())
                .filter(|d| members.contains(d))
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

#[test]
fn every_crate_is_on_the_map_and_depends_only_on_its_layer_or_lower() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let layer = map(&doc);
    let crates = workspace(root);
    for name in crates.keys() {
        assert!(
            layer.contains_key(name),
            "crate {name} is in the workspace but not on the crate map of docs/architecture.md \
             (section {SECTION:?}): add it with its layer and its job"
        );
    }
    for name in layer.keys() {
        assert!(
            crates.contains_key(name),
            "crate {name} is on the map of docs/architecture.md but not in the workspace"
        );
    }
    let up: Vec<String> = crates
        .iter()
        .flat_map(|(from, deps)| deps.iter().map(move |to| (from, to)))
        .filter(|(from, to)| layer[*to] > layer[*from])
        .map(|(from, to)| {
            format!(
                "{from} (layer {}) -> {to} (layer {})",
                layer[from], layer[to]
            )
        })
        .collect();
    assert!(
        up.is_empty(),
        "crates that depend on a higher layer (move the code down, or the crate up on the map \
         with a reason): {up:?}"
    );
}

#[test]
fn the_map_is_read_from_its_section_only() {
    let doc = "# A\n- `x` (layer 9, elsewhere)\n## The crates\ntext\n- `top` (layer 8, root)\n  \
               - `low` (layer 1, base): job\n- not a crate\n## Next\n- `y` (layer 2)\n";
    let m = map(doc);
    assert_eq!(
        m.into_iter().collect::<Vec<_>>(),
        vec![("low".to_string(), 1), ("top".to_string(), 8)]
    );
}

/// Only the binary knows the command line: the crates below hand it plain types (a format, a
/// store's location, a preset), and it defines their flags, values and help (src/cli.rs and
/// src/cli/). A lower crate that took clap back would tie its types to one front end.
#[test]
fn no_crate_but_the_root_depends_on_clap() {
    let meta = metadata(Path::new(env!("CARGO_MANIFEST_DIR")));
    let mut with_clap = Vec::new();
    for p in meta["packages"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap();
        for d in p["dependencies"].as_array().unwrap() {
            let dep = d["name"].as_str().unwrap();
            if name != "osmeter" && (dep == "clap" || dep.starts_with("clap_")) {
                with_clap.push(format!("{name} -> {dep}"));
            }
        }
    }
    assert!(
        with_clap.is_empty(),
        "crates below the binary that depend on clap (move their command-line side to src/cli/): \
         {with_clap:?}"
    );
}
