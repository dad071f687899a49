//! Value parsers of `osmeter latency`'s arguments: each turns one argument into its typed value
//! or says which value is wrong and what is allowed, so that clap refuses it as a usage error
//! (exit 2) before anything is measured. Plain durations use `units::duration_arg`; checks that
//! involve two arguments (a duration shorter than the period) are the session's
//! ([`super::session::Settings::check`]).

use super::buffer::BufferConfig;
use crate::meter::placement;
use crate::units::duration_arg;

pub const MAX_DURATION_NS: u64 = 24 * 3600 * 1_000_000_000;
/// `--period` unless given (in its own syntax, so that `--help` shows it as written).
pub const DEFAULT_PERIOD: &str = "1ms";
/// `--compute-fraction` unless given.
pub const DEFAULT_COMPUTE_FRACTION: f64 = 0.5;
pub const MIN_PERIOD_NS: u64 = 50_000;
pub const MAX_PERIOD_NS: u64 = 1_000_000_000;

/// `--period`: 50us to 1s.
pub fn period(text: &str) -> Result<u64, String> {
    let ns = duration_arg(text)?;
    if !(MIN_PERIOD_NS..=MAX_PERIOD_NS).contains(&ns) {
        return Err("the period must be between 50us and 1s".into());
    }
    Ok(ns)
}

/// `--duration`: at most a day.
pub fn duration(text: &str) -> Result<u64, String> {
    let ns = duration_arg(text)?;
    if ns > MAX_DURATION_NS {
        return Err("a measurement lasts at most 24h".into());
    }
    Ok(ns)
}

/// One CPU of `--cpus`: a number naming a CPU this process may run on.
pub fn cpu(text: &str) -> Result<usize, String> {
    let cpu: usize = text
        .trim()
        .parse()
        .map_err(|_| "expected CPU numbers separated by commas, e.g. 0,1".to_string())?;
    placement::validate_cpu(cpu).map_err(|e| format!("{e:#}"))?;
    Ok(cpu)
}

/// `--compute-fraction`: at least 0, below 1.
pub fn fraction(text: &str) -> Result<f64, String> {
    let f: f64 = text
        .trim()
        .parse()
        .map_err(|_| "expected a fraction such as 0.5".to_string())?;
    if !(0.0..1.0).contains(&f) {
        return Err("the fraction must be at least 0 and below 1".into());
    }
    Ok(f)
}

/// One `--buffer T,N,C`.
pub fn buffer(text: &str) -> Result<BufferConfig, String> {
    BufferConfig::parse(text).map_err(|e| format!("{e:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_value_is_checked_against_its_own_range() {
        assert_eq!(period("1ms"), Ok(1_000_000));
        assert_eq!(period("50us"), Ok(50_000));
        assert!(period("49us").unwrap_err().contains("between 50us and 1s"));
        assert!(period("2s").is_err());
        assert!(period("0ms").unwrap_err().contains("positive"));
        assert!(period("soon").unwrap_err().contains("\"soon\""));
        assert_eq!(duration("24h"), Ok(MAX_DURATION_NS));
        assert!(duration("25h").unwrap_err().contains("24h"));
        assert_eq!(fraction("0"), Ok(0.0));
        assert!(fraction("1").is_err());
        assert!(fraction("half").unwrap_err().contains("0.5"));
        assert!(buffer("5ms,1,1ms").is_err());
        assert_eq!(buffer("5ms,3,0.5").unwrap().compute_ns, 2_500_000);
    }

    #[test]
    fn cpus_must_exist_and_be_allowed() {
        let last = *placement::usable_cpus().last().unwrap();
        assert_eq!(cpu(&last.to_string()), Ok(last));
        assert!(cpu("100000").is_err());
        assert!(cpu("one").unwrap_err().contains("0,1"));
    }
}
