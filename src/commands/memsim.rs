//! `osmeter memsim`: simulate one or more memory systems over one read of a trace and store the
//! result as a run whose "memsim" section holds the `osmeter.memsim/1` document.

use crate::cli::MemsimArgs;
use crate::memsim::config::{preset, PRESETS, SWEEPS};
use crate::memsim::document::{MemsimDoc, TraceRef};
use crate::memsim::machine::MachineConfig;
use crate::memsim::{budget, curve, interval, kernel, report, sweep, trace};
use crate::usage;
use anyhow::{Context, Result};

fn machines(args: &MemsimArgs) -> Result<Vec<MachineConfig>> {
    let mut out = Vec::new();
    // Where each machine came from, to name it when it is too big.
    let mut origins = Vec::new();
    for name in &args.presets {
        if let Some((_, names)) = SWEEPS.iter().find(|(s, _)| s == name) {
            out.extend(names.iter().filter_map(|n| preset(n)));
            origins.resize(out.len(), format!("--preset {name}"));
        } else {
            origins.push(format!("--preset {name}"));
            out.push(preset(name).ok_or_else(|| {
                let known: Vec<&str> = PRESETS
                    .iter()
                    .map(|p| p.0)
                    .chain(SWEEPS.iter().map(|s| s.0))
                    .collect();
                usage!(
                    "unknown preset {name:?}: known presets are {}",
                    known.join(", ")
                )
            })?);
        }
    }
    for path in &args.configs {
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
        if let Some(g) = &args.l1d {
            m.l1d = g.apply(Some(&m.l1d)).map_err(|e| usage!("--l1d: {e}"))?;
            name.push(format!("l1d={}", g.text));
        }
        if let Some(g) = &args.l1i {
            m.l1i = Some(
                g.apply(m.l1i.as_ref().or(Some(&m.l1d)))
                    .map_err(|e| usage!("--l1i: {e}"))?,
            );
            name.push(format!("l1i={}", g.text));
        }
        if let Some(g) = &args.l2 {
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
        if let Some(g) = &args.tlb {
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
fn fits_in_memory(args: &MemsimArgs, machines: &[MachineConfig], origins: &[String]) -> Result<()> {
    let Some(available) = budget::available_memory() else {
        return Ok(());
    };
    let machines_bytes = machines.iter().map(budget::machine_bytes).sum();
    let available = budget::check_curves(&args.curves, machines_bytes, available)
        .map_err(|(c, e)| usage!("--curve {c}: {e}"))?;
    let Err((i, e)) = budget::check(machines, available) else {
        return Ok(());
    };
    let given = |opt: &str| match opt {
        "--l1d" => args.l1d.as_ref().map(|g| g.text.as_str()),
        "--l1i" => args.l1i.as_ref().map(|g| g.text.as_str()),
        "--l2" => args.l2.as_ref().map(|g| g.text.as_str()),
        "--tlb" => args.tlb.as_ref().map(|g| g.text.as_str()),
        _ => None,
    };
    let custom = origins[i].starts_with("the machine of");
    let origin = match e.part.option().and_then(|o| Some((o, given(o)?))) {
        Some((opt, value)) if custom => format!("{opt} {value}"),
        _ => origins[i].clone(),
    };
    Err(usage!("{origin}: {e}"))
}

/// "memsim: 412 MiB of 708 MiB (58 %, about 9.1 s left) read, 12.0 s"; the size is unknown for stdin.
fn reading_progress(
    path: &std::path::Path,
    read: crate::progress::Counter,
) -> crate::progress::Ticker {
    use crate::units::{format as fmt, Unit};
    let size = std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    crate::progress::Ticker::start(move |elapsed| {
        let done = read.get();
        let share = match size {
            Some(total) => format!(
                " of {} ({})",
                fmt(total as f64, Unit::Bytes),
                crate::progress::fraction(done, total, elapsed)
            ),
            None => String::new(),
        };
        format!(
            "memsim: {}{share} read, {}",
            fmt(done as f64, Unit::Bytes),
            crate::progress::duration(elapsed)
        )
    })
}

pub fn memsim(args: &MemsimArgs) -> Result<i32> {
    let cfgs = machines(args)?;
    let format = args.from;
    // Checked before the simulation so a typo costs nothing.
    let keeper = super::keeper(&args.keep)?;
    let symbols = kernel::find_symbols(&args.trace, args.symbols.as_deref())?;
    if symbols.is_none() && (args.exclude_idle || args.include_idle) {
        return Err(usage!(
            "--exclude-idle and --include-idle need kernel symbols to find the idle loop: give --symbols FILE"
        ));
    }
    let started_at = crate::clock::now_rfc3339();
    let read = crate::progress::Counter::default();
    let mut src = trace::open_counted(&args.trace, format, Some(read.clone()))?;
    let progress = reading_progress(&args.trace, read);
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    if threads == 0 {
        return Err(usage!("--threads must be at least 1"));
    }
    let extras = sweep::Extras {
        curves: args.curves.clone(),
        interval: args.interval,
    };
    let (result, extra) = if symbols.is_some() || args.assertions {
        let opts = kernel::analysis::Options {
            symbols,
            exclude_idle: !args.include_idle,
            assertions: args.assertions,
            threads,
            extras,
        };
        let (r, extra) = kernel::analysis::simulate(src.as_mut(), &cfgs, opts)
            .with_context(|| format!("simulating {}", args.trace.display()))?;
        (r, Some(extra))
    } else {
        let r = sweep::simulate_with(src.as_mut(), &cfgs, &extras, threads)
            .with_context(|| format!("simulating {}", args.trace.display()))?;
        (r, None)
    };
    drop(progress);
    if args.stats {
        eprintln!(
            "osmeter: {} references x {} configuration(s) in {:.3} s: {:.1} M refs/s, {:.1} M ref-configs/s",
            result.refs,
            cfgs.len(),
            result.seconds,
            result.refs as f64 / result.seconds.max(1e-9) / 1e6,
            (result.refs * cfgs.len() as u64) as f64 / result.seconds.max(1e-9) / 1e6
        );
    }
    let trace = TraceRef {
        path: args.trace.display().to_string(),
        format,
    };
    let mut doc = MemsimDoc::new(trace, &cfgs, &result);
    if let Some(extra) = extra {
        extra.insert_into(&mut doc);
    }
    if args.output.json {
        super::emit_json(&doc)?;
    } else {
        super::emit(
            &(report::render(&doc)
                + &kernel::analysis::render(&doc)
                + &curve::render(&doc.curves)
                + &interval::render(&doc.intervals)),
        )?;
    }
    keeper.keep(
        crate::results::model::Sections {
            memsim: Some(doc),
            ..Default::default()
        },
        started_at,
        false,
    )?;
    Ok(crate::error::EXIT_OK)
}
