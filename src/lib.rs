//! osmeter: operating-system performance measurement.
//!
//! `meter` reads one figure, `harness` runs a measurement honestly, `probes` says what is measured,
//! `results` holds and shows what came out, `commands` wires them to the command line.
//!
//! The modules stand in layers. A module imports from its own layer and the layers below, never
//! from above, so a change reaches only what stands on it. tests/layers.rs reads this map and fails
//! when an import points up (the few arrows that still do are listed there, each with the move
//! that will take it away, and the list may only shrink).
//!
//! The lowest layers are moving out into crates of their own (crates/, one per commit; the crate
//! map is in docs/architecture.md). A crate moved out is re-exported here under its old module
//! names (`stats` for osmeter-stats; `units`, `console`, `error` and the others of osmeter-base;
//! `tracefs`, `kernel_parts` and the others of osmeter-kernel; `meter` for osmeter-meter; `results`
//! and `memsim` for osmeter-results and osmeter-memsim), so `crate::stats::...`,
//! `crate::units::...` and `crate::meter::...` still read as before; the map lists each in its
//! layer like a module.
//!
//! ```text
//! 1 base      clock columns console detached error files guard interrupt memory_room mounts
//!             parallel programs progress scratch stats suggest system text units
//! 2 kernel    elf function_tracer kernel_parts lockdown tracefs
//! 3 meter     meter
//! 4 results   results
//! 5 engines   apps budget capture harness latency memsim profile stat
//! 6 probes    ab probes run suite
//! 7 papers    papers
//! 8 cli       cli config shell_files
//! 9 commands  commands
//! ```

// osmeter's `eprintln!` (quiet when stderr is closed: osmeter_base::console) for every module
// declared below, in place of std's. A macro of another crate comes only by path, which would not
// shadow std's in the modules, so this textual one stands first and forwards to it.
macro_rules! eprintln {
    ($($arg:tt)*) => {
        ::osmeter_base::eprintln!($($arg)*)
    };
}

pub mod ab;
pub mod apps;
pub mod budget;
pub mod capture;
pub mod cli;
pub mod commands;
pub mod config;
pub mod harness;
pub mod latency;
pub mod papers;
pub mod probes;
pub mod profile;
pub mod run;
pub mod shell_files;
pub mod stat;
pub mod suite;

// The statistics, a crate of their own since they need nothing of osmeter.
pub use osmeter_stats as stats;

// The general-purpose part of the base layer, a crate of its own since it needs nothing above it.
pub use osmeter_base::{
    clock, columns, console, detached, error, files, guard, interrupt, memory_room, mounts,
    parallel, programs, progress, scratch, suggest, system, text, units,
};
// So that `crate::usage!(...)` reads as before.
pub use osmeter_base::usage;

// The kernel layer, a crate of its own since it needs nothing above the base.
pub use osmeter_kernel::{elf, function_tracer, kernel_parts, lockdown, tracefs};

// The meter, a crate of its own since it needs nothing above the kernel layer.
pub use osmeter_meter as meter;

// The results layer, a crate of its own since it needs nothing above the meter.
pub use osmeter_results as results;

// The memory-system simulator, a crate of its own since it needs nothing above the results layer.
pub use osmeter_memsim as memsim;
// So that `crate::params![...]` reads as before.
pub use osmeter_results::params;

use results::document::DocumentKind;

/// Every part's document type, so that a stored run's sections read back typed. Listed here, where
/// the parts come together, because the results layer that reads them stands below most of them,
/// and handed down to it by [`hand_down_document_kinds`]; a new kind of document is added here
/// (this crate's tests fail while one is missing).
pub static DOCUMENT_KINDS: &[DocumentKind] = &[
    DocumentKind::of::<results::guest::GuestDoc>(),
    DocumentKind::of::<stat::StatDoc>(),
    DocumentKind::of::<latency::document::LatencyDoc>(),
    DocumentKind::of::<memsim::document::MemsimDoc>(),
    DocumentKind::of::<ab::document::AbDoc>(),
];

/// Hands [`DOCUMENT_KINDS`] to the results layer, which reads stored sections into them. main does
/// it before anything else; so does each test of this crate that reads a stored document back.
pub fn hand_down_document_kinds() {
    results::document::read_kinds_from(DOCUMENT_KINDS);
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::model::RunKind;

    /// A kind left off the list would be kept as an unknown section, silently untyped.
    #[test]
    fn every_kind_but_run_reads_back_into_exactly_one_listed_type() {
        for kind in RunKind::ALL {
            let listed = DOCUMENT_KINDS.iter().filter(|k| k.kind == kind).count();
            let wanted = usize::from(kind != RunKind::Run);
            assert_eq!(
                listed, wanted,
                "{kind} is listed {listed} times in DOCUMENT_KINDS"
            );
        }
    }
}
