//! Where today's side of a paper's figure comes from: one osmeter measurement, named by probe and
//! the parameters that must match, read from one or more stored runs and converted to the paper's
//! unit.

use super::quantity::Unit;
use crate::results::model::{Measurement, Run, Status, Unit as RunUnit};
use serde::Serialize;

/// A parameter value a measurement must have.
#[derive(Debug, Clone, Copy)]
pub enum Param {
    Str(&'static str),
    Num(u64),
    Bool(bool),
}

impl Param {
    fn matches(&self, v: &serde_json::Value) -> bool {
        match *self {
            Param::Str(s) => v.as_str() == Some(s),
            Param::Num(n) => v.as_u64() == Some(n),
            Param::Bool(b) => v.as_bool() == Some(b),
        }
    }
}

/// One osmeter figure: a probe, the parameters that must match, and which of several matching
/// measurements to take (the one with the largest value of a size parameter, when the paper's
/// case is "larger than any cache").
#[derive(Debug, Clone, Copy)]
pub struct ProbeRef {
    pub probe: &'static str,
    pub params: &'static [(&'static str, Param)],
    pub largest: Option<&'static str>,
}

pub const fn probe(probe: &'static str, params: &'static [(&'static str, Param)]) -> ProbeRef {
    ProbeRef {
        probe,
        params,
        largest: None,
    }
}

impl ProbeRef {
    fn matches(&self, m: &Measurement) -> bool {
        m.probe == self.probe
            && self
                .params
                .iter()
                .all(|(k, p)| m.params.get(*k).is_some_and(|v| p.matches(v)))
    }

    /// Whether a measurement's parameters are those this figure needs (for choosing which variants
    /// of a probe to run).
    pub fn wants(&self, params: &crate::results::model::Params) -> bool {
        self.params
            .iter()
            .all(|(k, p)| params.get(*k).is_some_and(|v| p.matches(v)))
    }

    /// Whether a point has this figure's parameters, whatever its `except` parameter is (a
    /// guest has one CPU: a figure of two CPUs is counted with both parties on it).
    pub fn wants_except(&self, params: &crate::results::model::Params, except: &str) -> bool {
        self.params
            .iter()
            .filter(|(k, _)| *k != except)
            .all(|(k, p)| params.get(*k).is_some_and(|v| p.matches(v)))
    }

    /// The measured figure in the given runs: the first run that has it, measured successfully.
    pub fn find<'a>(&self, runs: &'a [Run]) -> Option<(&'a Run, &'a Measurement)> {
        runs.iter().find_map(|run| {
            let mut hits = run
                .measurements
                .iter()
                .filter(|m| self.matches(m) && m.status == Status::Ok && m.summary.is_some());
            let best = match self.largest {
                None => hits.next(),
                Some(key) => hits.max_by_key(|m| m.params.get(key).and_then(|v| v.as_u64())),
            };
            best.map(|m| (run, m))
        })
    }

    /// Why the figure is missing from the runs: not measured, or measured and skipped or failed.
    pub fn missing_reason(&self, runs: &[Run]) -> String {
        let tried = runs
            .iter()
            .flat_map(|r| r.measurements.iter())
            .find(|m| self.matches(m));
        match tried {
            Some(m) => format!(
                "{} was {:?}: {}",
                m.label(),
                m.status,
                m.reason.as_deref().unwrap_or("no figure")
            ),
            None => format!("{} is not in the run", self.label()),
        }
    }

    pub fn label(&self) -> String {
        let mut s = self.probe.to_string();
        for (k, p) in self.params {
            let v = match p {
                Param::Str(s) => s.to_string(),
                Param::Num(n) => n.to_string(),
                Param::Bool(b) => b.to_string(),
            };
            s.push_str(&format!(" {k}={v}"));
        }
        s
    }
}

/// Today's figure, in the paper's unit.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct NowValue {
    pub value: f64,
    /// The 95 % confidence interval of the median, in the same unit.
    pub ci95: [f64; 2],
    /// The measurement it came from (`probe key=value ...`) and its run.
    pub figure: String,
    pub run: String,
}

/// Converts a measured median (osmeter's unit) to the paper's unit; `None` when the two do not
/// measure the same kind of thing.
pub fn convert(value: f64, from: RunUnit, to: Unit) -> Option<f64> {
    match (from, to) {
        // A time per request is one over the throughput.
        (RunUnit::Nanoseconds, Unit::RequestsPerSecond) => (value > 0.0).then(|| 1e9 / value),
        (RunUnit::Nanoseconds, _) => to.nanoseconds().map(|ns| value / ns),
        (RunUnit::Seconds, _) => to.nanoseconds().map(|ns| value * 1e9 / ns),
        (RunUnit::BytesPerSecond, _) => to.bytes_per_second().map(|bps| value / bps),
        (RunUnit::OpsPerSecond, Unit::RequestsPerSecond)
        | (RunUnit::Count, Unit::Count)
        | (RunUnit::Ratio, Unit::Ratio)
        | (RunUnit::CyclesPerInstruction, Unit::CyclesPerInstruction) => Some(value),
        _ => None,
    }
}

/// Today's value of a figure in the paper's unit, or why there is none.
pub fn now_value(r: &ProbeRef, runs: &[Run], unit: Unit) -> Result<NowValue, String> {
    let (run, m) = r.find(runs).ok_or_else(|| r.missing_reason(runs))?;
    let s = m
        .summary
        .as_ref()
        .expect("find keeps measurements with a summary");
    let conv = |v: f64| convert(v, m.unit, unit);
    let value = conv(s.median).ok_or_else(|| {
        format!(
            "{} is in {}, which does not convert to {}",
            m.label(),
            m.unit.symbol(),
            unit.symbol()
        )
    })?;
    let (a, b) = (
        conv(s.ci95[0]).unwrap_or(value),
        conv(s.ci95[1]).unwrap_or(value),
    );
    Ok(NowValue {
        value,
        ci95: [a.min(b), a.max(b)],
        figure: m.label(),
        run: run.id.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::papers::fixtures::measured;

    #[test]
    fn units_convert_to_the_papers() {
        assert_eq!(
            convert(250.0, RunUnit::Nanoseconds, Unit::Microseconds),
            Some(0.25)
        );
        assert_eq!(
            convert(2e9, RunUnit::BytesPerSecond, Unit::MegabytesPerSecond),
            Some(2000.0)
        );
        assert_eq!(
            convert(1.0, RunUnit::Nanoseconds, Unit::MegabytesPerSecond),
            None
        );
        assert_eq!(convert(1.0, RunUnit::BytesPerSecond, Unit::Ratio), None);
        assert_eq!(
            convert(0.5, RunUnit::Seconds, Unit::Milliseconds),
            Some(500.0)
        );
        assert_eq!(convert(3.0, RunUnit::Count, Unit::Count), Some(3.0));
        assert_eq!(convert(3.0, RunUnit::Bytes, Unit::Count), None);
        // 2 ms per request is 500 requests a second; a request that took no time has no rate.
        assert_eq!(
            convert(2e6, RunUnit::Nanoseconds, Unit::RequestsPerSecond),
            Some(500.0)
        );
        assert_eq!(
            convert(0.0, RunUnit::Nanoseconds, Unit::RequestsPerSecond),
            None
        );
    }

    #[test]
    fn the_matching_measurement_is_found_and_converted() {
        let mut run = crate::results::fixtures::empty_run();
        run.id = "r1".into();
        let mut failed = measured(
            "fs.read_cached",
            crate::params![("file_size", 1u64 << 30)],
            RunUnit::BytesPerSecond,
            1.0,
        );
        failed.status = Status::Failed;
        failed.reason = Some("disk full".into());
        run.measurements = vec![
            measured(
                "select.select",
                crate::params![("fds", 10), ("ready", false)],
                RunUnit::Nanoseconds,
                900.0,
            ),
            measured(
                "select.select",
                crate::params![("fds", 10), ("ready", true)],
                RunUnit::Nanoseconds,
                1500.0,
            ),
            measured(
                "fs.read_cached",
                crate::params![("file_size", 4u64 << 20)],
                RunUnit::BytesPerSecond,
                8e9,
            ),
            measured(
                "fs.read_cached",
                crate::params![("file_size", 64u64 << 20)],
                RunUnit::BytesPerSecond,
                5e9,
            ),
            failed,
        ];
        let runs = [run];
        const FULL: ProbeRef = probe(
            "select.select",
            &[("fds", Param::Num(10)), ("ready", Param::Bool(true))],
        );
        let v = now_value(&FULL, &runs, Unit::Microseconds).unwrap();
        assert_eq!(v.value, 1.5);
        assert_eq!(v.figure, "select.select fds=10 ready=true");
        assert_eq!(v.run, "r1");
        let largest = ProbeRef {
            largest: Some("file_size"),
            ..probe("fs.read_cached", &[])
        };
        // The failed 1 GiB figure is passed over; of the measured ones the 64 MiB file is largest.
        assert_eq!(
            now_value(&largest, &runs, Unit::MegabytesPerSecond)
                .unwrap()
                .value,
            5000.0
        );
        const ABSENT: ProbeRef = probe("syscall.null", &[]);
        assert_eq!(
            now_value(&ABSENT, &runs, Unit::Microseconds).unwrap_err(),
            "syscall.null is not in the run"
        );
        const FAILED: ProbeRef = probe("fs.read_cached", &[("file_size", Param::Num(1 << 30))]);
        assert!(now_value(&FAILED, &runs, Unit::MegabytesPerSecond)
            .unwrap_err()
            .contains("disk full"));
    }
}
