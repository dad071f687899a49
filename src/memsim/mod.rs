//! Memory-system simulation: reference traces in, stall cycles by user/system and component out.
//!
//! `trace` reads and writes reference traces; `cache`, `tlb`, `wbuf` and `mapping` are the models;
//! `machine` puts them together with a cost model; `config` names presets and parses geometry;
//! `sweep` runs several machines over one read of a trace; `report` renders the results; `kernel`
//! attributes kernel references to functions and categories and evaluates the paper's assertions;
//! `curve` computes miss-ratio curves and `interval` per-interval statistics in the same pass;
//! `budget` refuses machines that would not fit in memory before anything is allocated.

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
