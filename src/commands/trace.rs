//! `osmeter trace`: capture (valgrind lackey through a pipe), convert, info, synth.

use crate::cli::{TraceAction, TraceArgs};
use crate::memsim::kernel::{self, info::Profile};
use crate::memsim::trace::file::{wants_zstd, write_trace, Sink};
use crate::memsim::trace::{
    self, binary::TraceWriter, summary, synth::Synth, ExportFormat, Format, RefSource,
    FLAG_INCOMPLETE, FLAG_USER_ONLY,
};
use crate::usage;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

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
            for w in crate::system::workloads::WORKLOADS {
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
            capture(out, args.zstd, &args.command)
        }
    }
}

fn system_capture(args: &TraceArgs, out: &Path) -> Result<i32> {
    use crate::system::capture::{SystemCapture, Target};
    use crate::system::workloads;
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
        (Some(name), true) => Target::Workload(workloads::find(name).ok_or_else(|| {
            usage!(
                "unknown workload {name:?}: choose one of {}",
                workloads::names().join(", ")
            )
        })?),
        (None, false) => Target::Command(args.command.clone()),
    };
    if !(64..=2048).contains(&args.memory) {
        return Err(usage!(
            "--memory {} MiB is out of range: give 64 to 2048 (the guest's RAM must stay below the PCI hole)",
            args.memory
        ));
    }
    let timeout_ns =
        crate::units::parse_duration_ns(&args.timeout).map_err(|e| usage!("--timeout: {e}"))?;
    crate::system::capture::run(&SystemCapture {
        output: out.to_path_buf(),
        zstd: args.zstd,
        target,
        kernel: args.kernel.clone(),
        system_map: args.system_map.clone(),
        kernel_package: args.kernel_package.clone(),
        include: args.include.clone(),
        memory_mib: args.memory,
        timeout: std::time::Duration::from_nanos(timeout_ns),
        install: args.install,
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
    let mut src = trace::open(input, from)?;
    let file = crate::files::AtomicFile::create(output)?;
    let mut sink = if wants_zstd(output, zstd) {
        Sink::Zstd(zstd::stream::write::Encoder::new(file.reopen()?, 3)?)
    } else {
        Sink::Plain(file.reopen()?)
    };
    let what = if to == ExportFormat::Champsim {
        let c = trace::champsim::export(src.as_mut(), &mut sink)
            .with_context(|| format!("exporting {}", input.display()))?;
        format!(
            "{} instructions ({} loads, {} stores; {} data references beyond the record's 4 loads and 2 stores left out)",
            c.instructions, c.loads, c.stores, c.dropped
        )
    } else {
        let c = trace::drmem::export(src.as_mut(), &mut sink)
            .with_context(|| format!("exporting {}", input.display()))?;
        format!(
            "{} references in {} entries ({} kernel sections, {} physical-address pairs)",
            c.references, c.entries, c.kernel_sections, c.physical_pairs
        )
    };
    sink.finish()?;
    file.commit()?;
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

fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Path::new(name).is_file().then(|| PathBuf::from(name));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Runs the command under lackey with its trace on a pipe (fd 3), converting as it arrives. Lackey
/// logging to a file would make a system call per record; through the pipe it writes in blocks.
///
/// The trace appears under `out` only once its trailer is written. A capture cut short (Ctrl-C,
/// or the command killed by a signal) keeps the references read so far in a complete file whose
/// trailer marks it incomplete; Ctrl-C exits with 130. A conversion error leaves no file.
fn capture(out: &Path, zstd: bool, cmd: &[String]) -> Result<i32> {
    use std::os::unix::process::CommandExt;
    let valgrind = find_program("valgrind").ok_or_else(|| {
        anyhow::anyhow!("valgrind is not installed (or not on PATH): osmeter trace runs the command under valgrind's lackey tool; install valgrind")
    })?;
    super::startable(&cmd[0])?;
    let file = crate::files::AtomicFile::create(out)?;
    let sink = if wants_zstd(out, zstd) {
        Sink::Zstd(zstd::stream::write::Encoder::new(file.reopen()?, 3)?)
    } else {
        Sink::Plain(file.reopen()?)
    };
    let mut writer = TraceWriter::new(sink, FLAG_USER_ONLY)?;
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot create a pipe for the trace");
    }
    let (rfd, wfd) = (fds[0], fds[1]);
    // SAFETY: rfd is a fresh descriptor we own.
    let reader = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(rfd) };
    let mut child = std::process::Command::new(valgrind);
    child
        // --vgdb=no: no gdbserver FIFOs in the temporary directory, which a valgrind stopped by
        // a signal (Ctrl-C) would leave behind.
        .args([
            "--tool=lackey",
            "--trace-mem=yes",
            "--log-fd=3",
            "--vgdb=no",
        ])
        .args(cmd);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        child.pre_exec(move || {
            if wfd == 3 {
                if libc::fcntl(3, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(wfd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    crate::interrupt::install();
    let start = std::time::Instant::now();
    let spawned = child.spawn();
    // SAFETY: the parent's copy of the write end is ours to close; the child has its own.
    unsafe { libc::close(wfd) };
    let mut proc = spawned.context("cannot start valgrind")?;
    let pid = proc.id() as libc::pid_t;
    let mut src =
        trace::text::LackeyReader::new(std::io::BufReader::with_capacity(1 << 20, reader));
    let done = std::sync::atomic::AtomicBool::new(false);
    let captured = crate::progress::Counter::default();
    let progress = capture_progress(captured.clone());
    let copied = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| stop_on_interrupt(pid, &done));
        let copied = copy_refs(&mut src, &mut writer, &captured);
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        // Joined before the child is reaped below, so its pid cannot be reused meanwhile.
        let _ = watcher.join();
        copied
    });
    if copied.is_err() {
        // SAFETY: signalling our own child, not yet reaped.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    // Closing the read end first: a child still writing gets EPIPE instead of blocking.
    drop(src);
    let status = proc.wait().context("waiting for valgrind")?;
    drop(progress);
    copied.context("converting lackey's output")?;
    let interrupted = crate::interrupt::requested();
    let cut_short = interrupted || status.code().is_none();
    let n = writer.count();
    writer
        .finish(if cut_short { FLAG_INCOMPLETE } else { 0 })?
        .finish()?;
    file.commit()?;
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "osmeter: traced {n} references in {secs:.2} s ({:.2} M refs/s) to {}; user mode only: lackey cannot see kernel references",
        n as f64 / secs.max(1e-9) / 1e6,
        out.display()
    );
    if interrupted {
        eprintln!("osmeter: interrupted: the trace holds the references captured before Ctrl-C and is marked incomplete");
        return Ok(crate::error::EXIT_INTERRUPTED);
    }
    if !status.success() {
        if status.code().is_none() {
            eprintln!(
                "osmeter: the traced command was killed ({status}); the trace is marked incomplete"
            );
        } else {
            eprintln!("osmeter: the traced command failed ({status}); its trace is kept");
        }
        return Ok(crate::error::EXIT_COMMAND_FAILED);
    }
    Ok(crate::error::EXIT_OK)
}

/// "trace: 12.3M references captured (1.5M/s), 8.0 s": the command's length is unknown.
fn capture_progress(captured: crate::progress::Counter) -> crate::progress::Ticker {
    crate::progress::Ticker::start(move |elapsed| {
        let n = captured.get() as f64;
        format!(
            "trace: {} references captured ({}/s), {}",
            crate::units::count_label(n),
            crate::units::count_label(n / elapsed.as_secs_f64().max(1e-3)),
            crate::progress::duration(elapsed)
        )
    })
}

/// Copies lackey's references into the trace until its output ends. After Ctrl-C the output
/// may end in the middle of a line: the records before it are kept, the error is not one.
fn copy_refs(
    src: &mut dyn RefSource,
    w: &mut TraceWriter<Sink>,
    copied: &crate::progress::Counter,
) -> Result<()> {
    let mut batch = Vec::with_capacity(1 << 16);
    loop {
        batch.clear();
        let got = src.next_batch(&mut batch, 1 << 16);
        for r in &batch {
            w.write(r)?;
        }
        copied.add(batch.len() as u64);
        match got {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(_) if crate::interrupt::requested() => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// Until `done`, watches for Ctrl-C; then stops valgrind (pid `pid`) as a terminal would, with
/// SIGINT, and with SIGKILL if it has not finished within a few seconds (a command that ignores
/// SIGINT). Its output then ends, which ends the copy.
fn stop_on_interrupt(pid: libc::pid_t, done: &std::sync::atomic::AtomicBool) {
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};
    while !crate::interrupt::requested() {
        if done.load(Ordering::SeqCst) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: our own child, not reaped before this thread is joined.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if done.load(Ordering::SeqCst) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}
