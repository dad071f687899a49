//! What kernel code does, named once for every part of osmeter that attributes kernel time: memsim
//! (its Chen-and-Bershad categories of a traced reference) and profiles (the component of a sampled
//! function). Below the meter, so the results can name components without importing an engine.
//!
//! `category` is memsim's breakdown of system time (the rules are documented in the root crate's
//! `memsim::kernel`); `component` is the coarser view profiles show, with the parts a
//! slowdown is usually traced to (mitigations, security, locking, tracing) named apart and every
//! memsim category mapped into it; `symbols` reads kallsyms and System.map.

pub mod category;
pub mod component;
pub mod hidden;
mod rules;
pub mod symbols;

pub use category::{classify, Category, MAX_TAG};
pub use component::{component_of, Component};
pub use symbols::SymbolTable;
