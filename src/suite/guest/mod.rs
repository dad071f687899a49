//! `osmeter run --guest KERNEL`: the selected probes run inside a QEMU guest (TCG, icount) that
//! boots the given kernel, and osmeter's QEMU plugin counts every instruction, load and store,
//! user and kernel apart, between markers the in-guest harness sets around each probe's loop.
//! The guest is deterministic, so the counts are exact: two kernels, or one kernel with two sets
//! of parameters, compare without statistics.
//!
//! Pieces: `inside` runs in the guest, `image` builds its file system, `counts` turns the guest's
//! report and the plugin's totals into a document; this module picks the probes and boots each
//! kernel in turn.

pub mod bisect;
pub mod counts;
pub mod image;
pub mod inside;
pub mod keep;
pub mod parallel;
pub mod plan;
pub mod seccomp;
pub mod sim;
pub mod sweep;
pub mod timeline_html;

pub use keep::count_and_keep;

use crate::capture::system::{capture, count, kernel, qemu};
use crate::probes::{self, ProbeDef};
use crate::results::guest::{GuestDoc, GuestProbe};
use crate::results::model::{Params, Status};
use crate::usage;
use anyhow::Result;
use plan::Planned;
use std::path::Path;
use std::time::Duration;

pub struct GuestRequest {
    /// Kernel image paths or Debian kernel package names, each booted in turn.
    pub kernels: Vec<String>,
    /// Sets of kernel parameters; every kernel boots once per set (none: once, with none).
    pub appends: Vec<String>,
    pub probes: GuestProbes,
    pub iterations: u64,
    /// QEMU's CPU model for every guest, when not QEMU's default.
    pub cpu: Option<String>,
    pub timeout: Duration,
    pub memory_mib: u32,
    /// memsim machines to simulate every reference on (`--preset`); none: only count.
    pub presets: Vec<crate::memsim::machine::MachineConfig>,
    /// The bound on the kernel cache (`--cache-max`), in bytes.
    pub cache_max: u64,
}

/// What one boot gave: a document, with the time the boot started, or a kernel that gave none.
pub enum Boot {
    Counted(Box<GuestDoc>, String),
    NotCounted(NotCounted),
}

/// A kernel of a sweep that gave no counts: not fetched, not booted, panicked or timed out. One
/// line in the results, never the end of the sweep.
pub struct NotCounted {
    pub label: String,
    pub error: anyhow::Error,
}

impl NotCounted {
    /// The line for the results: the first line of the reason.
    pub fn line(&self) -> String {
        let why = format!("{:#}", self.error);
        format!("{}: {}", self.label, why.lines().next().unwrap_or(""))
    }
}

/// What to count in the guest.
pub enum GuestProbes {
    /// Probe ids, groups or suites (as `run` takes them), each probe at its quick-scale points.
    Targets(Vec<String>),
    /// Named points, as a paper's figures are.
    Points(Vec<Planned>),
}

/// Guest memory: room for osmeter, its scratch files and the probes' buffers.
pub const MEMORY_MIB: u32 = 512;
pub const DEFAULT_TIMEOUT: &str = "5min";
pub const DEFAULT_ITERATIONS: u64 = 1000;

/// Why a probe cannot be counted in the guest, or None when it can.
pub fn not_in_guest(def: &ProbeDef) -> Option<&'static str> {
    if def.group() == "app" {
        return Some(
            "an application workload: its programs and data live on the host, not in the guest",
        );
    }
    if def.role() == crate::results::figure::Role::Hardware {
        return Some(
            "a hardware figure: QEMU's TCG models no caches or memory timing, so counts in the \
             guest say nothing about it",
        );
    }
    None
}

fn skipped(probe: &str, params: Params, why: &str) -> GuestProbe {
    GuestProbe {
        probe: probe.to_string(),
        params,
        status: Status::Skipped,
        reason: Some(why.to_string()),
        iterations: 0,
        per_op: None,
        simulated: Vec::new(),
        kernel_parts: None,
    }
}

/// The probes to run in the guest, and those skipped with the reason.
fn choose(wanted: &GuestProbes) -> Result<(Vec<Planned>, Vec<GuestProbe>)> {
    let mut run = Vec::new();
    let mut skips = Vec::new();
    match wanted {
        GuestProbes::Targets(targets) => {
            for s in probes::selection::select(targets)?.0 {
                match not_in_guest(s.probe) {
                    None => run.push(Planned::probe(s.probe.id)),
                    Some(why) => skips.push(skipped(s.probe.id, Params::new(), why)),
                }
            }
        }
        GuestProbes::Points(points) => {
            for p in points {
                let def = probes::find(&p.probe)
                    .ok_or_else(|| anyhow::anyhow!("no probe {} in this osmeter", p.probe))?;
                match not_in_guest(def) {
                    None => run.push(p.clone()),
                    Some(why) => {
                        skips.push(skipped(&p.probe, p.params.clone().unwrap_or_default(), why))
                    }
                }
            }
        }
    }
    Ok((run, skips))
}

/// A kernel image path given to `--guest`, checked before anything else happens.
fn check_path(spec: &str) -> Result<kernel::Kernel> {
    kernel::from_path(
        Path::new(spec),
        "--guest takes a bzImage/vmlinuz file such as /boot/vmlinuz-*, the name of a Debian \
         kernel package (linux-image-*), or a pattern of them",
    )
    .map_err(|e| usage!("--guest {spec}: {e:#}"))
}

fn guest_label(k: &kernel::Kernel, append: &str) -> String {
    guest_label_of(&k.label, append)
}

/// The end of the console, with the kernel's panic line first where it panicked (the lines
/// after it, a call trace, would push it out of the tail).
fn console_lines(console: &str) -> String {
    let tail = qemu::console_tail(console, 12);
    if tail.is_empty() {
        return "  (nothing: the kernel printed nothing before it stopped)".into();
    }
    match console.lines().rev().find(|l| l.contains("Kernel panic")) {
        Some(p) if !tail.contains(p.trim_end_matches('\r')) => {
            format!("  | {}\n  | ...\n{tail}", p.trim_end_matches('\r'))
        }
        _ => tail,
    }
}

/// Why a guest gave no document, with the end of its console.
fn failure(
    stop: counts::Stop,
    c: &count::Counted,
    label: &str,
    timeout: Duration,
) -> anyhow::Error {
    // Counts cut short by a stop do not fit the report; the stop is what to tell.
    let stop = match stop {
        counts::Stop::Mismatch(_) if c.timed_out || !c.status.success() => {
            counts::Stop::CutShort(None)
        }
        other => other,
    };
    let tail = console_lines(&c.console);
    let how = if c.timed_out {
        format!("did not finish within {timeout:?} (a hung boot, or probes too slow under TCG: raise --guest-timeout or lower --guest-iterations)")
    } else {
        format!(
            "stopped ({}; a kernel panic, or a kernel that cannot boot here){}",
            c.status,
            match c.qemu_errors.trim() {
                "" => String::new(),
                e => format!("; QEMU said: {e}"),
            }
        )
    };
    match stop {
        counts::Stop::NotStarted => anyhow::anyhow!(
            "the guest booting {label} {how} before osmeter ran in it; last console lines:\n{tail}"
        ),
        counts::Stop::CutShort(last) => anyhow::anyhow!(
            "the guest booting {label} {how} after {}; last console lines:\n{tail}",
            last.map_or("starting osmeter".to_string(), |l| format!("counting {l}"))
        ),
        counts::Stop::Mismatch(m) => anyhow::anyhow!(
            "the guest booting {label} gave counts that do not fit its report ({m}); this is a \
             bug in osmeter: please report it with the kernel's name"
        ),
    }
}

/// What every boot of one command shares.
struct Prepared<'a> {
    req: &'a GuestRequest,
    qemu: std::path::PathBuf,
    qemu_version: String,
    initrd: std::path::PathBuf,
    scratch: &'a Path,
    skipped: Vec<GuestProbe>,
    /// Boots in the whole request, boots done, and when the first started: the time left.
    boots: usize,
    done: std::sync::atomic::AtomicUsize,
    started: std::time::Instant,
}

/// Boots one kernel with one parameter set and turns what it counted into a document; the
/// inner error is a kernel that did not boot or finish (the sweep goes on), the outer one what
/// stops the sweep (an interrupt, QEMU that cannot start).
fn count_one(
    p: &Prepared,
    k: &kernel::Kernel,
    append: &str,
) -> Result<std::result::Result<GuestDoc, anyhow::Error>> {
    let label = guest_label(k, append);
    let boot_dir = p
        .scratch
        .join(format!("boot-{}", crate::clock::new_run_id()));
    std::fs::create_dir(&boot_dir)?;
    let what = if p.req.presets.is_empty() {
        "to count the probes"
    } else {
        "to count the probes and simulate their references"
    };
    eprintln!("osmeter: booting {label} under QEMU (TCG, icount) {what}");
    let start = std::time::Instant::now();
    let mut sim = (!p.req.presets.is_empty()).then(|| {
        let symbols = capture::cached_symbols(&p.qemu, k).and_then(|path| {
            let table = crate::kernel_parts::SymbolTable::load(&path)?;
            Ok((table, path.display().to_string()))
        });
        let (table, from) = match symbols {
            Ok((t, from)) => (Some(t), from),
            Err(e) => {
                let why = format!("no kernel symbols: {e:#}");
                eprintln!("osmeter: {label}: {why}; kernel references are not attributed");
                (None, why)
            }
        };
        (sim::Simulation::new(&p.req.presets, table), from)
    });
    let counted = count::boot(
        &count::CountBoot {
            qemu: &p.qemu,
            kernel: k,
            initrd: &p.initrd,
            memory_mib: p.req.memory_mib,
            append,
            cpu: p.req.cpu.as_deref(),
            timeout: p.req.timeout,
            scratch: &boot_dir,
        },
        sim.as_mut()
            .map(|(s, _)| s as &mut dyn crate::capture::system::windows::WindowSink),
    )?;
    if crate::interrupt::requested() {
        return Err(crate::interrupt::Interrupted.into());
    }
    let meta = counts::Meta {
        kernel: k.label.clone(),
        kernel_key: k.key.clone(),
        append: append.to_string(),
        cmdline: counted.cmdline.clone(),
        qemu: p.qemu_version.clone(),
        iterations: p.req.iterations,
        cpu: p.req.cpu.clone(),
        symbols: sim.as_ref().map(|(_, from)| from.clone()),
    };
    let doc = counts::document(
        &counted.report,
        &counted.marks,
        meta,
        sim.as_ref().map(|(s, _)| s),
    );
    let _ = std::fs::remove_dir_all(&boot_dir);
    let done = p.done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    let left = crate::capture::system::kernel_cache::eta(
        p.started.elapsed().as_secs_f64(),
        done as u64,
        p.boots as u64,
    );
    let mut doc = match doc {
        Ok(doc) => doc,
        Err(stop) => {
            let e = failure(stop, &counted, &label, p.req.timeout);
            // One boot's failure is the command's error, printed once at its end.
            if p.boots > 1 {
                eprintln!(
                    "osmeter: {e:#}\nosmeter: {done} of {} boots done{left}",
                    p.boots
                );
            }
            return Ok(Err(e));
        }
    };
    doc.probes.extend(p.skipped.iter().cloned());
    eprintln!(
        "osmeter: {label}: counted in {:.1} s, boot included (TCG time: not kept); {done} of {} \
         boots done{left}",
        start.elapsed().as_secs_f64(),
        p.boots
    );
    Ok(Ok(doc))
}

/// Boots each kernel with each parameter set, as many at once as the host has CPUs, and hands
/// what every boot gave (a document with the time its boot started, or a kernel that gave none)
/// to `each` in that order as soon as it and those before it are complete (so that what was
/// counted is kept if a later kernel fails).
pub fn run(req: &GuestRequest, each: &mut dyn FnMut(Boot) -> Result<()>) -> Result<()> {
    // First, so that Ctrl-C at any point stops in order and the scratch directory goes.
    crate::interrupt::install();
    // A kernel given as a path that is no kernel is the user's mistake to hear of first, before
    // the packages QEMU needs.
    for spec in req.kernels.iter().filter(|k| sweep::is_path(k)) {
        check_path(spec)?;
    }
    let sources = sweep::expand(&req.kernels)?;
    capture::ensure_packages(false)?;
    let qemu = qemu::find_qemu()?;
    let (planned, skipped) = choose(&req.probes)?;
    let appends = appends(req)?;
    let kernels = sweep::fetch(&sources, req.cache_max)?;
    let scratch = crate::scratch::ScratchDir::create(&std::env::temp_dir(), "guest")?;
    if crate::interrupt::requested() {
        return Err(crate::interrupt::Interrupted.into());
    }
    let plan = plan::Plan {
        iterations: req.iterations,
        probes: planned,
    };
    let (initrd, size) = image::build(scratch.path(), &plan)?;
    eprintln!(
        "osmeter: guest file system {:.1} MiB (zstd), {} probe(s) to count, {} skipped",
        size as f64 / (1 << 20) as f64,
        plan.probes.len(),
        skipped.len()
    );
    type Job<'k> = (&'k Result<kernel::Kernel, String>, &'k str, &'k str);
    let boots: Vec<Job> = kernels
        .iter()
        .zip(&sources)
        .flat_map(|(k, s)| appends.iter().map(move |a| (k, s.label(), a.as_str())))
        .collect();
    let prepared = Prepared {
        req,
        qemu_version: count::qemu_version(&qemu),
        qemu,
        initrd,
        scratch: scratch.path(),
        skipped,
        boots: boots.iter().filter(|(k, _, _)| k.is_ok()).count(),
        done: Default::default(),
        started: std::time::Instant::now(),
    };
    let width = std::thread::available_parallelism().map_or(1, |n| n.get());
    parallel::in_order(
        &boots,
        width,
        &|(k, label, append): &Job| {
            let k = match k {
                Ok(k) => k,
                Err(why) => {
                    return Ok(Boot::NotCounted(NotCounted {
                        label: guest_label_of(label, append),
                        error: anyhow::anyhow!("not fetched: {why}"),
                    }))
                }
            };
            let started_at = crate::clock::now_rfc3339();
            Ok(match count_one(&prepared, k, append)? {
                Ok(doc) => Boot::Counted(Box::new(doc), started_at),
                Err(error) => Boot::NotCounted(NotCounted {
                    label: guest_label(k, append),
                    error,
                }),
            })
        },
        each,
    )
}

fn guest_label_of(label: &str, append: &str) -> String {
    if append.is_empty() {
        label.to_string()
    } else {
        format!("{label} [{append}]")
    }
}

/// The parameter sets of a request (one empty set when none is given), each checked.
fn appends(req: &GuestRequest) -> Result<Vec<String>> {
    let appends = if req.appends.is_empty() {
        vec![String::new()]
    } else {
        req.appends.iter().map(|a| a.trim().to_string()).collect()
    };
    for a in &appends {
        seccomp::rules_in(a).map_err(|e| usage!("--append {a:?}: {e}"))?;
    }
    Ok(appends)
}

/// `--dry-run`: the kernels a request would boot, in order, with their downloads and what the
/// cache holds; nothing is fetched or booted.
pub fn dry_run(req: &GuestRequest) -> Result<String> {
    for spec in req.kernels.iter().filter(|k| sweep::is_path(k)) {
        check_path(spec)?;
    }
    let sources = sweep::expand(&req.kernels)?;
    choose(&req.probes)?;
    let appends = appends(req)?;
    let mut described = Vec::new();
    for s in sources {
        // A plain package name was resolved without its version and size: the archive has them.
        described.push(match s {
            sweep::Source::Package {
                name,
                version: None,
                ..
            } => {
                let c = crate::capture::system::archive::describe(&name)?;
                sweep::Source::Package {
                    name,
                    version: c.as_ref().map(|c| c.version.clone()),
                    size: c.map_or(0, |c| c.size),
                }
            }
            other => other,
        });
    }
    Ok(sweep::dry_run(&described, appends.len(), req.cache_max))
}

/// The machines of `--preset` values, sweeps expanded, each once.
pub fn presets(
    names: &[crate::memsim::config::PresetName],
) -> Result<Vec<crate::memsim::machine::MachineConfig>> {
    let mut out: Vec<crate::memsim::machine::MachineConfig> = Vec::new();
    for name in names.iter().flat_map(|n| n.presets()) {
        if out.iter().any(|c| c.name == name) {
            continue;
        }
        let mut cfg = crate::memsim::config::preset(name)
            .ok_or_else(|| usage!("--preset {name}: memsim has no such machine"))?;
        // Misses per operation need no 3C classes, and their shadow caches cost time.
        cfg.three_c = false;
        out.push(cfg);
    }
    Ok(out)
}

/// Refuses an iteration count the windows cannot use.
pub fn check_iterations(n: u64) -> Result<u64> {
    if n == 0 || n > 1_000_000 {
        return Err(usage!(
            "--guest-iterations {n}: give 1 to 1000000 operations per counted window"
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applications_and_hardware_figures_are_skipped_with_the_reason() {
        let (run, skipped) = choose(&GuestProbes::Targets(vec![
            "syscall.null".into(),
            "memory.latency".into(),
            "app".into(),
        ]))
        .unwrap();
        assert_eq!(run, vec![Planned::probe("syscall.null")]);
        assert!(skipped
            .iter()
            .any(|p| p.probe == "memory.latency" && p.reason.as_ref().unwrap().contains("TCG")));
        assert!(skipped
            .iter()
            .filter(|p| p.probe.starts_with("app."))
            .all(|p| p.status == Status::Skipped && p.reason.as_ref().unwrap().contains("host")));
        assert!(choose(&GuestProbes::Targets(vec!["no.such".into()])).is_err());
        let point = Planned {
            probe: "app.wish".into(),
            params: Some(Params::from([("panels".into(), serde_json::json!(100))])),
        };
        let (run, skipped) = choose(&GuestProbes::Points(vec![point])).unwrap();
        assert!(run.is_empty());
        assert_eq!(skipped[0].params["panels"], 100);
    }

    #[test]
    fn the_panic_line_leads_the_console_tail() {
        let mut console =
            String::from("boot\r\n[ 2.0] Kernel panic - not syncing: VFS: no root\r\n");
        for i in 0..20 {
            console.push_str(&format!("[ 2.1] trace line {i}\r\n"));
        }
        let lines = console_lines(&console);
        assert!(
            lines.starts_with("  | [ 2.0] Kernel panic - not syncing"),
            "{lines}"
        );
        assert!(lines.ends_with("trace line 19"), "{lines}");
        assert!(console_lines("").contains("printed nothing"));
        assert_eq!(console_lines("a\nb\n"), "  | a\n  | b");
    }

    #[test]
    fn a_bad_iteration_count_is_a_usage_error() {
        assert!(check_iterations(0).is_err());
        assert_eq!(check_iterations(10).unwrap(), 10);
    }
}
