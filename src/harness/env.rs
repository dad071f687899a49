//! What a workload is built with: the run's scratch directory, the measuring CPU and how much of
//! a parameter space to cover; and what building gives back. Probes and application workloads
//! both build against these.

use super::Workload;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// How much of a probe's parameter space a suite covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// Fewer parameter points and smaller workloads, for the one-minute suite.
    Quick,
    /// Every parameter point at the papers' sizes.
    Full,
}

/// What a probe needs from the run to build its workload.
pub struct ProbeEnv<'a> {
    /// A fresh scratch directory, removed after the run.
    pub scratch: &'a Path,
    /// CPU the measuring thread is pinned to.
    pub cpu: usize,
    pub scale: Scale,
    /// Where the file-system probes work.
    pub file_systems: FileSystems,
}

/// Where the file-system probes (`fs.*`) work: in a file system whose state osmeter controls, or
/// in the scratch directory's own, whatever happened on it before.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum FileSystems {
    /// A file system made for each round (a fresh ext4 image on a loop device, or tmpfs), unmounted
    /// after it; without the privileges for that, the scratch directory, and the figure says why.
    #[default]
    Fresh,
    /// The scratch directory's file system as it is (`--dir`, `--fs`): its type and mount options
    /// go on the figure, and so does a warning that its history counts.
    Scratch,
}

/// A built probe: a workload ready to time, or the reason this machine cannot run it.
pub enum Built {
    Ready(Box<dyn Workload>),
    Skip(String),
}
