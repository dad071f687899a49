//! `osmeter memsim`: simulate one or more memory systems over one read of a trace and store the
//! result as a run whose "memsim" section holds the `osmeter.memsim/1` document.

use crate::cli::MemsimArgs;
use crate::memsim::document::{MemsimDoc, TraceRef};
use crate::memsim::{curve, interval, kernel, sweep, text, trace};
use crate::usage;
use anyhow::{Context, Result};

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
    let cfgs = crate::memsim::choice::machines(&crate::memsim::choice::MachineChoice {
        presets: &args.presets,
        configs: &args.configs,
        l1d: args.l1d.as_ref(),
        l1i: args.l1i.as_ref(),
        l2: args.l2.as_ref(),
        tlb: args.tlb.as_ref(),
        no_3c: args.no_3c,
        curves: &args.curves,
    })?;
    let format = args.from;
    // Checked before the simulation so a typo costs nothing.
    let keeper = crate::config::keeper(&args.keep)?;
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
    let room = crate::memory_room::now();
    let max_intervals = room.as_ref().map(|r| most_intervals(r.bytes, cfgs.len()));
    let extras = sweep::Extras {
        curves: args.curves.clone(),
        interval: args.interval,
        max_intervals,
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
    if let (Some(every), Some(room), Some(most)) = (args.interval, &room, max_intervals) {
        if result.intervals.iter().any(|r| r.cut_short) {
            // The smallest interval whose count fits, rounded up to two significant digits.
            let fits = result.refs.div_ceil(most.max(1)).max(every + 1);
            let step = 10u64.pow(fits.max(10).ilog10() - 1);
            return Err(usage!(
                "--interval {every}: {} references make more intervals than fit in memory (at most {most} of {} each per machine, as {}); give --interval {} or more",
                result.refs,
                crate::units::bytes(interval::INTERVAL_BYTES),
                room.what,
                fits.div_ceil(step) * step
            ));
        }
    }
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
            &(text::render(&doc)
                + &kernel::analysis::render(&doc)
                + &curve::render(&doc.curves)
                + &interval::render(&doc.intervals)),
        )?;
    }
    keeper.keep(crate::results::model::Sections::of(doc), started_at, false)?;
    Ok(crate::error::EXIT_OK)
}

/// The most intervals each of `machines` may keep in `room` bytes (the share of memory a request
/// may take, as the run budget allows).
fn most_intervals(room: u64, machines: usize) -> u64 {
    let share = room / 10 * 8;
    (share / interval::INTERVAL_BYTES / machines.max(1) as u64).max(1)
}
