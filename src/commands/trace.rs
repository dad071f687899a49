//! `osmeter trace`: capture (valgrind lackey through a pipe), convert, info, synth.

use crate::cli::{TraceAction, TraceArgs};
use crate::memsim::kernel::{self, info::Profile};
use crate::memsim::trace::{
    self, binary::TraceWriter, synth::Synth, Format, Kind, RefSource, FLAG_INCOMPLETE,
    FLAG_USER_ONLY,
};
use crate::usage;
use anyhow::{Context, Result};
use serde_json::json;
use std::collections::{BTreeSet, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

pub fn trace(args: &TraceArgs) -> Result<i32> {
    match &args.action {
        Some(TraceAction::Convert {
            input,
            output,
            from,
            to,
            zstd,
        }) => match to.as_deref() {
            Some(to @ ("champsim" | "drmemtrace")) => {
                export(input, output, parse_format(from.as_deref())?, to, *zstd)
            }
            _ => convert(input, output, parse_format(from.as_deref())?, *zstd),
        },
        Some(TraceAction::Info {
            file,
            from,
            output,
            symbols,
            functions,
        }) => info(
            file,
            parse_format(from.as_deref())?,
            output.json,
            symbols.as_deref(),
            *functions,
        ),
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
        crate::config::parse_duration_ns(&args.timeout).map_err(|e| usage!("--timeout: {e}"))?;
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

pub fn parse_format(s: Option<&str>) -> Result<Option<Format>> {
    s.map(|f| {
        Format::parse(f).ok_or_else(|| {
            usage!("unknown trace format {f:?}: use osmeter, lackey, din or drmemtrace")
        })
    })
    .transpose()
}

/// Plain or zstd-compressed output.
enum Sink {
    Plain(std::fs::File),
    Zstd(zstd::stream::write::Encoder<'static, std::fs::File>),
}

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Plain(f) => f.write(b),
            Sink::Zstd(z) => z.write(b),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Plain(f) => f.flush(),
            Sink::Zstd(z) => z.flush(),
        }
    }
}

impl Sink {
    fn finish(self) -> Result<()> {
        match self {
            Sink::Plain(_) => Ok(()),
            Sink::Zstd(z) => {
                z.finish().context("finishing zstd compression")?;
                Ok(())
            }
        }
    }
}

fn wants_zstd(path: &Path, flag: bool) -> bool {
    flag || path.extension().is_some_and(|e| e == "zst")
}

/// Copies a source into a new trace file; nothing appears under `out` unless it all worked.
pub(crate) fn write_trace(
    src: &mut dyn RefSource,
    out: &Path,
    zstd: bool,
    flags: u8,
) -> Result<u64> {
    write_trace_at_level(src, out, zstd, flags, 3)
}

/// The same, with a zstd level of the caller's choosing: a live capture wants level 1, which
/// compresses a trace about as well at twice the speed, so it keeps up with the source.
pub(crate) fn write_trace_at_level(
    src: &mut dyn RefSource,
    out: &Path,
    zstd: bool,
    flags: u8,
    level: i32,
) -> Result<u64> {
    let file = crate::files::AtomicFile::create(out)?;
    let sink = if wants_zstd(out, zstd) {
        Sink::Zstd(zstd::stream::write::Encoder::new(file.reopen()?, level)?)
    } else {
        Sink::Plain(file.reopen()?)
    };
    let mut w = TraceWriter::new(sink, flags | src.meta().flags)?;
    let mut batch = Vec::with_capacity(1 << 16);
    loop {
        batch.clear();
        if src.next_batch(&mut batch, 1 << 16)? == 0 {
            break;
        }
        for r in &batch {
            w.write(r)?;
        }
    }
    let n = w.count();
    let late = src.meta().flags & FLAG_INCOMPLETE;
    w.finish(late)?.finish()?;
    file.commit()?;
    Ok(n)
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
fn export(input: &Path, output: &Path, from: Option<Format>, to: &str, zstd: bool) -> Result<i32> {
    let mut src = trace::open(input, from)?;
    let file = crate::files::AtomicFile::create(output)?;
    let mut sink = if wants_zstd(output, zstd) {
        Sink::Zstd(zstd::stream::write::Encoder::new(file.reopen()?, 3)?)
    } else {
        Sink::Plain(file.reopen()?)
    };
    let what = if to == "champsim" {
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
    let mut profile = kernel::find_symbols(path, symbols)?.map(|(p, t)| (p, Profile::new(t)));
    if profile.is_none() && functions > 0 {
        return Err(usage!(
            "--functions needs kernel symbols: give --symbols FILE (or put {} beside the trace)",
            kernel::sidecar(path).map_or("TRACE.kallsyms".into(), |p| p.display().to_string())
        ));
    }
    let mut src = trace::open(path, from)?;
    let mut counts = [[0u64; 2]; 3];
    let mut pages = HashSet::new();
    let mut lines = HashSet::new();
    let mut spaces = BTreeSet::new();
    let mut uncached = 0u64;
    let mut batch = Vec::with_capacity(1 << 16);
    loop {
        batch.clear();
        if src.next_batch(&mut batch, 1 << 16)? == 0 {
            break;
        }
        for r in &batch {
            counts[r.kind as usize][r.mode as usize] += 1;
            let key = u64::from(r.asid).rotate_right(16);
            pages.insert((r.vaddr >> 12) ^ key);
            lines.insert((r.vaddr >> 6) ^ key);
            spaces.insert(r.asid);
            uncached += u64::from(r.uncached);
        }
        if let Some((_, p)) = profile.as_mut() {
            for r in &batch {
                p.observe(r);
            }
        }
    }
    let meta = src.meta();
    let kinds = ["instructions", "reads", "writes"];
    let total: u64 = counts.iter().flatten().sum();
    let mut doc = json!({
        "file": path.display().to_string(),
        "references": total,
        "user": kinds.iter().enumerate().map(|(i, k)| (k.to_string(), json!(counts[i][0]))).collect::<serde_json::Map<_, _>>(),
        "kernel": kinds.iter().enumerate().map(|(i, k)| (k.to_string(), json!(counts[i][1]))).collect::<serde_json::Map<_, _>>(),
        "uncached": uncached,
        "address_spaces": spaces.len(),
        "footprint_pages_4k": pages.len(),
        "footprint_lines_64b": lines.len(),
        "user_only": meta.user_only(),
        "physical_addresses": meta.physical(),
        "incomplete": meta.incomplete(),
    });
    doc["kernel_share"] = kernel::info::share(&counts);
    if let Some((p, profile)) = &profile {
        doc["attribution"] = profile.document(p, functions);
    }
    if json_out {
        super::emit_json(&doc)?;
        return Ok(crate::error::EXIT_OK);
    }
    let mut t = format!("{}: {} references\n", path.display(), total);
    t.push_str(&format!("  {:<14} {:>14} {:>14}\n", "", "user", "kernel"));
    for (i, k) in kinds.iter().enumerate() {
        t.push_str(&format!(
            "  {:<14} {:>14} {:>14}\n",
            k, counts[i][0], counts[i][1]
        ));
    }
    t.push_str(&kernel::info::render(&doc));
    t.push_str(&format!(
        "  footprint: {} pages of 4 KB ({:.1} MB), {} lines of 64 B; {} address spaces; {} uncached\n",
        pages.len(),
        pages.len() as f64 * 4096.0 / 1048576.0,
        lines.len(),
        spaces.len(),
        uncached
    ));
    if meta.user_only() {
        t.push_str("  user mode only: no kernel references were captured\n");
    }
    if meta.incomplete() {
        t.push_str("  INCOMPLETE: the capture ended early\n");
    }
    debug_assert!(Kind::Instr as usize == 0);
    super::emit(&t)?;
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
    if find_program(&cmd[0]).is_none() {
        return Err(usage!("cannot find the command {:?} to trace", cmd[0]));
    }
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
        .args(["--tool=lackey", "--trace-mem=yes", "--log-fd=3"])
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
    let copied = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| stop_on_interrupt(pid, &done));
        let copied = copy_refs(&mut src, &mut writer);
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

/// Copies lackey's references into the trace until its output ends. After Ctrl-C the output
/// may end in the middle of a line: the records before it are kept, the error is not one.
fn copy_refs(src: &mut dyn RefSource, w: &mut TraceWriter<Sink>) -> Result<()> {
    let mut batch = Vec::with_capacity(1 << 16);
    loop {
        batch.clear();
        let got = src.next_batch(&mut batch, 1 << 16);
        for r in &batch {
            w.write(r)?;
        }
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
