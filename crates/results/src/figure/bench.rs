//! The figures of a microbenchmark run: one per measured probe and parameter set.

use super::{Direction, Evidence, Figure, Role};
use crate::results::model::{label, Measurement, Run, Status};
use std::collections::BTreeMap;

/// What a figure measures, for summaries that set OS speed against CPU speed: as the run stored
/// it (from the probe's registry entry), or, for runs stored before roles were, as the probes of
/// that time declared it.
fn role(m: &Measurement) -> Role {
    m.role
        .unwrap_or_else(|| role_before_roles_were_stored(&m.probe))
}

/// The roles of the probes that runs stored without roles can hold, frozen as they were declared
/// then (every run stored since carries its own): the harness's loop, the CPU yardstick, the
/// memory hardware and the applications; every other probe was an OS primitive.
/// `probes::tests` checks that the registry still declares the same for these probes.
pub fn role_before_roles_were_stored(probe: &str) -> Role {
    match probe {
        "cpu.reference" => Role::CpuReference,
        "memory.copy" | "memory.latency" => Role::Hardware,
        "cpu.null" => Role::Other,
        app if app.starts_with("app.") => Role::Other,
        _ => Role::Os,
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
        role: role(m),
        // Measured in rounds: the median of the round values, whose two-level bootstrap gave the
        // interval. Otherwise the median of the raw samples, which the statistics also use.
        value: if m.round_values.len() > 1 {
            summary.median
        } else {
            crate::stats::summary::median_of(&mut m.samples.clone())
        },
        interval: Some(summary.ci95),
        evidence: Evidence::Rounds(rounds),
        explain: counters(m),
    })
}

/// The spread shown beside a benchmark figure (cv%), one definition for the run table, the
/// exports and the report: between rounds, or between the samples of a single round.
pub fn cv(m: &Measurement) -> Option<f64> {
    figure(m)?.cv()
}

pub fn figures(run: &Run) -> Vec<Figure> {
    run.measurements.iter().filter_map(figure).collect()
}

/// Per figure key, which pages backed a placement-sensitive figure's buffers, where the run says.
pub fn pages(run: &Run) -> BTreeMap<String, crate::meter::pages::Pages> {
    run.measurements
        .iter()
        .filter_map(|m| Some((label(&m.probe, &m.params), m.pages?)))
        .collect()
}

/// Per figure key, what makes a figure not what its name says: the probe's claims that the run
/// found contradicted (counters, or the probe's own checks of its conditions).
pub fn caveats(run: &Run) -> BTreeMap<String, Vec<String>> {
    run.measurements
        .iter()
        .filter(|m| m.checks.iter().any(|c| !c.holds))
        .map(|m| {
            let said = m
                .checks
                .iter()
                .filter(|c| !c.holds)
                .map(crate::results::model::ClaimCheck::contradiction)
                .collect();
            (label(&m.probe, &m.params), said)
        })
        .collect()
}
