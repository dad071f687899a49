//! What `osmeter trace info` adds for kernel references: the user/kernel share, and with symbols
//! the references by kernel category and the busiest functions of each.

use super::attrib::{Attributor, NO_FUNCTION};
use super::category::{classify, Category, MAX_TAG};
use super::symbols::SymbolTable;
use crate::memsim::trace::{Mode, Ref};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::Path;

const KINDS: [&str; 3] = ["instructions", "reads", "writes"];

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The kernel's share of each kind of reference; `counts[kind][mode]` as `trace info` counts.
pub fn share(counts: &[[u64; 2]; 3]) -> Value {
    let mut o = Map::new();
    let (mut all, mut kernel) = (0, 0);
    for (k, c) in KINDS.iter().zip(counts) {
        o.insert(k.to_string(), json!(ratio(c[1], c[0] + c[1])));
        all += c[0] + c[1];
        kernel += c[1];
    }
    o.insert("references".into(), json!(ratio(kernel, all)));
    Value::Object(o)
}

/// Counts by function and category over one read of a trace.
pub struct Profile {
    attributor: Attributor,
    functions: Vec<[u64; 3]>,
    /// By tag (0 user), by kind.
    tags: [[u64; 3]; MAX_TAG + 1],
}

impl Profile {
    pub fn new(symbols: SymbolTable) -> Profile {
        Profile {
            functions: vec![[0; 3]; symbols.len()],
            attributor: Attributor::new(symbols),
            tags: [[0; 3]; MAX_TAG + 1],
        }
    }

    #[inline]
    pub fn observe(&mut self, r: &Ref) {
        let (tag, f) = self.attributor.attribute(r);
        let k = r.kind as usize;
        self.tags[usize::from(tag)][k] += 1;
        if f != NO_FUNCTION && r.mode == Mode::Kernel {
            self.functions[f as usize][k] += 1;
        }
    }

    /// The `attribution` part of the `trace info` document, with up to `top` functions per
    /// category (functions listed twice under one name, as padding and body, are merged).
    pub fn document(&self, symbols_path: &Path, top: usize) -> Value {
        let kernel: u64 = self.tags[1..].iter().flatten().sum();
        let mut by_cat: HashMap<Category, HashMap<&str, [u64; 3]>> = HashMap::new();
        if top > 0 {
            for (i, c) in self.functions.iter().enumerate() {
                if c.iter().sum::<u64>() == 0 {
                    continue;
                }
                let name = self.attributor.symbols().functions()[i].name.as_str();
                let cat = classify(name);
                let e = by_cat.entry(cat).or_default().entry(name).or_default();
                for (a, b) in e.iter_mut().zip(c) {
                    *a += b;
                }
            }
        }
        let categories: Vec<Value> = Category::ALL
            .iter()
            .map(|&cat| {
                let c = self.tags[usize::from(cat.tag())];
                let refs: u64 = c.iter().sum();
                let mut funcs: Vec<(&str, [u64; 3])> = by_cat
                    .get(&cat)
                    .map(|m| m.iter().map(|(n, c)| (*n, *c)).collect())
                    .unwrap_or_default();
                funcs.sort_by(|a, b| {
                    let (x, y): (u64, u64) = (a.1.iter().sum(), b.1.iter().sum());
                    y.cmp(&x).then(a.0.cmp(b.0))
                });
                funcs.truncate(top);
                json!({
                    "name": cat.name(),
                    "description": cat.describe(),
                    "instructions": c[0],
                    "reads": c[1],
                    "writes": c[2],
                    "references": refs,
                    "share_of_kernel": ratio(refs, kernel),
                    "top_functions": funcs.iter().map(|(n, c)| json!({
                        "name": n,
                        "references": c.iter().sum::<u64>(),
                        "instructions": c[0], "reads": c[1], "writes": c[2],
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let idle: u64 = self.tags[usize::from(Category::Idle.tag())].iter().sum();
        json!({
            "symbols": symbols_path.display().to_string(),
            "functions": self.attributor.symbols().len(),
            "kernel_references": kernel,
            "idle_share_of_kernel": ratio(idle, kernel),
            "categories": categories,
        })
    }
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn pct(v: &Value) -> f64 {
    100.0 * v.as_f64().unwrap_or(0.0)
}

/// The text `trace info` prints for `kernel_share` and, if present, `attribution`.
pub fn render(doc: &Value) -> String {
    let s = &doc["kernel_share"];
    let mut t = format!(
        "  kernel share: {:.1}% of references (instructions {:.1}%, reads {:.1}%, writes {:.1}%)\n",
        pct(&s["references"]),
        pct(&s["instructions"]),
        pct(&s["reads"]),
        pct(&s["writes"])
    );
    let a = &doc["attribution"];
    if a.is_null() {
        return t;
    }
    t.push_str(&format!(
        "  kernel references by category ({} functions from {}):\n",
        a["functions"],
        a["symbols"].as_str().unwrap_or("?")
    ));
    t.push_str(&format!(
        "    {:<32} {:>14} {:>12} {:>12} {:>9}\n",
        "category", "instructions", "reads", "writes", "% kernel"
    ));
    let mut omitted = 0;
    for c in a["categories"].as_array().into_iter().flatten() {
        if c["references"].as_u64() == Some(0) {
            omitted += 1;
            continue;
        }
        t.push_str(&format!(
            "    {:<32} {:>14} {:>12} {:>12} {:>8.1}%\n",
            c["name"].as_str().unwrap_or("?"),
            n(&c["instructions"]),
            n(&c["reads"]),
            n(&c["writes"]),
            pct(&c["share_of_kernel"])
        ));
        for f in c["top_functions"].as_array().into_iter().flatten() {
            let name: String = f["name"].as_str().unwrap_or("?").chars().take(30).collect();
            t.push_str(&format!(
                "      {:<30} {:>14} {:>12} {:>12} {:>8.1}%\n",
                name,
                n(&f["instructions"]),
                n(&f["reads"]),
                n(&f["writes"]),
                100.0
                    * ratio(
                        f["references"].as_u64().unwrap_or(0),
                        a["kernel_references"].as_u64().unwrap_or(0)
                    )
            ));
        }
    }
    if omitted > 0 {
        let noun = if omitted == 1 {
            "category"
        } else {
            "categories"
        };
        t.push_str(&format!(
            "    ({omitted} {noun} without references not shown)\n"
        ));
    }
    let kernel = a["kernel_references"].as_u64().unwrap_or(0);
    let nosym = a["categories"]
        .as_array()
        .and_then(|v| v.iter().find(|c| c["name"] == Category::NoSymbol.name()))
        .and_then(|c| c["references"].as_u64())
        .unwrap_or(0);
    if kernel > 0 && nosym * 10 > kernel {
        t.push_str(&format!(
            "  warning: {:.0}% of kernel references fall outside every symbol: are these the traced kernel's symbols?\n",
            100.0 * ratio(nosym, kernel)
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsim::trace::Kind;

    #[test]
    fn counts_by_category_and_function_add_up() {
        let syms = SymbolTable::parse(
            "ffffffff81000000 T do_syscall_64\nffffffff81000100 T memcpy\nffffffff81000200 T __pfx_memset\nffffffff81000210 T memset\nffffffff81000300 D end\n",
        )
        .unwrap();
        let mut p = Profile::new(syms);
        let k = |kind, a| Ref::new(kind, Mode::Kernel, 0, 4, a);
        let refs = [
            Ref::new(Kind::Instr, Mode::User, 1, 4, 0x1000),
            k(Kind::Instr, 0xffffffff81000000),
            k(Kind::Read, 0x10),
            k(Kind::Instr, 0xffffffff81000100),
            k(Kind::Write, 0x20),
            k(Kind::Write, 0x24),
            k(Kind::Instr, 0xffffffff81000204), // memset's padding
            k(Kind::Instr, 0xffffffff81000214), // memset
            k(Kind::Instr, 0xffffffff81000300), // data: no symbol
        ];
        for r in &refs {
            p.observe(r);
        }
        let doc = p.document(Path::new("k.syms"), 3);
        assert_eq!(doc["kernel_references"], 8);
        let cats = doc["categories"].as_array().unwrap();
        let get = |n: &str| cats.iter().find(|c| c["name"] == n).unwrap();
        assert_eq!(get("syscall")["instructions"], 1);
        assert_eq!(get("syscall")["reads"], 1);
        assert_eq!(get("block-copy")["instructions"], 3);
        assert_eq!(get("block-copy")["writes"], 2);
        assert_eq!(get("no-symbol")["references"], 1);
        assert_eq!(get("block-copy")["share_of_kernel"], 5.0 / 8.0);
        let top = get("block-copy")["top_functions"].as_array().unwrap();
        // memcpy has 3 references, memset 2 (padding and body merged under one name).
        assert_eq!(top[0]["name"], "memcpy");
        assert_eq!(top[0]["references"], 3);
        assert_eq!(top[1]["name"], "memset");
        assert_eq!(top[1]["instructions"], 2);
        let shares = share(&[[3, 1], [1, 1], [0, 0]]);
        assert_eq!(shares["instructions"], 0.25);
        assert_eq!(shares["reads"], 0.5);
        assert_eq!(shares["writes"], 0.0);
        assert_eq!(shares["references"], 2.0 / 6.0);
        let text = render(&json!({"kernel_share": shares, "attribution": doc}));
        assert!(
            text.contains("block-copy") && text.contains("memcpy"),
            "{text}"
        );
        assert!(text.contains("kernel share: 33.3%"), "{text}");
        // One in eight kernel references has no symbol: more than a tenth, so a warning.
        assert!(text.contains("outside every symbol"), "{text}");
    }
}
