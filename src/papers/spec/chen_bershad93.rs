//! Chen and Bershad 1993: the memory-system costs of its tables, read from a memsim run of a
//! full-system trace.

use super::*;

const fn memsim(
    table: &'static str,
    cells: Cells,
    label: &'static str,
    get: fn(&MemsimDoc, &MachineDoc) -> Option<f64>,
) -> Comparison {
    Comparison {
        table,
        cells,
        label,
        now: Now::Memsim(MemsimFigure {
            get: MemsimGet::Doc(get),
        }),
    }
}

const TRACE: &str = "this trace";

#[derive(Clone, Copy)]
enum Mode {
    User,
    System,
}

/// A Table 2-4 component of one mode (the paper's rows ending in "user" or "system"), per
/// instruction of that mode.
const fn own(mode: Mode, column: &'static str, get: fn(&MachineDoc) -> f64) -> Comparison {
    let (rows, label) = match mode {
        Mode::User => ("user", "this trace, user"),
        Mode::System => ("system", "this trace, system"),
    };
    Comparison {
        table: "2-4",
        cells: Cells::Where {
            rows: Sel::EndsWith(rows),
            columns: Sel::Is(column),
        },
        label,
        now: Now::Memsim(MemsimFigure {
            get: MemsimGet::Machine(get),
        }),
    }
}

fn thousands(n: u64) -> Option<f64> {
    Some(n as f64 / 1e3)
}

fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| 100.0 * part as f64 / whole as f64)
}

fn cache(m: &crate::memsim::document::ModeDoc, level: &str) -> (u64, u64) {
    m.caches
        .get(level)
        .map(|c| (c.misses, c.read_misses))
        .unwrap_or_default()
}

/// A TLB figure, when the simulated machine has a TLB.
fn tlb(m: &MachineDoc, get: fn(&MachineDoc) -> Option<f64>) -> Option<f64> {
    if m.user.tlb.present || m.system.tlb.present {
        get(m)
    } else {
        None
    }
}

/// The kernel's block copies and clears in memsim's attribution (needs kernel symbols).
fn block<'a>(d: &'a MemsimDoc, m: &MachineDoc) -> Option<&'a crate::memsim::document::CategoryRow> {
    let table = d
        .attribution
        .as_ref()?
        .machines
        .iter()
        .find(|t| t.name == m.name)?;
    table.categories.iter().find(|c| c.name == "block-copy")
}

/// MCPI of the kernel's block copies and clears, over every instruction.
fn block_mcpi(d: &MemsimDoc, m: &MachineDoc) -> Option<f64> {
    block(d, m).map(|c| c.mcpi.total)
}

/// A figure behind the verdict on Chen and Bershad's third assertion (user/system competition),
/// judged on this machine: memsim runs the trace's user and kernel references each alone beside
/// the mixed trace, and the stalls the mixed one adds are the competition's.
fn competition(d: &MemsimDoc, m: &MachineDoc, figure: &str) -> Option<f64> {
    let judged = d.assertions.as_ref().filter(|a| a.machine == m.name)?;
    judged
        .assertions
        .iter()
        .find(|a| a.number == 3)?
        .figures
        .get(figure)
        .copied()
        .flatten()
}

/// The block operations' share of the machine's MCPI, percent.
fn block_share(d: &MemsimDoc, m: &MachineDoc) -> Option<f64> {
    let total = m.mcpi.total.total;
    block_mcpi(d, m)
        .filter(|_| total > 0.0)
        .map(|b| 100.0 * b / total)
}

/// Today's figures stand under Ultrix's columns: Linux, like Ultrix, is a monolithic kernel.
pub(super) static SPEC: Spec = Spec {
    comparisons: &[
        memsim("2-3", Cells::Column("instr_u"), TRACE, |_, m| thousands(m.instructions)),
        memsim("2-3", Cells::Column("instr_u_sys"), TRACE, |_, m| {
            Some(100.0 * m.system_fraction)
        }),
        memsim("2-3", Cells::Column("idle_u"), TRACE, |d, _| {
            thousands(d.attribution.as_ref()?.idle_dropped.instructions)
        }),
        memsim("2-3", Cells::Column("imiss_u"), TRACE, |_, m| {
            thousands(cache(&m.user, "l1i").0 + cache(&m.system, "l1i").0)
        }),
        memsim("2-3", Cells::Column("imiss_u_sys"), TRACE, |_, m| {
            let (u, k) = (cache(&m.user, "l1i").0, cache(&m.system, "l1i").0);
            share(k, u + k)
        }),
        memsim("2-3", Cells::Column("dread_u"), TRACE, |_, m| {
            thousands(m.user.reads + m.system.reads)
        }),
        memsim("2-3", Cells::Column("dread_u_sys"), TRACE, |_, m| {
            share(m.system.reads, m.user.reads + m.system.reads)
        }),
        memsim("2-3", Cells::Column("dmiss_u"), TRACE, |_, m| {
            thousands(cache(&m.user, "l1d").1 + cache(&m.system, "l1d").1)
        }),
        memsim("2-3", Cells::Column("dmiss_u_sys"), TRACE, |_, m| {
            let (u, k) = (cache(&m.user, "l1d").1, cache(&m.system, "l1d").1);
            share(k, u + k)
        }),
        own(Mode::User, "icache", |m| m.own_mcpi.user.icache),
        own(Mode::User, "dcache", |m| m.own_mcpi.user.dcache),
        own(Mode::User, "tlb", |m| m.own_mcpi.user.tlb),
        own(Mode::User, "wbuffer", |m| m.own_mcpi.user.wbuffer),
        own(Mode::System, "icache", |m| m.own_mcpi.system.icache),
        own(Mode::System, "dcache", |m| m.own_mcpi.system.dcache),
        own(Mode::System, "tlb", |m| m.own_mcpi.system.tlb),
        own(Mode::System, "wbuffer", |m| m.own_mcpi.system.wbuffer),
        memsim("4-1", Cells::Column("i_u_sys"), TRACE, |_, m| Some(m.mcpi.system.icache)),
        memsim("4-1", Cells::Column("i_u_user"), TRACE, |_, m| Some(m.mcpi.user.icache)),
        memsim("4-1", Cells::Column("d_u_sys"), TRACE, |_, m| Some(m.mcpi.system.dcache)),
        memsim("4-1", Cells::Column("d_u_user"), TRACE, |_, m| Some(m.mcpi.user.dcache)),
        memsim("4-3", Cells::Column("refs_user"), TRACE, |_, m| {
            tlb(m, |m| thousands(m.user.tlb.refs))
        }),
        memsim("4-3", Cells::Column("refs_u"), TRACE, |_, m| {
            tlb(m, |m| thousands(m.system.tlb.refs))
        }),
        memsim("4-3", Cells::Column("utlb_uuser"), TRACE, |_, m| {
            tlb(m, |m| thousands(m.user.tlb.misses))
        }),
        memsim("4-3", Cells::Column("ktlb_u"), TRACE, |_, m| {
            tlb(m, |m| Some(m.system.tlb.misses as f64))
        }),
        memsim("4-3", Cells::Column("utlb_mcpi_u"), TRACE, |_, m| {
            tlb(m, |m| Some(m.mcpi.user.tlb))
        }),
        memsim("4-3", Cells::Column("ktlb_mcpi_u"), TRACE, |_, m| {
            tlb(m, |m| Some(m.mcpi.system.tlb))
        }),
        memsim("4-4", Cells::Column("u_mcpi"), TRACE, block_mcpi),
        memsim("4-2", Cells::Column("u_inst"), TRACE, |d, m| {
            competition(d, m, "competition_mcpi_icache")
        }),
        memsim("4-2", Cells::Column("u_data"), TRACE, |d, m| {
            competition(d, m, "competition_mcpi_dcache")
        }),
        memsim("4-2", Cells::Column("u_total"), TRACE, |d, m| {
            competition(d, m, "competition_mcpi_cache")
        }),
        memsim("4-4", Cells::Column("u_share"), TRACE, block_share),
        memsim("4-5", Cells::Column("u_mcpi"), TRACE, block_mcpi),
        memsim("4-5", Cells::Column("u_share"), TRACE, block_share),
        memsim("4-5", Cells::Column("u_cacheable"), TRACE, |d, m| {
            block(d, m).and_then(|c| thousands(c.reads))
        }),
        memsim("4-6", Cells::Column("u_sys"), TRACE, |_, m| Some(m.own_mcpi.system.wbuffer)),
        memsim("4-6", Cells::Column("u_user"), TRACE, |_, m| Some(m.own_mcpi.user.wbuffer)),
    ],
    derived: &[],
    notes: &[
        ("2-3", "today: the trace on the ds5000-200 preset; Linux stands under Ultrix's columns (both monolithic); idle instructions only when kernel symbols were known"),
        ("2-4", "today: stall cycles per instruction of each mode's own instructions"),
        ("2-4", "two systems on one machine today, as Ultrix beside Mach: `osmeter paper chen-bershad93 --guest A --guest B`, or `osmeter run --guest A --guest B --preset ds5000-200 PROBES` for kernels, flavours and parameters side by side with the kernel functions that differ (docs/guest-kernels.md)"),
        ("4-1", "today: the same stalls over all non-idle instructions, so user and system add up"),
        ("4-3", "today: the trace's TLB references and misses per mode on the ds5000-200 preset; memsim does not split the kernel's misses by the address they miss on, so every system-mode miss stands under KTLB (Ultrix); the MCPI are over all non-idle instructions"),
        ("4-2", "today: the stalls of the mixed trace less those of its user and kernel references each simulated alone (memsim --assertions, assertion 3), over all instructions"),
        ("4-4", "today: the kernel's block copy and clear routines (needs kernel symbols)"),
        ("4-5", "today: the same routines' MCPI, share and data reads (every read of theirs: memsim does not keep, per routine, which reads were uncacheable or went to memory, so those columns stay the paper's)"),
    ],
    elsewhere: Some(
        "today's side is a memsim run of a full-system trace: `osmeter paper chen-bershad93` makes \
         one (the grep workload traced under QEMU, simulated on ds5000-200 with the assertions; \
         --workload and --install change it), or `--run ID` reuses a stored one, made by `osmeter \
         trace --system --workload NAME --install -o T.osmt`, then `osmeter memsim T.osmt --preset \
         ds5000-200 --assertions`",
    ),
    cpu_relative: false,
};
