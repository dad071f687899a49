//! This machine's integer speed in MIPS, from the `cpu.reference` figure of a run: the time of an
//! operation of a known number of instructions of the reference mix.

use super::source::{probe, ProbeRef};
use crate::results::model::{Run, Unit};
use serde::{Deserialize, Serialize};

pub const REFERENCE: ProbeRef = probe(crate::results::derive::REFERENCE_PROBE, &[]);

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct CpuSpeed {
    /// Millions of instructions of the reference mix per second (instructions counted by
    /// callgrind for this build).
    pub mips: f64,
    /// From the confidence interval of the figure.
    pub mips_ci95: [f64; 2],
    /// The same from the hardware instruction counter, where the run had one.
    pub mips_pmu: Option<f64>,
    pub figure: String,
    pub run: String,
}

/// MIPS of an operation of `instructions` instructions taking `ns` nanoseconds.
pub fn mips(instructions: f64, ns: f64) -> f64 {
    instructions / ns * 1e3
}

/// The CPU speed of the runs, or why there is none.
pub fn cpu_speed(runs: &[Run]) -> Result<CpuSpeed, String> {
    let (run, m) = REFERENCE
        .find(runs)
        .ok_or_else(|| REFERENCE.missing_reason(runs))?;
    let Some(instructions) = m.params.get("instructions").and_then(|v| v.as_f64()) else {
        return Err(format!(
            "run {} has the earlier cpu.reference (a chain of multiplies, not a count of \
             instructions), so it gives no MIPS figure; measure cpu.reference again",
            run.id
        ));
    };
    if m.unit != Unit::Nanoseconds {
        return Err(format!("cpu.reference in run {} is not a time", run.id));
    }
    let s = m
        .summary
        .as_ref()
        .expect("found measurements have a summary");
    if s.median <= 0.0 {
        return Err(format!("cpu.reference in run {} took no time", run.id));
    }
    let bound = |ns: f64| {
        if ns > 0.0 {
            mips(instructions, ns)
        } else {
            f64::INFINITY
        }
    };
    let mips_pmu = m
        .counters
        .user
        .get("instructions")
        .filter(|i| **i > 0.0)
        .map(|i| mips(*i, s.median));
    Ok(CpuSpeed {
        mips: mips(instructions, s.median),
        mips_ci95: [bound(s.ci95[1]), bound(s.ci95[0])],
        mips_pmu,
        figure: m.label(),
        run: run.id.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::model::{Measurement, Params, Status, Summary};

    fn reference(params: Params, median: f64) -> Run {
        let mut m = Measurement::not_measured(
            "cpu.reference",
            params,
            Unit::Nanoseconds,
            Status::Ok,
            String::new(),
        );
        m.summary = Some(Summary {
            median,
            ci95: [median * 0.5, median * 2.0],
            ..Default::default()
        });
        let mut run = crate::results::fixtures::empty_run();
        run.measurements.push(m);
        run
    }

    #[test]
    fn mips_known_answers() {
        // 1000 instructions in 100 ns: 10 per ns, 10,000 MIPS.
        assert_eq!(mips(1000.0, 100.0), 10_000.0);
        let mut run = reference(crate::params![("instructions", 1000)], 100.0);
        let c = cpu_speed(std::slice::from_ref(&run)).unwrap();
        assert_eq!(c.mips, 10_000.0);
        assert_eq!(c.mips_ci95, [5_000.0, 20_000.0]);
        assert_eq!(c.mips_pmu, None);
        run.measurements[0]
            .counters
            .user
            .insert("instructions".into(), 1100.0);
        assert_eq!(cpu_speed(&[run]).unwrap().mips_pmu, Some(11_000.0));
    }

    #[test]
    fn the_old_multiply_chain_is_refused() {
        let run = reference(Params::new(), 2000.0);
        assert!(cpu_speed(&[run])
            .unwrap_err()
            .contains("earlier cpu.reference"));
        let empty = crate::results::fixtures::empty_run();
        assert!(cpu_speed(&[empty]).unwrap_err().contains("not in the run"));
    }
}
