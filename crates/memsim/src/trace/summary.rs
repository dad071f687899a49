//! What `osmeter trace info` says about a trace: references by kind and mode, the kernel's share,
//! address spaces and footprint, and with kernel symbols the kernel references by category.

use super::{Kind, RefSource};
use crate::memsim::kernel::info::{self, Attribution, KernelShare, Profile};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

/// References of one mode by kind.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct KindCounts {
    pub instructions: u64,
    pub reads: u64,
    pub writes: u64,
}

impl KindCounts {
    fn add(&mut self, kind: Kind) {
        match kind {
            Kind::Instr => self.instructions += 1,
            Kind::Read => self.reads += 1,
            Kind::Write => self.writes += 1,
        }
    }
}

/// The `trace info` document (`--json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceSummary {
    pub file: String,
    pub references: u64,
    pub user: KindCounts,
    pub kernel: KindCounts,
    pub uncached: u64,
    pub address_spaces: usize,
    pub footprint_pages_4k: usize,
    pub footprint_lines_64b: usize,
    pub user_only: bool,
    pub physical_addresses: bool,
    pub incomplete: bool,
    pub kernel_share: KernelShare,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
}

/// Kernel symbols to attribute kernel references with: the file and how many functions of each
/// category to name.
pub struct Symbols {
    pub path: PathBuf,
    pub profile: Profile,
    pub top_functions: usize,
}

/// Reads the whole trace once.
pub fn summarize(
    src: &mut dyn RefSource,
    file: &Path,
    mut symbols: Option<Symbols>,
) -> Result<TraceSummary> {
    let mut by_mode = [KindCounts::default(); 2];
    let mut pages = HashSet::new();
    let mut lines = HashSet::new();
    let mut spaces = BTreeSet::new();
    let mut uncached = 0u64;
    super::for_each_batch(src, |batch| {
        for r in batch {
            by_mode[r.mode as usize].add(r.kind);
            // Address spaces apart: the same page in two processes is two pages.
            let key = u64::from(r.asid).rotate_right(16);
            pages.insert((r.vaddr >> 12) ^ key);
            lines.insert((r.vaddr >> 6) ^ key);
            spaces.insert(r.asid);
            uncached += u64::from(r.uncached);
        }
        if let Some(s) = symbols.as_mut() {
            for r in batch {
                s.profile.observe(r);
            }
        }
        Ok(())
    })?;
    let [user, kernel] = by_mode;
    let counts = [
        [user.instructions, kernel.instructions],
        [user.reads, kernel.reads],
        [user.writes, kernel.writes],
    ];
    let meta = src.meta();
    Ok(TraceSummary {
        file: file.display().to_string(),
        references: counts.iter().flatten().sum(),
        user,
        kernel,
        uncached,
        address_spaces: spaces.len(),
        footprint_pages_4k: pages.len(),
        footprint_lines_64b: lines.len(),
        user_only: meta.user_only(),
        physical_addresses: meta.physical(),
        incomplete: meta.incomplete(),
        kernel_share: info::share(&counts),
        attribution: symbols.map(|s| s.profile.attribution(&s.path, s.top_functions)),
    })
}

/// The text `trace info` prints.
pub fn render(s: &TraceSummary) -> String {
    let mut t = format!("{}: {} references\n", s.file, s.references);
    t.push_str(&format!("  {:<14} {:>14} {:>14}\n", "", "user", "kernel"));
    for (name, u, k) in [
        ("instructions", s.user.instructions, s.kernel.instructions),
        ("reads", s.user.reads, s.kernel.reads),
        ("writes", s.user.writes, s.kernel.writes),
    ] {
        t.push_str(&format!("  {name:<14} {u:>14} {k:>14}\n"));
    }
    t.push_str(&info::render(&s.kernel_share, s.attribution.as_ref()));
    t.push_str(&format!(
        "  footprint: {} pages of 4 KB ({:.1} MB), {} lines of 64 B; {} address spaces; {} uncached\n",
        s.footprint_pages_4k,
        s.footprint_pages_4k as f64 * 4096.0 / 1048576.0,
        s.footprint_lines_64b,
        s.address_spaces,
        s.uncached
    ));
    if s.user_only {
        t.push_str("  user mode only: no kernel references were captured\n");
    }
    if s.incomplete {
        t.push_str("  INCOMPLETE: the capture ended early\n");
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsim::trace::synth::Synth;

    #[test]
    fn counts_add_up_and_the_document_reads_back() {
        let mut src = Synth::new(50_000, 7);
        let s = summarize(&mut src, Path::new("synth"), None).unwrap();
        let sum = |c: KindCounts| c.instructions + c.reads + c.writes;
        assert_eq!(sum(s.user) + sum(s.kernel), 50_000);
        assert_eq!(s.references, 50_000);
        assert!(s.kernel.instructions > 0 && s.user.instructions > 0);
        let share = sum(s.kernel) as f64 / 50_000.0;
        assert!((s.kernel_share.references - share).abs() < 1e-12);
        assert!(s.footprint_lines_64b >= s.footprint_pages_4k);
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("attribution"), "absent without symbols");
        let back: TraceSummary = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let text = render(&s);
        assert!(text.starts_with("synth: 50000 references"), "{text}");
    }
}
