//! OpenMetrics text exposition: one gauge family per base unit, every figure of any kind labelled
//! by run, host, kind, figure and group, with its value and interval, so a fleet's runs can be
//! scraped or pushed into a time-series database.

use super::{ExportOptions, Exporter};
use crate::results::figure::Figure;
use crate::results::model::{Run, RunKind, Unit};
use std::io::{self, Write};

pub struct OpenMetrics;

/// Escapes a label value: backslash, double quote and line feed.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The family a unit's figures go to: name, OpenMetrics unit (empty for none), help, and the
/// factor from the stored unit to the family's base unit. Times of every kind share one family in
/// seconds.
fn family(unit: Unit) -> (&'static str, &'static str, &'static str, f64) {
    match unit {
        Unit::Nanoseconds => ("osmeter_seconds", "seconds", "A time.", 1e-9),
        Unit::Seconds => ("osmeter_seconds", "seconds", "A time.", 1.0),
        Unit::BytesPerSecond => (
            "osmeter_bytes_per_second",
            "bytes_per_second",
            "Bytes moved per second.",
            1.0,
        ),
        Unit::OpsPerSecond => (
            "osmeter_operations_per_second",
            "operations_per_second",
            "Operations per second.",
            1.0,
        ),
        Unit::Bytes => ("osmeter_bytes", "bytes", "A size.", 1.0),
        Unit::Count => ("osmeter_events", "", "A number of events.", 1.0),
        Unit::Ratio => (
            "osmeter_ratio",
            "ratio",
            "A dimensionless ratio or share.",
            1.0,
        ),
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
        let base = |f: &Figure| {
            format!(
                "run=\"{}\",host=\"{}\",kind=\"{}\",figure=\"{}\",group=\"{}\"",
                escape(&run.id),
                escape(&host),
                run.kind(),
                escape(&f.key),
                escape(&f.group)
            )
        };
        let figures = run.figures();
        // One family at a time, in the order the families first appear.
        let mut families: Vec<&str> = Vec::new();
        for f in &figures {
            let name = family(f.unit).0;
            if !families.contains(&name) {
                families.push(name);
            }
        }
        for fam in families {
            let members: Vec<&Figure> =
                figures.iter().filter(|f| family(f.unit).0 == fam).collect();
            let (name, unit_name, help, _) = family(members[0].unit);
            writeln!(out, "# TYPE {name} gauge")?;
            if !unit_name.is_empty() {
                writeln!(out, "# UNIT {name} {unit_name}")?;
            }
            writeln!(out, "# HELP {name} {help}")?;
            for f in members {
                let scale = family(f.unit).3;
                let labels = base(f);
                let mut stats = vec![("value", f.value)];
                if let Some([lo, hi]) = f.interval {
                    stats.extend([("ci95_low", lo), ("ci95_high", hi)]);
                }
                for (stat, v) in stats {
                    writeln!(
                        out,
                        "{name}{{{labels},stat=\"{stat}\"}} {}",
                        value(v * scale)
                    )?;
                }
            }
        }
        let with_cv: Vec<(&Figure, f64)> =
            figures.iter().filter_map(|f| Some((f, f.cv()?))).collect();
        if !with_cv.is_empty() {
            let name = "osmeter_coefficient_of_variation";
            writeln!(out, "# TYPE {name} gauge\n# HELP {name} Spread of a figure, standard deviation over mean.")?;
            for (f, cv) in with_cv {
                writeln!(out, "{name}{{{}}} {}", base(f), value(cv))?;
            }
        }
        let explained: Vec<&Figure> = figures.iter().filter(|f| !f.explain.is_empty()).collect();
        if !explained.is_empty() && run.kind() == RunKind::Run {
            let name = "osmeter_perf_events_per_operation";
            writeln!(out, "# TYPE {name} gauge\n# HELP {name} perf_event count per operation, by privilege scope.")?;
            for f in explained {
                let labels = base(f);
                for (key, v) in &f.explain {
                    let (scope, event) = key.split_once('.').unwrap_or(("", key));
                    writeln!(
                        out,
                        "{name}{{{labels},scope=\"{}\",event=\"{}\"}} {}",
                        escape(scope),
                        escape(event),
                        value(*v)
                    )?;
                }
            }
        }
        writeln!(out, "# EOF")
    }
}

#[cfg(test)]
mod tests;
