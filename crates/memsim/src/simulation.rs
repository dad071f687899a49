//! One simulation of a trace file, as `osmeter memsim` and `osmeter paper chen-bershad93` ask
//! for it: the machines over one read of the trace (with the kernel's attribution and the paper's
//! assertions when symbols or assertions are asked for), the progress of the read on stderr, and
//! the memsim document that results.

use super::curve::CurveSpec;
use super::document::{MemsimDoc, TraceRef};
use super::machine::MachineConfig;
use super::trace::Format;
use super::{interval, kernel, sweep, trace};
use crate::usage;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// What to simulate, checked by the caller's configuration.
pub struct Simulation<'a> {
    pub trace: &'a Path,
    pub format: Option<Format>,
    /// How the trace is named in the document (its path, or what it was).
    pub shown_as: String,
    pub machines: &'a [MachineConfig],
    /// Kernel symbols (their file and table): kernel references attributed to functions.
    pub symbols: Option<(PathBuf, kernel::SymbolTable)>,
    /// Whether references of the idle loop count (only with symbols).
    pub include_idle: bool,
    /// Chen and Bershad's seven assertions judged.
    pub assertions: bool,
    pub curves: Vec<CurveSpec>,
    /// References per interval, if per-interval statistics are asked for.
    pub interval: Option<u64>,
    /// Threads the machines are spread over (None: one per CPU).
    pub threads: Option<usize>,
}

/// The document, and how fast the trace was read.
pub struct Simulated {
    pub doc: MemsimDoc,
    pub refs: u64,
    pub seconds: f64,
}

/// Reads the trace once through every machine. An `--interval` too fine for the memory at hand
/// is refused after the read, naming an interval that fits.
pub fn simulate(s: Simulation) -> Result<Simulated> {
    let read = crate::progress::Counter::default();
    let mut src = trace::open_counted(s.trace, s.format, Some(read.clone()))?;
    let progress = reading_progress(s.trace, read);
    let threads = s.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let room = crate::memory_room::now();
    let max_intervals = room
        .as_ref()
        .map(|r| most_intervals(r.bytes, s.machines.len()));
    let extras = sweep::Extras {
        curves: s.curves,
        interval: s.interval,
        max_intervals,
    };
    let what = || format!("simulating {}", s.trace.display());
    let (result, extra) = if s.symbols.is_some() || s.assertions {
        let opts = kernel::analysis::Options {
            symbols: s.symbols,
            exclude_idle: !s.include_idle,
            assertions: s.assertions,
            threads,
            extras,
        };
        let (r, extra) =
            kernel::analysis::simulate(src.as_mut(), s.machines, opts).with_context(what)?;
        (r, Some(extra))
    } else {
        let r =
            sweep::simulate_with(src.as_mut(), s.machines, &extras, threads).with_context(what)?;
        (r, None)
    };
    drop(progress);
    if let (Some(every), Some(room), Some(most)) = (s.interval, &room, max_intervals) {
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
    let trace = TraceRef {
        path: s.shown_as,
        format: s.format,
    };
    let mut doc = MemsimDoc::new(trace, s.machines, &result);
    if let Some(extra) = extra {
        extra.insert_into(&mut doc);
    }
    Ok(Simulated {
        doc,
        refs: result.refs,
        seconds: result.seconds,
    })
}

/// "memsim: 412 MiB of 708 MiB (58 %, about 9.1 s left) read, 12.0 s"; the size is unknown for stdin.
fn reading_progress(path: &Path, read: crate::progress::Counter) -> crate::progress::Ticker {
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

/// The most intervals each of `machines` may keep in `room` bytes (the share of memory a request
/// may take, as the run budget allows).
fn most_intervals(room: u64, machines: usize) -> u64 {
    let share = room / 10 * 8;
    (share / interval::INTERVAL_BYTES / machines.max(1) as u64).max(1)
}
