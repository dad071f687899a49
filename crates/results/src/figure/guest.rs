//! The figures of a guest run: per probe, instructions, loads and stores per operation, user and
//! kernel apart, and where the references were simulated (`--preset`), misses, stall cycles and
//! MCPI per operation on each preset. Counted in a deterministic guest, every figure is exact.

use super::{Direction, Figure, Role};
use crate::results::guest::GuestDoc;
use crate::results::model::Status;
use crate::units::Unit;

pub fn figures(doc: &GuestDoc) -> Vec<Figure> {
    let mut out = Vec::new();
    for p in doc.probes.iter().filter(|p| p.status == Status::Ok) {
        let Some(c) = &p.per_op else { continue };
        let group = p.probe.split('.').next().unwrap_or(&p.probe);
        for (mode, counts) in c.modes() {
            for (event, v) in counts.by_name() {
                let mut f = Figure::exact(
                    format!("{} {mode}.{event}", p.label()),
                    group,
                    Unit::Count,
                    Direction::Lower,
                    v,
                );
                f.role = Role::Os;
                out.push(f);
            }
        }
        for sim in &p.simulated {
            for (mode, counts) in sim.modes() {
                for (event, v) in counts.by_name() {
                    let unit = if event == "mcpi" {
                        Unit::Ratio
                    } else {
                        Unit::Count
                    };
                    let mut f = Figure::exact(
                        format!("{} {}.{mode}.{event}", p.label(), sim.preset),
                        group,
                        unit,
                        Direction::Lower,
                        v,
                    );
                    f.role = Role::Os;
                    out.push(f);
                }
            }
        }
    }
    out
}

impl crate::results::document::Document for GuestDoc {
    const KIND: crate::results::model::RunKind = crate::results::model::RunKind::Guest;

    fn figures(&self) -> Vec<Figure> {
        figures(self)
    }

    fn how(&self) -> String {
        format!(
            "guest {}, {} operations per counted window, exact counts",
            crate::results::guest::side_label(self),
            self.iterations
        )
    }

    fn text(&self) -> String {
        crate::results::guest::render(self)
    }
}
