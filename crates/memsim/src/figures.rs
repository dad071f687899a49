//! The figures of a memory-system simulation, per machine: MCPI by mode and component, the miss
//! rate of every cache and the TLB by mode, and with kernel symbols the MCPI of every kernel
//! category. A simulation is deterministic: every figure is exact.

use crate::memsim::document::{MachineDoc, Mcpi, MemsimDoc};
use crate::results::figure::{Direction, Figure};
use crate::units::Unit;

fn mcpi(out: &mut Vec<Figure>, machine: &str, mode: &str, m: &Mcpi) {
    for (component, v) in m.by_name() {
        out.push(Figure::exact(
            format!("{machine} mcpi.{mode}.{component}"),
            "memsim",
            Unit::CyclesPerInstruction,
            Direction::Lower,
            v,
        ));
    }
}

fn machine_figures(m: &MachineDoc, out: &mut Vec<Figure>) {
    mcpi(out, &m.name, "total", &m.mcpi.total);
    mcpi(out, &m.name, "user", &m.mcpi.user);
    mcpi(out, &m.name, "system", &m.mcpi.system);
    for (mode, doc) in [("user", &m.user), ("system", &m.system)] {
        for (cache, c) in doc.caches_in_order() {
            if c.accesses > 0 {
                out.push(Figure::exact(
                    format!("{} miss-rate.{mode}.{cache}", m.name),
                    "memsim",
                    Unit::Ratio,
                    Direction::Lower,
                    c.miss_rate,
                ));
            }
        }
        if doc.tlb.present && doc.tlb.refs > 0 {
            out.push(Figure::exact(
                format!("{} miss-rate.{mode}.tlb", m.name),
                "memsim",
                Unit::Ratio,
                Direction::Lower,
                doc.tlb.miss_rate,
            ));
        }
    }
}

pub fn figures(doc: &MemsimDoc) -> Vec<Figure> {
    let mut out = Vec::new();
    for m in &doc.machines {
        machine_figures(m, &mut out);
    }
    if let Some(a) = &doc.attribution {
        for table in &a.machines {
            for row in table.categories.iter().filter(|r| r.instructions > 0) {
                out.push(Figure::exact(
                    format!("{} mcpi.category.{}", table.name, row.name),
                    "memsim",
                    Unit::CyclesPerInstruction,
                    Direction::Lower,
                    row.mcpi.total,
                ));
            }
        }
    }
    out
}

impl crate::results::document::Document for MemsimDoc {
    const KIND: crate::results::model::RunKind = crate::results::model::RunKind::Memsim;

    fn figures(&self) -> Vec<Figure> {
        figures(self)
    }

    fn how(&self) -> String {
        format!(
            "{} references of {}, {} machine(s){}",
            self.references,
            self.trace.path,
            self.machines.len(),
            if self.incomplete {
                ", incomplete trace"
            } else {
                ""
            }
        )
    }

    /// The machines' table, then the kernel's share by category where symbols allowed it.
    fn text(&self) -> String {
        crate::memsim::text::render(self) + &crate::memsim::kernel::analysis::render(self)
    }
}
