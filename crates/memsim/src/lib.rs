//! Memory-system simulation: reference traces in, stall cycles by user/system and component out.
//!
//! `trace` reads and writes reference traces; `cache`, `tlb`, `wbuf` and `mapping` are the models;
//! `machine` puts them together with a cost model; `config` names presets and parses geometry;
//! `sweep` runs several machines over one read of a trace; `report` renders the results; `kernel`
//! attributes kernel references to functions and categories and evaluates the paper's assertions;
//! `curve` computes miss-ratio curves and `interval` per-interval statistics in the same pass;
//! `budget` refuses machines that would not fit in memory before anything is allocated.
//!
//! The crate stands in the engines' layer on the results layer, the kernel layer (kernel symbol
//! tables and categories), the statistics and the base, and knows no probe, suite or command.
//! Zipped drmemtrace thread files need its `zip` feature (trace/drmem_zip.rs; without it
//! trace/drmem_zip_absent.rs says which feature to build with).

// osmeter's `eprintln!` (quiet when stderr is closed: osmeter_base::console) for every module
// declared below, in place of std's, as in the other crates of the workspace. No module prints to
// stderr today; the macro stands so that the first that does cannot panic on a closed stderr.
#[allow(unused_macros)]
macro_rules! eprintln {
    ($($arg:tt)*) => {
        ::osmeter_base::eprintln!($($arg)*)
    };
}

// The modules were written as the root crate's `memsim` module and still name their siblings
// `crate::memsim::...` and the layers below `crate::units::...`, `crate::results::...`; these
// names keep those paths true inside this crate.
use crate as memsim;
use osmeter_base::usage;
use osmeter_base::{files, memory_room, progress, scratch, system, units};
use osmeter_kernel::kernel_parts;
use osmeter_results as results;
use osmeter_stats as stats;

pub mod budget;
pub mod cache;
pub mod choice;
pub mod config;
pub mod curve;
pub mod document;
pub mod figures;
pub mod full_lru;
pub mod html;
pub mod interval;
pub mod kernel;
pub mod machine;
pub mod mapping;
pub mod simulation;
pub mod sweep;
pub mod text;
pub mod tlb;
pub mod trace;
pub mod wbuf;
