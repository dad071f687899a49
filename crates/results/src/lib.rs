//! osmeter's results layer: the model of a run and its figures, the stores that keep runs
//! (SQLite, PostgreSQL), and everything that reads them back: compare, history, fleet, export and
//! the HTML report's toolkit. It stands on the meter, the kernel layer, the statistics and the
//! base, and knows no probe, engine or command.

// osmeter's `eprintln!` (quiet when stderr is closed: osmeter_base::console) for every module
// declared below, in place of std's, as in the other crates of the workspace.
macro_rules! eprintln {
    ($($arg:tt)*) => {
        ::osmeter_base::eprintln!($($arg)*)
    };
}

// The modules were written as the root crate's `results` module and still name their siblings
// `crate::results::...` and the lower layers `crate::units::...`; these names keep those paths
// true inside this crate.
use crate as results;
#[cfg(test)]
use osmeter_base::error;
use osmeter_base::usage;
use osmeter_base::{
    clock, columns, files, interrupt, mounts, parallel, programs, scratch, suggest, system, text,
    units,
};
use osmeter_kernel::{function_tracer, kernel_parts, tracefs};
use osmeter_meter as meter;
use osmeter_stats as stats;

pub mod compare;
pub mod derive;
pub mod document;
pub mod export;
pub mod figure;
pub mod fingerprint;
#[cfg(any(test, feature = "test-support"))]
pub mod fixtures;
pub mod fleet;
pub mod gate;
pub mod guest;
pub mod guest_sides;
pub mod guest_steps;
pub mod history;
pub mod keep;
pub mod kernel_timeline;
pub mod listing;
pub mod machine;
pub mod model;
pub mod params;
pub mod profile;
pub mod report;
pub mod schema;
pub mod store;
pub mod table;
pub mod timeline;

// Defined after the modules, so that it is reached only by path (`crate::params!`) and never
// shadows rusqlite's `params!` in the store.
/// Shorthand for building a parameter set: `params![("size", 16384), ("placement", "same")]`.
#[macro_export]
macro_rules! params {
    () => { $crate::model::Params::new() };
    ($(($k:expr, $v:expr)),+ $(,)?) => {{
        let mut p = $crate::model::Params::new();
        $( p.insert($k.to_string(), serde_json::json!($v)); )+
        p
    }};
}
