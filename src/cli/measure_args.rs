//! Arguments of the commands that measure on this machine: `run`, `stat`, `ab`, `latency`.

use super::{
    command_runs_arg, percent_arg, rounds_arg, samples_arg, warmup_arg, whole, GuestArgs, JsonArg,
    KeepArgs,
};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone, Default)]
pub struct RunArgs {
    /// Suites (quick, full, ousterhout89, chen96), groups (e.g. ipc) or probe ids (e.g. syscall.null)
    pub targets: Vec<String>,
    #[command(flatten)]
    pub measure: MeasureArgs,
    /// Override a parameter of the selected probes, e.g. --set rcvbuf=65536 or --set placement=cross
    /// (repeatable; probes without that parameter are unchanged)
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = crate::probes::selection::set_arg)]
    pub sets: Vec<(String, serde_json::Value)>,
    #[command(flatten)]
    pub guest: GuestArgs,
    #[command(flatten)]
    pub keep: KeepArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

/// How figures are measured: shared by `run` and `paper`.
#[derive(Args, Debug, Clone, Default)]
pub struct MeasureArgs {
    /// Samples kept per round of each figure [default: 3 at the quick scale, 5 otherwise]
    #[arg(long, short = 'r', value_name = "N", value_parser = samples_arg)]
    pub repeat: Option<usize>,
    /// Rounds per figure: each in a fresh process, interleaved across figures in a shuffled order;
    /// intervals and comparisons come from the spread between rounds [default: 3, and up to 8 for
    /// figures whose rounds disagree, within the quick suite's 50 s (other runs: half the first
    /// rounds' time, at least 10 s); N fixes it]
    #[arg(long, value_name = "N", value_parser = rounds_arg)]
    pub rounds: Option<usize>,
    /// Seed of the shuffled order of the rounds, to replay a run's order [default: random]
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Minimum length of one sample, e.g. 5ms, 20ms, 1s [default: 10ms at the quick scale, 20ms otherwise]
    #[arg(long, value_name = "DURATION", value_parser = crate::units::duration_arg)]
    pub min_time: Option<u64>,
    /// Samples run and discarded before the kept ones, in every round (calibration's last sample
    /// is the first)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = warmup_arg)]
    pub warmup: usize,
    /// CPU the measuring thread is pinned to [default: the least busy usable CPU, the last of
    /// equals, chosen when the run starts]
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,
    /// Directory for scratch files (a fresh subdirectory is made and removed) [default: the system
    /// temporary directory]. With it the file probes measure its file system as it is (its type
    /// and mount options go on their figures, and its history counts); without it each of their
    /// rounds gets a fresh file system of its own (root)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Run the measuring thread at this SCHED_FIFO priority (1-98; needs root or CAP_SYS_NICE)
    #[arg(long, value_name = "PRIO")]
    pub fifo: Option<i32>,
    /// Keep the system's address-space randomisation (kernel.randomize_va_space) in every
    /// measuring process: without it process.fork_exit and process.exec start with a fixed
    /// layout, so that their page tables are the same size in every round
    #[arg(long)]
    pub system_aslr: bool,
    /// Do not open perf_event counters (time and interference only)
    #[arg(long)]
    pub no_counters: bool,
    /// Between the timed rounds, sample every figure's workload in a round of its own (cycles, or
    /// cpu-clock without a PMU) and store where its time goes: user and kernel, kernel component,
    /// function and call stack (`show`, `export --format folded`; see docs/profiles.md)
    #[arg(long)]
    pub profile: bool,
    /// Install the Debian packages the selected app workloads need (apt-get; root) before
    /// measuring; without it a workload whose package is missing is skipped, naming it (`paper
    /// chen-bershad93`: QEMU and busybox for its full-system trace)
    #[arg(long)]
    pub install: bool,
    /// Put the scratch directory on a fresh ext4 image inside --dir, mounted by the kernel (ext4)
    /// or served by fuse2fs (fuse), for the file probes and app.andrew; tags the run fs=KIND
    /// (root; removed when the run ends)
    #[arg(long, value_enum, value_name = "KIND")]
    pub fs: Option<crate::apps::image::Kind>,
}

#[derive(Args, Debug, Clone)]
pub struct StatArgs {
    /// Number of runs of each command
    #[arg(long, short = 'r', value_name = "N", default_value_t = 5, value_parser = command_runs_arg)]
    pub repeat: usize,
    /// Runs of each command before the measured ones, not kept (caches settle)
    #[arg(long, short = 'w', value_name = "N", default_value_t = 0)]
    pub warmup: usize,
    /// A shell command run before every run of every command, not measured (e.g. dropping caches)
    #[arg(long, value_name = "CMD")]
    pub prepare: Option<String>,
    /// Let the command's own output through (by default it is discarded, since printing it would
    /// be timed too): to stdout with -o FILE, else to stderr so that stdout holds only results
    #[arg(long)]
    pub show_output: bool,
    /// Write the results to this file
    #[arg(long = "output", short = 'o', value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    #[command(flatten)]
    pub keep: KeepArgs,
    #[command(flatten)]
    pub output: JsonArg,
    /// After the timed runs, run the command once more under sampling (its children too) and
    /// store where its time goes with the run (`show`, `export --format folded`; docs/profiles.md)
    #[arg(long)]
    pub profile: bool,
    /// The command and its arguments; several commands are separated by `:::` and compared
    /// (`osmeter stat -- gzip -k f ::: zstd -k f`)
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Args, Debug, Clone, Default)]
pub struct AbArgs {
    /// Probes or groups to measure on both sides, e.g. syscall.null or ipc (a small selection:
    /// every pair measures each of them on each side)
    #[arg(value_name = "PROBE|GROUP")]
    pub targets: Vec<String>,
    /// Shell command that puts the machine in state A, run before every round of A
    #[arg(long, value_name = "CMD")]
    pub a_setup: Option<String>,
    /// Shell command that puts the machine in state B, run before every round of B
    #[arg(long, value_name = "CMD")]
    pub b_setup: Option<String>,
    /// Shell command run after every round of A
    #[arg(long, value_name = "CMD")]
    pub a_teardown: Option<String>,
    /// Shell command run after every round of B
    #[arg(long, value_name = "CMD")]
    pub b_teardown: Option<String>,
    /// Command A's measuring processes run under, e.g. "env LD_PRELOAD=..." or a seccomp wrapper
    /// (the worker's own command line is appended)
    #[arg(long, value_name = "CMD")]
    pub a_wrap: Option<String>,
    /// Command B's measuring processes run under
    #[arg(long, value_name = "CMD")]
    pub b_wrap: Option<String>,
    /// Run A and B at the same time on two CPUs, swapped between pairs (only for differences
    /// that act per process: --a-wrap/--b-wrap, not a set-up)
    #[arg(long)]
    pub duet: bool,
    /// Run A and B at the same time on the measuring CPU, taking their samples in turn, so that
    /// each sample of A is milliseconds from one of B (per-process differences only, as --duet;
    /// the default when neither side has a set-up)
    #[arg(long, conflicts_with = "duet")]
    pub lockstep: bool,
    /// Alternate whole rounds of A and B on the measuring CPU (the default, and the only way,
    /// when a set-up switches the whole machine)
    #[arg(long, conflicts_with_all = ["duet", "lockstep"])]
    pub interleaved: bool,
    /// Smallest change worth finding, in percent: pairs go on until every figure's interval is
    /// within half of it, or the budget ends
    #[arg(long, value_name = "PCT", default_value_t = 2.0, value_parser = percent_arg)]
    pub min_effect: f64,
    /// Wall time the pairs may take
    #[arg(long, value_name = "DURATION", default_value = "60s",
          value_parser = crate::units::duration_arg)]
    pub budget: u64,
    /// Stop after this many pairs, whatever the budget
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = pairs_arg)]
    pub max_pairs: usize,
    /// Exit with code 4 if any figure is significantly slower in B by more than PCT percent
    #[arg(long, value_name = "PCT", value_parser = percent_arg)]
    pub fail_if_slower: Option<f64>,
    /// Override a parameter of the selected probes (as `run --set`)
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = crate::probes::selection::set_arg)]
    pub sets: Vec<(String, serde_json::Value)>,
    #[command(flatten)]
    pub measure: MeasureArgs,
    #[command(flatten)]
    pub keep: KeepArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

/// Pairs of `ab`: at least two (a paired interval needs two).
fn pairs_arg(text: &str) -> Result<usize, String> {
    match whole(text)? {
        n if n >= 2 => Ok(n),
        _ => Err("at least 2 pairs: an interval needs two".into()),
    }
}

#[derive(Args, Debug, Clone)]
pub struct CpuMixArgs {
    /// Cycles of the mix's input variants to run
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub cycles: u64,
}

#[derive(Args, Debug, Clone)]
pub struct LatencyArgs {
    /// Period of the measuring threads, e.g. 1ms, 500us (50us to 1s)
    #[arg(long, value_name = "DURATION", default_value = crate::latency::values::DEFAULT_PERIOD, value_parser = crate::latency::values::period)]
    pub period: u64,
    /// Length of the measurement, e.g. 10s, 30min (at most 24h)
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::latency::values::duration)]
    pub duration: u64,
    /// CPUs to measure on, e.g. 1 or 0,1 [default: the last usable CPU]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = crate::latency::values::cpu)]
    pub cpus: Vec<usize>,
    /// Classes: high (SCHED_FIFO --prio-high), medium (SCHED_FIFO --prio-medium), normal (SCHED_OTHER)
    #[arg(
        long,
        value_name = "LIST",
        value_enum,
        value_delimiter = ',',
        default_value = "high,medium,normal"
    )]
    pub classes: Vec<crate::latency::threads::ClassName>,
    /// Wake paths: timer, futex, eventfd, pipe
    #[arg(
        long,
        value_name = "LIST",
        value_enum,
        value_delimiter = ',',
        default_value = "timer,futex"
    )]
    pub paths: Vec<crate::latency::threads::Path>,
    /// SCHED_FIFO priority of the high class (1-98; 99 is left to the kernel)
    #[arg(long, value_name = "PRIO", default_value_t = crate::latency::threads::DEFAULT_PRIO_HIGH, value_parser = clap::value_parser!(i32).range(1..=98))]
    pub prio_high: i32,
    /// SCHED_FIFO priority of the medium class (1-98; 99 is left to the kernel)
    #[arg(long, value_name = "PRIO", default_value_t = crate::latency::threads::DEFAULT_PRIO_MEDIUM, value_parser = clap::value_parser!(i32).range(1..=98))]
    pub prio_medium: i32,
    /// A pipeline to evaluate: period t, n buffers, compute c (a time, or a fraction of t), e.g.
    /// 5ms,3,2ms (repeatable; added to the default table)
    #[arg(long = "buffer", value_name = "T,N,C", value_parser = crate::latency::values::buffer)]
    pub buffers: Vec<crate::latency::buffer::BufferConfig>,
    /// Compute time of the default buffer table, as a fraction of t (0 to below 1)
    #[arg(long, value_name = "FRACTION", default_value_t = crate::latency::values::DEFAULT_COMPUTE_FRACTION, value_parser = crate::latency::values::fraction)]
    pub compute_fraction: f64,
    /// Background load at normal priority: cpu, memory, io, net, fork, faults, the mixes desktop
    /// and server, or the application workloads app.web, app.wish, app.bitblt (comma-separated)
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = crate::latency::load::Load::parse)]
    pub load: Vec<crate::latency::load::Load>,
    /// A command run as load (through /bin/sh) for the whole measurement, stopped at the end
    #[arg(long, value_name = "CMD")]
    pub load_cmd: Option<String>,
    /// Directory for the io load's file (a fresh subdirectory is made and removed) [default: the
    /// system temporary directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Hold /dev/cpu_dma_latency at this many microseconds during the run (0 keeps CPUs out of deep
    /// idle states, as cyclictest does by default); without it the system is measured as configured
    #[arg(long, value_name = "US")]
    pub cpu_dma_latency: Option<u32>,
    /// Cause capture (root, tracefs): trace scheduler, interrupt, softirq, hrtimer and workqueue
    /// events on the measured CPUs and explain wakes later than --threshold
    #[arg(long)]
    pub trace: bool,
    /// Lateness that triggers a cause-capture episode
    #[arg(long, value_name = "LATENCY", default_value = "1ms", value_parser = crate::units::duration_arg)]
    pub threshold: u64,
    /// Cause-capture episodes kept (at least 1)
    #[arg(long, value_name = "K", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    pub episodes: u64,
    /// With --trace: stacks of what ran instead of a late thread (kernel costs a few us per
    /// stack; all adds user stacks to every event)
    #[arg(
        long,
        value_enum,
        value_name = "WHICH",
        default_value = "kernel",
        requires = "trace"
    )]
    pub stacks: crate::latency::trace::StackMode,
    /// Stages of every timer wake from kernel timestamps (root, tracefs): interrupt, softirq,
    /// handler, thread and return to user space; traced and untraced phases alternate each second
    /// to measure what tracing costs
    #[arg(long)]
    pub stages: bool,
    /// The timer threads compute this long after every wake, feeding a pipeline of 2, 3 and 4
    /// buffers of one period each; real underruns are counted against the model, e.g. 300us
    #[arg(long, value_name = "DURATION", value_parser = crate::units::duration_arg)]
    pub compute: Option<u64>,
    /// Exit with code 5 when any wake (missed periods included) is later than this, e.g. 500us
    #[arg(long, value_name = "LATENCY", value_parser = crate::units::duration_arg)]
    pub fail_over: Option<u64>,
    #[command(flatten)]
    pub keep: KeepArgs,
    #[command(flatten)]
    pub output: JsonArg,
}
