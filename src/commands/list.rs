//! `osmeter list`: every probe and suite, one line each.

use crate::probes::{self, Scale};
use anyhow::Result;
use serde::Serialize;
use std::fmt::Write;

/// `osmeter list --json`.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct ListDoc {
    probes: Vec<ProbeEntry>,
    suites: Vec<SuiteEntry>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct ProbeEntry {
    id: &'static str,
    group: &'static str,
    summary: &'static str,
    params: &'static str,
    unit: &'static str,
    origins: &'static [probes::Origin],
    variants_quick: usize,
    variants_full: usize,
}

#[derive(Serialize, schemars::JsonSchema)]
struct SuiteEntry {
    name: &'static str,
    summary: &'static str,
    probes: Vec<&'static str>,
    /// The figure that holds the most memory for its set-up, and how many bytes.
    largest_footprint: Option<(String, u64)>,
}

pub fn list(json: bool) -> Result<i32> {
    let registry = probes::registry();
    if json {
        let doc = ListDoc {
            probes: registry
                .iter()
                .map(|p| ProbeEntry {
                    id: p.id,
                    group: p.group(),
                    summary: p.summary,
                    params: p.params,
                    unit: p.unit.symbol(),
                    origins: p.origins,
                    variants_quick: (p.variants)(Scale::Quick).len(),
                    variants_full: (p.variants)(Scale::Full).len(),
                })
                .collect(),
            suites: probes::SUITES
                .iter()
                .map(|s| SuiteEntry {
                    name: s.name,
                    summary: s.summary,
                    probes: s.probes().iter().map(|p| p.id).collect(),
                    largest_footprint: s.largest_footprint(),
                })
                .collect(),
        };
        super::emit_json(&doc)?;
        return Ok(0);
    }
    let mut out = String::new();
    writeln!(out, "Suites:")?;
    for s in probes::SUITES {
        writeln!(
            out,
            "  {:<14} {} ({} probes)",
            s.name,
            s.summary,
            s.probes().len()
        )?;
        if let Some((label, bytes)) = s.largest_footprint() {
            writeln!(
                out,
                "  {:<14} one figure at a time; the largest set-up holds {} ({label})",
                "",
                crate::units::format(bytes as f64, crate::units::Unit::Bytes)
            )?;
        }
    }
    let width = registry.iter().map(|p| p.id.len()).max().unwrap_or(10);
    let mut group = "";
    for p in &registry {
        if p.group() != group {
            group = p.group();
            writeln!(out, "\n{group}:")?;
        }
        let origins: Vec<&str> = p.origins.iter().map(|o| o.name()).collect();
        // One gap before the summary, so that a narrow terminal wraps the summary and its
        // origins under the summary's column.
        writeln!(
            out,
            "  {:<width$}  {:<4} {} [{}]",
            p.id,
            p.unit.symbol(),
            p.summary,
            origins.join(", ")
        )?;
        if !p.params.is_empty() {
            writeln!(out, "  {:<width$}       parameters: {}", "", p.params)?;
        }
    }
    super::emit(&out)?;
    Ok(0)
}
