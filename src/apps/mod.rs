//! Application workloads: whole programs measured with everything they involve.

pub mod context;
pub mod web;
pub mod x11;
