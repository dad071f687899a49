//! The command line's side of the memory simulator: the values of `--from`, `trace convert --to`
//! and `--preset`. osmeter-memsim keeps its types ([`Format`], [`ExportFormat`], [`PresetName`])
//! free of clap; what a user types and reads in the help is defined here, in the binary.

use crate::memsim::config::PresetName;
use crate::memsim::trace::{ExportFormat, Format};
use clap::builder::{EnumValueParser, PossibleValue, TypedValueParser};

/// `--from`'s values: one for each input [`Format`], with the help and aliases shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatValue {
    /// osmeter's own binary format (.osmt, optionally zstd-compressed)
    #[value(alias = "osmt", alias = "bin")]
    Osmeter,
    /// valgrind lackey's --trace-mem text
    Lackey,
    /// Dinero's din text (label address [size])
    #[value(alias = "dinero")]
    Din,
    /// DynamoRIO drmemtrace's trace entries (plain, gzip or zstd), or a drmemtrace run directory
    #[value(alias = "drmem")]
    Drmemtrace,
}

impl From<FormatValue> for Format {
    fn from(v: FormatValue) -> Format {
        match v {
            FormatValue::Osmeter => Format::Osmeter,
            FormatValue::Lackey => Format::Lackey,
            FormatValue::Din => Format::Din,
            FormatValue::Drmemtrace => Format::Drmemtrace,
        }
    }
}

/// The value parser of `--from`.
pub fn trace_format() -> impl TypedValueParser<Value = Format> {
    EnumValueParser::<FormatValue>::new().map(Format::from)
}

/// `trace convert --to`'s values: one for each [`ExportFormat`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportValue {
    /// osmeter's own binary format
    Osmeter,
    /// ChampSim's 64-byte instruction records
    Champsim,
    /// DynamoRIO drmemtrace's trace entries
    Drmemtrace,
}

impl From<ExportValue> for ExportFormat {
    fn from(v: ExportValue) -> ExportFormat {
        match v {
            ExportValue::Osmeter => ExportFormat::Osmeter,
            ExportValue::Champsim => ExportFormat::Champsim,
            ExportValue::Drmemtrace => ExportFormat::Drmemtrace,
        }
    }
}

/// The value parser of `trace convert --to`.
pub fn export_format() -> impl TypedValueParser<Value = ExportFormat> {
    EnumValueParser::<ExportValue>::new().map(ExportFormat::from)
}

/// A `--preset` value as clap sees it: one of [`PresetName::all`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresetValue(PresetName);

/// Every `--preset` value, in [`PresetName::all`]'s order.
static PRESET_VALUES: std::sync::LazyLock<Vec<PresetValue>> =
    std::sync::LazyLock::new(|| PresetName::all().iter().copied().map(PresetValue).collect());

impl clap::ValueEnum for PresetValue {
    fn value_variants<'a>() -> &'a [Self] {
        &PRESET_VALUES
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0 .0))
    }
}

/// The value parser of `--preset`.
pub fn preset() -> impl TypedValueParser<Value = PresetName> {
    EnumValueParser::<PresetValue>::new().map(|v| v.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    /// Each `--from` value stands for one format, in the same order, under the format's own
    /// name; each `--to` value under the name the format prints.
    #[test]
    fn the_values_are_the_formats() {
        let formats: Vec<Format> = FormatValue::value_variants()
            .iter()
            .map(|&v| Format::from(v))
            .collect();
        assert_eq!(formats, Format::ALL);
        for v in FormatValue::value_variants() {
            let name = v.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(name, Format::from(*v).name());
        }
        for v in ExportValue::value_variants() {
            let name = v.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(name, ExportFormat::from(*v).to_string());
        }
    }
}
