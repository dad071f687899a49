//! The seed papers' OS-against-OS comparisons with kernels counted in a QEMU guest
//! (`paper chen-bershad93 --guest A --guest B`, `paper chen96 --guest K`).
//!
//! Chen and Bershad set Ultrix beside Mach on one simulated DECstation: memory stall cycles per
//! instruction by component, user and system apart (their Table 2-4). A guest run with the
//! ds5000-200 preset gives the same quantities for any two Linux kernels, over one of each of a
//! few system-heavy operations (the workload: one call of each probe). Chen et al. 1996's side is
//! in `chen96_guest`.

use crate::papers::data::Paper;
use crate::results::guest::{side_label, GuestDoc, StallParts};
use crate::results::model::Status;
use serde::Serialize;
use std::fmt::Write;

/// The machine Chen and Bershad simulated.
pub const CHEN_BERSHAD_PRESET: &str = "ds5000-200";

/// The operations of the guest workload: system calls, a pipe round trip between processes, a
/// cached file read and an open, as the paper's utilities spend their system time.
pub const CHEN_BERSHAD_PROBES: &[&str] = &[
    "syscall.null",
    "syscall.dup",
    "ipc.pipe_pingpong",
    "fs.read_cached",
    "fs.open_close",
];

/// The paper's table the guest rows stand beside.
const MCPI_TABLE: &str = "2-4";

/// MCPI of one kernel in one mode, over the workload.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct McpiRow {
    /// The kernel (and its parameters), or the paper's system.
    pub system: String,
    /// "user" or "system".
    pub mode: String,
    pub icache: f64,
    pub dcache: f64,
    pub tlb: f64,
    pub wbuffer: f64,
    pub total: f64,
    /// Where the row comes from: the paper, or a guest run.
    pub source: String,
}

/// Stall cycles over instructions of one mode, summed over the operations simulated on the
/// preset (each operation once); None when nothing was simulated on it.
fn mcpi_of(doc: &GuestDoc, kernel_mode: bool) -> Option<McpiRow> {
    let mut stalls = StallParts::default();
    let mut instructions = 0.0;
    let mut any = false;
    for p in doc.probes.iter().filter(|p| p.status == Status::Ok) {
        let (Some(counts), Some(sim)) = (
            p.per_op.as_ref(),
            p.simulated.iter().find(|s| s.preset == CHEN_BERSHAD_PRESET),
        ) else {
            continue;
        };
        any = true;
        let (c, s) = if kernel_mode {
            (&counts.kernel, &sim.kernel)
        } else {
            (&counts.user, &sim.user)
        };
        instructions += c.instructions.max(0.0);
        stalls.icache += s.stalls.icache;
        stalls.dcache += s.stalls.dcache;
        stalls.tlb += s.stalls.tlb;
        stalls.wbuffer += s.stalls.wbuffer;
    }
    if !any {
        return None;
    }
    let per = |x: f64| {
        if instructions > 0.0 {
            x / instructions
        } else {
            0.0
        }
    };
    Some(McpiRow {
        system: side_label(doc),
        mode: if kernel_mode { "system" } else { "user" }.into(),
        icache: per(stalls.icache),
        dcache: per(stalls.dcache),
        tlb: per(stalls.tlb),
        wbuffer: per(stalls.wbuffer),
        total: per(stalls.icache + stalls.dcache + stalls.tlb + stalls.wbuffer),
        source: format!(
            "guest run, release {}",
            doc.release.as_deref().unwrap_or("unknown")
        ),
    })
}

/// The paper's rows of Table 2-4, then each kernel's user and system rows.
pub fn chen_bershad_rows(paper: &Paper, docs: &[&GuestDoc]) -> Vec<McpiRow> {
    let mut rows = Vec::new();
    if let Some(t) = paper.table(MCPI_TABLE) {
        for r in &t.rows {
            let v = |col: &str| t.value(&r.id, col).map_or(0.0, |q| q.central());
            let (icache, dcache, tlb, wbuffer) = (v("icache"), v("dcache"), v("tlb"), v("wbuffer"));
            let mut words = r.id.split_whitespace();
            rows.push(McpiRow {
                system: words.next().unwrap_or("").to_string(),
                mode: words.next().unwrap_or("").to_string(),
                icache,
                dcache,
                tlb,
                wbuffer,
                total: icache + dcache + tlb + wbuffer,
                source: format!("Chen and Bershad 1993, Table {MCPI_TABLE}"),
            });
        }
    }
    for kernel_mode in [false, true] {
        rows.extend(docs.iter().filter_map(|d| mcpi_of(d, kernel_mode)));
    }
    rows
}

pub fn render_chen_bershad(rows: &[McpiRow], docs: &[&GuestDoc]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Chen and Bershad 1993, Table {MCPI_TABLE}: memory stall cycles per instruction on the \
         DECstation 5000/200 ({CHEN_BERSHAD_PRESET} preset), Ultrix and Mach beside {} kernel(s) \
         counted in a QEMU guest over one of each of: {}\n",
        docs.len(),
        CHEN_BERSHAD_PROBES.join(", ")
    );
    let w = rows
        .iter()
        .map(|r| r.system.chars().count() + r.mode.len() + 1)
        .max()
        .unwrap_or(10)
        .max(6);
    let _ = writeln!(
        out,
        "{:w$}  {:>7} {:>7} {:>7} {:>8} {:>7}",
        "system", "icache", "dcache", "TLB", "wbuffer", "total"
    );
    for mode in ["user", "system"] {
        for r in rows.iter().filter(|r| r.mode == mode) {
            let _ = writeln!(
                out,
                "{:w$}  {:>7.3} {:>7.3} {:>7.3} {:>8.3} {:>7.3}",
                format!("{} {}", r.system, r.mode),
                r.icache,
                r.dcache,
                r.tlb,
                r.wbuffer,
                r.total
            );
        }
    }
    let _ = writeln!(
        out,
        "\nThe paper's rows average its workloads; the guest rows add the stall cycles and the \
         instructions of one operation of each probe (counts exact; stalls the steady state of \
         each probe's loop, from two windows simulated on empty caches)."
    );
    let _ = writeln!(out, "\n{}", crate::papers::chen96_guest::SEVERAL_SYSTEMS);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::papers::PaperId;
    use crate::results::fixtures::simulated_guest_doc;

    fn ds5000_doc(kernel: &str, icache_mcpi: f64) -> GuestDoc {
        let mut d = simulated_guest_doc(kernel, icache_mcpi);
        d.presets = vec![CHEN_BERSHAD_PRESET.into()];
        d.probes[0].simulated[0].preset = CHEN_BERSHAD_PRESET.into();
        d
    }

    #[test]
    fn two_kernels_stand_beside_ultrix_and_mach() {
        let paper = Paper::load(PaperId::ChenBershad93).unwrap();
        let (a, b) = (ds5000_doc("A", 0.25), ds5000_doc("B", 0.5));
        let rows = chen_bershad_rows(&paper, &[&a, &b]);
        let mach = rows
            .iter()
            .find(|r| r.system == "Mach" && r.mode == "system")
            .unwrap();
        assert_eq!(mach.icache, 0.57);
        // simulated_guest_doc: 600 kernel instructions, kernel_mcpi * 600 stall cycles, all icache.
        let sys = |k: &str| {
            rows.iter()
                .find(|r| r.system == k && r.mode == "system")
                .unwrap()
                .clone()
        };
        assert_eq!(sys("A").icache, 0.25);
        assert_eq!(sys("B").total, 0.5);
        assert_eq!(sys("B").dcache, 0.0);
        let user = rows
            .iter()
            .find(|r| r.system == "A" && r.mode == "user")
            .unwrap();
        assert_eq!(user.total, 0.0);
        let text = render_chen_bershad(&rows, &[&a, &b]);
        let lines: Vec<&str> = text.lines().collect();
        let at = |s: &str| lines.iter().position(|l| l.starts_with(s)).unwrap();
        assert!(at("Ultrix system") < at("A system") && at("A system") < at("B system"));
        assert!(at("Mach user") < at("A user"), "{text}");
        // A run not simulated on the ds5000-200 adds no row.
        let plain = crate::results::fixtures::guest_doc("C", 100.0);
        assert!(!chen_bershad_rows(&paper, &[&plain])
            .iter()
            .any(|r| r.system == "C"));
    }
}
