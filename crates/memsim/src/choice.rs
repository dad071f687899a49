//! Which machines a memsim run simulates, from the presets, machine configs and cache options it
//! was given, checked against the memory available before any trace is read.

use super::budget;
use super::config::{preset, CacheGeometry, PresetName, TlbGeometry};
use super::curve::CurveSpec;
use super::machine::MachineConfig;
use crate::usage;
use anyhow::{Context, Result};
use std::path::PathBuf;

/// The machine options of `osmeter memsim`, as parsed.
pub struct MachineChoice<'a> {
    /// `--preset` names (a preset or a sweep of presets).
    pub presets: &'a [PresetName],
    /// `--config` machine JSON files.
    pub configs: &'a [PathBuf],
    pub l1d: Option<&'a CacheGeometry>,
    pub l1i: Option<&'a CacheGeometry>,
    pub l2: Option<&'a CacheGeometry>,
    pub tlb: Option<&'a TlbGeometry>,
    /// `--no-3c`: no three-C classification (and none of its shadow caches' memory).
    pub no_3c: bool,
    /// `--curve` specifications, whose stores count against the memory too.
    pub curves: &'a [CurveSpec],
}

/// The machines to simulate: presets (and sweeps of them), machine configs, one machine changed
/// by `--l1d/--l1i/--l2/--tlb`, or the DECstation 5000/200 alone; refused at once when their models
/// (with the curves) would not fit in the memory available.
pub fn machines(args: &MachineChoice) -> Result<Vec<MachineConfig>> {
    let mut out = Vec::new();
    // Where each machine came from, to name it when it is too big.
    let mut origins = Vec::new();
    for name in args.presets {
        // Clap accepted only names of presets and sweeps, and a unit test holds every one of
        // them to a preset that exists.
        out.extend(name.presets().into_iter().filter_map(preset));
        origins.resize(out.len(), format!("--preset {}", name.0));
    }
    for path in args.configs {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read machine config {}", path.display()))?;
        let m: MachineConfig = serde_json::from_str(&text)
            .map_err(|e| usage!("machine config {}: {e}", path.display()))?;
        m.validate()
            .map_err(|e| usage!("machine config {}: {e}", path.display()))?;
        out.push(m);
        origins.push(format!("machine config {}", path.display()));
    }
    let custom =
        args.l1d.is_some() || args.l1i.is_some() || args.l2.is_some() || args.tlb.is_some();
    if custom {
        let mut m = out
            .first()
            .cloned()
            .unwrap_or_else(|| preset("ds5000-200").expect("built-in preset"));
        let mut name = vec![m.name.clone()];
        if let Some(g) = args.l1d {
            m.l1d = g.apply(Some(&m.l1d)).map_err(|e| usage!("--l1d: {e}"))?;
            name.push(format!("l1d={}", g.text));
        }
        if let Some(g) = args.l1i {
            m.l1i = Some(
                g.apply(m.l1i.as_ref().or(Some(&m.l1d)))
                    .map_err(|e| usage!("--l1i: {e}"))?,
            );
            name.push(format!("l1i={}", g.text));
        }
        if let Some(g) = args.l2 {
            let mut base = m.lower.first().cloned();
            if base.is_none() {
                let mut b = m.l1d.clone();
                b.write_back = true;
                b.fetch = 0;
                b.hit_cycles = 10;
                base = Some(b);
            }
            let l2 = g.apply(base.as_ref()).map_err(|e| usage!("--l2: {e}"))?;
            if m.lower.is_empty() {
                m.lower.push(l2);
            } else {
                m.lower[0] = l2;
            }
            name.push(format!("l2={}", g.text));
        }
        if let Some(g) = args.tlb {
            m.tlb = Some(g.apply(m.tlb.as_ref()).map_err(|e| usage!("--tlb: {e}"))?);
            name.push(format!("tlb={}", g.text));
        }
        m.name = name.join(",");
        out.push(m);
        origins.push("the machine of --l1d/--l1i/--l2/--tlb".into());
    }
    if out.is_empty() {
        out.push(preset("ds5000-200").expect("built-in preset"));
        origins.push("--preset ds5000-200".into());
    }
    if args.no_3c {
        for m in &mut out {
            m.three_c = false;
        }
    }
    fits_in_memory(args, &out, &origins)?;
    Ok(out)
}

/// Refuses machines whose models would not fit in the memory available, naming the option or
/// file that made the biggest part.
fn fits_in_memory(
    args: &MachineChoice,
    machines: &[MachineConfig],
    origins: &[String],
) -> Result<()> {
    let Some(available) = budget::available_memory() else {
        return Ok(());
    };
    let machines_bytes = machines.iter().map(budget::machine_bytes).sum();
    let available = budget::check_curves(args.curves, machines_bytes, available)
        .map_err(|(c, e)| usage!("--curve {c}: {e}"))?;
    let Err((i, e)) = budget::check(machines, available) else {
        return Ok(());
    };
    let given = |opt: &str| match opt {
        "--l1d" => args.l1d.map(|g| g.text.as_str()),
        "--l1i" => args.l1i.map(|g| g.text.as_str()),
        "--l2" => args.l2.map(|g| g.text.as_str()),
        "--tlb" => args.tlb.map(|g| g.text.as_str()),
        _ => None,
    };
    let custom = origins[i].starts_with("the machine of");
    let origin = match e.part.option().and_then(|o| Some((o, given(o)?))) {
        Some((opt, value)) if custom => format!("{opt} {value}"),
        _ => origins[i].clone(),
    };
    Err(usage!("{origin}: {e}"))
}
