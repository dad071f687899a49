//! The CPU-relative figures `run` and `show` print under a run's table: for each paper that rates
//! its machines in MIPS and whose primitives the run measured, how much each primitive sped up
//! since the paper divided by how much the processor did.

use super::data::Paper;
use super::render;
use super::spec::{spec, Today};
use super::view::{self, Here};
use super::PaperId;
use crate::results::model::{Run, Status};
use anyhow::Result;
use std::fmt::Write;

/// The block of text for `run` (empty when no such paper's primitive is in the run, or the run
/// has no CPU reference to relate them to). It never fails: `run` prints it before keeping the
/// run, and a figure it cannot derive must not cost the measurement. `stored`: the run can be
/// named by its id afterwards (not under `--no-store`), so the block may point to `paper --run`.
pub fn text(run: &Run, stored: bool) -> String {
    blocks(run, stored).unwrap_or_else(|e| format!("\nno CPU-relative figures: {e:#}\n"))
}

fn blocks(run: &Run, stored: bool) -> Result<String> {
    let mut out = String::new();
    for id in PaperId::ALL {
        let s = spec(id);
        if !s.cpu_relative || !holds_part_of(id, run) {
            continue;
        }
        let paper = Paper::load(id)?;
        let doc = view::build(&paper, s, std::slice::from_ref(run), &Here::default())?;
        // A run that did not select the CPU reference has nothing to relate to: a block saying
        // only that would be noise under every such run. (One whose reference cannot serve, as
        // of other parameters, still says why.)
        if !run.measurements.iter().any(|m| m.probe == "cpu.reference") {
            continue;
        }
        let tables = if stored {
            format!(
                " (`osmeter paper {} --run {}` shows its tables)",
                id.key(),
                run.id
            )
        } else {
            String::new()
        };
        let _ = writeln!(out, "\nRelative to the CPU since {}{tables}:", id.name(),);
        match (render::relative_grid(&doc), &doc.cpu, &doc.cpu_missing) {
            (Some(g), Some(cpu), _) => {
                let _ = writeln!(
                    out,
                    "  this machine: {} MIPS on osmeter's integer mix (cpu.reference); below 1 the \
                     primitive gained less than the processor",
                    super::quantity::format_number(cpu.mips)
                );
                g.render(&mut out);
                if let Some(line) = render::os_mean_line(&doc) {
                    let _ = writeln!(out, "  {line}");
                }
            }
            (_, None, Some(why)) => {
                let _ = writeln!(out, "  no CPU-relative figures: {why}");
            }
            _ => {
                let _ = writeln!(
                    out,
                    "  no CPU-relative figures: none of the run's figures has a paper machine \
                     with a MIPS rating beside it"
                );
            }
        }
    }
    Ok(out)
}

/// Whether the run holds anything the paper's today side reads: one of its probes other than the
/// CPU reference, or the memsim or latency document it is set beside.
pub fn holds_part_of(paper: PaperId, run: &Run) -> bool {
    let s = spec(paper);
    match s.today() {
        Today::Memsim => run
            .sections
            .get::<crate::memsim::document::MemsimDoc>()
            .is_some(),
        Today::Latency => run
            .sections
            .get::<crate::latency::document::LatencyDoc>()
            .is_some(),
        Today::Probes => {
            let probes = s.probes();
            run.measurements.iter().any(|m| {
                m.status == Status::Ok
                    && m.probe != crate::results::derive::REFERENCE_PROBE
                    && probes.contains(&m.probe.as_str())
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::papers::fixtures::ousterhout_run;

    #[test]
    fn a_run_with_the_papers_primitives_gets_its_cpu_relative_figures() {
        let run = ousterhout_run(100.0, 100.0, 1e10);
        let t = text(&run, true);
        assert!(
            t.contains("Relative to the CPU since Ousterhout 1989"),
            "{t}"
        );
        assert!(t.contains("10,000 MIPS"), "{t}");
        assert!(t.contains("getpid"), "{t}");
        assert!(t.contains("bcopy cached (hardware)"), "{t}");
        assert!(
            t.contains("geometric mean of 1:")
                && t.contains("left out as not OS primitives: bcopy cached (hardware)"),
            "{t}"
        );
        assert!(t.contains("--run test"), "{t}");
        // A run that was not kept cannot be named again: no `--run` to suggest.
        assert!(!text(&run, false).contains("--run"));
    }

    #[test]
    fn without_a_usable_reference_it_says_why_and_without_one_nothing() {
        let mut run = ousterhout_run(100.0, 100.0, 1e10);
        run.measurements[0].params.clear();
        let t = text(&run, true);
        assert!(t.contains("no CPU-relative figures"), "{t}");
        assert!(t.contains("earlier cpu.reference"), "{t}");
        // Not selected at all: nothing to say under the run's table.
        run.measurements.remove(0);
        assert_eq!(text(&run, true), "");
    }

    #[test]
    fn a_run_without_them_gets_nothing() {
        let mut run = ousterhout_run(100.0, 100.0, 1e10);
        run.measurements.truncate(1);
        assert_eq!(text(&run, true), "");
        run.measurements.clear();
        assert_eq!(text(&run, true), "");
    }
}
