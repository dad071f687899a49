//! Application workloads (group `app`): whole programs, measured whole. The workloads live in
//! [`crate::apps`]; this is their registry table. An app figure's operation is one whole run of the
//! workload (an Andrew phase, an interpreter start, a rendering), and its counters are those of
//! every process the workload involved (see [`crate::apps`]).

use super::{Built, Origin, ProbeDef, ProbeEnv, Scale};
use crate::apps;
use crate::params;
use crate::results::model::{Params, Unit};
use anyhow::Result;

/// App probes light enough for the quick suite's one-minute budget.
pub const LIGHT: &[&str] = &["app.interp"];

pub const PROBES: &[ProbeDef] = &[ProbeDef {
    id: "app.interp",
    summary: "interpreter start-up: python3, perl and tclsh started with nothing to do, and \
              exited, counted whole (every process, user and kernel apart)",
    params: "interp=python3|perl|tclsh",
    unit: Unit::Nanoseconds,
    origins: &[Origin::Osmeter],
    variants: interp_variants,
    build: build_interp,
}];

fn interp_variants(_: Scale) -> Vec<Params> {
    apps::interp::names()
        .map(|n| params![("interp", n)])
        .collect()
}

fn build_interp(env: &ProbeEnv, p: &Params) -> Result<Built> {
    apps::whole(apps::interp::Interp::new(env, p)?)
}
