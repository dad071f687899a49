//! osmeter: operating-system performance measurement.
//!
//! `meter` reads one figure, `harness` runs a measurement honestly, `probes` says what is measured,
//! `results` holds and shows what came out, `commands` wires them to the command line.

// First, so that its `eprintln!` (quiet when stderr is closed) is the one every module uses.
#[macro_use]
pub mod console;

pub mod apps;
pub mod budget;
pub mod capture;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod error;
pub mod files;
pub mod guard;
pub mod harness;
pub mod interrupt;
pub mod latency;
pub mod memory_room;
pub mod memsim;
pub mod meter;
pub mod papers;
pub mod probes;
pub mod programs;
pub mod progress;
pub mod results;
pub mod run;
pub mod scratch;
pub mod shell_files;
pub mod stat;
pub mod stats;
pub mod suggest;
pub mod text;
pub mod units;
