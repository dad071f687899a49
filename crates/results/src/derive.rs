//! Figures derived from the measured ones, as the papers use them: cycles per instruction, misses per
//! thousand instructions, bytes per instruction, and cost in units of the CPU-bound reference.

use super::model::{CounterValues, Measurement, Run, Status, Unit};

/// Probe whose median is the unit of "reference_units".
pub const REFERENCE_PROBE: &str = "cpu.reference";

const MISS_EVENTS: &[&str] = &[
    "L1-dcache-load-misses",
    "L1-icache-load-misses",
    "LLC-load-misses",
    "dTLB-load-misses",
    "iTLB-load-misses",
    "branch-misses",
];

fn ratio(num: Option<f64>, den: Option<f64>) -> Option<f64> {
    match (num, den) {
        (Some(n), Some(d)) if d > 0.0 => Some(n / d),
        _ => None,
    }
}

fn per_scope(m: &mut Measurement, scope: &str, values: &CounterValues) {
    let instr = values.get("instructions").copied();
    if let Some(cpi) = ratio(values.get("cycles").copied(), instr) {
        m.derived.insert(format!("cpi.{scope}"), cpi);
    }
    for event in MISS_EVENTS {
        if let Some(r) = ratio(values.get(*event).copied(), instr) {
            m.derived
                .insert(format!("mpki.{scope}.{event}"), r * 1000.0);
        }
    }
}

/// Fills `derived` of every measured figure of the run.
pub fn annotate(run: &mut Run) {
    let reference = run
        .measurements
        .iter()
        .find(|m| m.probe == REFERENCE_PROBE && m.status == Status::Ok)
        .and_then(|m| m.summary.as_ref().map(|s| s.median))
        .filter(|r| *r > 0.0);
    for m in &mut run.measurements {
        let Some(median) = m.summary.as_ref().map(|s| s.median) else {
            continue;
        };
        let user = m.counters.user.clone();
        let kernel = m.counters.kernel.clone();
        per_scope(m, "user", &user);
        per_scope(m, "kernel", &kernel);
        let u = user.get("instructions").copied();
        let k = kernel.get("instructions").copied();
        if let (Some(u), Some(k)) = (u, k) {
            if u + k > 0.0 {
                m.derived
                    .insert("kernel_instruction_share".into(), k / (u + k));
                if let Some(b) = m.bytes_per_op {
                    m.derived
                        .insert("bytes_per_instruction".into(), b as f64 / (u + k));
                }
            }
        }
        if let (Some(r), Unit::Nanoseconds) = (reference, m.unit) {
            if m.probe != REFERENCE_PROBE {
                m.derived.insert("reference_units".into(), median / r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::model::{Params, Summary};

    fn measured(probe: &str, unit: Unit, median: f64) -> Measurement {
        let mut m =
            Measurement::not_measured(probe, Params::new(), unit, Status::Ok, String::new());
        m.reason = None;
        m.summary = Some(Summary {
            median,
            ..Default::default()
        });
        m
    }

    #[test]
    fn known_answers() {
        let mut copy = measured("memory.copy", Unit::BytesPerSecond, 1e9);
        copy.bytes_per_op = Some(4096);
        copy.counters.user.insert("instructions".into(), 1000.0);
        copy.counters.user.insert("cycles".into(), 1500.0);
        copy.counters.user.insert("LLC-load-misses".into(), 2.0);
        copy.counters.kernel.insert("instructions".into(), 24.0);
        let mut run = crate::results::model::tests::empty_run();
        run.measurements = vec![
            measured("cpu.reference", Unit::Nanoseconds, 2000.0),
            measured("syscall.null", Unit::Nanoseconds, 200.0),
            copy,
        ];
        annotate(&mut run);
        let [reference, null, copy] = &run.measurements[..] else {
            panic!()
        };
        assert!(reference.derived.is_empty());
        assert_eq!(null.derived["reference_units"], 0.1);
        assert_eq!(copy.derived["cpi.user"], 1.5);
        assert_eq!(copy.derived["mpki.user.LLC-load-misses"], 2.0);
        assert_eq!(copy.derived["bytes_per_instruction"], 4.0);
        assert_eq!(copy.derived["kernel_instruction_share"], 24.0 / 1024.0);
        assert!(
            !copy.derived.contains_key("reference_units"),
            "bandwidth has no reference units"
        );
    }
}
