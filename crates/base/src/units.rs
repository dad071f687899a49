//! Units of figures and the one way numbers are written for people: a value is scaled to the
//! unit name that suits its size ("163 ns", "1.14 us", "2.50 GB/s") with as many digits as its
//! size deserves. Tables, the HTML report, plots and comparisons all write numbers through here.

use crate::usage;
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// What a figure counts. The stored symbol is the serde name.
#[derive(
    Debug,
    Clone,
    Copy,
    Serialize,
    Deserialize,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    schemars::JsonSchema,
)]
pub enum Unit {
    /// Nanoseconds (per operation, or a latency).
    #[serde(rename = "ns")]
    Nanoseconds,
    /// Bytes per second.
    #[serde(rename = "B/s")]
    BytesPerSecond,
    /// Operations per second.
    #[serde(rename = "op/s")]
    OpsPerSecond,
    /// Seconds (a mean time to failure, a duration).
    #[serde(rename = "s")]
    Seconds,
    /// Bytes (a resident set, a footprint).
    #[serde(rename = "B")]
    Bytes,
    /// A number of events.
    #[serde(rename = "count")]
    Count,
    /// A dimensionless ratio or share (instructions per cycle, a miss rate).
    #[serde(rename = "ratio")]
    Ratio,
    /// Memory stall cycles per instruction.
    #[serde(rename = "cycles/instr")]
    CyclesPerInstruction,
}

/// A unit name and what a value is divided by to be written in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub divisor: f64,
    pub name: &'static str,
}

const fn sc(divisor: f64, name: &'static str) -> Scale {
    Scale { divisor, name }
}

const NANOSECONDS: &[Scale] = &[sc(1e9, "s"), sc(1e6, "ms"), sc(1e3, "us"), sc(1.0, "ns")];
const BYTES_PER_SECOND: &[Scale] = &[
    sc(1e9, "GB/s"),
    sc(1e6, "MB/s"),
    sc(1e3, "KB/s"),
    sc(1.0, "B/s"),
];
const OPS_PER_SECOND: &[Scale] = &[sc(1e6, "Mop/s"), sc(1e3, "Kop/s"), sc(1.0, "op/s")];
const SECONDS: &[Scale] = &[
    sc(86_400.0, "d"),
    sc(3_600.0, "h"),
    sc(60.0, "min"),
    sc(1.0, "s"),
    sc(1e-3, "ms"),
    sc(1e-6, "us"),
];
const BYTES: &[Scale] = &[
    sc(1024.0 * 1024.0 * 1024.0, "GiB"),
    sc(1024.0 * 1024.0, "MiB"),
    sc(1024.0, "KiB"),
    sc(1.0, "B"),
];
const PLAIN: &[Scale] = &[sc(1.0, "")];
const CPI: &[Scale] = &[sc(1.0, "cycles/instr")];

impl Unit {
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Nanoseconds => "ns",
            Unit::BytesPerSecond => "B/s",
            Unit::OpsPerSecond => "op/s",
            Unit::Seconds => "s",
            Unit::Bytes => "B",
            Unit::Count => "count",
            Unit::Ratio => "ratio",
            Unit::CyclesPerInstruction => "cycles/instr",
        }
    }

    /// Whether a larger value is better, for units where the unit alone says so (a time per
    /// operation is better small, a rate better large). Figures state their own direction; this is
    /// the default of the microbenchmarks.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Unit::BytesPerSecond | Unit::OpsPerSecond)
    }

    /// The names a value of this unit can be written in, largest first; the last is the smallest.
    pub fn scales(self) -> &'static [Scale] {
        match self {
            Unit::Nanoseconds => NANOSECONDS,
            Unit::BytesPerSecond => BYTES_PER_SECOND,
            Unit::OpsPerSecond => OPS_PER_SECOND,
            Unit::Seconds => SECONDS,
            Unit::Bytes => BYTES,
            Unit::Count | Unit::Ratio => PLAIN,
            Unit::CyclesPerInstruction => CPI,
        }
    }

    /// The scale that suits `reference`: the largest whose divisor it reaches, else the smallest.
    /// Times below 10 us stay in nanoseconds ("7777 ns" reads better than "7.78 us" in a table of
    /// system calls).
    pub fn scale_for(self, reference: f64) -> Scale {
        let scales = self.scales();
        let r = reference.abs();
        let threshold = |sc: &Scale| {
            if self == Unit::Nanoseconds && sc.name == "us" {
                1e4
            } else {
                sc.divisor
            }
        };
        scales
            .iter()
            .copied()
            .find(|sc| r >= threshold(sc))
            .unwrap_or(scales[scales.len() - 1])
    }
}

impl std::fmt::Display for Unit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.symbol())
    }
}

/// A number with the digits its size deserves: 3 significant digits, whole numbers from 100 up,
/// scientific notation outside 0.001 .. 1e6.
pub fn number(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "-".into()
    } else if a >= 1e6 {
        format!("{v:.3e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 || a == 0.0 {
        format!("{v:.2}")
    } else if a >= 0.001 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

/// A number with at most three significant digits and no trailing zeros, for axis ticks.
pub fn compact(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return "0".into();
    }
    let digits = (2 - x.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{x:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A whole number with its thousands grouped by commas, as printed tables write them: "10,000",
/// "-1,234", "427".
pub fn grouped(v: f64) -> String {
    let rounded = v.round() as i64;
    let digits = rounded.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if rounded < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Counts with k/M/G suffixes and three significant digits: "500", "10k", "1.5M", "22.3M".
pub fn count_label(v: f64) -> String {
    if v.abs() >= 1e9 {
        format!("{}G", compact(v / 1e9))
    } else if v.abs() >= 1e6 {
        format!("{}M", compact(v / 1e6))
    } else if v.abs() >= 1e3 {
        format!("{}k", compact(v / 1e3))
    } else {
        compact(v)
    }
}

/// `value` written in `scale`: "1.14 us". A scale without a name gives the number alone.
pub fn in_scale(value: f64, scale: Scale) -> String {
    let n = number(value / scale.divisor);
    if scale.name.is_empty() {
        n
    } else {
        format!("{n} {}", scale.name)
    }
}

/// A value in the unit name that suits it: "163 ns", "1.14 us", "2.50 GB/s", "0.123".
pub fn format(value: f64, unit: Unit) -> String {
    in_scale(value, unit.scale_for(value))
}

/// A value scaled into the unit name that suits it, apart: (25.0, "us") for 25 000 ns. For tables
/// that write the number and the unit in separate columns.
pub fn scaled(value: f64, unit: Unit) -> (f64, &'static str) {
    let scale = unit.scale_for(value);
    (value / scale.divisor, scale.name)
}

/// Three significant digits in plain notation (no exponent), for values read side by side:
/// "1235", "12.3", "0.00123", "0".
pub fn significant(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let digits = (2 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{v:.digits$}")
}

/// A number of events, per operation or in all: whole below 10 000, then with a k, M or G suffix
/// and three significant digits ("0.50", "42", "9999", "12.3k", "1.50M").
pub fn count(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "-".into()
    } else if a >= 1e9 {
        format!("{}G", significant(v / 1e9))
    } else if a >= 1e6 {
        format!("{}M", significant(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", significant(v / 1e3))
    } else if a >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// A size in binary units, exact when it is a whole number of them: "900 B", "32 KiB",
/// "1.5 GiB", "23.5 GiB".
pub fn bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 5] = [
        ("PiB", 1 << 50),
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (name, size) in UNITS {
        if n >= size {
            return if n % size == 0 {
                format!("{} {name}", n / size)
            } else {
                format!("{:.1} {name}", n as f64 / size as f64)
            };
        }
    }
    format!("{n} B")
}

/// A share (0.25 = a quarter) as a percentage with the digits its size deserves: "25.0 %",
/// "0.500 %", "100 %".
pub fn percent(share: f64) -> String {
    format!("{} %", number(100.0 * share))
}

/// A time in nanoseconds written in microseconds, without the unit (for columns headed "us"):
/// "0.50", "12.3", "1500".
pub fn micros(ns: u64) -> String {
    number(ns as f64 / 1e3)
}

/// A time in nanoseconds in the unit name that suits it: "163 ns", "26.7 us", "1.50 s".
pub fn duration(ns: f64) -> String {
    format(ns, Unit::Nanoseconds)
}

/// A duration argument, read by clap (a bad one is a usage error naming the option).
pub fn duration_arg(text: &str) -> std::result::Result<u64, String> {
    parse_duration_ns(text).map_err(|e| e.to_string())
}

/// `5ms`, `20ms`, `1.5s`, `250us`, `100000ns`.
pub fn parse_duration_ns(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.trim().parse().map_err(|_| {
        usage!("cannot read the duration {text:?}: expected a number and a unit, e.g. 20ms")
    })?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" | "" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        other => {
            return Err(usage!(
                "unknown time unit {other:?} in {text:?}: use ns, us, ms, s, min or h"
            ))
        }
    };
    let ns = value * scale;
    if !ns.is_finite() || ns <= 0.0 {
        return Err(usage!("the duration {text:?} must be positive"));
    }
    Ok(ns as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_thousands() {
        assert_eq!(grouped(427.4), "427");
        assert_eq!(grouped(10_000.0), "10,000");
        assert_eq!(grouped(407_000_000.0), "407,000,000");
        assert_eq!(grouped(-1234.0), "-1,234");
        assert_eq!(grouped(999.6), "1,000");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("5ms").unwrap(), 5_000_000);
        assert_eq!(parse_duration_ns("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration_ns("250us").unwrap(), 250_000);
        assert_eq!(parse_duration_ns("30min").unwrap(), 1_800_000_000_000);
        assert_eq!(parse_duration_ns("2h").unwrap(), 7_200_000_000_000);
        assert!(parse_duration_ns("0ms").is_err());
        assert!(parse_duration_ns("5 parsecs").is_err());
        assert!(parse_duration_ns("fast").is_err());
    }

    #[test]
    fn values_take_the_unit_name_that_suits_them() {
        assert_eq!(format(163.4, Unit::Nanoseconds), "163 ns");
        assert_eq!(format(7777.0, Unit::Nanoseconds), "7777 ns");
        assert_eq!(format(26_727.0, Unit::Nanoseconds), "26.7 us");
        assert_eq!(format(1.5e9, Unit::Nanoseconds), "1.50 s");
        assert_eq!(format(2.5e9, Unit::BytesPerSecond), "2.50 GB/s");
        assert_eq!(format(3.0 * 1024.0 * 1024.0, Unit::Bytes), "3.00 MiB");
        assert_eq!(format(5400.0, Unit::Seconds), "1.50 h");
        assert_eq!(format(0.25, Unit::Seconds), "250 ms");
        assert_eq!(format(0.1234, Unit::Ratio), "0.123");
        assert_eq!(format(42.0, Unit::Count), "42.0");
        assert_eq!(
            format(0.594, Unit::CyclesPerInstruction),
            "0.594 cycles/instr"
        );
    }

    #[test]
    fn one_scale_writes_several_values_alike() {
        let s = Unit::Nanoseconds.scale_for(26_727.0);
        assert_eq!(in_scale(63_268.0, s), "63.3 us");
        assert_eq!(in_scale(900.0, s), "0.900 us");
    }

    #[test]
    fn numbers_keep_three_significant_digits() {
        assert_eq!(number(1234.5), "1234");
        assert_eq!(number(12.345), "12.3");
        assert_eq!(number(1.2345), "1.23");
        assert_eq!(number(0.012345), "0.012");
        assert_eq!(number(0.00012), "1.20e-4");
        assert_eq!(number(2.5e7), "2.500e7");
        assert_eq!(number(f64::NAN), "-");
        assert_eq!(compact(1500.0), "1500");
        assert_eq!(compact(0.25), "0.25");
    }

    #[test]
    fn the_shared_shapes_have_known_answers() {
        assert_eq!(scaled(25_000.0, Unit::Nanoseconds), (25.0, "us"));
        assert_eq!(scaled(3e9, Unit::BytesPerSecond), (3.0, "GB/s"));
        assert_eq!(significant(1234.4), "1234");
        assert_eq!(significant(12.345), "12.3");
        assert_eq!(significant(0.0012345), "0.00123");
        assert_eq!(significant(-2.5), "-2.50");
        assert_eq!(significant(0.0), "0");
        assert_eq!(count(0.5), "0.50");
        assert_eq!(count(42.4), "42");
        assert_eq!(count(9999.0), "9999");
        assert_eq!(count(12_345.0), "12.3k");
        assert_eq!(count(1.5e6), "1.50M");
        assert_eq!(count(2.25e9), "2.25G");
        assert_eq!(bytes(900), "900 B");
        assert_eq!(bytes(32 * 1024), "32 KiB");
        assert_eq!(bytes(1536 << 20), "1.5 GiB");
        assert_eq!(bytes(24_684_084 * 1024), "23.5 GiB");
        assert_eq!(bytes(3 << 40), "3 TiB");
        assert_eq!(percent(0.25), "25.0 %");
        assert_eq!(percent(0.005), "0.500 %");
        assert_eq!(percent(1.0), "100 %");
        assert_eq!(micros(500), "0.500");
        assert_eq!(micros(12_345), "12.3");
        assert_eq!(micros(1_500_000), "1500");
        assert_eq!(duration(26_727.0), "26.7 us");
        assert_eq!(duration(1.5e9), "1.50 s");
    }

    #[test]
    fn stored_symbols_are_stable() {
        for (u, s) in [
            (Unit::Nanoseconds, "\"ns\""),
            (Unit::BytesPerSecond, "\"B/s\""),
            (Unit::CyclesPerInstruction, "\"cycles/instr\""),
        ] {
            assert_eq!(serde_json::to_string(&u).unwrap(), s);
            assert_eq!(serde_json::from_str::<Unit>(s).unwrap(), u);
        }
    }
}
