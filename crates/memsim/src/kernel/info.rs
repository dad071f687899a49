//! What `osmeter trace info` adds for kernel references: the user/kernel share, and with symbols
//! the references by kernel category and the busiest functions of each.

use super::attrib::{Attributor, NO_FUNCTION};
use super::category::{classify, Category, MAX_TAG};
use super::symbols::SymbolTable;
use crate::memsim::trace::{Mode, Ref};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The kernel's share of each kind of reference and of all of them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KernelShare {
    pub instructions: f64,
    pub reads: f64,
    pub writes: f64,
    pub references: f64,
}

/// The kernel's share of `counts[kind][mode]` as `trace info` counts them.
pub fn share(counts: &[[u64; 2]; 3]) -> KernelShare {
    let of = |c: [u64; 2]| ratio(c[1], c[0] + c[1]);
    let kernel: u64 = counts.iter().map(|c| c[1]).sum();
    let all: u64 = counts.iter().map(|c| c[0] + c[1]).sum();
    KernelShare {
        instructions: of(counts[0]),
        reads: of(counts[1]),
        writes: of(counts[2]),
        references: ratio(kernel, all),
    }
}

/// References of one kernel function, by kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FunctionShare {
    pub name: String,
    pub references: u64,
    pub instructions: u64,
    pub reads: u64,
    pub writes: u64,
}

/// References of one kernel category, by kind, with its busiest functions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CategoryShare {
    pub name: String,
    pub description: String,
    pub instructions: u64,
    pub reads: u64,
    pub writes: u64,
    pub references: u64,
    pub share_of_kernel: f64,
    pub top_functions: Vec<FunctionShare>,
}

/// Kernel references by category, from the kernel's symbols.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Attribution {
    /// The symbol file used.
    pub symbols: String,
    /// Functions in it.
    pub functions: usize,
    pub kernel_references: u64,
    pub idle_share_of_kernel: f64,
    pub categories: Vec<CategoryShare>,
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

    /// Kernel references by category, with up to `top` functions per category (functions listed
    /// twice under one name, as padding and body, are merged).
    pub fn attribution(&self, symbols_path: &Path, top: usize) -> Attribution {
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
        let categories = Category::ALL
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
                CategoryShare {
                    name: cat.name().to_string(),
                    description: cat.describe().to_string(),
                    instructions: c[0],
                    reads: c[1],
                    writes: c[2],
                    references: refs,
                    share_of_kernel: ratio(refs, kernel),
                    top_functions: funcs
                        .iter()
                        .map(|(n, c)| FunctionShare {
                            name: n.to_string(),
                            references: c.iter().sum(),
                            instructions: c[0],
                            reads: c[1],
                            writes: c[2],
                        })
                        .collect(),
                }
            })
            .collect();
        let idle: u64 = self.tags[usize::from(Category::Idle.tag())].iter().sum();
        Attribution {
            symbols: symbols_path.display().to_string(),
            functions: self.attributor.symbols().len(),
            kernel_references: kernel,
            idle_share_of_kernel: ratio(idle, kernel),
            categories,
        }
    }
}

/// The text `trace info` prints for the kernel share and, with symbols, the attribution.
pub fn render(s: &KernelShare, attribution: Option<&Attribution>) -> String {
    let pct = |x: f64| 100.0 * x;
    let mut t = format!(
        "  kernel share: {:.1}% of references (instructions {:.1}%, reads {:.1}%, writes {:.1}%)\n",
        pct(s.references),
        pct(s.instructions),
        pct(s.reads),
        pct(s.writes)
    );
    let Some(a) = attribution else { return t };
    t.push_str(&format!(
        "  kernel references by category ({} functions from {}):\n",
        a.functions, a.symbols
    ));
    t.push_str(&format!(
        "    {:<32} {:>14} {:>12} {:>12} {:>9}\n",
        "category", "instructions", "reads", "writes", "% kernel"
    ));
    let mut omitted = 0;
    for c in &a.categories {
        if c.references == 0 {
            omitted += 1;
            continue;
        }
        t.push_str(&format!(
            "    {:<32} {:>14} {:>12} {:>12} {:>8.1}%\n",
            c.name,
            c.instructions,
            c.reads,
            c.writes,
            pct(c.share_of_kernel)
        ));
        for f in &c.top_functions {
            let name: String = f.name.chars().take(30).collect();
            t.push_str(&format!(
                "      {:<30} {:>14} {:>12} {:>12} {:>8.1}%\n",
                name,
                f.instructions,
                f.reads,
                f.writes,
                pct(ratio(f.references, a.kernel_references))
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
    let nosym = a
        .categories
        .iter()
        .find(|c| c.name == Category::NoSymbol.name())
        .map_or(0, |c| c.references);
    if a.kernel_references > 0 && nosym * 10 > a.kernel_references {
        t.push_str(&format!(
            "  warning: {:.0}% of kernel references fall outside every symbol: are these the traced kernel's symbols?\n",
            100.0 * ratio(nosym, a.kernel_references)
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
        let doc = p.attribution(Path::new("k.syms"), 3);
        assert_eq!(doc.kernel_references, 8);
        let get = |n: &str| doc.categories.iter().find(|c| c.name == n).unwrap();
        assert_eq!(get("syscall").instructions, 1);
        assert_eq!(get("syscall").reads, 1);
        assert_eq!(get("block-copy").instructions, 3);
        assert_eq!(get("block-copy").writes, 2);
        assert_eq!(get("no-symbol").references, 1);
        assert_eq!(get("block-copy").share_of_kernel, 5.0 / 8.0);
        let top = &get("block-copy").top_functions;
        // memcpy has 3 references, memset 2 (padding and body merged under one name).
        assert_eq!(top[0].name, "memcpy");
        assert_eq!(top[0].references, 3);
        assert_eq!(top[1].name, "memset");
        assert_eq!(top[1].instructions, 2);
        let shares = share(&[[3, 1], [1, 1], [0, 0]]);
        assert_eq!(shares.instructions, 0.25);
        assert_eq!(shares.reads, 0.5);
        assert_eq!(shares.writes, 0.0);
        assert_eq!(shares.references, 2.0 / 6.0);
        let text = render(&shares, Some(&doc));
        assert!(
            text.contains("block-copy") && text.contains("memcpy"),
            "{text}"
        );
        assert!(text.contains("kernel share: 33.3%"), "{text}");
        // One in eight kernel references has no symbol: more than a tenth, so a warning.
        assert!(text.contains("outside every symbol"), "{text}");
    }
}
