//! `osmeter trace --system`: build the guest, boot it with the plugin, and turn the plugin's stream
//! into a trace file while the guest runs.

use super::initramfs::Initramfs;
use super::kernel::{self, Kernel};
use super::qemu::{self, GuestConfig, GuestOutcome};
use super::stream::{PluginStream, StreamSummary};
use super::{workloads, GUEST_HELPER, GUEST_HELPER_PATH, PLUGIN};
use crate::usage;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub struct SystemCapture {
    pub output: PathBuf,
    pub zstd: bool,
    /// What to run: a built-in workload's name, or a command and its arguments.
    pub target: Target,
    pub kernel: Option<PathBuf>,
    /// The kernel's symbol table, when the user has it (else read from the guest).
    pub system_map: Option<PathBuf>,
    pub kernel_package: String,
    /// Extra host files or directories to put in the guest at the same paths.
    pub include: Vec<PathBuf>,
    pub memory_mib: u32,
    pub timeout: Duration,
    /// Install missing Debian packages (root only).
    pub install: bool,
    /// Print what the guest's command wrote on stderr rather than stdout (for a caller whose
    /// stdout holds its own output, such as `osmeter paper --json`).
    pub guest_output_on_stderr: bool,
}

pub enum Target {
    Workload(&'static workloads::Workload),
    Command(Vec<String>),
}

/// Debian packages the capture needs, by the program that tells they are there.
/// The guest's memory in MiB and how long it may run, unless `trace --memory` and `--timeout` say
/// otherwise (the timeout in its own syntax, so that `--help` shows it as written).
pub const DEFAULT_MEMORY_MIB: u32 = 512;
pub const DEFAULT_TIMEOUT: &str = "10min";

const PACKAGES: &[(&str, &str)] = &[
    (qemu::QEMU, "qemu-system-x86"),
    ("busybox", "busybox-static"),
];

fn missing_packages() -> Vec<&'static str> {
    PACKAGES
        .iter()
        .filter(|(prog, _)| workloads::host_program(prog).is_err())
        .map(|(_, pkg)| *pkg)
        .collect()
}

pub(crate) fn ensure_packages(install: bool) -> Result<()> {
    let missing = missing_packages();
    if missing.is_empty() {
        return Ok(());
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !install || !root {
        bail!(
            "osmeter's QEMU guest (trace --system, run --guest) needs the Debian package{} {}: \
             install {} (or, as root, `osmeter trace --system --install`)",
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", "),
            if missing.len() > 1 { "them" } else { "it" }
        );
    }
    eprintln!("osmeter: installing {}", missing.join(" "));
    let status = crate::programs::command("apt-get")
        .args(["install", "-y", "--no-install-recommends"])
        .args(&missing)
        .status()
        .map_err(|e| crate::system::processes::cannot_start("apt-get", &e))?;
    if !status.success() || !missing_packages().is_empty() {
        bail!("apt-get could not install {}", missing.join(" "));
    }
    Ok(())
}

/// Single-quotes a word for the guest's shell.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

pub(crate) const INIT_PREAMBLE: &str = "#!/bin/busybox sh\n\
         /bin/busybox mount -t proc proc /proc\n\
         /bin/busybox mount -t sysfs sys /sys\n\
         /bin/busybox mount -t devtmpfs dev /dev\n\
         /bin/busybox mount -t tmpfs tmp /tmp\n\
         /bin/busybox --install -s /bin\n\
         export PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/work\n\
         ip link set lo up\n";

/// The guest's init for a capture. Every capture of a kernel boots the same way, so that the
/// same command gives the same trace; the symbol table comes from a boot of its own.
fn init_script(argv: &[String]) -> String {
    let mut s = INIT_PREAMBLE.to_string();
    let words: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
    s.push_str(&format!(
        "cd /work\n{GUEST_HELPER_PATH} run {}\n\
         echo 'osmeter-guest: output follows'\n\
         tail -n 40 /tmp/osmeter-output\n\
         echo 'osmeter-guest: output ends'\n\
         poweroff -f\n",
        words.join(" ")
    ));
    s
}

/// The guest's file system for this capture; returns it with the command to run.
/// The directories and busybox every guest has.
pub(crate) fn base_initramfs() -> Result<Initramfs> {
    let mut fs = Initramfs::new();
    for d in [
        "/proc", "/sys", "/dev", "/tmp", "/work", "/bin", "/sbin", "/usr/bin",
    ] {
        fs.dir(Path::new(d))?;
    }
    let busybox = workloads::host_program("busybox")?;
    fs.host_file(&busybox, Path::new("/bin/busybox"))?;
    for lib in super::initramfs::shared_libraries(&busybox)? {
        fs.host_file(&lib, &lib)?;
    }
    Ok(fs)
}

fn build_initramfs(opts: &SystemCapture) -> Result<(Initramfs, Vec<String>)> {
    if GUEST_HELPER.is_empty() || PLUGIN.is_empty() {
        bail!("this osmeter was built without its guest helper or QEMU plugin (build.rs warned why: a C compiler and libc6-dev are needed); rebuild after installing them");
    }
    let mut fs = base_initramfs()?;
    fs.bytes(Path::new(GUEST_HELPER_PATH), 0o755, GUEST_HELPER.to_vec())?;
    let argv = match &opts.target {
        Target::Workload(w) => w.setup(&mut fs)?,
        Target::Command(cmd) => {
            let prog = workloads::host_program(&cmd[0]).map_err(|e| usage!("{e}"))?;
            fs.program(&prog)?;
            std::iter::once(prog.display().to_string())
                .chain(cmd[1..].iter().cloned())
                .collect()
        }
    };
    for inc in &opts.include {
        let meta = std::fs::metadata(inc)
            .with_context(|| format!("cannot include {} in the guest", inc.display()))?;
        let abs = std::fs::canonicalize(inc)?;
        if meta.is_dir() {
            fs.host_tree(&abs, &abs)?;
        } else if meta.permissions().readonly() || !is_executable(&meta) {
            fs.host_file(&abs, &abs)?;
        } else {
            fs.program(&abs)?;
        }
    }
    fs.bytes(Path::new("/init"), 0o755, init_script(&argv).into_bytes())?;
    Ok((fs, argv))
}

fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

fn symbols_cache(k: &Kernel) -> PathBuf {
    kernel::cache_dir()
        .join("symbols")
        .join(format!("{}.kallsyms", k.key))
}

/// Stops QEMU when the time is up (SIGKILL: a hung guest gets no say) or when the user presses
/// Ctrl-C (SIGTERM: QEMU exits in order, so the plugin flushes what it traced), unless told the
/// guest finished first.
pub(crate) struct Watchdog {
    done: Arc<AtomicBool>,
    fired: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    /// Starts watching `pid`; when no thread may start to watch it, `pid` is killed at once (it
    /// would run unbounded) and the error names the limit.
    pub(crate) fn start(pid: u32, timeout: Duration) -> anyhow::Result<Watchdog> {
        let done = Arc::new(AtomicBool::new(false));
        let fired = Arc::new(AtomicBool::new(false));
        let (d, f) = (done.clone(), fired.clone());
        let thread = crate::system::limits::spawn("osm-watchdog", move || {
            let end = std::time::Instant::now() + timeout;
            let mut terminated = false;
            while !d.load(Ordering::SeqCst) {
                if crate::interrupt::requested() && !terminated {
                    terminated = true;
                    // SAFETY: signalling our own child, not reaped before the watchdog stops.
                    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
                }
                if std::time::Instant::now() >= end {
                    f.store(true, Ordering::SeqCst);
                    // SAFETY: as above.
                    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let thread = match thread {
            Ok(t) => t,
            Err(e) => {
                // SAFETY: signalling the caller's own child, not yet reaped.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                return Err(e);
            }
        };
        Ok(Watchdog {
            done,
            fired,
            thread: Some(thread),
        })
    }

    pub(crate) fn stop(mut self) -> bool {
        self.done.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.fired.load(Ordering::SeqCst)
    }
}

/// What a capture produced, for the summary and the tests.
pub struct Captured {
    pub references: u64,
    pub summary: StreamSummary,
    pub outcome: GuestOutcome,
    pub console: String,
    pub seconds: f64,
    pub kernel: Kernel,
    pub argv: Vec<String>,
}

/// Boots the kernel once without tracing to read its symbol table from /proc/kallsyms over the
/// second serial port, and caches it: Debian's packages ship a placeholder System.map, and the
/// running kernel's own table is the one that matches its addresses.
fn read_symbols(qemu_bin: &Path, kernel: &Kernel, cache: &Path) -> Result<()> {
    eprintln!(
        "osmeter: reading the symbol table of {} (once per kernel)",
        kernel.label
    );
    let scratch = crate::scratch::ScratchDir::create(&std::env::temp_dir(), "guest")?;
    let mut fs = base_initramfs()?;
    let script = format!("{INIT_PREAMBLE}cat /proc/kallsyms > /dev/ttyS1\npoweroff -f\n");
    fs.bytes(Path::new("/init"), 0o755, script.into_bytes())?;
    let initrd = scratch.path().join("initrd.cpio");
    fs.write(std::io::BufWriter::new(crate::scratch::create_new(
        &initrd,
    )?))?;
    let console = scratch.path().join("console.txt");
    let dump = scratch.path().join("kallsyms.txt");
    let cfg = GuestConfig {
        qemu: qemu_bin,
        kernel: &kernel.image,
        initrd: &initrd,
        memory_mib: 256,
        plugin: None,
        mode: super::qemu::PluginMode::Trace,
        append: "",
        cpu: None,
        console: &console,
        symbols: &dump,
    };
    let mut command = cfg.command();
    crate::interrupt::die_with_parent(&mut command);
    let child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| crate::system::processes::cannot_start(&qemu_bin.display().to_string(), &e))?;
    let watchdog = Watchdog::start(child.id(), Duration::from_secs(300))?;
    let out = child.wait_with_output()?;
    let timed_out = watchdog.stop();
    let text = qemu::clean_symbols(&std::fs::read(&dump).unwrap_or_default()).map_err(|e| {
        let console = qemu::read_console(&console).unwrap_or_default();
        anyhow::anyhow!(
            "{e}{}; QEMU: {}; last console lines:\n{}",
            if timed_out {
                " (the boot timed out)"
            } else {
                ""
            },
            String::from_utf8_lossy(&out.stderr).trim(),
            qemu::console_tail(&console, 12)
        )
    })?;
    if let Some(dir) = cache.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Written whole, so a cut-short dump never becomes the cached table.
    crate::files::write_atomic(cache, text.as_bytes())
}

/// The kernel's symbol table as it runs (/proc/kallsyms of a guest booting it), from osmeter's
/// cache, read with one boot the first time.
pub fn cached_symbols(qemu_bin: &Path, kernel: &Kernel) -> Result<PathBuf> {
    let _lock = kernel::lock_cache()?;
    let symbols = symbols_cache(kernel);
    // A table cached by an osmeter that did not check it yet may be damaged: read it anew then.
    let usable = std::fs::read_to_string(&symbols)
        .is_ok_and(|t| crate::kernel_parts::SymbolTable::parse(&t).is_ok());
    if !usable {
        read_symbols(qemu_bin, kernel, &symbols)?;
    }
    Ok(symbols)
}

pub fn run(opts: &SystemCapture) -> Result<i32> {
    ensure_packages(opts.install)?;
    let qemu_bin = qemu::find_qemu()?;
    let lock = kernel::lock_cache()?;
    let kernel = match &opts.kernel {
        Some(p) => kernel::from_path(p, kernel::TRACE_KERNEL)?,
        None => kernel::from_package(&opts.kernel_package)?,
    };
    // Held while a given System.map is checked; `cached_symbols` takes the lock itself.
    let symbols = match &opts.system_map {
        Some(map) => {
            let raw = std::fs::read(map)
                .with_context(|| format!("cannot read --system-map {}", map.display()))?;
            qemu::clean_symbols(&raw).with_context(|| format!("--system-map {}", map.display()))?;
            map.clone()
        }
        None => {
            drop(lock);
            cached_symbols(&qemu_bin, &kernel)?
        }
    };
    let (fs, argv) = build_initramfs(opts)?;

    let scratch = crate::scratch::ScratchDir::create(&std::env::temp_dir(), "guest")?;
    let initrd = scratch.path().join("initrd.cpio");
    let plugin = scratch.path().join("osmeter-trace.so");
    let console = scratch.path().join("console.txt");
    fs.write(std::io::BufWriter::new(crate::scratch::create_new(
        &initrd,
    )?))?;
    std::io::Write::write_all(&mut crate::scratch::create_new(&plugin)?, PLUGIN)?;

    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot create the trace pipe");
    }
    let (rfd, wfd) = (fds[0], fds[1]);
    // A larger pipe means fewer switches between QEMU and the reader; the default may be refused
    // above /proc/sys/fs/pipe-max-size, which only costs speed.
    // SAFETY: fcntl on a descriptor we own.
    unsafe { libc::fcntl(rfd, libc::F_SETPIPE_SZ, 1 << 20) };
    // SAFETY: rfd is a fresh descriptor we own.
    let reader = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(rfd) };
    let cfg = GuestConfig {
        qemu: &qemu_bin,
        kernel: &kernel.image,
        initrd: &initrd,
        memory_mib: opts.memory_mib,
        plugin: Some((&plugin, 3)),
        mode: super::qemu::PluginMode::Trace,
        append: "",
        cpu: None,
        console: &console,
        symbols: Path::new("/dev/null"),
    };
    let mut cmd = cfg.command();
    let qemu_errors = scratch.path().join("qemu-stderr.txt");
    super::qemu::wire_plugin_pipe(&mut cmd, wfd, &qemu_errors)?;
    crate::interrupt::install();
    eprintln!(
        "osmeter: booting {} under QEMU (TCG) to trace: {}",
        kernel.label,
        argv.join(" ")
    );
    let start = std::time::Instant::now();
    let spawned = cmd.spawn();
    // SAFETY: the parent's copy of the write end is ours to close; QEMU has its own.
    unsafe { libc::close(wfd) };
    let mut child = spawned
        .map_err(|e| crate::system::processes::cannot_start(&qemu_bin.display().to_string(), &e))?;
    let watchdog = Watchdog::start(child.id(), opts.timeout)?;
    let mut source = PluginStream::new(std::io::BufReader::with_capacity(1 << 20, reader));
    let captured = crate::progress::Counter::default();
    let progress = crate::capture::progress(
        captured.clone(),
        "booting the guest and waiting for the command",
    );
    let written = crate::memsim::trace::file::write_trace_at_level(
        &mut source,
        &opts.output,
        opts.zstd,
        0,
        1,
        Some(&captured),
    );
    drop(progress);
    let summary = source.summary.clone();
    // Closing the read end lets a QEMU still writing (after a failed write above) fail fast
    // instead of blocking on a full pipe until the watchdog fires.
    drop(source);
    let status = child.wait().context("waiting for QEMU")?;
    let timed_out = watchdog.stop();
    let seconds = start.elapsed().as_secs_f64();
    let console_text = qemu::read_console(&console).unwrap_or_default();
    let references = written?;
    let captured = Captured {
        references,
        summary,
        outcome: qemu::outcome(&console_text),
        console: console_text,
        seconds,
        kernel,
        argv,
    };

    if captured.summary.started {
        let sidecar = super::symbols_sidecar(&opts.output);
        std::fs::copy(&symbols, &sidecar)
            .with_context(|| format!("cannot write the kernel symbols to {}", sidecar.display()))?;
    } else {
        // Nothing was traced: leave no empty trace behind.
        let _ = std::fs::remove_file(&opts.output);
    }
    finish(opts, &captured, status, timed_out, &qemu_errors)
}

fn finish(
    opts: &SystemCapture,
    c: &Captured,
    status: std::process::ExitStatus,
    timed_out: bool,
    qemu_errors: &Path,
) -> Result<i32> {
    let tail = qemu::console_tail(&c.console, 12);
    if crate::interrupt::requested() {
        if c.summary.started {
            eprintln!(
                "osmeter: interrupted; {} references kept in {}, marked incomplete",
                c.references,
                opts.output.display()
            );
        }
        return Err(crate::interrupt::Interrupted.into());
    }
    if !c.summary.started {
        let errors = std::fs::read_to_string(qemu_errors).unwrap_or_default();
        if let GuestOutcome::CannotRun(why) = &c.outcome {
            return Err(usage!(
                "inside the guest: cannot run {why} (the guest holds only the command, the \
                 libraries ldd lists and busybox: add a missing interpreter or file with --include)"
            ));
        }
        if timed_out {
            bail!(
                "the guest did not reach the command within {:?}; last console lines:\n{tail}",
                opts.timeout
            );
        }
        bail!(
            "the guest stopped before the command started ({status}){}{}\nlast console lines:\n{tail}",
            if errors.trim().is_empty() { "" } else { "; QEMU said: " },
            errors.trim()
        );
    }
    if let GuestOutcome::CannotRun(why) = &c.outcome {
        let _ = std::fs::remove_file(&opts.output);
        let _ = std::fs::remove_file(super::symbols_sidecar(&opts.output));
        return Err(usage!(
            "inside the guest: cannot run {why} (the guest holds only the command, the \
             libraries ldd lists and busybox: add a missing interpreter or file with --include); no trace written"
        ));
    }
    print_summary(opts, c);
    match &c.outcome {
        GuestOutcome::Exited(0) if c.summary.complete() => Ok(crate::error::EXIT_OK),
        GuestOutcome::Exited(code) if c.summary.complete() => {
            eprintln!("osmeter: the command exited with status {code} inside the guest; its trace is kept");
            Ok(crate::error::EXIT_COMMAND_FAILED)
        }
        GuestOutcome::Killed(sig) => {
            eprintln!("osmeter: the command was killed by signal {sig} inside the guest; its trace is kept");
            Ok(crate::error::EXIT_COMMAND_FAILED)
        }
        _ if timed_out => bail!(
            "the guest did not finish within {:?}; the trace so far is kept in {}, marked incomplete; last console lines:\n{tail}",
            opts.timeout,
            opts.output.display()
        ),
        _ => bail!(
            "the guest stopped before the command finished (a kernel panic or a lost stream); the trace so far is kept in {}, marked incomplete; last console lines:\n{tail}",
            opts.output.display()
        ),
    }
}

fn print_summary(opts: &SystemCapture, c: &Captured) {
    let output = guest_output(&c.console);
    match (output.is_empty(), opts.guest_output_on_stderr) {
        (true, _) => {}
        (false, true) => eprintln!("{output}"),
        (false, false) => {
            let _ = crate::console::print_bytes(format!("{output}\n").as_bytes());
        }
    }
    let s = &c.summary;
    let rate = c.references as f64 / s.window_seconds.max(1e-9) / 1e6;
    eprintln!(
        "osmeter: traced {} references (user and kernel, physical addresses) in a {:.2} s window ({rate:.1} M refs/s; {:.1} s with boot) to {}; kernel symbols in {}",
        c.references,
        s.window_seconds,
        c.seconds,
        opts.output.display(),
        super::symbols_sidecar(&opts.output).display()
    );
    if s.without_physical > 0 {
        eprintln!(
            "osmeter: {} references had no physical address (outside guest RAM) and carry their virtual one",
            s.without_physical
        );
    }
}

/// The command's own output, which the guest prints between two marker lines after the window.
fn guest_output(console: &str) -> String {
    let mut inside = false;
    let mut out = Vec::new();
    for line in console.lines().map(|l| l.trim_end_matches('\r')) {
        if line.contains("osmeter-guest: output follows") {
            inside = true;
        } else if line.contains("osmeter-guest: output ends") {
            inside = false;
        } else if inside {
            out.push(line);
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_reach_the_guest_shell_unchanged() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        let script = init_script(&["/bin/echo".into(), "x y".into()]);
        assert!(script.contains("/bin/osmeter-guest run '/bin/echo' 'x y'\n"));
        assert!(!script.contains("kallsyms"));
    }

    #[test]
    fn the_commands_output_is_cut_from_the_console() {
        let console = "boot\r\nosmeter-guest: exit 0\r\nosmeter-guest: output follows\r\nhello\r\nworld\r\nosmeter-guest: output ends\r\n[1.0] reboot\r\n";
        assert_eq!(guest_output(console), "hello\nworld");
        assert_eq!(guest_output("nothing"), "");
    }
}
