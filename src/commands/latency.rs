//! `osmeter latency`: periodic measuring threads per class and path in one window, their wake
//! lateness with every missed period counted, worst cases per window and the buffer model.

use crate::cli::LatencyArgs;
use crate::latency::buffer::BufferConfig;
use crate::latency::session::{CauseSettings, Settings, Verdict};
use crate::latency::text;
use crate::latency::threads::Class;
use anyhow::Result;

fn settings(args: &LatencyArgs) -> Result<Settings> {
    let class = |name| Class::with_priorities(name, args.prio_high, args.prio_medium);
    let mut buffers = BufferConfig::default_table(args.compute_fraction);
    buffers.extend(args.buffers.iter().cloned());
    Settings {
        period_ns: args.period,
        duration_ns: args.duration,
        cpus: args.cpus.clone(),
        classes: args.classes.iter().map(|&n| class(n)).collect(),
        paths: args.paths.clone(),
        buffers,
        fail_over_ns: args.fail_over,
        loads: crate::latency::load::kinds_of(&args.load),
        load_command: args.load_cmd.clone(),
        dir: args.dir.clone(),
        compute_ns: args.compute,
        causes: args.trace.then_some(CauseSettings {
            threshold_ns: args.threshold,
            episodes: args.episodes as usize,
            stacks: args.stacks,
        }),
        stages: args.stages,
        cpu_dma_latency_us: args.cpu_dma_latency,
    }
    .check()
}

pub fn latency(args: &LatencyArgs) -> Result<i32> {
    let settings = settings(args)?;
    let keeper = crate::config::keeper(&args.keep)?;
    let (run, verdict) = crate::latency::run::measure_run(&settings, &keeper, "latency")?;
    let doc = run
        .sections
        .get::<crate::latency::document::LatencyDoc>()
        .expect("a latency run holds its document");
    super::keep_then_print(&keeper, &run, || {
        if args.output.json {
            super::emit_json(&run)
        } else {
            super::emit(&text::render(doc))
        }
    })?;
    Ok(exit_code(verdict))
}

/// The exit code of a latency measurement's verdict (saying on stderr when --fail-over was
/// crossed).
pub fn exit_code(verdict: Verdict) -> i32 {
    match verdict {
        Verdict::Interrupted => crate::error::EXIT_INTERRUPTED,
        Verdict::Over { worst_ns, limit_ns } => {
            eprintln!(
                "osmeter: the worst wake was {:.1} us late, over --fail-over {:.1} us",
                worst_ns as f64 / 1e3,
                limit_ns as f64 / 1e3
            );
            crate::error::EXIT_LATENCY_OVER
        }
        Verdict::StreamFailed => crate::error::EXIT_RUNTIME,
        Verdict::Ok => crate::error::EXIT_OK,
    }
}
