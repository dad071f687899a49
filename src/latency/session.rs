//! One latency measurement from its settings to its document: which classes may run here, one
//! stream per CPU, class and path, cause and stage capture attached before the start, the loads,
//! the PM QoS request and the real-time CPU-time limit held for the run, Ctrl-C watched, a progress
//! line with the worst wake so far, and the verdict the exit code is made from.

use super::buffer::BufferConfig;
use super::document::{ClassDoc, LatencyDoc, SkippedClass, StreamDoc, LATENCY_SCHEMA};
use super::load;
use super::stacks;
use super::stage_capture::{StageCapture, StageTap, StageTaps, PHASE_NS};
use super::threads::{self, Class, Path, Plan, StreamResult, StreamSpec, WorstSoFar};
use super::trace::{StackMode, Tracer};
use crate::interrupt;
use crate::meter::placement;
use crate::meter::rt_limit::{OnLimit, RtTimeLimit};
use anyhow::{Context, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A real-time thread that runs this long without blocking gets SIGXCPU: the measuring threads
/// sleep every period, so only a bug can reach it.
pub const RTTIME_LIMIT_US: u64 = 500_000;

/// What to measure, every value already typed and in range.
#[derive(Debug, Clone)]
pub struct Settings {
    pub period_ns: u64,
    pub duration_ns: u64,
    /// Empty: the last usable CPU.
    pub cpus: Vec<usize>,
    pub classes: Vec<Class>,
    pub paths: Vec<Path>,
    pub buffers: Vec<BufferConfig>,
    pub fail_over_ns: Option<u64>,
    pub loads: Vec<load::Kind>,
    /// A command run as load through /bin/sh.
    pub load_command: Option<String>,
    /// Where the io load makes its scratch directory: `--dir`, else the temporary directory.
    pub dir: Option<std::path::PathBuf>,
    /// `--compute`: what the timer threads compute per period.
    pub compute_ns: Option<u64>,
    /// `--trace`: cause capture.
    pub causes: Option<CauseSettings>,
    /// `--stages`: stage capture of the timer streams.
    pub stages: bool,
    pub cpu_dma_latency_us: Option<u32>,
}

#[derive(Debug, Clone, Copy)]
pub struct CauseSettings {
    pub threshold_ns: u64,
    pub episodes: usize,
    pub stacks: StackMode,
}

fn first_once<T: PartialEq + Copy>(items: &[T]) -> Vec<T> {
    let mut out = Vec::new();
    for &item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

impl Settings {
    /// Checks the rules that tie two settings together (each value alone was checked when it
    /// was parsed), keeps every CPU, class and path once, and picks the default CPU.
    pub fn check(mut self) -> Result<Settings> {
        if self.duration_ns < self.period_ns {
            return Err(crate::usage!(
                "--duration {} is shorter than one period ({})",
                ns_text(self.duration_ns),
                ns_text(self.period_ns)
            ));
        }
        if let Some(c) = self.compute_ns {
            if c >= self.period_ns {
                return Err(crate::usage!(
                    "--compute {}: must be less than the period ({}), or the pipeline can \
                     never keep up",
                    ns_text(c),
                    ns_text(self.period_ns)
                ));
            }
        }
        self.paths = first_once(&self.paths);
        if (self.compute_ns.is_some() || self.stages) && !self.paths.contains(&Path::Timer) {
            return Err(crate::usage!(
                "--compute and --stages apply to the timer path: add timer to --paths"
            ));
        }
        self.classes = first_once(&self.classes);
        self.cpus = first_once(&self.cpus);
        if self.cpus.is_empty() {
            self.cpus = vec![*placement::usable_cpus().last().unwrap_or(&0)];
        }
        if self.loads.contains(&load::Kind::Io) {
            crate::scratch::check_scratch_parent(self.dir.as_deref())?;
        }
        Ok(self)
    }
}

fn ns_text(ns: u64) -> String {
    crate::units::format(ns as f64, crate::units::Unit::Nanoseconds)
}

/// A finished measurement: its document and what the exit code is made from.
pub struct Outcome {
    pub doc: LatencyDoc,
    pub started_at: String,
    /// The highest SCHED_FIFO priority that measured.
    pub fifo_priority: Option<i32>,
    /// A stream could not measure (its error is in the document).
    pub stream_failed: bool,
}

/// How a measurement ended, in the order the exit code looks at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Interrupted,
    /// A wake later than `--fail-over`.
    Over {
        worst_ns: u64,
        limit_ns: u64,
    },
    StreamFailed,
    Ok,
}

impl Outcome {
    pub fn verdict(&self) -> Verdict {
        verdict(
            self.doc.interrupted,
            self.doc.worst_ns,
            self.doc.fail_over_ns,
            self.stream_failed,
        )
    }
}

fn verdict(
    interrupted: bool,
    worst_ns: u64,
    fail_over_ns: Option<u64>,
    stream_failed: bool,
) -> Verdict {
    match fail_over_ns {
        _ if interrupted => Verdict::Interrupted,
        Some(limit_ns) if worst_ns > limit_ns => Verdict::Over { worst_ns, limit_ns },
        _ if stream_failed => Verdict::StreamFailed,
        _ => Verdict::Ok,
    }
}

/// Real-time classes this user may not use are skipped with the reason, not failed; none left is
/// a usage error naming every reason.
fn runnable_classes(classes: &[Class]) -> Result<(Vec<Class>, Vec<SkippedClass>)> {
    let mut skipped = Vec::new();
    let mut runnable = Vec::new();
    for &c in classes {
        match c.fifo.map(placement::check_fifo_priority) {
            Some(Err(e)) => skipped.push(SkippedClass {
                class: c.name,
                reason: format!("{e:#}"),
            }),
            _ => runnable.push(c),
        }
    }
    if runnable.is_empty() {
        let reasons: Vec<String> = skipped.iter().map(|s| s.reason.clone()).collect();
        return Err(crate::usage!(
            "no class can run here: {}",
            reasons.join("; ")
        ));
    }
    Ok((runnable, skipped))
}

/// Holds /dev/cpu_dma_latency at `us` for as long as the returned descriptor is open.
fn hold_cpu_dma_latency(us: u32) -> Result<std::fs::File> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")
        .context("--cpu-dma-latency: cannot open /dev/cpu_dma_latency (needs root)")?;
    f.write_all(&(us as i32).to_ne_bytes())
        .context("--cpu-dma-latency: cannot write /dev/cpu_dma_latency")?;
    Ok(f)
}

/// Measures with `settings` (already checked) until the end of the duration or Ctrl-C (which the
/// caller has installed the handler for).
pub fn measure(settings: &Settings) -> Result<Outcome> {
    let (classes, skipped) = runnable_classes(&settings.classes)?;
    let mut specs = Vec::new();
    for &cpu in &settings.cpus {
        for &class in &classes {
            for &path in &settings.paths {
                specs.push(StreamSpec { class, path, cpu });
            }
        }
    }
    check_address_space(&specs, settings)?;
    let periods = settings.duration_ns / settings.period_ns;
    let tracer = settings
        .causes
        .map(|c| Tracer::start(&settings.cpus, c.threshold_ns, c.episodes, c.stacks))
        .transpose()
        .context("--trace: cannot set up cause capture")?;
    // Stage capture attaches its events before the start time is set (attaching stalls CPUs).
    let taps: StageTaps = specs
        .iter()
        .map(|s| (settings.stages && s.path == Path::Timer).then(StageTap::new))
        .collect();
    let stage_capture = if settings.stages {
        let stream_cpus: Vec<usize> = specs.iter().map(|s| s.cpu).collect();
        let traced_ns = periods * settings.period_ns;
        Some(
            StageCapture::start(
                &settings.cpus,
                &taps,
                &stream_cpus,
                traced_ns,
                Some(PHASE_NS),
            )
            .context("--stages: cannot set up stage capture")?,
        )
    } else {
        None
    };
    let stop = Arc::new(AtomicBool::new(false));
    let plan = Plan {
        period_ns: settings.period_ns,
        periods,
        // Time for every thread to start, pin itself and change class before the first deadline.
        start_ns: threads::monotonic_ns() + 50_000_000,
        buffers: settings.buffers.clone(),
        stop: Arc::clone(&stop),
        trigger: tracer.as_ref().map(|t| Arc::clone(&t.trigger)),
        stages: settings.stages.then(|| Arc::new(taps)),
        compute_ns: settings.compute_ns,
        worst: Arc::default(),
    };
    let _dma_latency = settings
        .cpu_dma_latency_us
        .map(hold_cpu_dma_latency)
        .transpose()?;
    let rt_limit = RtTimeLimit::set(RTTIME_LIMIT_US, None, OnLimit::Terminate);
    let started_at = crate::clock::now_rfc3339();
    if crate::progress::style().is_some() {
        eprintln!(
            "osmeter: measuring {} streams for {:.1} s",
            specs.len(),
            settings.duration_ns as f64 / 1e9
        );
    }
    let watcher = watch(Arc::clone(&stop), tracer)?;
    let loads = if settings.loads.is_empty() && settings.load_command.is_none() {
        None
    } else {
        match load::LoadSet::start(
            &settings.loads,
            settings.load_command.as_deref(),
            &crate::scratch::parent(settings.dir.as_deref()),
            placement::usable_cpus().len(),
        ) {
            Ok(l) => Some(l),
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                drop(watcher.join());
                return Err(e);
            }
        }
    };
    let classes_measured: Vec<_> = classes.iter().map(|c| c.name).collect();
    let progress = progress(
        settings.duration_ns,
        Arc::clone(&plan.worst),
        classes_measured,
    );
    let results = threads::run_streams(&specs, &plan);
    drop(progress);
    let load_reports = loads.map(|mut l| l.stop()).unwrap_or_default();
    let interrupted = interrupt::requested();
    stop.store(true, Ordering::Relaxed);
    // Dropping the tracer removes the trace instance (and unmounts tracefs if osmeter mounted it).
    let episodes = watcher.join().ok().flatten().map(|t| t.episodes.clone());
    drop(rt_limit);
    // Only now, with every thread of the measurement ended and every setting put back.
    let results = results?;
    let stages = stage_capture.map(StageCapture::finish).transpose()?;
    let causes = episodes
        .as_ref()
        .filter(|_| settings.causes.is_some_and(|c| c.stacks != StackMode::Off))
        .map(|eps| stacks::aggregate(eps.iter().map(|e| e.samples.as_slice())));

    let mut streams: Vec<StreamDoc> = results.iter().map(StreamDoc::of).collect();
    let stage_info = stages.map(|report| {
        for (doc, s) in streams.iter_mut().zip(report.streams) {
            doc.stages = s;
        }
        report.info
    });
    let doc = LatencyDoc {
        schema: LATENCY_SCHEMA.to_string(),
        period_ns: settings.period_ns,
        duration_s: settings.duration_ns as f64 / 1e9,
        measured_s: measured_s(&results, settings.period_ns),
        cpus: settings.cpus.clone(),
        classes: settings
            .classes
            .iter()
            .map(|c| ClassDoc {
                name: c.name,
                fifo_priority: c.fifo,
            })
            .collect(),
        paths: settings.paths.clone(),
        skipped,
        rttime_limit_us: RTTIME_LIMIT_US,
        timer_slack_ns: 1,
        cpu_dma_latency_us: settings.cpu_dma_latency_us,
        fail_over_ns: settings.fail_over_ns,
        worst_ns: worst_ns(&results),
        interrupted,
        loads: load_reports,
        episodes,
        stacks: settings.causes.map(|c| c.stacks),
        causes,
        stage_capture: stage_info,
        streams,
    };
    Ok(Outcome {
        doc,
        started_at,
        fifo_priority: classes.iter().filter_map(|c| c.fifo).max(),
        stream_failed: results.iter().any(|r| r.error.is_some()),
    })
}

/// Address space a thread takes: its stack (Rust's default) and the guard page below it.
const THREAD_SPACE: u64 = (2 << 20) + (64 << 10);
/// Address space kept free beyond the threads and the loads' buffers, for what the measurement
/// allocates as it goes (its results, the document, the allocator's own growth).
const WORKING_SPACE: u64 = 16 << 20;

/// Refuses, before anything starts, a measurement whose threads and loads cannot all fit in what
/// the address-space limit (`ulimit -v`) leaves: past it, any allocation of any thread aborts the
/// process, a refused thread's error message included.
fn check_address_space(specs: &[StreamSpec], settings: &Settings) -> Result<()> {
    let Some(left) = crate::memory_room::address_space_left() else {
        return Ok(());
    };
    let signallers = specs.iter().filter(|s| s.path != Path::Timer).count();
    let mut threads = specs.len() + signallers + 1; // and the watch
    threads += usize::from(crate::progress::style().is_some()) + usize::from(settings.stages);
    let mut buffers = 0;
    for kind in &settings.loads {
        threads += match kind {
            load::Kind::Cpu => placement::usable_cpus().len(),
            load::Kind::Net => 2,
            _ => 1,
        };
        if *kind == load::Kind::Memory {
            buffers += load::MEMORY_LOAD_BYTES;
        }
    }
    let needed = threads as u64 * THREAD_SPACE + buffers + WORKING_SPACE;
    if needed > left.bytes {
        anyhow::bail!(
            "latency needs about {} of address space ({threads} threads{} and room to work), and \
             {}: raise the limit with `ulimit -v`, or measure fewer classes, paths or loads",
            crate::units::bytes(needed),
            if buffers > 0 {
                format!(", {} of load buffers", crate::units::bytes(buffers))
            } else {
                String::new()
            },
            left.what
        );
    }
    Ok(())
}

/// Watches for Ctrl-C and collects cause-capture episodes until `stop`; hands the tracer back.
fn watch(
    stop: Arc<AtomicBool>,
    mut tracer: Option<Tracer>,
) -> Result<std::thread::JoinHandle<Option<Tracer>>> {
    crate::system::limits::spawn("osm-watch", move || {
        while !stop.load(Ordering::Relaxed) {
            if interrupt::requested() {
                stop.store(true, Ordering::Relaxed);
            }
            if let Some(t) = tracer.as_mut() {
                t.poll();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if let Some(t) = tracer.as_mut() {
            t.poll();
        }
        tracer
    })
}

/// Seconds measured: the longest stream's periods (Ctrl-C may end them early).
fn measured_s(results: &[StreamResult], period_ns: u64) -> f64 {
    let periods = results.iter().map(|r| r.acct.periods()).max().unwrap_or(0);
    periods as f64 * period_ns as f64 / 1e9
}

/// The latest wake of every stream that measured, missed periods included.
fn worst_ns(results: &[StreamResult]) -> u64 {
    results
        .iter()
        .filter(|r| r.error.is_none())
        .map(|r| r.acct.corrected.max())
        .max()
        .unwrap_or(0)
}

/// "latency: 3.0 s of 10.0 s (30 %, about 7.0 s left), worst high 41.2 us, normal 1.20 ms".
fn progress(
    duration_ns: u64,
    worst: Arc<WorstSoFar>,
    classes: Vec<threads::ClassName>,
) -> crate::progress::Ticker {
    let total = std::time::Duration::from_nanos(duration_ns);
    crate::progress::Ticker::start(move |elapsed| {
        format!(
            "latency: {} of {} ({}), {}",
            crate::progress::duration(elapsed.min(total)),
            crate::progress::duration(total),
            crate::progress::fraction(
                elapsed.as_millis() as u64,
                total.as_millis().max(1) as u64,
                elapsed
            ),
            worst_line(&worst, &classes)
        )
    })
}

fn worst_line(worst: &WorstSoFar, classes: &[threads::ClassName]) -> String {
    let each: Vec<String> = classes
        .iter()
        .map(|&c| match worst.get(c) {
            Some(ns) => format!("{} {}", c.as_str(), ns_text(ns)),
            None => format!("{} -", c.as_str()),
        })
        .collect();
    format!("worst {}", each.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::threads::ClassName;

    fn settings() -> Settings {
        Settings {
            period_ns: 1_000_000,
            duration_ns: 1_000_000_000,
            cpus: Vec::new(),
            classes: vec![Class {
                name: ClassName::Normal,
                fifo: None,
            }],
            paths: vec![Path::Timer, Path::Futex, Path::Timer],
            buffers: Vec::new(),
            fail_over_ns: None,
            loads: Vec::new(),
            load_command: None,
            dir: None,
            compute_ns: None,
            causes: None,
            stages: false,
            cpu_dma_latency_us: None,
        }
    }

    fn usage_message(r: Result<Settings>) -> String {
        let e = r.unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        format!("{e:#}")
    }

    #[test]
    fn settings_that_contradict_each_other_are_usage_errors() {
        let s = settings().check().unwrap();
        assert_eq!(s.paths, vec![Path::Timer, Path::Futex]);
        assert_eq!(s.cpus, vec![*placement::usable_cpus().last().unwrap()]);
        let short = Settings {
            duration_ns: 500_000,
            ..settings()
        };
        assert!(usage_message(short.check()).contains("shorter than one period"));
        let slow = Settings {
            compute_ns: Some(1_000_000),
            ..settings()
        };
        assert!(usage_message(slow.check()).contains("less than the period"));
        let no_timer = Settings {
            paths: vec![Path::Pipe],
            stages: true,
            ..settings()
        };
        assert!(usage_message(no_timer.check()).contains("add timer to --paths"));
    }

    #[test]
    fn the_verdict_puts_ctrl_c_before_the_limit_before_failed_streams() {
        assert_eq!(verdict(true, 9, Some(1), true), Verdict::Interrupted);
        assert_eq!(
            verdict(false, 9, Some(1), true),
            Verdict::Over {
                worst_ns: 9,
                limit_ns: 1
            }
        );
        assert_eq!(verdict(false, 1, Some(1), true), Verdict::StreamFailed);
        assert_eq!(verdict(false, 9, None, false), Verdict::Ok);
    }

    #[test]
    fn the_progress_line_names_each_class_and_its_worst_so_far() {
        let worst = WorstSoFar::default();
        let classes = [ClassName::High, ClassName::Normal];
        assert_eq!(worst_line(&worst, &classes), "worst high -, normal -");
        worst.saw(ClassName::Normal, 1_200_000);
        worst.saw(ClassName::Normal, 900_000);
        worst.saw(ClassName::High, 41_200);
        assert_eq!(
            worst_line(&worst, &classes),
            "worst high 41.2 us, normal 1.20 ms"
        );
    }
}
