//! A published figure as the paper printed it: an exact number, a bound ("<1.0", ">=6"), an
//! approximation ("about 100 cycles") or a range ("2 to 4 ms"), in one of the units the papers use.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The units the four papers print their figures in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Unit {
    #[serde(rename = "us")]
    Microseconds,
    #[serde(rename = "ms")]
    Milliseconds,
    #[serde(rename = "s")]
    Seconds,
    #[serde(rename = "min")]
    Minutes,
    #[serde(rename = "h")]
    Hours,
    #[serde(rename = "MB/s")]
    MegabytesPerSecond,
    #[serde(rename = "KB/s")]
    KilobytesPerSecond,
    #[serde(rename = "B")]
    Bytes,
    #[serde(rename = "KB")]
    Kilobytes,
    #[serde(rename = "MB")]
    Megabytes,
    #[serde(rename = "GB")]
    Gigabytes,
    /// Millions of instructions per second, the integer speed rating of a machine.
    #[serde(rename = "MIPS")]
    Mips,
    #[serde(rename = "MHz")]
    Megahertz,
    #[serde(rename = "Hz")]
    Hertz,
    /// A dimensionless ratio (MIPS-relative speeds, "a factor of five").
    #[serde(rename = "ratio")]
    Ratio,
    #[serde(rename = "%")]
    Percent,
    #[serde(rename = "count")]
    Count,
    /// A count printed in thousands.
    #[serde(rename = "thousands")]
    Thousands,
    /// An event-selector number (the Pentium counter indices).
    #[serde(rename = "index")]
    Index,
    #[serde(rename = "cycles")]
    Cycles,
    /// Stall or execution cycles per instruction (CPI, MCPI).
    #[serde(rename = "cycles/instruction")]
    CyclesPerInstruction,
    #[serde(rename = "B/instruction")]
    BytesPerInstruction,
    #[serde(rename = "requests/s")]
    RequestsPerSecond,
}

impl Unit {
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Microseconds => "µs",
            Unit::Milliseconds => "ms",
            Unit::Seconds => "s",
            Unit::Minutes => "min",
            Unit::Hours => "h",
            Unit::MegabytesPerSecond => "MB/s",
            Unit::KilobytesPerSecond => "KB/s",
            Unit::Bytes => "B",
            Unit::Kilobytes => "KB",
            Unit::Megabytes => "MB",
            Unit::Gigabytes => "GB",
            Unit::Mips => "MIPS",
            Unit::Megahertz => "MHz",
            Unit::Hertz => "Hz",
            Unit::Ratio => "ratio",
            Unit::Percent => "%",
            Unit::Count => "count",
            Unit::Thousands => "thousands",
            Unit::Index => "index",
            Unit::Cycles => "cycles",
            Unit::CyclesPerInstruction => "cycles/instr",
            Unit::BytesPerInstruction => "B/instr",
            Unit::RequestsPerSecond => "req/s",
        }
    }

    /// Nanoseconds in one unit, for the time units.
    pub fn nanoseconds(self) -> Option<f64> {
        match self {
            Unit::Microseconds => Some(1e3),
            Unit::Milliseconds => Some(1e6),
            Unit::Seconds => Some(1e9),
            Unit::Minutes => Some(60e9),
            Unit::Hours => Some(3600e9),
            _ => None,
        }
    }

    /// Bytes per second in one unit, for the bandwidth units. The papers' "Mbytes" are taken as
    /// 10^6 bytes: none of them says, and the difference (5 %) is far inside their precision.
    pub fn bytes_per_second(self) -> Option<f64> {
        match self {
            Unit::MegabytesPerSecond => Some(1e6),
            Unit::KilobytesPerSecond => Some(1e3),
            _ => None,
        }
    }
}

/// How exactly the paper states a figure. Stored documents (the paper view) hold it tagged by
/// `kind`; the data files write it in their own notation, read by [`cells_in_notation`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Quantity {
    Exact {
        value: f64,
    },
    /// "about": the text rounds ("roughly", "a factor of").
    About {
        value: f64,
    },
    /// Strictly below the bound ("<1.0").
    Below {
        value: f64,
    },
    /// Strictly above the bound (">2").
    Above {
        value: f64,
    },
    /// At least the bound (">=6").
    AtLeast {
        value: f64,
    },
    /// A range ("2 to 4").
    Range {
        low: f64,
        high: f64,
    },
}

impl Quantity {
    /// The single number to compute with: the value, the bound, or the geometric middle of a range
    /// (the ranges are spans of sizes and times, so a ratio scale fits them).
    pub fn central(&self) -> f64 {
        match *self {
            Quantity::Exact { value }
            | Quantity::About { value }
            | Quantity::Below { value }
            | Quantity::Above { value }
            | Quantity::AtLeast { value } => value,
            Quantity::Range { low, high } if low > 0.0 && high > 0.0 => (low * high).sqrt(),
            Quantity::Range { low, high } => (low + high) / 2.0,
        }
    }

    /// Reads the data files' notation: a number, or text `~N`, `<N`, `>N`, `>=N`, `A..B`, `A/B`
    /// (an exact fraction) or `0xNN` (a hexadecimal index).
    pub fn parse(text: &str) -> Result<Quantity, String> {
        let t = text.trim();
        let number = |s: &str| -> Result<f64, String> {
            let s = s.trim();
            let v = if let Some(hex) = s.strip_prefix("0x") {
                u64::from_str_radix(hex, 16).map(|v| v as f64).ok()
            } else {
                s.parse::<f64>().ok()
            };
            v.filter(|v| v.is_finite())
                .ok_or_else(|| format!("{text:?} is not a number"))
        };
        let q = if let Some(rest) = t.strip_prefix(">=") {
            Quantity::AtLeast {
                value: number(rest)?,
            }
        } else if let Some(rest) = t.strip_prefix('>') {
            Quantity::Above {
                value: number(rest)?,
            }
        } else if let Some(rest) = t.strip_prefix('<') {
            Quantity::Below {
                value: number(rest)?,
            }
        } else if let Some(rest) = t.strip_prefix('~') {
            Quantity::About {
                value: number(rest)?,
            }
        } else if let Some((a, b)) = t.split_once("..") {
            let (low, high) = (number(a)?, number(b)?);
            if low >= high {
                return Err(format!("range {text:?} must run from low to high"));
            }
            Quantity::Range { low, high }
        } else if let Some((a, b)) = t.split_once('/') {
            let (num, den) = (number(a)?, number(b)?);
            if den == 0.0 {
                return Err(format!("{text:?} divides by zero"));
            }
            Quantity::Exact { value: num / den }
        } else {
            Quantity::Exact { value: number(t)? }
        };
        Ok(q)
    }
}

/// A cell of a data file: a number, or text in the notation [`Quantity::parse`] reads.
struct Notation(Quantity);

impl<'de> Deserialize<'de> for Notation {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(value) => Ok(Notation(Quantity::Exact { value })),
            Raw::Text(t) => Quantity::parse(&t)
                .map(Notation)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// Reads a row of a data file, `None` where the paper leaves a cell empty (`null`).
pub fn cells_in_notation<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<Option<Quantity>>, D::Error> {
    let cells = Vec::<Option<Notation>>::deserialize(d)?;
    Ok(cells.into_iter().map(|c| c.map(|n| n.0)).collect())
}

/// A figure with three significant digits at most, without trailing zeros, and thousands grouped
/// when it is a large whole number (`0.54`, `10,000`, `4.2e-5`).
pub fn format_number(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if !(1e-3..1e12).contains(&a) {
        crate::units::number(v)
    } else if a >= 100.0 {
        crate::units::grouped(v)
    } else {
        crate::units::compact(v)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Quantity::Exact { value } => f.write_str(&format_number(value)),
            Quantity::About { value } => write!(f, "~{}", format_number(value)),
            Quantity::Below { value } => write!(f, "<{}", format_number(value)),
            Quantity::Above { value } => write!(f, ">{}", format_number(value)),
            Quantity::AtLeast { value } => write!(f, "≥{}", format_number(value)),
            Quantity::Range { low, high } => {
                write!(f, "{}-{}", format_number(low), format_number(high))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notation_known_answers() {
        assert_eq!(
            Quantity::parse("18").unwrap(),
            Quantity::Exact { value: 18.0 }
        );
        assert_eq!(
            Quantity::parse("<1.0").unwrap(),
            Quantity::Below { value: 1.0 }
        );
        assert_eq!(
            Quantity::parse(">=6").unwrap(),
            Quantity::AtLeast { value: 6.0 }
        );
        assert_eq!(
            Quantity::parse(">2").unwrap(),
            Quantity::Above { value: 2.0 }
        );
        assert_eq!(
            Quantity::parse("~100").unwrap(),
            Quantity::About { value: 100.0 }
        );
        assert_eq!(
            Quantity::parse("2..4").unwrap(),
            Quantity::Range {
                low: 2.0,
                high: 4.0
            }
        );
        assert_eq!(
            Quantity::parse("0x16").unwrap(),
            Quantity::Exact { value: 22.0 }
        );
        assert_eq!(
            Quantity::parse("1/4").unwrap(),
            Quantity::Exact { value: 0.25 }
        );
        for bad in ["", "fast", "4..2", "1/0", "~", "0xzz", "NaN", "inf"] {
            assert!(Quantity::parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(Quantity::parse("2..8").unwrap().central(), 4.0);
    }

    /// The stored form is tagged by kind and reads back as the same value; the data files'
    /// notation is read only where a data file is.
    #[test]
    fn every_kind_round_trips_in_its_stored_form() {
        for text in ["18", "~100", "<1.0", ">2", ">=6", "2..4"] {
            let q = Quantity::parse(text).unwrap();
            let stored = serde_json::to_string(&q).unwrap();
            assert!(stored.contains("\"kind\""), "{stored}");
            assert_eq!(serde_json::from_str::<Quantity>(&stored).unwrap(), q);
        }
        assert!(serde_json::from_str::<Quantity>("\"<1.0\"").is_err());
        #[derive(Deserialize)]
        struct Row {
            #[serde(deserialize_with = "cells_in_notation")]
            values: Vec<Option<Quantity>>,
        }
        let row: Row = serde_json::from_str(r#"{"values": [3, null, "<1.0"]}"#).unwrap();
        assert_eq!(
            row.values,
            [
                Some(Quantity::Exact { value: 3.0 }),
                None,
                Some(Quantity::Below { value: 1.0 })
            ]
        );
    }

    #[test]
    fn numbers_print_as_the_papers_print_them() {
        assert_eq!(format_number(0.54), "0.54");
        assert_eq!(format_number(0.60), "0.6");
        assert_eq!(format_number(18.0), "18");
        assert_eq!(format_number(10000.0), "10,000");
        assert_eq!(format_number(3028.0), "3,028");
        assert_eq!(format_number(0.129), "0.129");
        assert_eq!(format_number(12.2), "12.2");
        assert_eq!(format_number(-0.006), "-0.006");
        assert_eq!(format_number(407_000_000.0), "407,000,000");
        assert_eq!(format_number(2.5e12), "2.500e12");
        assert_eq!(format_number(0.000155), "1.55e-4");
        assert_eq!(
            Quantity::Range {
                low: 2.0,
                high: 4.0
            }
            .to_string(),
            "2-4"
        );
    }

    #[test]
    fn units_read_from_their_symbols() {
        let u: Unit = serde_json::from_str("\"MB/s\"").unwrap();
        assert_eq!(u, Unit::MegabytesPerSecond);
        assert!(serde_json::from_str::<Unit>("\"furlongs\"").is_err());
        assert_eq!(Unit::Milliseconds.nanoseconds(), Some(1e6));
        assert_eq!(Unit::Ratio.nanoseconds(), None);
    }
}
