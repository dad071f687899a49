//! The results model and how it is shown.

pub mod compare;
pub mod derive;
pub mod document;
pub mod export;
pub mod figure;
pub mod fingerprint;
pub mod fleet;
pub mod gate;
pub mod guest;
pub mod guest_steps;
pub mod history;
pub mod keep;
pub mod listing;
pub mod machine;
pub mod model;
pub mod params;
pub mod profile;
pub mod report;
pub mod store;
pub mod table;
pub mod timeline;
