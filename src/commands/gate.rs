//! `--junit FILE` and `--ktap` of `compare` and `history`: the gate written where it was asked.

use crate::cli::GateArgs;
use crate::results::gate::{junit, ktap, Gate};
use anyhow::Result;

/// Writes the JUnit file (whole or not at all) when asked; returns the KTAP text to print in
/// place of the table when asked.
pub fn write(args: &GateArgs, gate: &Gate) -> Result<Option<String>> {
    if let Some(path) = &args.junit {
        super::write_output_file(
            path,
            junit::render(gate).as_bytes(),
            "the JUnit report",
            "--junit",
        )?;
    }
    Ok(args.ktap.then(|| ktap::render(gate)))
}
