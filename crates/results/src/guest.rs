//! The guest-run document: probes run inside a deterministic QEMU guest (`osmeter run --guest`),
//! counted per operation by osmeter's QEMU plugin. Under TCG with icount the same kernel, command
//! line and probes execute the same instructions, so every count is exact and no time is kept
//! (TCG's wall time says nothing about the guest kernel).

use crate::columns::{wrap, Align, Table};
use crate::results::model::{label, Params, Status};
use serde::{Deserialize, Serialize};

pub const GUEST_SCHEMA: &str = "osmeter.guest/1";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct GuestDoc {
    pub schema: String,
    /// The kernel as the user named it: a Debian package or an image path.
    pub kernel: String,
    /// Content hash of the image, so two runs of "the same" package can be told apart.
    pub kernel_key: String,
    /// `uname -r` inside the guest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    /// How the osmeter that ran in the guest was built: "release", or "debug", whose unoptimised
    /// loops add user instructions, loads and stores that the empty loop does not match.
    #[serde(default)]
    pub build: String,
    /// The user's kernel parameters (`--append`), empty when none.
    pub append: String,
    /// The whole kernel command line the guest booted with.
    pub cmdline: String,
    /// `qemu-system-x86_64 --version`, first line: another QEMU may translate differently.
    pub qemu: String,
    /// QEMU's CPU model (`--guest-cpu`); None for QEMU's default (qemu64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// Operations asked for in the shorter of the two counted windows of each probe (the longer
    /// has twice as many); a probe whose windows cannot pass without a timer tick uses fewer
    /// (its own `iterations`).
    pub iterations: u64,
    /// Per-operation counts of the empty timed loop, subtracted from the probes whose loop
    /// control is part of the operation's cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_overhead: Option<OpCounts>,
    /// The comparisons of the seccomp filter the probes ran under (`osmeter.seccomp=RULES` in
    /// the kernel parameters), when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seccomp_rules: Option<u32>,
    /// memsim's machines the references were simulated on (`--preset`), in the order of each
    /// probe's `simulated`; empty when only counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub presets: Vec<String>,
    /// Where the kernel's function names came from (its System.map), when the references were
    /// attributed to kernel functions; or why they were not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbols: Option<String>,
    pub probes: Vec<GuestProbe>,
}

/// One parameter point of a probe, as counted in the guest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct GuestProbe {
    pub probe: String,
    pub params: Params,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Operations in the shorter counted window (0 when not measured).
    pub iterations: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_op: Option<OpCounts>,
    /// Per operation on each of the document's `presets`, in that order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub simulated: Vec<SimulatedOp>,
    /// Kernel instructions per operation by kernel function and by memsim's category, when the
    /// references were streamed and the kernel's symbols known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_parts: Option<KernelParts>,
}

/// One operation's references simulated by memsim on one preset machine, user and kernel apart.
/// The simulated caches stay warm from window to window (as a real machine's would over the
/// timed loop), and like the counts, these are the difference of the two windows over n.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct SimulatedOp {
    pub preset: String,
    pub user: SimulatedMode,
    pub kernel: SimulatedMode,
}

impl SimulatedOp {
    pub fn modes(&self) -> [(&'static str, &SimulatedMode); 2] {
        [("user", &self.user), ("kernel", &self.kernel)]
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct SimulatedMode {
    /// First-level instruction cache misses (a unified first level counts them in `l1d_misses`).
    pub l1i_misses: f64,
    pub l1d_misses: f64,
    /// Misses of the second and further levels, nearest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lower_misses: Vec<f64>,
    pub tlb_misses: f64,
    /// Memory stall cycles of the preset's cost model.
    pub stall_cycles: f64,
    /// The same by the component that stalled.
    #[serde(default)]
    pub stalls: StallParts,
    /// Stall cycles per instruction of this mode (memory cycles per instruction).
    pub mcpi: f64,
}

impl SimulatedMode {
    /// The quantities a figure is made of, by name, in table order.
    pub fn by_name(&self) -> Vec<(String, f64)> {
        let mut out = vec![
            ("l1i_misses".to_string(), self.l1i_misses),
            ("l1d_misses".to_string(), self.l1d_misses),
        ];
        for (i, m) in self.lower_misses.iter().enumerate() {
            out.push((format!("l{}_misses", i + 2), *m));
        }
        out.extend([
            ("tlb_misses".to_string(), self.tlb_misses),
            ("stall_cycles".to_string(), self.stall_cycles),
            ("mcpi".to_string(), self.mcpi),
        ]);
        out
    }
}

/// Stall cycles per operation by memsim's components (instruction cache, data cache, write
/// buffer, TLB, uncached references).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct StallParts {
    pub icache: f64,
    pub dcache: f64,
    pub wbuffer: f64,
    pub tlb: f64,
    pub uncached: f64,
}

/// Kernel instructions per operation, by memsim's category (`crate::kernel_parts::Category`)
/// and by function (only those of at least one instruction per hundred operations).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct KernelParts {
    pub categories: std::collections::BTreeMap<String, f64>,
    pub functions: std::collections::BTreeMap<String, f64>,
}

impl GuestProbe {
    pub fn label(&self) -> String {
        label(&self.probe, &self.params)
    }
}

/// Counts per operation, user and kernel apart. Every instruction is one fetch, so fetches are
/// the instruction count; references are fetches, loads and stores.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct OpCounts {
    pub user: ModeCounts,
    pub kernel: ModeCounts,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ModeCounts {
    pub instructions: f64,
    pub loads: f64,
    pub stores: f64,
}

impl ModeCounts {
    pub fn references(&self) -> f64 {
        self.instructions + self.loads + self.stores
    }

    /// The quantities a figure is made of, by name, in table order.
    pub fn by_name(&self) -> [(&'static str, f64); 3] {
        [
            ("instructions", self.instructions),
            ("loads", self.loads),
            ("stores", self.stores),
        ]
    }

    pub fn minus(&self, o: &ModeCounts) -> ModeCounts {
        ModeCounts {
            instructions: self.instructions - o.instructions,
            loads: self.loads - o.loads,
            stores: self.stores - o.stores,
        }
    }
}

impl OpCounts {
    pub fn minus_user(&self, o: &OpCounts) -> OpCounts {
        OpCounts {
            user: self.user.minus(&o.user),
            kernel: self.kernel,
        }
    }

    pub fn modes(&self) -> [(&'static str, &ModeCounts); 2] {
        [("user", &self.user), ("kernel", &self.kernel)]
    }
}

/// Short label of a guest run for tables: the kernel and its parameters.
pub fn side_label(doc: &GuestDoc) -> String {
    if doc.append.is_empty() {
        doc.kernel.clone()
    } else {
        format!("{} [{}]", doc.kernel, doc.append)
    }
}

fn count(v: f64) -> String {
    if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// One guest run as a table: counts per operation, user and kernel apart.
pub fn render(doc: &GuestDoc) -> String {
    render_side_by_side(&[doc])
}

/// A table with a probe column, then the same `columns` once per kernel; a kernel's block stays
/// together when the table wraps and starts with its "[k]".
fn per_kernel_table(kernels: usize, columns: &[&str]) -> Table {
    let mut header = vec!["probe".to_string()];
    let mut align = vec![Align::Left];
    for k in 1..=kernels {
        for (j, c) in columns.iter().enumerate() {
            header.push(if j == 0 {
                format!("[{k}] {c}")
            } else {
                c.to_string()
            });
            align.push(Align::Right);
        }
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    Table::new(&header, &align, 1).grouped(columns.len())
}

/// Several guest runs of the same probes, side by side: one column group per kernel and
/// parameter set, kernel instructions first (what a kernel comparison is about). Two kernels'
/// groups beside long probe labels pass 100 columns, so the table is a [`Table`] that stacks
/// blocks repeating the probe column (`--wide` keeps one line per probe).
pub fn render_side_by_side(docs: &[&GuestDoc]) -> String {
    side_by_side(docs, crate::columns::width())
}

/// The same fitted to `width` (None: one line per probe).
fn side_by_side(docs: &[&GuestDoc], width: Option<usize>) -> String {
    let mut out = String::new();
    for (i, d) in docs.iter().enumerate() {
        let line = format!(
            "[{}] {} ({}, CPU {}), up to {} operations per window; counts per operation, exact (QEMU TCG, icount)",
            i + 1,
            side_label(d),
            d.release.as_deref().unwrap_or("release unknown"),
            d.cpu.as_deref().unwrap_or("qemu64"),
            d.iterations
        );
        out.push_str(&wrap(&line, width, "    "));
        if d.build == "debug" {
            out.push_str(&wrap(
                "    (a debug build of osmeter ran in the guest: user counts hold its unoptimised \
                 loop control, kernel counts are unaffected)",
                width,
                "    ",
            ));
        }
    }
    let mut table = per_kernel_table(docs.len(), &["k.ins", "u.ins", "k.loads", "k.stores"]);
    if let Some(first) = docs.first() {
        for p in &first.probes {
            let key = p.label();
            let mut row = vec![key.clone()];
            for d in docs {
                let other = d.probes.iter().find(|q| q.label() == key);
                match other.and_then(|q| q.per_op.as_ref()) {
                    Some(c) => row.extend([
                        count(c.kernel.instructions),
                        count(c.user.instructions),
                        count(c.kernel.loads),
                        count(c.kernel.stores),
                    ]),
                    None => {
                        let why = other.map_or("-", |q| match q.status {
                            Status::Skipped => "skipped",
                            _ => "failed",
                        });
                        row.extend([why.to_string(), String::new(), String::new(), String::new()]);
                    }
                }
            }
            table.push(row);
        }
    }
    out.push('\n');
    out.push_str(&table.render(width));
    out.push_str(&simulated_tables(docs, width));
    for (i, d) in docs.iter().enumerate() {
        for p in d.probes.iter().filter(|p| p.reason.is_some()) {
            let what = match p.status {
                Status::Ok => "note",
                Status::Skipped => "skipped",
                Status::Failed => "failed",
            };
            let line = format!(
                "[{}] {} {what}: {}",
                i + 1,
                p.label(),
                p.reason.as_deref().unwrap_or("")
            );
            out.push_str(&wrap(&line, width, "    "));
        }
    }
    out
}

/// One table per memsim preset that the runs' references were simulated on: memory cycles per
/// instruction and first-level misses per operation, kernel first.
fn simulated_tables(docs: &[&GuestDoc], width: Option<usize>) -> String {
    let mut presets: Vec<&str> = Vec::new();
    for d in docs {
        for p in &d.presets {
            if !presets.contains(&p.as_str()) {
                presets.push(p);
            }
        }
    }
    let mut out = String::new();
    for preset in presets {
        out.push_str(&wrap(
            &format!(
                "\nSimulated on {preset} (memsim), per operation: memory cycles per instruction \
                 (k.mcpi, u.mcpi) and first-level misses (k.l1i, k.l1d, u.l1d)"
            ),
            width,
            "    ",
        ));
        let mut table =
            per_kernel_table(docs.len(), &["k.mcpi", "u.mcpi", "k.l1i", "k.l1d", "u.l1d"]);
        let Some(first) = docs.first() else {
            continue;
        };
        for p in first.probes.iter().filter(|p| p.per_op.is_some()) {
            let key = p.label();
            let mut row = vec![key.clone()];
            for d in docs {
                let sim = d
                    .probes
                    .iter()
                    .find(|q| q.label() == key)
                    .and_then(|q| q.simulated.iter().find(|s| s.preset == preset));
                match sim {
                    Some(s) => row.extend([
                        format!("{:.3}", s.kernel.mcpi),
                        format!("{:.3}", s.user.mcpi),
                        count(s.kernel.l1i_misses),
                        count(s.kernel.l1d_misses),
                        count(s.user.l1d_misses),
                    ]),
                    None => row.extend([
                        "-".into(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                    ]),
                }
            }
            table.push(row);
        }
        out.push_str(&table.render(width));
    }
    out
}

#[cfg(test)]
pub mod tests {
    use super::*;
    pub use crate::fixtures::{guest_doc as doc, simulated_guest_doc as simulated_doc};

    #[test]
    fn the_table_sets_kernels_side_by_side_and_names_skips() {
        let (a, b) = (doc("A", 600.0), doc("B", 1400.0));
        let t = render_side_by_side(&[&a, &b]);
        let row = t.lines().find(|l| l.starts_with("syscall.null")).unwrap();
        assert!(row.contains("600") && row.contains("1400"), "{t}");
        assert!(row.contains("90.5"), "{t}");
        assert!(t.contains("[2] app.make skipped: not in a guest"), "{t}");
    }

    /// Two kernels beside the longest labels of the quick probes were 106 columns on one line;
    /// fitted, the table stacks blocks that repeat the probe, and every count is still shown.
    #[test]
    fn two_kernels_with_long_labels_fit_a_hundred_columns() {
        let long = |d: &mut GuestDoc| {
            d.probes[0].params = crate::results::model::Params::from_iter([
                ("pattern".to_string(), serde_json::json!("random")),
                ("size".to_string(), serde_json::json!(134217728u64)),
            ]);
            d.probes[0].probe = "memory.latency".into();
            d.kernel = "linux-image-6.1.0-28-amd64".into();
        };
        let (mut a, mut b) = (doc("A", 123456.0), doc("B", 654321.0));
        long(&mut a);
        long(&mut b);
        let wide = side_by_side(&[&a, &b], None);
        let fitted = side_by_side(&[&a, &b], Some(100));
        let widest = |t: &str| t.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest(&wide) > 100, "the case is a wide one:\n{wide}");
        assert!(widest(&fitted) <= 100, "{fitted}");
        let label = a.probes[0].label();
        assert_eq!(fitted.matches(label.as_str()).count(), 2, "{fitted}");
        // A block per kernel, each with its four columns under its own number.
        let blocks: Vec<&str> = fitted.split("\n\n").skip(1).collect();
        assert!(
            blocks[0].contains("[1] k.ins") && blocks[0].contains("k.stores"),
            "{fitted}"
        );
        assert!(
            blocks[1].contains("[2] k.ins") && blocks[1].contains("k.stores"),
            "{fitted}"
        );
        for n in ["123456", "654321", "90.5", "[2] k.ins"] {
            assert!(fitted.contains(n), "{n} in {fitted}");
        }
    }

    #[test]
    fn simulated_misses_and_mcpi_get_a_table_per_preset() {
        let (a, b) = (simulated_doc("A", 0.25), doc("B", 700.0));
        let t = side_by_side(&[&a, &b], None);
        assert!(t.contains("Simulated on pentium"), "{t}");
        let rows: Vec<&str> = t
            .lines()
            .filter(|l| l.starts_with("syscall.null"))
            .collect();
        assert_eq!(rows.len(), 2, "{t}");
        assert!(rows[1].contains("0.250") && rows[1].contains("7.5"), "{t}");
        // B was only counted: its simulated columns say so.
        assert!(rows[1].trim_end().ends_with('-'), "{t}");
        assert!(!side_by_side(&[&b], None).contains("Simulated on"));
        let back: GuestDoc = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(back, a);
    }

    #[test]
    fn the_document_reads_back_as_written() {
        let d = doc("A", 600.0);
        let back: GuestDoc = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
        let c = d.probes[0].per_op.unwrap();
        assert_eq!(c.user.references(), 17.0);
        assert_eq!(c.minus_user(&c).user.instructions, 0.0);
        assert_eq!(c.minus_user(&c).kernel.instructions, 600.0);
    }
}
