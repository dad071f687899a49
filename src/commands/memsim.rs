//! `osmeter memsim`: simulate one or more memory systems over one read of a trace and store the
//! result as a run whose "memsim" section holds the `osmeter.memsim/1` document.

use crate::cli::MemsimArgs;
use crate::memsim::simulation::{self, Simulation};
use crate::memsim::{curve, interval, kernel, text};
use crate::usage;
use anyhow::Result;

pub fn memsim(args: &MemsimArgs) -> Result<i32> {
    let machines = crate::memsim::choice::machines(&crate::memsim::choice::MachineChoice {
        presets: &args.presets,
        configs: &args.configs,
        l1d: args.l1d.as_ref(),
        l1i: args.l1i.as_ref(),
        l2: args.l2.as_ref(),
        tlb: args.tlb.as_ref(),
        no_3c: args.no_3c,
        curves: &args.curves,
    })?;
    // Checked before the simulation so a typo costs nothing.
    let keeper = crate::config::keeper(&args.keep)?;
    let symbols = kernel::find_symbols(&args.trace, args.symbols.as_deref())?;
    if symbols.is_none() && (args.exclude_idle || args.include_idle) {
        return Err(usage!(
            "--exclude-idle and --include-idle need kernel symbols to find the idle loop: give --symbols FILE"
        ));
    }
    let started_at = crate::clock::now_rfc3339();
    let done = simulation::simulate(Simulation {
        trace: &args.trace,
        format: args.from,
        shown_as: args.trace.display().to_string(),
        machines: &machines,
        symbols,
        include_idle: args.include_idle,
        assertions: args.assertions,
        curves: args.curves.clone(),
        interval: args.interval,
        threads: args.threads,
    })?;
    if args.stats {
        eprintln!(
            "osmeter: {} references x {} configuration(s) in {:.3} s: {:.1} M refs/s, {:.1} M ref-configs/s",
            done.refs,
            machines.len(),
            done.seconds,
            done.refs as f64 / done.seconds.max(1e-9) / 1e6,
            (done.refs * machines.len() as u64) as f64 / done.seconds.max(1e-9) / 1e6
        );
    }
    let run = keeper.run_of(
        crate::results::model::Sections::of(done.doc),
        started_at,
        false,
    );
    let doc = run
        .sections
        .get::<crate::memsim::document::MemsimDoc>()
        .expect("a memsim run holds its document");
    super::keep_then_print(&keeper, &run, || {
        if args.output.json {
            super::emit_json(doc)
        } else {
            super::emit(
                &(text::render(doc)
                    + &kernel::analysis::render(doc)
                    + &curve::render(&doc.curves)
                    + &interval::render(&doc.intervals)),
            )
        }
    })?;
    Ok(crate::error::EXIT_OK)
}
