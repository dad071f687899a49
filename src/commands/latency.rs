//! `osmeter latency`: periodic measuring threads per class and path in one window, their wake
//! lateness with every missed period counted, worst cases per window and the buffer model.

use crate::cli::LatencyArgs;
use crate::interrupt;
use crate::latency::buffer::BufferConfig;
use crate::latency::document::{ClassDoc, LatencyDoc, SkippedClass, StreamDoc, LATENCY_SCHEMA};
use crate::latency::load;
use crate::latency::report;
use crate::latency::stacks;
use crate::latency::stage_capture::{StageCapture, StageTap, StageTaps, PHASE_NS};
use crate::latency::threads::{self, Class, ClassName, Path, Plan, StreamSpec};
use crate::latency::trace::StackMode;
use crate::meter::placement;
use crate::meter::rt_limit::{OnLimit, RtTimeLimit};
use crate::results::model::{Run, RunOptions};
use crate::units::parse_duration_ns;
use crate::usage;
use anyhow::{Context, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub const MAX_DURATION_NS: u64 = 24 * 3600 * 1_000_000_000;
pub const MIN_PERIOD_NS: u64 = 50_000;
pub const MAX_PERIOD_NS: u64 = 1_000_000_000;
/// A real-time thread that runs this long without blocking gets SIGXCPU: the measuring threads
/// sleep every period, so only a bug can reach it.
const RTTIME_LIMIT_US: u64 = 500_000;

pub struct LatencyConfig {
    pub period_ns: u64,
    pub duration_ns: u64,
    pub cpus: Vec<usize>,
    pub classes: Vec<Class>,
    pub paths: Vec<Path>,
    pub buffers: Vec<BufferConfig>,
    pub fail_over_ns: Option<u64>,
    pub loads: Vec<load::Kind>,
    pub dir: std::path::PathBuf,
    /// `--compute`: what the timer threads compute per period.
    pub compute_ns: Option<u64>,
}

fn split(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty())
}

fn check_prio(flag: &str, prio: i32) -> Result<()> {
    if !(1..=placement::MAX_FIFO_PRIORITY).contains(&prio) {
        return Err(usage!(
            "{flag} {prio}: the priority must be between 1 and {} (99 is left to the kernel)",
            placement::MAX_FIFO_PRIORITY
        ));
    }
    Ok(())
}

impl LatencyConfig {
    pub fn from_args(args: &LatencyArgs) -> Result<LatencyConfig> {
        let period_ns = parse_duration_ns(&args.period)?;
        if !(MIN_PERIOD_NS..=MAX_PERIOD_NS).contains(&period_ns) {
            return Err(usage!(
                "--period {}: must be between 50us and 1s",
                args.period
            ));
        }
        let duration_ns = parse_duration_ns(&args.duration)?;
        if duration_ns > MAX_DURATION_NS {
            return Err(usage!("--duration {}: at most 24h", args.duration));
        }
        if duration_ns < period_ns {
            return Err(usage!(
                "--duration {} is shorter than one period",
                args.duration
            ));
        }
        check_prio("--prio-high", args.prio_high)?;
        check_prio("--prio-medium", args.prio_medium)?;
        let mut classes = Vec::new();
        for name in split(&args.classes) {
            let class = match name {
                "high" => Class {
                    name: ClassName::High,
                    fifo: Some(args.prio_high),
                },
                "medium" => Class {
                    name: ClassName::Medium,
                    fifo: Some(args.prio_medium),
                },
                "normal" => Class {
                    name: ClassName::Normal,
                    fifo: None,
                },
                other => {
                    return Err(usage!(
                        "unknown class {other:?} in --classes: use high, medium and/or normal"
                    ))
                }
            };
            if !classes.contains(&class) {
                classes.push(class);
            }
        }
        let mut paths = Vec::new();
        for name in split(&args.paths) {
            let p = Path::parse(name).ok_or_else(|| {
                usage!("unknown path {name:?} in --paths: use timer, futex, eventfd and/or pipe")
            })?;
            if !paths.contains(&p) {
                paths.push(p);
            }
        }
        if classes.is_empty() || paths.is_empty() {
            return Err(usage!("--classes and --paths need at least one entry each"));
        }
        let cpus = match &args.cpus {
            None => vec![*placement::usable_cpus().last().unwrap_or(&0)],
            Some(list) => {
                let mut v = Vec::new();
                for c in split(list) {
                    let cpu: usize = c
                        .parse()
                        .map_err(|_| usage!("--cpus {list:?}: expected CPU numbers, e.g. 0,1"))?;
                    placement::validate_cpu(cpu).map_err(|e| usage!("--cpus: {e:#}"))?;
                    if !v.contains(&cpu) {
                        v.push(cpu);
                    }
                }
                if v.is_empty() {
                    return Err(usage!("--cpus needs at least one CPU"));
                }
                v
            }
        };
        if !(0.0..1.0).contains(&args.compute_fraction) {
            return Err(usage!(
                "--compute-fraction {}: must be at least 0 and below 1",
                args.compute_fraction
            ));
        }
        let mut buffers = BufferConfig::default_table(args.compute_fraction);
        for b in &args.buffers {
            buffers.push(BufferConfig::parse(b)?);
        }
        let fail_over_ns = args
            .fail_over
            .as_deref()
            .map(parse_duration_ns)
            .transpose()?;
        let loads = match &args.load {
            Some(list) => load::parse(list)?,
            None => Vec::new(),
        };
        let dir = args.dir.clone().unwrap_or_else(std::env::temp_dir);
        if loads.contains(&load::Kind::Io) {
            crate::config::check_scratch_parent(&dir)?;
        }
        let compute_ns = match &args.compute {
            None => None,
            Some(text) => {
                let c = parse_duration_ns(text)?;
                if c == 0 || c >= period_ns {
                    return Err(usage!(
                        "--compute {text}: must be more than 0 and less than the period ({}), or \
                         the pipeline can never keep up",
                        args.period
                    ));
                }
                Some(c)
            }
        };
        if (compute_ns.is_some() || args.stages) && !paths.contains(&Path::Timer) {
            return Err(usage!(
                "--compute and --stages apply to the timer path: add timer to --paths"
            ));
        }
        Ok(LatencyConfig {
            compute_ns,
            loads,
            dir,
            period_ns,
            duration_ns,
            cpus,
            classes,
            paths,
            buffers,
            fail_over_ns,
        })
    }
}

pub fn latency(args: &LatencyArgs) -> Result<i32> {
    let config = LatencyConfig::from_args(args)?;
    let keeper = super::keeper(&args.keep)?;
    interrupt::install();

    // Real-time classes this user may not use are skipped with the reason, not failed.
    let mut skipped = Vec::new();
    let classes: Vec<Class> = config
        .classes
        .iter()
        .copied()
        .filter(|c| match c.fifo {
            None => true,
            Some(p) => match placement::check_fifo_priority(p) {
                Ok(()) => true,
                Err(e) => {
                    skipped.push(SkippedClass {
                        class: c.name,
                        reason: format!("{e:#}"),
                    });
                    false
                }
            },
        })
        .collect();
    if classes.is_empty() {
        return Err(usage!(
            "no class can run here: {}",
            skipped
                .iter()
                .map(|s| s.reason.clone())
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let mut specs = Vec::new();
    for &cpu in &config.cpus {
        for &class in &classes {
            for &path in &config.paths {
                specs.push(StreamSpec { class, path, cpu });
            }
        }
    }

    let periods = config.duration_ns / config.period_ns;
    let tracer = if args.trace {
        let threshold = parse_duration_ns(&args.threshold)?;
        if args.episodes == 0 {
            return Err(usage!("--episodes 0: keep at least one episode"));
        }
        Some(
            crate::latency::trace::Tracer::start(
                &config.cpus,
                threshold,
                args.episodes,
                args.stacks,
            )
            .context("--trace: cannot set up cause capture")?,
        )
    } else {
        None
    };
    // Stage capture attaches its events before the start time is set (attaching stalls CPUs).
    let taps: StageTaps = specs
        .iter()
        .map(|s| (args.stages && s.path == Path::Timer).then(StageTap::new))
        .collect();
    let stage_capture = if args.stages {
        let stream_cpus: Vec<usize> = specs.iter().map(|s| s.cpu).collect();
        Some(
            StageCapture::start(
                &config.cpus,
                &taps,
                &stream_cpus,
                periods * config.period_ns,
                Some(PHASE_NS),
            )
            .context("--stages: cannot set up stage capture")?,
        )
    } else {
        None
    };
    let stop = Arc::new(AtomicBool::new(false));
    let plan = Plan {
        period_ns: config.period_ns,
        periods,
        // Time for every thread to start, pin itself and change class before the first deadline.
        start_ns: threads::monotonic_ns() + 50_000_000,
        buffers: config.buffers.clone(),
        stop: Arc::clone(&stop),
        trigger: tracer.as_ref().map(|t| Arc::clone(&t.trigger)),
        stages: args.stages.then(|| Arc::new(taps)),
        compute_ns: config.compute_ns,
    };
    // The PM QoS request lasts as long as the descriptor is open.
    let _dma_latency = match args.cpu_dma_latency {
        None => None,
        Some(us) => {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/cpu_dma_latency")
                .context("--cpu-dma-latency: cannot open /dev/cpu_dma_latency (needs root)")?;
            f.write_all(&(us as i32).to_ne_bytes())
                .context("--cpu-dma-latency: cannot write /dev/cpu_dma_latency")?;
            Some(f)
        }
    };
    let rt_limit = RtTimeLimit::set(RTTIME_LIMIT_US, None, OnLimit::Terminate);
    let started_at = crate::clock::now_rfc3339();
    if crate::progress::style().is_some() {
        eprintln!(
            "osmeter: measuring {} streams for {:.1} s",
            specs.len(),
            config.duration_ns as f64 / 1e9
        );
    }
    // Watches for Ctrl-C and collects cause-capture episodes; hands the tracer back at the end.
    let watcher = {
        let stop = Arc::clone(&stop);
        let mut tracer = tracer;
        std::thread::spawn(move || {
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
    };
    let loads = if config.loads.is_empty() && args.load_cmd.is_none() {
        None
    } else {
        match load::LoadSet::start(
            &config.loads,
            args.load_cmd.as_deref(),
            &config.dir,
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
    let progress = measuring_progress(config.duration_ns);
    let results = threads::run_streams(&specs, &plan);
    drop(progress);
    let load_reports = loads.map(|mut l| l.stop()).unwrap_or_default();
    let interrupted = interrupt::requested();
    stop.store(true, Ordering::Relaxed);
    // Dropping the tracer removes the trace instance (and unmounts tracefs if osmeter mounted it).
    let episodes = watcher.join().ok().flatten().map(|t| t.episodes.clone());
    drop(rt_limit);
    let stages = stage_capture.map(StageCapture::finish).transpose()?;
    let causes = episodes
        .as_ref()
        .filter(|_| args.stacks != StackMode::Off)
        .map(|eps| stacks::aggregate(eps.iter().map(|e| e.samples.as_slice())));

    let mut streams: Vec<StreamDoc> = results.iter().map(StreamDoc::of).collect();
    if let Some(report) = &stages {
        for (doc, s) in streams.iter_mut().zip(&report.streams) {
            doc.stages = s.clone();
        }
    }
    let measured_s = results.iter().map(|r| r.acct.periods()).max().unwrap_or(0) as f64
        * config.period_ns as f64
        / 1e9;
    let worst = results
        .iter()
        .filter(|r| r.error.is_none())
        .map(|r| r.acct.corrected.max())
        .max()
        .unwrap_or(0);
    let doc = LatencyDoc {
        schema: LATENCY_SCHEMA.to_string(),
        period_ns: config.period_ns,
        duration_s: config.duration_ns as f64 / 1e9,
        measured_s,
        cpus: config.cpus.clone(),
        classes: config
            .classes
            .iter()
            .map(|c| ClassDoc {
                name: c.name,
                fifo_priority: c.fifo,
            })
            .collect(),
        paths: config.paths.clone(),
        skipped,
        rttime_limit_us: RTTIME_LIMIT_US,
        timer_slack_ns: 1,
        cpu_dma_latency_us: args.cpu_dma_latency,
        fail_over_ns: config.fail_over_ns,
        worst_ns: worst,
        interrupted,
        loads: load_reports,
        episodes,
        stacks: args.trace.then_some(args.stacks),
        causes,
        stage_capture: stages.map(|s| s.info),
        streams,
    };

    let run = Run {
        suite: Some("latency".to_string()),
        options: RunOptions {
            cpu: config.cpus.first().copied(),
            fifo_priority: classes.iter().filter_map(|c| c.fifo).max(),
            ..RunOptions::default()
        },
        ..keeper.run_of(
            crate::results::model::Sections {
                latency: Some(doc.clone()),
                ..Default::default()
            },
            started_at,
            interrupted,
        )
    };
    if args.output.json {
        super::emit_json(&run)?;
    } else {
        super::emit(&report::render(&doc))?;
    }
    keeper.save(&run)?;
    if interrupted {
        return Ok(crate::error::EXIT_INTERRUPTED);
    }
    if let Some(limit) = config.fail_over_ns {
        if worst > limit {
            eprintln!(
                "osmeter: the worst wake was {:.1} us late, over --fail-over {:.1} us",
                worst as f64 / 1e3,
                limit as f64 / 1e3
            );
            return Ok(crate::error::EXIT_LATENCY_OVER);
        }
    }
    if results.iter().any(|r| r.error.is_some()) {
        return Ok(crate::error::EXIT_RUNTIME);
    }
    Ok(crate::error::EXIT_OK)
}

/// "latency: 3.0 s of 10.0 s (30 %, about 7.0 s left)".
fn measuring_progress(duration_ns: u64) -> crate::progress::Ticker {
    let total = std::time::Duration::from_nanos(duration_ns);
    crate::progress::Ticker::start(move |elapsed| {
        format!(
            "latency: {} of {} ({})",
            crate::progress::duration(elapsed.min(total)),
            crate::progress::duration(total),
            crate::progress::fraction(
                elapsed.as_millis() as u64,
                total.as_millis().max(1) as u64,
                elapsed
            )
        )
    })
}
