//! The whole-workload view of app figures, printed under the run's table (by `run` and by `show`
//! of a stored run): per operation, the workload's user and kernel time (its cgroup), its context
//! switches and page faults, the shares of the whole machine's CPU time spent in the kernel, in
//! interrupts (hard and soft) and idle, and the interrupts that fired, by device.

use crate::results::model::{Measurement, Run, Status};
use crate::units::{format, Unit};
use std::fmt::Write;

fn get(m: &Measurement, name: &str) -> Option<f64> {
    m.counters.software.get(name).copied()
}

fn ms(ns: f64) -> String {
    if ns == 0.0 {
        "0".into()
    } else {
        format(ns, Unit::Nanoseconds)
    }
}

/// The machine's CPU time states that [`shares`] divides by.
const MACHINE_STATES: &[&str] = &[
    "machine-user-ns",
    "machine-kernel-ns",
    "machine-irq-ns",
    "machine-softirq-ns",
    "machine-idle-ns",
    "machine-iowait-ns",
    "machine-steal-ns",
];

/// Shares (0 to 1) of the whole machine's CPU time during the figure's samples: kernel,
/// interrupts (hard and soft) and idle; None when the machine's time was not read.
pub fn shares(m: &Measurement) -> Option<(f64, f64, f64)> {
    let total: f64 = MACHINE_STATES.iter().filter_map(|k| get(m, k)).sum();
    if total <= 0.0 {
        return None;
    }
    let irq = get(m, "machine-irq-ns").unwrap_or(0.0) + get(m, "machine-softirq-ns").unwrap_or(0.0);
    Some((
        get(m, "machine-kernel-ns").unwrap_or(0.0) / total,
        irq / total,
        get(m, "machine-idle-ns").unwrap_or(0.0) / total,
    ))
}

/// The busiest interrupt sources of a figure, `LOC 40, virtio0-requests 12`.
pub fn top_interrupts(m: &Measurement, n: usize) -> String {
    let mut irqs: Vec<(&str, f64)> = m
        .counters
        .software
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("irq:")?, *v)))
        .collect();
    irqs.sort_by(|a, b| b.1.total_cmp(&a.1));
    irqs.iter()
        .take(n)
        .filter(|(_, v)| *v >= 0.05)
        .map(|(k, v)| match *v {
            v if v < 10.0 => format!("{k} {v:.1}"),
            v => format!("{k} {v:.0}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The section, or nothing when the run holds no counted app figure.
pub fn text(run: &Run) -> String {
    let apps: Vec<&Measurement> = run
        .measurements
        .iter()
        .filter(|m| m.probe.starts_with("app.") && m.status == Status::Ok)
        .filter(|m| get(m, "workload-user-ns").is_some())
        .collect();
    if apps.is_empty() {
        return String::new();
    }
    let width = apps.iter().map(|m| m.label().len()).max().unwrap_or(10);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nApp figures counted whole, per operation: the workload's processes (user, kernel, \
         switches, faults), then the shares of the whole machine's CPU time in the kernel, in \
         interrupts and idle, and interrupts by source."
    );
    let _ = writeln!(
        out,
        "{:<width$}  {:>9} {:>9} {:>5} {:>7} {:>7}  {:>8} {:>6} {:>6}  interrupts",
        "figure", "user", "kernel", "kern%", "csw", "faults", "m.kernel", "m.irq", "m.idle"
    );
    for m in apps {
        let user = get(m, "workload-user-ns").unwrap_or(0.0);
        let kernel = get(m, "workload-kernel-ns").unwrap_or(0.0);
        let share = if user + kernel > 0.0 {
            format!("{:.0}%", 100.0 * kernel / (user + kernel))
        } else {
            "-".into()
        };
        let pct = |x: f64| format!("{:.1}%", 100.0 * x);
        let (mk, mi, md) = match shares(m) {
            Some((k, i, d)) => (pct(k), pct(i), pct(d)),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let _ = writeln!(
            out,
            "{:<width$}  {:>9} {:>9} {:>5} {:>7.1} {:>7.0}  {:>8} {:>6} {:>6}  {}",
            m.label(),
            ms(user),
            ms(kernel),
            share,
            get(m, "context-switches").unwrap_or(0.0),
            get(m, "page-faults").unwrap_or(0.0),
            mk,
            mi,
            md,
            top_interrupts(m, 3)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_time_is_given_as_shares_of_all_states() {
        let mut m = Measurement::not_measured(
            "app.interp",
            Default::default(),
            crate::results::model::Unit::Nanoseconds,
            Status::Ok,
            String::new(),
        );
        for (k, v) in [
            ("machine-user-ns", 50.0),
            ("machine-kernel-ns", 20.0),
            ("machine-irq-ns", 5.0),
            ("machine-softirq-ns", 5.0),
            ("machine-idle-ns", 20.0),
        ] {
            m.counters.software.insert(k.into(), v);
        }
        let (k, i, d) = shares(&m).unwrap();
        assert!((k - 0.2).abs() < 1e-12 && (i - 0.1).abs() < 1e-12 && (d - 0.2).abs() < 1e-12);
        m.counters.software.clear();
        assert_eq!(shares(&m), None);
    }
}
