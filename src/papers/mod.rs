//! The four seed papers: their published numbers as data, and views that set each paper's tables
//! beside the same measurements taken today on this machine.

pub mod arith;
pub mod brief;
pub mod chen96_guest;
pub mod cpu;
pub mod data;
#[cfg(test)]
mod data_tests;
#[cfg(test)]
pub mod fixtures;
pub mod guest_side;
pub mod html;
pub mod latency_side;
pub mod memsim_side;
pub mod plan;
pub mod quantity;
pub mod render;
pub mod source;
pub mod spec;
pub mod split;
pub mod summary;
pub mod today;
pub mod view;
#[cfg(test)]
mod view_tests;

use serde::{Deserialize, Serialize};

/// A seed paper, by the short name the command line uses.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
    schemars::JsonSchema,
)]
pub enum PaperId {
    #[serde(rename = "ousterhout89")]
    #[value(name = "ousterhout89")]
    Ousterhout89,
    #[serde(rename = "chen96")]
    #[value(name = "chen96")]
    Chen96,
    #[serde(rename = "chen-bershad93")]
    #[value(name = "chen-bershad93")]
    ChenBershad93,
    #[serde(rename = "cota-robles99")]
    #[value(name = "cota-robles99")]
    CotaRobles99,
}

impl PaperId {
    pub const ALL: [PaperId; 4] = [
        PaperId::Ousterhout89,
        PaperId::Chen96,
        PaperId::ChenBershad93,
        PaperId::CotaRobles99,
    ];

    /// The short name (`ousterhout89`).
    pub fn key(self) -> &'static str {
        match self {
            PaperId::Ousterhout89 => "ousterhout89",
            PaperId::Chen96 => "chen96",
            PaperId::ChenBershad93 => "chen-bershad93",
            PaperId::CotaRobles99 => "cota-robles99",
        }
    }

    /// Authors and year, as the papers are cited in osmeter.
    pub fn name(self) -> &'static str {
        match self {
            PaperId::Ousterhout89 => "Ousterhout 1989",
            PaperId::Chen96 => "Chen et al. 1996",
            PaperId::ChenBershad93 => "Chen and Bershad 1993",
            PaperId::CotaRobles99 => "Cota-Robles and Held 1999",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            PaperId::Ousterhout89 => {
                "Why Aren't Operating Systems Getting Faster As Fast As Hardware? (DEC WRL TN-11)"
            }
            PaperId::Chen96 => "The Measured Performance of Personal Computer Operating Systems (ACM TOCS)",
            PaperId::ChenBershad93 => {
                "The Impact of Operating System Structure on Memory System Performance (SOSP)"
            }
            PaperId::CotaRobles99 => {
                "A Comparison of Windows Driver Model Latency Performance on Windows NT and Windows 98 (OSDI)"
            }
        }
    }
}
