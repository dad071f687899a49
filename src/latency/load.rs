//! Background loads at normal priority, running while the measuring threads measure: each
//! generator counts what it did, so the report says how hard the machine was pushed. Everything
//! stops and is cleaned up when the set is stopped or dropped (also after Ctrl-C). A load command
//! runs under a guardian process ([`crate::guard`]) that ends its whole process tree when the set
//! stops or osmeter dies, and it cannot take a real-time class.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::{Read, Seek, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Cpu,
    Memory,
    Io,
    Net,
    Fork,
    Faults,
    /// Application workloads (`app.web`, `app.andrew`, ...), run over and over.
    App(AppLoad),
}

/// An application workload used as load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppLoad {
    Web,
    Wish,
    Bitblt,
    Andrew,
    Ghostscript,
    Interp,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Cpu => "cpu",
            Kind::Memory => "memory",
            Kind::Io => "io",
            Kind::Net => "net",
            Kind::Fork => "fork",
            Kind::Faults => "faults",
            Kind::App(AppLoad::Web) => "app.web",
            Kind::App(AppLoad::Wish) => "app.wish",
            Kind::App(AppLoad::Bitblt) => "app.bitblt",
            Kind::App(AppLoad::Andrew) => "app.andrew",
            Kind::App(AppLoad::Ghostscript) => "app.ghostscript",
            Kind::App(AppLoad::Interp) => "app.interp",
        }
    }
    fn unit(self) -> &'static str {
        match self {
            Kind::Cpu => "loops/s",
            Kind::Memory => "B/s copied",
            Kind::Io => "fsync/s (64 KiB writes)",
            Kind::Net => "B/s over loopback TCP",
            Kind::Fork => "fork+exit+wait/s",
            Kind::Faults => "page faults/s",
            Kind::App(AppLoad::Web) => "requests/s (nginx on loopback)",
            Kind::App(AppLoad::Wish) => "Tk panels/s (wish under Xvfb)",
            Kind::App(AppLoad::Bitblt) => "24-bit frames/s (PutImage to Xvfb)",
            Kind::App(AppLoad::Andrew) => "Andrew runs/s (copy, stat, read, gcc -O2 of 4 files)",
            Kind::App(AppLoad::Ghostscript) => "2-page renderings/s (gs at 150 dpi)",
            Kind::App(AppLoad::Interp) => "python3 starts/s",
        }
    }
}

/// The interpreter `app.interp` starts as a load: the slowest of the three to start.
const INTERP_LOAD: &str = "python3";

/// How long an application load may take to start (a server, Xvfb) before the measurement begins.
const APP_START: std::time::Duration = std::time::Duration::from_secs(30);

/// Hard RLIMIT_RTTIME of a load command: were it ever to run at a real-time class, a loop that
/// never blocks would get SIGXCPU, then SIGKILL, within this much CPU time.
const COMMAND_RTTIME_US: u64 = 500_000;

/// How long a load command has to exit after SIGTERM before its tree is killed.
const COMMAND_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// A load named on the command line: one generator, or a mix of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    One(Kind),
    /// Interactive use: computation, memory traffic, fresh pages from allocations.
    Desktop,
    /// Services: network traffic, durable writes, short-lived processes.
    Server,
}

pub const NAMES: &str = "cpu, memory, io, net, fork, faults, desktop, server, app.web, app.wish, \
     app.bitblt, app.andrew, app.ghostscript, app.interp";

impl Load {
    /// One name of `--load` (a value parser: the message names the value's choices).
    pub fn parse(name: &str) -> Result<Load, String> {
        Ok(match name.trim() {
            "cpu" => Load::One(Kind::Cpu),
            "memory" => Load::One(Kind::Memory),
            "io" => Load::One(Kind::Io),
            "net" => Load::One(Kind::Net),
            "fork" => Load::One(Kind::Fork),
            "faults" => Load::One(Kind::Faults),
            "desktop" => Load::Desktop,
            "server" => Load::Server,
            "app.web" => Load::One(Kind::App(AppLoad::Web)),
            "app.wish" => Load::One(Kind::App(AppLoad::Wish)),
            "app.bitblt" => Load::One(Kind::App(AppLoad::Bitblt)),
            "app.andrew" => Load::One(Kind::App(AppLoad::Andrew)),
            "app.ghostscript" => Load::One(Kind::App(AppLoad::Ghostscript)),
            "app.interp" => Load::One(Kind::App(AppLoad::Interp)),
            _ => return Err(format!("no such load: use {NAMES}")),
        })
    }

    fn kinds(self) -> Vec<Kind> {
        match self {
            Load::One(kind) => vec![kind],
            Load::Desktop => vec![Kind::Cpu, Kind::Memory, Kind::Faults],
            Load::Server => vec![Kind::Net, Kind::Io, Kind::Fork, Kind::Cpu],
        }
    }
}

/// The generators of the named loads, each once.
pub fn kinds_of(loads: &[Load]) -> Vec<Kind> {
    let mut out = Vec::new();
    for kind in loads.iter().flat_map(|l| l.kinds()) {
        if !out.contains(&kind) {
            out.push(kind);
        }
    }
    out
}

/// What one generator did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadReport {
    pub load: String,
    pub threads: usize,
    pub ops: u64,
    pub rate: f64,
    pub unit: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

struct Generator {
    kind: Kind,
    threads: Vec<std::thread::JoinHandle<Result<(), String>>>,
    count: Arc<AtomicU64>,
}

pub struct LoadSet {
    stop: Arc<AtomicBool>,
    generators: Vec<Generator>,
    command: Option<(String, crate::guard::Guarded)>,
    scratch: Option<crate::scratch::ScratchDir>,
    started: Instant,
    reports: Vec<LoadReport>,
}

impl LoadSet {
    /// Starts the generators (and the command, in its own process group).
    pub fn start(
        kinds: &[Kind],
        command: Option<&str>,
        dir: &std::path::Path,
        cpus: usize,
    ) -> Result<LoadSet> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut set = LoadSet {
            stop: Arc::clone(&stop),
            generators: Vec::new(),
            command: None,
            scratch: None,
            started: Instant::now(),
            reports: Vec::new(),
        };
        for &kind in kinds {
            let count = Arc::new(AtomicU64::new(0));
            let copies = if kind == Kind::Cpu { cpus.max(1) } else { 1 };
            let mut threads = Vec::new();
            for _ in 0..copies {
                let (stop, count) = (Arc::clone(&stop), Arc::clone(&count));
                let body: Box<dyn FnOnce() -> Result<(), String> + Send> = match kind {
                    Kind::Cpu => Box::new(move || cpu(&stop, &count)),
                    // What a load needs is taken here, before it starts: a load that cannot
                    // have its memory or its partner thread fails the measurement at once
                    // rather than leaving it unloaded.
                    Kind::Memory => {
                        let buffers = MemoryBuffers::new()?;
                        Box::new(move || memory(buffers, &stop, &count))
                    }
                    Kind::Fork => Box::new(move || fork(&stop, &count)),
                    Kind::Faults => Box::new(move || faults(&stop, &count)),
                    Kind::Net => {
                        let reader = LoopbackReader::start()?;
                        Box::new(move || net(reader, &stop, &count))
                    }
                    Kind::App(app) => {
                        app_programs(app)?;
                        let dir = dir.to_path_buf();
                        Box::new(move || app_load(app, &dir, &stop, &count))
                    }
                    Kind::Io => {
                        if set.scratch.is_none() {
                            set.scratch = Some(crate::scratch::ScratchDir::create(dir, "load")?);
                        }
                        let path = set.scratch.as_ref().unwrap().path().join("fsync.dat");
                        Box::new(move || io(&stop, &count, &path))
                    }
                };
                threads.push(crate::system::limits::spawn(
                    &format!("load-{}", kind.name()),
                    move || {
                        normal_class();
                        body()
                    },
                )?);
            }
            set.generators.push(Generator {
                kind,
                threads,
                count,
            });
        }
        set.wait_for_apps()?;
        if let Some(cmd) = command {
            let guarded = crate::guard::Guarded::spawn(cmd, COMMAND_RTTIME_US, COMMAND_GRACE)
                .with_context(|| format!("cannot start --load-cmd {cmd:?}"))?;
            set.command = Some((cmd.to_string(), guarded));
        }
        Ok(set)
    }

    /// Waits until every application load has done its first unit of work (its server is up), so
    /// the measurement starts under load; an application that failed to start is an error.
    fn wait_for_apps(&mut self) -> Result<()> {
        let deadline = Instant::now() + APP_START;
        for g in &self.generators {
            if !matches!(g.kind, Kind::App(_)) {
                continue;
            }
            while g.count.load(Ordering::Relaxed) == 0 {
                if g.threads.iter().all(|t| t.is_finished()) || Instant::now() > deadline {
                    let name = g.kind.name();
                    let report = self
                        .stop()
                        .into_iter()
                        .find(|r| r.load == name)
                        .and_then(|r| r.error)
                        .unwrap_or_else(|| {
                            format!("nothing done within {} s", APP_START.as_secs())
                        });
                    anyhow::bail!("the load {name} did not start: {report}");
                }
                if crate::interrupt::requested() {
                    return Err(crate::interrupt::Interrupted.into());
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        Ok(())
    }

    /// Stops everything, waits for it, and says what each generator did.
    pub fn stop(&mut self) -> Vec<LoadReport> {
        self.stop.store(true, Ordering::Relaxed);
        let secs = self.started.elapsed().as_secs_f64().max(1e-9);
        for g in self.generators.drain(..) {
            let n = g.threads.len();
            let mut error = None;
            for t in g.threads {
                match t.join() {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => error = Some(e),
                    Err(_) => error = Some("the load thread panicked".into()),
                }
            }
            let ops = g.count.load(Ordering::Relaxed);
            self.reports.push(LoadReport {
                load: g.kind.name().to_string(),
                threads: n,
                ops,
                rate: ops as f64 / secs,
                unit: g.kind.unit().to_string(),
                error,
            });
        }
        if let Some((cmd, mut guarded)) = self.command.take() {
            // SIGTERM to the command's group, then its whole tree, wherever it went, is killed.
            let code = guarded.stop();
            self.reports.push(LoadReport {
                load: format!("command: {cmd}"),
                threads: 0,
                ops: 0,
                rate: 0.0,
                unit: String::new(),
                error: code
                    .filter(|&c| c != 0)
                    .map(|c| format!("exited with status {c} before the end")),
            });
        }
        self.scratch.take();
        std::mem::take(&mut self.reports)
    }
}

impl Drop for LoadSet {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Puts the calling thread at SCHED_OTHER: a load never runs at a real-time class, whatever the
/// thread that started it was running at.
fn normal_class() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: changes only the calling thread's policy.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
}

/// Fails at once, naming the package, when an application load's programs are missing.
fn app_programs(app: AppLoad) -> Result<()> {
    let interp = crate::apps::interp::need_of(INTERP_LOAD);
    let needs = match app {
        AppLoad::Web => crate::apps::web::NEEDS,
        AppLoad::Wish => crate::apps::x11::WISH_NEEDS,
        AppLoad::Bitblt => crate::apps::x11::BITBLT_NEEDS,
        AppLoad::Andrew => crate::apps::andrew::NEEDS,
        AppLoad::Ghostscript => crate::apps::ghostscript::NEEDS,
        AppLoad::Interp => interp.as_slice(),
    };
    crate::apps::packages::require(needs)
        .with_context(|| format!("cannot use the load {}", Kind::App(app).name()))
}

/// An application workload at its quick size with a fixed seed, repeated until `stop`; it cleans
/// up (server, Xvfb, scratch files) before returning.
fn app_load(
    app: AppLoad,
    dir: &std::path::Path,
    stop: &AtomicBool,
    count: &AtomicU64,
) -> Result<(), String> {
    use crate::apps::context::{Context, Scale};
    use crate::apps::{andrew::Andrew, ghostscript::Ghostscript, interp::Interp, repeat_until};
    use crate::params;
    let ctx = Context::new(dir, Scale::Quick, 1);
    let result = match app {
        AppLoad::Web => crate::apps::web::serve_until(&ctx, stop, count),
        AppLoad::Wish => crate::apps::x11::wish_until(&ctx, stop, count),
        AppLoad::Bitblt => crate::apps::x11::bitblt_until(&ctx, stop, count),
        // The probes' quick variants, in a scratch directory of their own that the next run
        // sweeps if this one is killed.
        AppLoad::Andrew | AppLoad::Ghostscript | AppLoad::Interp => {
            crate::scratch::ScratchDir::create(dir, "load").and_then(|scratch| {
                let env = crate::harness::env::ProbeEnv {
                    scratch: scratch.path(),
                    cpu: 0,
                    scale: crate::harness::env::Scale::Quick,
                    file_systems: Default::default(),
                };
                match app {
                    AppLoad::Andrew => {
                        let p = params![("phase", "total"), ("fs", "dir"), ("sources", 4)];
                        repeat_until(Andrew::new(&env, &p)?, stop, count)
                    }
                    AppLoad::Ghostscript => {
                        repeat_until(Ghostscript::new(&env, &params![("pages", 2)])?, stop, count)
                    }
                    _ => repeat_until(
                        Interp::new(&env, &params![("interp", INTERP_LOAD)])?,
                        stop,
                        count,
                    ),
                }
            })
        }
    };
    match result {
        // Ctrl-C ends a load the way the end of the run does.
        Err(e) if e.chain().any(|c| c.is::<crate::interrupt::Interrupted>()) => Ok(()),
        other => other.map_err(|e| format!("{e:#}")),
    }
}

fn cpu(stop: &AtomicBool, count: &AtomicU64) -> Result<(), String> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..10_000 {
            x = x.rotate_left(7).wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0x1234;
        }
        std::hint::black_box(x);
        count.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// What the memory load allocates: its two buffers.
pub const MEMORY_LOAD_BYTES: u64 = 2 * MemoryBuffers::SIZE as u64;

/// The memory load's two buffers, larger than the caches so that every copy goes to memory.
struct MemoryBuffers {
    src: Vec<u8>,
    dst: Vec<u8>,
}

impl MemoryBuffers {
    const SIZE: usize = 32 << 20;

    fn new() -> Result<MemoryBuffers> {
        let what = "the memory load's buffers";
        Ok(MemoryBuffers {
            src: crate::system::limits::filled(Self::SIZE, 1, what)?,
            dst: crate::system::limits::filled(Self::SIZE, 0, what)?,
        })
    }
}

fn memory(buffers: MemoryBuffers, stop: &AtomicBool, count: &AtomicU64) -> Result<(), String> {
    const SIZE: usize = MemoryBuffers::SIZE;
    let MemoryBuffers { src, mut dst } = buffers;
    const CHUNK: usize = 1 << 20;
    while !stop.load(Ordering::Relaxed) {
        for i in (0..SIZE).step_by(CHUNK) {
            dst[i..i + CHUNK].copy_from_slice(&src[i..i + CHUNK]);
            count.fetch_add(CHUNK as u64, Ordering::Relaxed);
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
        std::hint::black_box(&dst);
    }
    Ok(())
}

fn io(stop: &AtomicBool, count: &AtomicU64, path: &std::path::Path) -> Result<(), String> {
    let mut f = crate::scratch::create_new(path).map_err(|e| format!("{e:#}"))?;
    let block = vec![0x5au8; 64 << 10];
    let mut written = 0u64;
    while !stop.load(Ordering::Relaxed) {
        f.write_all(&block).map_err(|e| e.to_string())?;
        f.sync_data().map_err(|e| e.to_string())?;
        written += block.len() as u64;
        // Keep the file small: rewrite the same 4 MiB.
        if written >= 4 << 20 {
            f.rewind().map_err(|e| e.to_string())?;
            written = 0;
        }
        count.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// The receiving end of the net load: a thread reading whatever arrives on a loopback port.
struct LoopbackReader {
    addr: std::net::SocketAddr,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl LoopbackReader {
    fn start() -> Result<LoopbackReader> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .context("the net load cannot listen on the loopback interface")?;
        let addr = listener.local_addr()?;
        let thread = crate::system::limits::spawn("load-net-reader", move || {
            let (mut s, _) = listener.accept().map_err(|e| e.to_string())?;
            let mut buf = vec![0u8; 64 << 10];
            while s.read(&mut buf).map_err(|e| e.to_string())? > 0 {}
            Ok(())
        })?;
        Ok(LoopbackReader {
            addr,
            thread: Some(thread),
        })
    }

    /// Waits for the reader to end. One whose writer never connected waits in accept(): a
    /// connection closed at once gives it an end of file.
    fn finish(&mut self) -> Result<(), String> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        if !thread.is_finished() {
            let _ = std::net::TcpStream::connect(self.addr);
        }
        thread
            .join()
            .map_err(|_| "the loopback reader panicked".to_string())?
    }
}

impl Drop for LoopbackReader {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

fn net(mut reader: LoopbackReader, stop: &AtomicBool, count: &AtomicU64) -> Result<(), String> {
    let addr = reader.addr;
    let result = (|| {
        let mut s = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
        let buf = vec![0u8; 64 << 10];
        while !stop.load(Ordering::Relaxed) {
            s.write_all(&buf).map_err(|e| e.to_string())?;
            count.fetch_add(buf.len() as u64, Ordering::Relaxed);
        }
        Ok(())
        // Dropping the stream ends the reader with EOF.
    })();
    reader.finish()?;
    result
}

fn fork(stop: &AtomicBool, count: &AtomicU64) -> Result<(), String> {
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: the child calls only _exit, which is async-signal-safe after fork in a
        // multi-threaded process; the parent reaps it at once.
        unsafe {
            let pid = libc::fork();
            if pid == 0 {
                libc::_exit(0);
            }
            if pid < 0 {
                let e = std::io::Error::last_os_error();
                let why = crate::system::limits::cannot_start("a process of the fork load", &e);
                return Err(format!("{why:#}"));
            }
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        count.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

fn faults(stop: &AtomicBool, count: &AtomicU64) -> Result<(), String> {
    const SIZE: usize = 4 << 20;
    let page = 4096;
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: a private anonymous mapping we touch within bounds and unmap.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return Err(format!("mmap: {}", std::io::Error::last_os_error()));
            }
            let base = p.cast::<u8>();
            for off in (0..SIZE).step_by(page) {
                base.add(off).write_volatile(1);
            }
            libc::munmap(p, SIZE);
        }
        count.fetch_add((SIZE / page) as u64, Ordering::Relaxed);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
