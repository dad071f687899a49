//! What is measured: one file per subsystem, each exporting a table of [`ProbeDef`]s, collected here
//! into one registry, plus the named suites.

pub mod app;
pub mod claims;
pub mod cpu;
pub mod footprint;
mod fork_state;
pub mod fs;
pub mod ipc;
pub mod limits;
pub mod memory;
pub mod net;
pub mod noise;
pub mod process;
pub mod select;
pub mod selection;
pub mod signal;
pub mod syscall;
#[cfg(test)]
pub mod testing;
pub mod thread;
pub mod util;

pub use crate::harness::env::{Built, FileSystems, ProbeEnv, Scale};
use crate::results::figure::Role;
use crate::results::model::{Params, Unit};
use anyhow::Result;
use serde::Serialize;

/// Where a probe comes from: the paper or peer tool whose measurement it reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub enum Origin {
    #[serde(rename = "ousterhout89")]
    Ousterhout89,
    #[serde(rename = "chen96")]
    Chen96,
    #[serde(rename = "lmbench")]
    Lmbench,
    #[serde(rename = "lebench")]
    LEBench,
    #[serde(rename = "perf-bench")]
    PerfBench,
    #[serde(rename = "osmeter")]
    Osmeter,
}

impl Origin {
    pub fn name(self) -> &'static str {
        match self {
            Origin::Ousterhout89 => "Ousterhout 1989",
            Origin::Chen96 => "Chen et al. 1996",
            Origin::Lmbench => "lmbench",
            Origin::LEBench => "LEBench",
            Origin::PerfBench => "perf bench",
            Origin::Osmeter => "osmeter",
        }
    }
}

/// Probes whose figure depends on the measuring process's address-space layout, so their workers
/// start without address-space randomisation: fork write-protects and copies the page tables that
/// map the forking process's private memory, and with randomised placement the same worker needed
/// 92 to 112 KiB of them from round to round on the VM this was measured on, where each page-table
/// page added ~2.8 us to a ~140 us fork.
pub fn wants_fixed_layout(probe: &str) -> bool {
    matches!(probe, "process.fork_exit" | "process.exec")
}

pub struct ProbeDef {
    /// `group.name`; the group is the subsystem.
    pub id: &'static str,
    pub summary: &'static str,
    /// Human description of the parameters, for `osmeter list`.
    pub params: &'static str,
    pub unit: Unit,
    pub origins: &'static [Origin],
    /// The parameter points measured at a scale. Each is one measurement.
    pub variants: fn(Scale) -> Vec<Params>,
    pub build: fn(&ProbeEnv, &Params) -> Result<Built>,
}

impl ProbeDef {
    pub fn group(&self) -> &'static str {
        self.id.split('.').next().unwrap_or(self.id)
    }

    /// What the probe measures: an OS primitive, the hardware, the CPU reference, or the harness
    /// itself (declared in [`claims::TABLE`]).
    pub fn role(&self) -> Role {
        claims::of(self.id).map_or(Role::Os, |c| c.role)
    }

    /// What one operation must cost in the software counters (see [`claims`]).
    pub fn claims(&self) -> &'static [claims::Claim] {
        claims::of(self.id).map_or(&[], |c| c.claims)
    }
}

/// Every probe, in the order suites run them (cheap and sensitive ones first).
pub fn registry() -> Vec<&'static ProbeDef> {
    let tables: [&'static [ProbeDef]; 11] = [
        cpu::PROBES,
        syscall::PROBES,
        signal::PROBES,
        thread::PROBES,
        process::PROBES,
        ipc::PROBES,
        select::PROBES,
        memory::PROBES,
        fs::PROBES,
        net::PROBES,
        app::PROBES,
    ];
    tables.iter().flat_map(|t| t.iter()).collect()
}

pub fn find(id: &str) -> Option<&'static ProbeDef> {
    registry().into_iter().find(|p| p.id == id)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Suite {
    pub name: &'static str,
    pub summary: &'static str,
    pub scale: Scale,
    /// Only probes with this origin; all probes when `None`.
    pub origin: Option<Origin>,
    /// Which application workloads (group `app`: whole programs, seconds per figure) it holds.
    pub apps: Apps,
}

/// The application workloads a suite holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Apps {
    None,
    /// Those light enough for a one-minute suite ([`app::LIGHT`]).
    Light,
    All,
    /// Nothing but application workloads.
    Only,
}

pub const SUITES: &[Suite] = &[
    Suite {
        name: "quick",
        summary: "every group at reduced sizes, 3 rounds and more where they disagree, in a 50 s \
                  budget (the default)",
        scale: Scale::Quick,
        origin: None,
        apps: Apps::Light,
    },
    Suite {
        name: "full",
        summary: "every probe at full parameters",
        scale: Scale::Full,
        origin: None,
        apps: Apps::All,
    },
    Suite {
        name: "ousterhout89",
        summary: "the measurements of Ousterhout 1989, at full parameters",
        scale: Scale::Full,
        origin: Some(Origin::Ousterhout89),
        apps: Apps::All,
    },
    Suite {
        name: "chen96",
        summary: "the microbenchmarks of Chen et al. 1996, at full parameters",
        scale: Scale::Full,
        origin: Some(Origin::Chen96),
        apps: Apps::None,
    },
    Suite {
        name: "apps",
        summary: "the application workloads, measured whole (user and kernel apart, every process)",
        scale: Scale::Full,
        origin: None,
        apps: Apps::Only,
    },
];

pub fn suite(name: &str) -> Option<&'static Suite> {
    SUITES.iter().find(|s| s.name == name)
}

impl Suite {
    pub fn probes(&self) -> Vec<&'static ProbeDef> {
        registry()
            .into_iter()
            .filter(|p| self.origin.is_none_or(|o| p.origins.contains(&o)))
            .filter(|p| match (self.apps, p.group() == "app") {
                (Apps::None, app) => !app,
                (Apps::Light, app) => !app || app::LIGHT.contains(&p.id),
                (Apps::All, _) => true,
                (Apps::Only, app) => app,
            })
            .collect()
    }

    /// The figure of this suite that holds the most memory for its set-up ([`footprint::of`]), and
    /// how much: figures are measured one at a time, each in a process of its own, so this plus
    /// the few MiB of the two osmeter processes is about what the suite takes at its peak.
    pub fn largest_footprint(&self) -> Option<(String, u64)> {
        self.probes()
            .into_iter()
            .flat_map(|p| {
                (p.variants)(self.scale).into_iter().map(move |v| {
                    let bytes = footprint::of(p.id, &v).memory;
                    (crate::results::model::label(p.id, &v), bytes)
                })
            })
            .filter(|(_, bytes)| *bytes > 0)
            .max_by_key(|(_, bytes)| *bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn runs_stored_without_roles_read_the_roles_the_registry_declares() {
        use crate::results::figure::bench::role_before_roles_were_stored;
        for p in registry() {
            assert_eq!(role_before_roles_were_stored(p.id), p.role(), "{}", p.id);
        }
    }

    #[test]
    fn ids_are_unique_and_well_formed() {
        let mut seen = HashSet::new();
        for p in registry() {
            assert!(seen.insert(p.id), "duplicate probe id {}", p.id);
            let (group, name) = p.id.split_once('.').expect("id is group.name");
            assert!(
                !group.is_empty() && !name.is_empty() && !name.contains('.'),
                "{}",
                p.id
            );
            assert!(!p.summary.is_empty() && !p.origins.is_empty(), "{}", p.id);
            assert!(
                !(p.variants)(Scale::Quick).is_empty(),
                "{} has no quick variant",
                p.id
            );
            assert!(
                (p.variants)(Scale::Full).len() >= (p.variants)(Scale::Quick).len(),
                "{}",
                p.id
            );
        }
    }

    #[test]
    fn paper_suites_hold_only_their_papers_probes() {
        for name in ["ousterhout89", "chen96"] {
            let s = suite(name).unwrap();
            let probes = s.probes();
            assert!(!probes.is_empty(), "{name} is empty");
            assert!(probes
                .iter()
                .all(|p| p.origins.contains(&s.origin.unwrap())));
        }
    }

    #[test]
    fn the_largest_footprint_is_the_maximum_over_the_suites_figures() {
        for s in SUITES {
            let Some((label, bytes)) = s.largest_footprint() else {
                continue;
            };
            let all: Vec<u64> = s
                .probes()
                .into_iter()
                .flat_map(|p| {
                    (p.variants)(s.scale)
                        .into_iter()
                        .map(move |v| footprint::of(p.id, &v).memory)
                })
                .collect();
            assert_eq!(Some(&bytes), all.iter().max(), "{}: {label}", s.name);
        }
        // The quick suite holds less at once than the full one.
        let (_, quick) = suite("quick").unwrap().largest_footprint().unwrap();
        let (_, full) = suite("full").unwrap().largest_footprint().unwrap();
        assert!(quick <= full, "{quick} > {full}");
    }
}
