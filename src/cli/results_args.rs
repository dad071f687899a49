//! The command line's side of the results layer: the `--format` values of `export` and the value
//! parser of `--store` and `push --to`. The layer keeps its types ([`Format`], [`Location`]) free
//! of clap; what a user types and reads in the help is defined here, in the binary.

use crate::results::export::Format;
use crate::results::store::Location;
use clap::builder::{EnumValueParser, TypedValueParser};

/// `export --format`'s values: one for each [`Format`], with the help and aliases the command line
/// shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatValue {
    /// The whole stored document
    Json,
    /// One row per figure (or per sample with --samples)
    Csv,
    /// Tables to paste into a review
    #[value(alias = "md")]
    Markdown,
    /// OpenMetrics / Prometheus text exposition
    #[value(alias = "prometheus")]
    Openmetrics,
    /// Folded stacks of the run's profiles (`run --profile`), for flamegraph.pl, inferno, speedscope
    Folded,
    /// The run's profiles as gzip-compressed profile.proto, for `go tool pprof`
    Pprof,
    /// The run's profiles in speedscope's JSON file format, one profile per figure
    Speedscope,
    /// A latency run's late wakes (`latency --trace`) as Chrome trace-event JSON, for Perfetto
    /// and chrome://tracing
    #[value(alias = "perfetto", alias = "chrome-trace")]
    TraceEvent,
}

impl From<FormatValue> for Format {
    fn from(v: FormatValue) -> Format {
        match v {
            FormatValue::Json => Format::Json,
            FormatValue::Csv => Format::Csv,
            FormatValue::Markdown => Format::Markdown,
            FormatValue::Openmetrics => Format::Openmetrics,
            FormatValue::Folded => Format::Folded,
            FormatValue::Pprof => Format::Pprof,
            FormatValue::Speedscope => Format::Speedscope,
            FormatValue::TraceEvent => Format::TraceEvent,
        }
    }
}

/// The value parser of `export --format`: [`FormatValue`]'s, handing over the results layer's
/// [`Format`].
pub fn format() -> impl TypedValueParser<Value = Format> {
    EnumValueParser::<FormatValue>::new().map(Format::from)
}

/// The value parser of `--store` and `push --to`: [`Location::parse`], with an error that names
/// the option but never repeats the value (clap's own message would print a URL's password).
#[derive(Debug, Clone, Copy)]
pub struct LocationArg;

impl TypedValueParser for LocationArg {
    type Value = Location;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Location, clap::Error> {
        let option = arg.map_or_else(|| "--store".to_string(), |a| a.to_string());
        let refuse = |why: String| {
            clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!("invalid value for '{option}': {why}\n"),
            )
            .with_cmd(cmd)
        };
        let text = value
            .to_str()
            .ok_or_else(|| refuse("the store is not valid UTF-8".into()))?;
        Location::parse(text).map_err(refuse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    /// Each value stands for one format, in the same order, under the exporter's own name.
    #[test]
    fn the_values_are_the_formats() {
        let formats: Vec<Format> = FormatValue::value_variants()
            .iter()
            .map(|&v| Format::from(v))
            .collect();
        assert_eq!(formats, Format::ALL);
        for v in FormatValue::value_variants() {
            let name = v.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(name, Format::from(*v).exporter().name());
        }
    }
}
