//! The guest-run document: probes run inside a deterministic QEMU guest (`osmeter run --guest`),
//! counted per operation by osmeter's QEMU plugin. Under TCG with icount the same kernel, command
//! line and probes execute the same instructions, so every count is exact and no time is kept
//! (TCG's wall time says nothing about the guest kernel).

use crate::results::model::{label, Params, Status};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

pub const GUEST_SCHEMA: &str = "osmeter.guest/1";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
    pub probes: Vec<GuestProbe>,
}

/// One parameter point of a probe, as counted in the guest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
}

impl GuestProbe {
    pub fn label(&self) -> String {
        label(&self.probe, &self.params)
    }
}

/// Counts per operation, user and kernel apart. Every instruction is one fetch, so fetches are
/// the instruction count; references are fetches, loads and stores.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct OpCounts {
    pub user: ModeCounts,
    pub kernel: ModeCounts,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
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

/// Several guest runs of the same probes, side by side: one column group per kernel and
/// parameter set, kernel instructions first (what a kernel comparison is about).
pub fn render_side_by_side(docs: &[&GuestDoc]) -> String {
    let mut out = String::new();
    for (i, d) in docs.iter().enumerate() {
        let _ = writeln!(
            out,
            "[{}] {} ({}, CPU {}), up to {} operations per window; counts per operation, exact (QEMU TCG, icount)",
            i + 1,
            side_label(d),
            d.release.as_deref().unwrap_or("release unknown"),
            d.cpu.as_deref().unwrap_or("qemu64"),
            d.iterations
        );
        if d.build == "debug" {
            let _ = writeln!(
                out,
                "    (a debug build of osmeter ran in the guest: user counts hold its unoptimised \
                 loop control, kernel counts are unaffected)"
            );
        }
    }
    let width = docs
        .iter()
        .flat_map(|d| d.probes.iter().map(|p| p.label().chars().count()))
        .max()
        .unwrap_or(5)
        .max(5);
    let _ = write!(out, "\n{:width$}", "probe");
    for i in 0..docs.len() {
        let _ = write!(
            out,
            "  {:>10} {:>10} {:>9} {:>9}",
            format!("[{}] k.ins", i + 1),
            "u.ins",
            "k.loads",
            "k.stores"
        );
    }
    out.push('\n');
    let Some(first) = docs.first() else {
        return out;
    };
    for p in &first.probes {
        let key = p.label();
        let _ = write!(out, "{key:width$}");
        for d in docs {
            let other = d.probes.iter().find(|q| q.label() == key);
            match other.and_then(|q| q.per_op.as_ref().map(|c| (q, c))) {
                Some((_, c)) => {
                    let _ = write!(
                        out,
                        "  {:>10} {:>10} {:>9} {:>9}",
                        count(c.kernel.instructions),
                        count(c.user.instructions),
                        count(c.kernel.loads),
                        count(c.kernel.stores)
                    );
                }
                None => {
                    let why = other.map_or("-", |q| match q.status {
                        Status::Skipped => "skipped",
                        _ => "failed",
                    });
                    let _ = write!(out, "  {why:>10} {:>10} {:>9} {:>9}", "", "", "");
                }
            }
        }
        out.push('\n');
    }
    for (i, d) in docs.iter().enumerate() {
        for p in d.probes.iter().filter(|p| p.reason.is_some()) {
            let what = match p.status {
                Status::Ok => "note",
                Status::Skipped => "skipped",
                Status::Failed => "failed",
            };
            let _ = writeln!(
                out,
                "[{}] {} {what}: {}",
                i + 1,
                p.label(),
                p.reason.as_deref().unwrap_or("")
            );
        }
    }
    out
}

#[cfg(test)]
pub mod tests {
    use super::*;

    pub fn doc(kernel: &str, kernel_ins: f64) -> GuestDoc {
        GuestDoc {
            schema: GUEST_SCHEMA.into(),
            kernel: kernel.into(),
            kernel_key: "k".into(),
            release: Some("6.1.0".into()),
            build: "release".into(),
            append: String::new(),
            cmdline: "console=ttyS0".into(),
            qemu: "QEMU emulator version 7.2".into(),
            iterations: 100,
            cpu: None,
            loop_overhead: None,
            probes: vec![
                GuestProbe {
                    probe: "syscall.null".into(),
                    params: Params::new(),
                    status: Status::Ok,
                    reason: None,
                    iterations: 100,
                    per_op: Some(OpCounts {
                        user: ModeCounts {
                            instructions: 12.0,
                            loads: 3.0,
                            stores: 2.0,
                        },
                        kernel: ModeCounts {
                            instructions: kernel_ins,
                            loads: 90.5,
                            stores: 40.0,
                        },
                    }),
                },
                GuestProbe {
                    probe: "app.make".into(),
                    params: Params::new(),
                    status: Status::Skipped,
                    reason: Some("not in a guest".into()),
                    iterations: 0,
                    per_op: None,
                },
            ],
        }
    }

    #[test]
    fn the_table_sets_kernels_side_by_side_and_names_skips() {
        let (a, b) = (doc("A", 600.0), doc("B", 1400.0));
        let t = render_side_by_side(&[&a, &b]);
        let row = t.lines().find(|l| l.starts_with("syscall.null")).unwrap();
        assert!(row.contains("600") && row.contains("1400"), "{t}");
        assert!(row.contains("90.5"), "{t}");
        assert!(t.contains("[2] app.make skipped: not in a guest"), "{t}");
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
