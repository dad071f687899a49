//! OpenMetrics text exposition: one gauge family per unit, labelled by run, probe, parameters and the
//! statistic, so a fleet's runs can be scraped or pushed into a time-series database.

use super::{params_text, ExportOptions, Exporter};
use crate::results::model::{Run, Status, Unit};
use std::io::{self, Write};

pub struct OpenMetrics;

/// Escapes a label value: backslash, double quote and line feed.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Family name, unit, help, and the factor from the stored unit to the family's base unit.
fn family(unit: Unit) -> (&'static str, &'static str, &'static str, f64) {
    match unit {
        Unit::Nanoseconds => (
            "osmeter_operation_seconds",
            "seconds",
            "Time per operation.",
            1e-9,
        ),
        Unit::BytesPerSecond => (
            "osmeter_throughput_bytes_per_second",
            "bytes_per_second",
            "Bytes moved per second.",
            1.0,
        ),
        Unit::OpsPerSecond => (
            "osmeter_rate_operations_per_second",
            "operations_per_second",
            "Operations per second.",
            1.0,
        ),
        Unit::Seconds => ("osmeter_duration_seconds", "seconds", "A duration.", 1.0),
        Unit::Bytes => ("osmeter_size_bytes", "bytes", "A size.", 1.0),
        Unit::Count => ("osmeter_events", "", "A number of events.", 1.0),
        Unit::Ratio => ("osmeter_ratio", "ratio", "A dimensionless ratio.", 1.0),
        Unit::CyclesPerInstruction => (
            "osmeter_stall_cycles_per_instruction",
            "",
            "Memory stall cycles per instruction.",
            1.0,
        ),
    }
}

/// A float as OpenMetrics wants it (no exponent surprises, integers keep a decimal form).
fn value(v: f64) -> String {
    if v.is_finite() {
        format!("{v:e}")
    } else if v.is_nan() {
        "NaN".into()
    } else if v > 0.0 {
        "+Inf".into()
    } else {
        "-Inf".into()
    }
}

impl Exporter for OpenMetrics {
    fn name(&self) -> &'static str {
        "openmetrics"
    }
    fn write(&self, run: &Run, _: &ExportOptions, out: &mut dyn Write) -> io::Result<()> {
        let host = run.host().unwrap_or_default();
        let base = |probe: &str, params: &str| {
            format!(
                "run=\"{}\",host=\"{}\",probe=\"{}\",params=\"{}\"",
                escape(&run.id),
                escape(&host),
                escape(probe),
                escape(params)
            )
        };
        let ok: Vec<_> = run
            .measurements
            .iter()
            .filter(|m| m.status == Status::Ok && m.summary.is_some())
            .collect();
        for unit in [Unit::Nanoseconds, Unit::BytesPerSecond, Unit::OpsPerSecond] {
            let members: Vec<_> = ok.iter().filter(|m| m.unit == unit).collect();
            if members.is_empty() {
                continue;
            }
            let (name, unit_name, help, scale) = family(unit);
            writeln!(
                out,
                "# TYPE {name} gauge\n# UNIT {name} {unit_name}\n# HELP {name} {help}"
            )?;
            for m in members {
                let s = m.summary.as_ref().expect("filtered on summary");
                let labels = base(&m.probe, &params_text(&m.params));
                for (stat, v) in [
                    ("median", s.median),
                    ("ci95_low", s.ci95[0]),
                    ("ci95_high", s.ci95[1]),
                ] {
                    writeln!(
                        out,
                        "{name}{{{labels},stat=\"{stat}\"}} {}",
                        value(v * scale)
                    )?;
                }
            }
        }
        if !ok.is_empty() {
            let name = "osmeter_coefficient_of_variation";
            writeln!(out, "# TYPE {name} gauge\n# HELP {name} Spread of the samples, standard deviation over mean.")?;
            for m in &ok {
                let cv = m.summary.as_ref().map(|s| s.cv).unwrap_or(0.0);
                writeln!(
                    out,
                    "{name}{{{}}} {}",
                    base(&m.probe, &params_text(&m.params)),
                    value(cv)
                )?;
            }
        }
        let with_counters: Vec<_> = ok.iter().filter(|m| !m.counters.is_empty()).collect();
        if !with_counters.is_empty() {
            let name = "osmeter_counter_per_operation";
            writeln!(out, "# TYPE {name} gauge\n# HELP {name} perf_event count per operation, by privilege scope.")?;
            for m in with_counters {
                let labels = base(&m.probe, &params_text(&m.params));
                let c = &m.counters;
                for (scope, map) in [
                    ("user", &c.user),
                    ("kernel", &c.kernel),
                    ("software", &c.software),
                ] {
                    for (event, v) in map {
                        writeln!(
                            out,
                            "{name}{{{labels},scope=\"{scope}\",event=\"{}\"}} {}",
                            escape(event),
                            value(*v)
                        )?;
                    }
                }
            }
        }
        writeln!(out, "# EOF")
    }
}

#[cfg(test)]
mod tests;
