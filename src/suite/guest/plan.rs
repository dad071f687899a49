//! What a guest counts, handed from the host to `osmeter guest-inside` as a file in the guest's
//! file system: the probes (each at its quick-scale points, or at one named point) and the
//! operations per window. A file rather than arguments, so that any parameter value crosses
//! unquoted and the command line stays short whatever the list.

use crate::results::model::Params;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Where the plan lives inside the guest.
pub const GUEST_PLAN: &str = "/plan.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Plan {
    /// Operations in the shorter window of each point, before fitting it between timer ticks.
    pub iterations: u64,
    pub probes: Vec<Planned>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Planned {
    pub probe: String,
    /// One point to count; none: every point of the probe's quick scale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Params>,
}

impl Planned {
    pub fn probe(id: &str) -> Planned {
        Planned {
            probe: id.to_string(),
            params: None,
        }
    }
}

impl Plan {
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a plan is plain data")
    }

    pub fn read(path: &Path) -> Result<Plan> {
        let text = std::fs::read(path)
            .with_context(|| format!("cannot read the guest's plan {}", path.display()))?;
        serde_json::from_slice(&text).with_context(|| {
            format!(
                "the guest's plan {} is not one this osmeter wrote",
                path.display()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_reads_back_as_written() {
        let mut point = Params::new();
        point.insert("placement".into(), serde_json::json!("same"));
        let plan = Plan {
            iterations: 7,
            probes: vec![
                Planned::probe("syscall.null"),
                Planned {
                    probe: "net.tcp_bandwidth".into(),
                    params: Some(point),
                },
            ],
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.json");
        std::fs::write(&path, plan.to_bytes()).unwrap();
        assert_eq!(Plan::read(&path).unwrap(), plan);
        std::fs::write(&path, b"{}").unwrap();
        assert!(Plan::read(&path).is_err());
    }
}
