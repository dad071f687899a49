//! A made-up fleet for scale tests and the scale benchmark: `hosts` hosts of a few machine classes
//! (CPU model and count, kernel), each with `runs_per_host` runs six hours apart, every run a copy
//! of one real run (the template: its figures, samples, rounds and counters) with its values
//! scaled by the class, the host and a little run-to-run noise. A few hosts (every
//! `SLOW_EVERY`-th) turn 30 % slower on their system-call figures from the run `SLOW_FROM` on, so
//! `fleet` has something to find. Everything follows from the host and run numbers: the same call
//! makes the same fleet.
#![allow(dead_code)]

use osmeter::results::fingerprint::Fingerprint;
use osmeter::results::model::{Measurement, Run};

/// CPU model, online CPUs, kernel release, and how fast the class is (a factor on every value).
pub const CLASSES: &[(&str, usize, &str, f64)] = &[
    (
        "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
        8,
        "6.1.0-27-amd64",
        1.0,
    ),
    (
        "AMD EPYC 7763 64-Core Processor",
        16,
        "6.1.0-27-amd64",
        0.82,
    ),
    ("AMD EPYC 7763 64-Core Processor", 16, "6.12.9-amd64", 0.86),
    (
        "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz",
        4,
        "6.6.13+bpo-cloud-amd64",
        0.93,
    ),
];
pub const SLOW_EVERY: usize = 50;
pub const SLOW_FROM: usize = 40;
/// The first run's start, 2026-10-01T00:00:00Z, in seconds since the epoch.
const EPOCH: i64 = 1_790_812_800;
const HOURS_APART: i64 = 6;

pub fn host_name(host: usize) -> String {
    format!("fleet-{host:03}")
}

/// The hosts made slow (their names).
pub fn slow_hosts(hosts: usize) -> Vec<String> {
    (0..hosts)
        .filter(|h| h % SLOW_EVERY == SLOW_EVERY - 1)
        .map(host_name)
        .collect()
}

/// The run `run` (from 0) of host `host` (from 0).
pub fn fleet_run(template: &Run, host: usize, run: usize) -> Run {
    let (cpu, cpus, kernel, speed) = CLASSES[host % CLASSES.len()];
    let started = EPOCH + (run as i64 * HOURS_APART * 3600) + host as i64 * 20;
    let mut r = template.clone();
    // The fleet's runs were measured on quiet machines, whatever the machine that measured the
    // template was doing (history and compare leave busy runs out).
    r.machine = None;
    r.id = format!("{started:x}-{:08x}", host * 1000 + run);
    r.started_at = osmeter::clock::rfc3339(started);
    r.tags = [
        ("wave".to_string(), (run + 1).to_string()),
        ("site".to_string(), format!("dc{}", host % 3 + 1)),
    ]
    .into_iter()
    .collect();
    let base = template.fingerprint.clone().unwrap_or_default();
    r.fingerprint = Some(Fingerprint {
        hostname: Some(host_name(host)),
        machine_id: Some(format!("{:016x}", splitmix(host as u64 + 1))),
        cpu_model: Some(cpu.to_string()),
        cpus_online: Some(cpus),
        cpus_logical: Some(cpus),
        kernel_release: Some(kernel.to_string()),
        ..base
    });
    // A host's own speed within its class: within about +-2 %.
    let host_factor = 1.0 + 0.02 * unit_noise(splitmix(host as u64 * 7919 + 3));
    let slow = host % SLOW_EVERY == SLOW_EVERY - 1 && run >= SLOW_FROM;
    for (i, m) in r.measurements.iter_mut().enumerate() {
        let noise = 1.0
            + 0.01
                * unit_noise(splitmix(
                    (host as u64) << 32 | (run as u64) << 12 | i as u64,
                ));
        let slowed = if slow && m.probe.starts_with("syscall.") {
            1.3
        } else {
            1.0
        };
        scale(m, speed * host_factor * noise * slowed);
    }
    r
}

/// Every run of the fleet, host by host.
pub fn fleet_runs(
    template: &Run,
    hosts: usize,
    runs_per_host: usize,
) -> impl Iterator<Item = Run> + '_ {
    (0..hosts).flat_map(move |h| (0..runs_per_host).map(move |k| fleet_run(template, h, k)))
}

/// Multiplies every time-like value of a measurement by `factor` (a rate by its inverse), so its
/// figure moves by that factor and keeps its spread.
fn scale(m: &mut Measurement, factor: f64) {
    let f = if osmeter::results::figure::Direction::of_unit(m.unit)
        == osmeter::results::figure::Direction::Higher
    {
        1.0 / factor
    } else {
        factor
    };
    m.samples.iter_mut().for_each(|v| *v *= f);
    m.rounds.iter_mut().flatten().for_each(|v| *v *= f);
    m.round_values.iter_mut().for_each(|r| r.value *= f);
    if let Some(s) = m.summary.as_mut() {
        for v in [
            &mut s.median,
            &mut s.mean,
            &mut s.stddev,
            &mut s.min,
            &mut s.max,
        ] {
            *v *= f;
        }
        s.ci95 = [s.ci95[0] * f, s.ci95[1] * f];
    }
}

/// A well-mixed 64-bit number from a seed (the first number of SplitMix64 from it).
fn splitmix(seed: u64) -> u64 {
    osmeter::stats::rng::splitmix64(&mut { seed })
}

/// A number in [-1, 1) from a mixed one.
fn unit_noise(mixed: u64) -> f64 {
    (mixed >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}
