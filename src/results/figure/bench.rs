//! The figures of a microbenchmark run: one per measured probe and parameter set.

use super::{Direction, Evidence, Figure, Role};
use crate::results::derive::REFERENCE_PROBE;
use crate::results::model::{label, Measurement, Run, Status};
use std::collections::BTreeMap;

/// What a probe measures, for summaries that set OS speed against CPU speed.
pub fn role_of(probe: &str) -> Role {
    if probe == REFERENCE_PROBE {
        Role::CpuReference
    } else if probe == "cpu.null" {
        // The harness's own empty loop.
        Role::Other
    } else if probe == "memory.copy" || probe == "memory.latency" {
        Role::Hardware
    } else {
        Role::Os
    }
}

fn counters(m: &Measurement) -> BTreeMap<String, f64> {
    let c = &m.counters;
    [
        ("user", &c.user),
        ("kernel", &c.kernel),
        ("software", &c.software),
    ]
    .into_iter()
    .flat_map(|(scope, map)| map.iter().map(move |(e, v)| (format!("{scope}.{e}"), *v)))
    .collect()
}

pub fn figure(m: &Measurement) -> Option<Figure> {
    let summary = m.summary.as_ref()?;
    if m.status != Status::Ok || m.samples.is_empty() {
        return None;
    }
    let rounds = if m.rounds.is_empty() {
        vec![m.samples.clone()]
    } else {
        m.rounds.clone()
    };
    Some(Figure {
        key: label(&m.probe, &m.params),
        group: m.probe.split('.').next().unwrap_or("").to_string(),
        unit: m.unit,
        direction: Direction::of_unit(m.unit),
        role: role_of(&m.probe),
        // From the raw samples, which the statistics also use; the stored summary is their digest.
        value: super::median(&m.samples),
        interval: Some(summary.ci95),
        evidence: Evidence::Rounds(rounds),
        explain: counters(m),
    })
}

pub fn figures(run: &Run) -> Vec<Figure> {
    run.measurements.iter().filter_map(figure).collect()
}
