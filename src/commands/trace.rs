//! `osmeter trace`: capture (valgrind lackey through a pipe), convert, info, synth.

use crate::cli::{TraceAction, TraceArgs};
use crate::memsim::kernel::{self, info::Profile};
use crate::memsim::trace::file::write_trace;
use crate::memsim::trace::{self, summary, synth::Synth, ExportFormat, Format};
use crate::usage;
use anyhow::{Context, Result};
use std::path::Path;

pub fn trace(args: &TraceArgs) -> Result<i32> {
    match &args.action {
        Some(TraceAction::Convert {
            input,
            output,
            output_positional,
            from,
            to,
            zstd,
        }) => {
            // clap requires one of the two and refuses both.
            let Some(output) = output.as_ref().or(output_positional.as_ref()) else {
                return Err(crate::usage!(
                    "trace convert needs -o FILE, the file to write"
                ));
            };
            match to {
                ExportFormat::Osmeter => convert(input, output, *from, *zstd),
                other => export(input, output, *from, *other, *zstd),
            }
        }
        Some(TraceAction::Info {
            file,
            from,
            output,
            symbols,
            functions,
        }) => info(file, *from, output.json, symbols.as_deref(), *functions),
        Some(TraceAction::Synth {
            output,
            refs,
            seed,
            zstd,
        }) => {
            crate::memsim::trace::synth::check_room(output, *refs, *zstd)?;
            let mut src = Synth::new(*refs, *seed);
            let n = write_trace(&mut src, output, *zstd, 0)?;
            eprintln!(
                "osmeter: wrote {n} synthetic references to {}",
                output.display()
            );
            Ok(crate::error::EXIT_OK)
        }
        Some(TraceAction::Workloads) => {
            let mut t = String::new();
            for w in crate::capture::system::workloads::WORKLOADS {
                t.push_str(&format!("{:<10} {}\n", w.name, w.summary));
            }
            super::emit(&t)?;
            Ok(crate::error::EXIT_OK)
        }
        None => {
            let out = args.output.as_ref().ok_or_else(|| {
                usage!("osmeter trace needs -o FILE -- CMD ..., or one of convert, info, synth, workloads")
            })?;
            if args.system {
                return super::trace_capture::system(args, out);
            }
            if args.command.is_empty() {
                return Err(usage!("nothing to trace: give the command after --, e.g. osmeter trace -o t.osmt -- ls"));
            }
            super::trace_capture::user(out, args.zstd, &args.command)
        }
    }
}

fn convert(input: &Path, output: &Path, from: Option<Format>, zstd: bool) -> Result<i32> {
    let start = std::time::Instant::now();
    let mut src = trace::open(input, from)?;
    let n = write_trace(src.as_mut(), output, zstd, 0)
        .with_context(|| format!("converting {}", input.display()))?;
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "osmeter: converted {n} references to {} in {secs:.2} s ({:.1} M refs/s)",
        output.display(),
        n as f64 / secs.max(1e-9) / 1e6
    );
    Ok(crate::error::EXIT_OK)
}

/// Writes a trace in ChampSim's or drmemtrace's format; nothing appears unless it all worked.
fn export(
    input: &Path,
    output: &Path,
    from: Option<Format>,
    to: ExportFormat,
    zstd: bool,
) -> Result<i32> {
    let what = crate::memsim::trace::file::export_as(input, output, from, to, zstd)?;
    eprintln!("osmeter: wrote {what} to {} ({to})", output.display());
    Ok(crate::error::EXIT_OK)
}

fn info(
    path: &Path,
    from: Option<Format>,
    json_out: bool,
    symbols: Option<&Path>,
    functions: usize,
) -> Result<i32> {
    let found = kernel::find_symbols(path, symbols)?;
    if found.is_none() && functions > 0 {
        return Err(usage!(
            "--functions needs kernel symbols: give --symbols FILE (or put {} beside the trace)",
            kernel::sidecar(path).map_or("TRACE.kallsyms".into(), |p| p.display().to_string())
        ));
    }
    let mut src = trace::open(path, from)?;
    let symbols = found.map(|(path, table)| summary::Symbols {
        path,
        profile: Profile::new(table),
        top_functions: functions,
    });
    let doc = summary::summarize(src.as_mut(), path, symbols)?;
    if json_out {
        super::emit_json(&doc)?;
    } else {
        super::emit(&summary::render(&doc))?;
    }
    Ok(crate::error::EXIT_OK)
}
