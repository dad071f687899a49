//! `osmeter trace`: capture (valgrind lackey through a pipe), convert, info, synth.

use crate::capture::valgrind;
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
            from,
            to,
            zstd,
        }) => match to {
            ExportFormat::Osmeter => convert(input, output, *from, *zstd),
            other => export(input, output, *from, *other, *zstd),
        },
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
                return system_capture(args, out);
            }
            if args.command.is_empty() {
                return Err(usage!("nothing to trace: give the command after --, e.g. osmeter trace -o t.osmt -- ls"));
            }
            user_capture(out, args.zstd, &args.command)
        }
    }
}

fn system_capture(args: &TraceArgs, out: &Path) -> Result<i32> {
    use crate::capture::system::capture::{SystemCapture, Target};
    use crate::capture::system::workloads;
    let target = match (&args.workload, args.command.is_empty()) {
        (Some(_), false) => {
            return Err(usage!(
                "give either --workload NAME or a command after --, not both"
            ))
        }
        (None, true) => {
            return Err(usage!(
                "nothing to trace: give a command after -- or --workload NAME ({})",
                workloads::names().join(", ")
            ))
        }
        (Some(workload), true) => Target::Workload(workload),
        (None, false) => Target::Command(args.command.clone()),
    };
    crate::capture::system::capture::run(&SystemCapture {
        output: out.to_path_buf(),
        zstd: args.zstd,
        target,
        kernel: args.kernel.clone(),
        system_map: args.system_map.clone(),
        kernel_package: args.kernel_package.clone(),
        include: args.include.clone(),
        memory_mib: args.memory,
        timeout: std::time::Duration::from_nanos(args.timeout),
        install: args.install,
        guest_output_on_stderr: false,
    })
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

/// `trace -o FILE -- CMD`: the user-mode references of CMD through valgrind's lackey.
fn user_capture(out: &Path, zstd: bool, cmd: &[String]) -> Result<i32> {
    let valgrind = crate::programs::find("valgrind").ok_or_else(|| {
        anyhow::anyhow!("valgrind is not installed (or not on PATH): osmeter trace runs the command under valgrind's lackey tool; install valgrind")
    })?;
    crate::programs::startable(&cmd[0])?;
    let c = valgrind::capture(&valgrind, out, zstd, cmd)?;
    eprintln!(
        "osmeter: traced {} references in {:.2} s ({:.2} M refs/s) to {}; user mode only: lackey cannot see kernel references",
        c.references,
        c.seconds,
        c.references as f64 / c.seconds.max(1e-9) / 1e6,
        out.display()
    );
    if c.interrupted {
        eprintln!(
            "osmeter: interrupted: the trace holds the references captured before {} and is \
             marked incomplete",
            crate::interrupt::what_stopped()
        );
        return Ok(crate::error::EXIT_INTERRUPTED);
    }
    if !c.status.success() {
        if c.status.code().is_none() {
            eprintln!(
                "osmeter: the traced command was killed ({}); the trace is marked incomplete",
                c.status
            );
        } else {
            eprintln!(
                "osmeter: the traced command failed ({}); its trace is kept",
                c.status
            );
        }
        return Ok(crate::error::EXIT_COMMAND_FAILED);
    }
    Ok(crate::error::EXIT_OK)
}
