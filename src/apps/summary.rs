//! The whole-workload view of app figures, printed under the run's table: per operation, the
//! workload's user and kernel time (its cgroup), its context switches and page faults, where the
//! machine's CPU time went (kernel, interrupts, idle) and the interrupts that fired, by device.

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
         switches, faults), then the whole machine's CPU time (kernel, interrupts, idle) and \
         interrupts by source."
    );
    let _ = writeln!(
        out,
        "{:<width$}  {:>9} {:>9} {:>5} {:>7} {:>7}  {:>9} {:>9} {:>9}  interrupts",
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
        let irq =
            get(m, "machine-irq-ns").unwrap_or(0.0) + get(m, "machine-softirq-ns").unwrap_or(0.0);
        let _ = writeln!(
            out,
            "{:<width$}  {:>9} {:>9} {:>5} {:>7.1} {:>7.0}  {:>9} {:>9} {:>9}  {}",
            m.label(),
            ms(user),
            ms(kernel),
            share,
            get(m, "context-switches").unwrap_or(0.0),
            get(m, "page-faults").unwrap_or(0.0),
            ms(get(m, "machine-kernel-ns").unwrap_or(0.0)),
            ms(irq),
            ms(get(m, "machine-idle-ns").unwrap_or(0.0)),
            top_interrupts(m, 3)
        );
    }
    out
}
