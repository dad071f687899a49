//! Every flag, defined once.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

pub mod memsim_args;
pub mod results_args;

#[derive(Parser, Debug)]
#[command(
    name = "osmeter",
    version,
    about = "Measures how well this Linux kernel serves programs, and where the time goes",
    after_help = "Exit codes: 0 success, 1 runtime error, 2 usage error, 3 the command under `stat` failed, \
                  4 `compare`/`history --fail-if-slower` threshold crossed, 5 `latency --fail-over` exceeded, \
                  6 `compare` refused a run measured on a busy machine, 130 interrupted."
)]
pub struct Cli {
    /// Print every table on one line per row, however wide (by default tables fit the terminal:
    /// COLUMNS, else its width, else 100 columns; cut into stacked blocks of columns)
    #[arg(long, global = true)]
    pub wide: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run probes or suites (default: the quick suite) and print a table
    Run(RunArgs),
    /// List probes and suites with one-line summaries
    List(JsonArg),
    /// Describe this system and which features work here, and why not
    Info(JsonArg),
    /// Print a shell completion script, or install it where the shell finds it
    Completions(CompletionsArgs),
    /// Print a man page (osmeter, or one subcommand), or write every page to a directory
    Man(ManArgs),
    /// Time a command and count its events, user and kernel apart, over repeated runs
    Stat(StatArgs),
    /// Wakeup latency of periodic threads per priority class and wake path, under load
    Latency(LatencyArgs),
    /// Capture a memory-reference trace of a command (valgrind lackey), or convert, inspect or
    /// synthesise traces
    Trace(TraceArgs),
    /// Simulate memory systems (caches, write buffer, TLB) on a reference trace
    Memsim(MemsimArgs),
    /// List the stored runs, newest first
    Runs(RunsArgs),
    /// Show one stored run
    Show(ShowArgs),
    /// Remove stored runs
    Rm(RmArgs),
    /// Compare two runs, or two groups of runs, with statistics
    Compare(CompareArgs),
    /// Measure two set-ups of the same probes in the same minutes (A and B interleaved, in
    /// lockstep on one CPU, or at once on two) and judge them on the pairs' ratios
    Ab(AbArgs),
    /// A figure over the stored runs, with the points where it changed (E-Divisive means)
    History(HistoryArgs),
    /// Which hosts of a shared store are off their class's median, on which figures, since when
    Fleet(FleetArgs),
    /// Write a stored run as json, csv, markdown or openmetrics
    Export(ExportArgs),
    /// Write a self-contained HTML report of stored runs (the first is the baseline)
    Report(ReportArgs),
    /// Print the JSON Schema of a kind of document osmeter writes (no KIND: list the kinds)
    Schema(SchemaArgs),
    /// Copy stored runs to another store (typically a shared postgres:// one), skipping runs
    /// already there
    Push(PushArgs),
    /// Measures one task for `osmeter run` in a fresh process (started by osmeter itself)
    #[command(name = "measure-worker", hide = true)]
    MeasureWorker,
    /// A seed paper's tables with today's figures beside them (no NAME: list the papers)
    Paper(PaperArgs),
    /// (internal) Run the reference mix inside the region callgrind counts
    #[command(name = "cpu-mix", hide = true)]
    CpuMix(CpuMixArgs),
    /// (internal) Count probes inside a guest of `run --guest`
    #[command(name = "guest-inside", hide = true)]
    GuestInside(GuestInsideArgs),
    /// The first kernel whose exact count of a probe differs from a good kernel's, in log2 boots
    Bisect(BisectArgs),
    /// Count one probe in one kernel against an expected count, with `git bisect run`'s exit
    /// codes: 0 good, 1 bad, 125 cannot test (255 stops the bisection: a mistake in the command)
    #[command(name = "guest-check")]
    GuestCheck(GuestCheckArgs),
}

/// `bisect` and `guest-check`: one guest per kernel, one probe.
#[derive(Args, Debug, Clone)]
pub struct GuestBootArgs {
    /// The count that decides (MODE.EVENT: MODE user or kernel, EVENT instructions, loads or
    /// stores)
    #[arg(long, value_name = "MODE.EVENT", default_value = "kernel.instructions",
          value_parser = crate::suite::guest::bisect::figure_arg)]
    pub figure: String,
    /// A kernel is bad when the count differs from the good one by more than PCT percent of
    /// it ("2" or "2%"; 0: any difference)
    #[arg(long, value_name = "PCT", default_value = "0",
          value_parser = crate::suite::guest::bisect::min_change_arg)]
    pub min_change: f64,
    /// Kernel parameters for every boot, e.g. "mitigations=off"
    #[arg(long, value_name = "PARAMS")]
    pub append: Option<String>,
    /// QEMU's CPU model, e.g. Skylake-Client [default: QEMU's qemu64]
    #[arg(long, value_name = "MODEL")]
    pub guest_cpu: Option<String>,
    /// Operations in the shorter counted window (the other has twice as many)
    #[arg(long, value_name = "N", default_value_t = crate::suite::guest::DEFAULT_ITERATIONS)]
    pub guest_iterations: u64,
    /// Give up on a guest that has not finished after this long, boot included
    #[arg(long, value_name = "DURATION", default_value = crate::suite::guest::DEFAULT_TIMEOUT,
          value_parser = crate::units::duration_arg)]
    pub guest_timeout: u64,
    /// The most the kernel cache may hold (as `run --guest --cache-max`)
    #[arg(long, value_name = "SIZE",
          default_value = crate::capture::system::kernel_cache::DEFAULT_MAX,
          value_parser = crate::capture::system::kernel_cache::size_arg)]
    pub cache_max: u64,
}

#[derive(Args, Debug, Clone)]
pub struct BisectArgs {
    /// The probe (or one point of it, quoted: "fs.open_close depth=1") whose count is followed
    #[arg(value_name = "PROBE")]
    pub probe: String,
    /// A kernel with the good count: a Debian kernel package, or with --between an image path
    #[arg(long, value_name = "KERNEL")]
    pub good: String,
    /// A kernel whose count differs from the good one's
    #[arg(long, value_name = "KERNEL")]
    pub bad: String,
    /// The kernels between good and bad, in order (repeatable; image paths or packages)
    /// [default: the archive's packages of good's flavour between the two, by Debian version]
    #[arg(long, value_name = "KERNEL")]
    pub between: Vec<String>,
    /// Do not boot the last good and first bad kernel again at the end to split the change by
    /// kernel function
    #[arg(long)]
    pub no_split: bool,
    /// List the kernels to bisect and the most boots it takes; boot nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub boot: GuestBootArgs,
    #[command(flatten)]
    pub keep: KeepArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug, Clone)]
pub struct GuestCheckArgs {
    /// The probe (or one point of it, quoted) to count
    #[arg(value_name = "PROBE")]
    pub probe: String,
    /// The kernel: an image path (arch/x86/boot/bzImage) or a Debian kernel package
    #[arg(long = "guest", value_name = "KERNEL")]
    pub kernel: String,
    /// The good kernel's count per operation (`osmeter run --guest GOOD PROBE` prints it)
    #[arg(long, value_name = "COUNT", value_parser = crate::suite::guest::bisect::count_arg)]
    pub expect: f64,
    #[command(flatten)]
    pub boot: GuestBootArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug, Clone, Default)]
pub struct PaperArgs {
    /// The paper [default: list them]
    #[arg(value_enum)]
    pub name: Option<crate::papers::PaperId>,
    /// Take today's figures from this stored run instead of measuring (repeatable; each figure
    /// comes from the first run that has it)
    #[arg(long = "run", value_name = "ID", conflicts_with = "MeasureArgs")]
    pub runs: Vec<String>,
    /// Show only this table, by its number in the paper (e.g. 4, IV, 4-1, or 4.7 for figures the
    /// text states)
    #[arg(long, value_name = "ID")]
    pub table: Option<String>,
    /// Measure with the quick suite's settings (fewer, shorter samples; smaller sizes where the
    /// paper's own point is not needed)
    #[arg(long, conflicts_with = "runs")]
    pub quick: bool,
    /// Only for papers whose today's side is a latency run (cota-robles99): how long to measure,
    /// e.g. 30s, 10min (at most 24h; the worst-case fit needs at least 10s) [default: 60s]
    #[arg(long, value_name = "DURATION", value_parser = crate::latency::values::duration, conflicts_with = "runs")]
    pub duration: Option<u64>,
    /// Only for papers whose today's side is a latency run (cota-robles99): the background load,
    /// as `osmeter latency --load` takes it, or none [default: desktop, the interactive mix
    /// nearest the paper's office, workstation and game workloads]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = crate::papers::latency_side::load_choice, conflicts_with = "runs")]
    pub load: Vec<crate::papers::latency_side::LoadChoice>,
    /// Only for chen-bershad93: the guest workload whose full-system trace (QEMU TCG, minutes) is
    /// simulated on the ds5000-200 preset with the assertions judged (`osmeter trace workloads`
    /// lists them) [default: grep]
    #[arg(long, value_name = "NAME", conflicts_with = "runs")]
    pub workload: Option<String>,
    /// Only for chen-bershad93 (twice: two kernels' MCPI side by side, as the paper set Ultrix
    /// beside Mach) and chen96 (instructions per operation counted exactly where the host has no
    /// PMU): a kernel to count in a QEMU guest, an image path or a Debian kernel package
    #[arg(long = "guest", value_name = "KERNEL", conflicts_with_all = ["runs", "workload"])]
    pub guests: Vec<String>,
    #[command(flatten)]
    pub measure: MeasureArgs,
    #[command(flatten)]
    pub keep: KeepArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug, Clone)]
pub struct CpuMixArgs {
    /// Cycles of the mix's input variants to run
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub cycles: u64,
}

#[derive(Args, Debug, Clone)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
    /// Write the script to the shell's per-user completion directory instead of stdout
    #[arg(long)]
    pub install: bool,
}

#[derive(Args, Debug, Clone)]
pub struct ManArgs {
    /// The subcommand whose page to print, e.g. `run` or `trace info` [default: osmeter itself]
    #[arg(value_name = "COMMAND", conflicts_with_all = ["dir", "install"])]
    pub command: Vec<String>,
    /// Write every page (osmeter.1, osmeter-run.1, ...) into DIR
    #[arg(long, short = 'o', value_name = "DIR", conflicts_with = "install")]
    pub dir: Option<PathBuf>,
    /// Write every page where `man` finds it: PREFIX/share/man/man1 when osmeter runs from
    /// PREFIX/bin (~/.cargo/bin after `cargo install`), else ~/.local/share/man/man1
    #[arg(long)]
    pub install: bool,
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

#[derive(Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub action: Option<TraceAction>,
    /// Trace file to write (`.zst` compresses)
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Compress with zstd
    #[arg(long)]
    pub zstd: bool,
    /// Trace the whole system, kernel included: boot a Linux guest under QEMU and trace the
    /// command (or --workload) inside it
    #[arg(long)]
    pub system: bool,
    /// With --system: a built-in workload instead of a command (see `osmeter trace workloads`)
    #[arg(long, value_name = "NAME", requires = "system", value_parser = crate::capture::system::workloads::parser())]
    pub workload: Option<&'static crate::capture::system::workloads::Workload>,
    /// With --system: the guest kernel image [default: Debian's cloud kernel package, fetched once]
    #[arg(long, value_name = "PATH", requires = "system")]
    pub kernel: Option<PathBuf>,
    /// With --system: the kernel's symbol table (System.map or kallsyms text) instead of the one
    /// osmeter reads from the guest's /proc/kallsyms
    #[arg(long, value_name = "PATH", requires = "system")]
    pub system_map: Option<PathBuf>,
    /// With --system: the Debian kernel package to fetch
    #[arg(long, value_name = "PACKAGE", requires = "system", default_value = crate::capture::system::kernel::DEFAULT_PACKAGE)]
    pub kernel_package: String,
    /// With --system: a host file or directory to put in the guest at the same path (repeatable)
    #[arg(long, value_name = "PATH", requires = "system")]
    pub include: Vec<PathBuf>,
    /// With --system: guest memory in MiB (64-2048: the guest's RAM stays below the PCI hole)
    #[arg(long, value_name = "MIB", requires = "system", default_value_t = crate::capture::system::capture::DEFAULT_MEMORY_MIB,
          value_parser = clap::value_parser!(u32).range(64..=2048))]
    pub memory: u32,
    /// With --system: give up when the guest has not finished after this long
    #[arg(
        long,
        value_name = "DURATION",
        requires = "system",
        default_value = crate::capture::system::capture::DEFAULT_TIMEOUT,
        value_parser = crate::units::duration_arg
    )]
    pub timeout: u64,
    /// With --system: install missing Debian packages (qemu-system-x86, busybox-static) as root
    #[arg(long, requires = "system")]
    pub install: bool,
    /// The command to trace and its arguments
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Subcommand, Debug, Clone)]
pub enum TraceAction {
    /// Convert a trace (osmeter, lackey, din or drmemtrace, or a drmemtrace run directory; `-`
    /// for stdin) to the osmeter format, or export it to ChampSim's or DynamoRIO drmemtrace's
    Convert {
        input: PathBuf,
        /// The file to write, as every other command takes it
        #[arg(
            short = 'o',
            long = "output",
            value_name = "FILE",
            required_unless_present = "output_positional",
            conflicts_with = "output_positional"
        )]
        output: Option<PathBuf>,
        /// The file to write, as a second argument (the form of earlier releases)
        #[arg(value_name = "OUTPUT", hide = true)]
        output_positional: Option<PathBuf>,
        /// Input format [default: detected]
        #[arg(long, value_name = "FORMAT", value_parser = memsim_args::trace_format())]
        from: Option<crate::memsim::trace::Format>,
        /// Output format
        #[arg(long, value_name = "FORMAT", value_parser = memsim_args::export_format(), default_value_t)]
        to: crate::memsim::trace::ExportFormat,
        /// Compress with zstd (also implied by an output name ending in .zst; one ending in .gz
        /// is gzip-compressed)
        #[arg(long)]
        zstd: bool,
    },
    /// Counts by kind and mode, address spaces and footprint of a trace; with kernel symbols,
    /// kernel references by category
    Info {
        file: PathBuf,
        /// Input format [default: detected]
        #[arg(long, value_name = "FORMAT", value_parser = memsim_args::trace_format())]
        from: Option<crate::memsim::trace::Format>,
        /// Kernel symbols: /proc/kallsyms text or System.map [default: FILE.kallsyms if present]
        #[arg(long, value_name = "FILE")]
        symbols: Option<PathBuf>,
        /// Also list the N busiest functions of each kernel category
        #[arg(long, value_name = "N", default_value_t = 0)]
        functions: usize,
        #[command(flatten)]
        output: JsonArg,
    },
    /// List the built-in workloads of `osmeter trace --system --workload NAME`
    Workloads,
    /// Write a deterministic synthetic trace with user and kernel references
    Synth {
        #[arg(long, short = 'o', value_name = "FILE")]
        output: PathBuf,
        /// Number of references
        #[arg(long, value_name = "N", default_value_t = 1_000_000)]
        refs: u64,
        #[arg(long, value_name = "S", default_value_t = 1)]
        seed: u64,
        /// Compress with zstd
        #[arg(long)]
        zstd: bool,
    },
}

#[derive(Args, Debug, Clone, Default)]
pub struct MemsimArgs {
    /// Trace file (osmeter, lackey, din or drmemtrace; `-` for stdin), or a drmemtrace run
    /// directory
    pub trace: PathBuf,
    /// Input format [default: detected]
    #[arg(long, value_name = "FORMAT", value_parser = memsim_args::trace_format())]
    pub from: Option<crate::memsim::trace::Format>,
    /// Machine preset or sweep (repeatable): ds5000-200, ds5000-200-2way, ds5000-200-random,
    /// ds5000-200-unified, ds5000-200-merge, pentium, x86-modern; sweeps: paper (the four
    /// ds5000 variants), sweep16 (both L1 caches at 16-128 KB x direct-mapped to 8-way)
    #[arg(long = "preset", value_name = "NAME", value_parser = memsim_args::preset())]
    pub presets: Vec<crate::memsim::config::PresetName>,
    /// Machine described in a JSON file (repeatable; see the memsim module for the fields)
    #[arg(long = "config", value_name = "FILE")]
    pub configs: Vec<PathBuf>,
    /// First-level data (or unified) cache of an extra machine based on the first preset,
    /// SIZE:ASSOC:LINE, e.g. 32K:8:64
    #[arg(long, value_name = "GEOMETRY", value_parser = crate::memsim::config::CacheGeometry::parse)]
    pub l1d: Option<crate::memsim::config::CacheGeometry>,
    /// First-level instruction cache of that machine, SIZE:ASSOC:LINE
    #[arg(long, value_name = "GEOMETRY", value_parser = crate::memsim::config::CacheGeometry::parse)]
    pub l1i: Option<crate::memsim::config::CacheGeometry>,
    /// Second-level unified cache of that machine, SIZE:ASSOC:LINE
    #[arg(long, value_name = "GEOMETRY", value_parser = crate::memsim::config::CacheGeometry::parse)]
    pub l2: Option<crate::memsim::config::CacheGeometry>,
    /// TLB of that machine, ENTRIES:ASSOC:PAGE, e.g. 64:full:4K
    #[arg(long, value_name = "GEOMETRY", value_parser = crate::memsim::config::TlbGeometry::parse)]
    pub tlb: Option<crate::memsim::config::TlbGeometry>,
    /// Skip the 3C miss classification (faster)
    #[arg(long)]
    pub no_3c: bool,
    /// Threads for several machines [default: usable CPUs]
    #[arg(long, value_name = "N", value_parser = threads_arg)]
    pub threads: Option<usize>,
    /// Print references per second on stderr
    #[arg(long)]
    pub stats: bool,
    /// Kernel symbols (/proc/kallsyms text or System.map) to report MCPI per kernel category
    /// [default: TRACE.kallsyms if present]
    #[arg(long, value_name = "FILE")]
    pub symbols: Option<PathBuf>,
    /// Leave the idle loop's references out (the default when symbols are known)
    #[arg(long, conflicts_with = "include_idle")]
    pub exclude_idle: bool,
    /// Keep the idle loop's references
    #[arg(long)]
    pub include_idle: bool,
    /// Judge Chen and Bershad's seven assertions on this trace (simulates variants of the first
    /// machine in the same pass)
    #[arg(long)]
    pub assertions: bool,
    /// LRU miss-ratio curve of one cache at every power-of-two size in a range, in the same pass:
    /// CACHE:MIN-MAX:ASSOC:LINE, e.g. l1d:8K-1M:8:64 (CACHE l1i, l1d or unified; ASSOC a number
    /// of ways or full) (repeatable)
    #[arg(long = "curve", value_name = "SPEC", value_parser = crate::memsim::curve::CurveSpec::parse)]
    pub curves: Vec<crate::memsim::curve::CurveSpec>,
    /// Miss rates and MCPI of every machine for every N references (at least 1000)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1000..))]
    pub interval: Option<u64>,
    #[command(flatten)]
    pub keep: KeepArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// Run id, or a unique prefix of one
    pub run: String,
    #[arg(long, short = 'f', value_name = "FORMAT", value_parser = results_args::format())]
    pub format: crate::results::export::Format,
    /// One row per raw sample (csv)
    #[arg(long)]
    pub samples: bool,
    /// Write to this file instead of stdout
    #[arg(long, short = 'o', value_name = "PATH")]
    pub output: Option<std::path::PathBuf>,
    /// Write DIR/osmeter.prom for node-exporter's textfile collector, replaced whole (openmetrics
    /// only)
    #[arg(long, value_name = "DIR", conflicts_with = "output")]
    pub textfile: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug, Clone)]
pub struct SchemaArgs {
    /// The kind of document (run, stat, compare, ...) [default: list the kinds]
    pub kind: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct PushArgs {
    /// Run ids, or unique prefixes
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub runs: Vec<String>,
    /// Push every run of the source store
    #[arg(long)]
    pub all: bool,
    /// Destination: a postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE URL (the password may come
    /// from $PGPASSWORD or ~/.pgpass instead) or a SQLite path
    #[arg(long, value_name = "URL|PATH", value_parser = results_args::LocationArg)]
    pub to: crate::results::store::Location,
    /// The source store
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// Runs to show (ids or unique prefixes); the first is the baseline of the comparison
    #[arg(required = true, num_args = 1.., value_name = "RUN")]
    pub runs: Vec<String>,
    /// The HTML file to write (replaced whole, never left half-written)
    #[arg(short = 'o', long = "output", value_name = "PATH", required = true)]
    pub output: PathBuf,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug, Clone, Default)]
pub struct CompareArgs {
    /// Baseline run and candidate run (ids or unique prefixes)
    #[arg(num_args = 0..=2, value_name = "RUN")]
    pub runs: Vec<String>,
    /// Baseline group: several runs pooled
    #[arg(long = "a", value_name = "RUN", num_args = 1..)]
    pub group_a: Vec<String>,
    /// Candidate group: several runs pooled
    #[arg(long = "b", value_name = "RUN", num_args = 1..)]
    pub group_b: Vec<String>,
    /// Baseline group: every stored run with this tag
    #[arg(long, value_name = "KEY=VALUE", value_parser = crate::results::keep::tag_arg)]
    pub tag_a: Option<crate::results::keep::Tag>,
    /// Candidate group: every stored run with this tag
    #[arg(long, value_name = "KEY=VALUE", value_parser = crate::results::keep::tag_arg)]
    pub tag_b: Option<crate::results::keep::Tag>,
    /// Smallest change in percent that counts as a change
    #[arg(long, value_name = "PCT", default_value_t = 3.0, value_parser = percent_arg)]
    pub threshold: f64,
    /// Exit with code 4 if any figure is significantly slower by more than PCT percent
    #[arg(long, value_name = "PCT", value_parser = percent_arg)]
    pub fail_if_slower: Option<f64>,
    /// Show every figure, not only those that changed
    #[arg(long)]
    pub all: bool,
    /// Do not learn each figure's run-to-run spread from earlier runs of the same host
    #[arg(long)]
    pub no_history: bool,
    /// Compare even when a run was measured on a busy machine (every figure is marked)
    #[arg(long)]
    pub force: bool,
    /// For every figure that changed, the difference of its profiles (`run --profile`) per
    /// operation by kernel component and by function (with --json: under "explain")
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub gate: GateArgs,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub output: JsonArg,
}

/// The verdicts as CI systems read them (see docs/comparisons-and-history.md).
#[derive(Args, Debug, Clone, Default)]
pub struct GateArgs {
    /// Also write the verdicts as JUnit XML to FILE: one test case per figure, failed where
    /// --fail-if-slower fails (without it: every figure called slower)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Print the verdicts as KTAP (the kernel's test format) instead of the table
    #[arg(long, conflicts_with = "json")]
    pub ktap: bool,
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

#[derive(Args, Debug, Clone, Default)]
pub struct HistoryArgs {
    /// The figure's key as `osmeter show RUN` prints it, e.g. syscall.null or
    /// "ipc.pipe_pingpong placement=cross"; with --kernels, the probes or groups to show
    /// [default with --kernels: every probe counted]
    #[arg(value_name = "FIGURE")]
    pub figure: Vec<String>,
    /// Each probe's exact counts per kernel version from the stored guest runs (`run --guest`),
    /// ordered by Debian version, with every change point split by kernel function
    #[arg(long, conflicts_with_all = ["fail_if_slower", "include_busy", "junit", "ktap"])]
    pub kernels: bool,
    /// With --kernels: print the timeline as CSV (one row per kernel and probe)
    #[arg(long, requires = "kernels", conflicts_with = "json")]
    pub csv: bool,
    /// Only runs from this host name
    #[arg(long)]
    pub host: Option<String>,
    /// Only runs with this tag (repeatable; all must match)
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = crate::results::keep::tag_arg)]
    pub tags: Vec<crate::results::keep::Tag>,
    /// Only runs started at or after this time (as `osmeter runs --since`)
    #[arg(long, value_name = "DATE", value_parser = crate::clock::since_arg)]
    pub since: Option<String>,
    /// Exit with code 4 if the latest change made the figure slower by more than PCT percent
    #[arg(long, value_name = "PCT", value_parser = percent_arg)]
    pub fail_if_slower: Option<f64>,
    /// Take in runs measured on a busy machine (left out otherwise)
    #[arg(long)]
    pub include_busy: bool,
    #[command(flatten)]
    pub gate: GateArgs,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug, Clone, Default)]
pub struct FleetArgs {
    /// Only these figures: a key, or a group such as syscall (repeatable)
    #[arg(long = "figure", value_name = "FIGURE")]
    pub figures: Vec<String>,
    /// Only runs with this tag (repeatable; all must match)
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = crate::results::keep::tag_arg)]
    pub tags: Vec<crate::results::keep::Tag>,
    /// Only runs started at or after this time (as `osmeter runs --since`)
    #[arg(long, value_name = "DATE", value_parser = crate::clock::since_arg)]
    pub since: Option<String>,
    /// False-discovery rate of the hosts called off (0 to 1)
    #[arg(long, value_name = "RATE", default_value_t = 0.05, value_parser = rate_arg)]
    pub alpha: f64,
    /// Smallest distance from the class median worth calling, in percent
    #[arg(long, value_name = "PCT", default_value_t = 3.0, value_parser = percent_arg)]
    pub min_effect: f64,
    /// Exit with code 4 when a host is slower than its class on some figure
    #[arg(long)]
    pub fail_if_off: bool,
    /// Also write the fleet as a self-contained HTML page (a heatmap of hosts x figures per class)
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub output: JsonArg,
}

fn rate_arg(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err("give a rate between 0 and 1, e.g. 0.05".into()),
    }
}

/// How a measuring command's result is kept.
#[derive(Args, Debug, Clone, Default)]
pub struct KeepArgs {
    /// Label the result (repeatable), e.g. --tag kernel=6.6-patched
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = crate::results::keep::tag_arg)]
    pub tags: Vec<crate::results::keep::Tag>,
    /// Print the results without keeping them in the store
    #[arg(long)]
    pub no_store: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug, Clone, Default)]
pub struct StoreArg {
    /// Where runs are kept: a SQLite file or a postgres:// URL [default: $OSMETER_STORE, else
    /// $XDG_DATA_HOME/osmeter/runs.db]
    #[arg(long, value_name = "PATH|URL", value_parser = results_args::LocationArg)]
    pub store: Option<crate::results::store::Location>,
}

#[derive(Args, Debug, Clone, Default)]
pub struct RunsArgs {
    /// Only runs from this host name
    #[arg(long)]
    pub host: Option<String>,
    /// Only runs of this suite
    #[arg(long)]
    pub suite: Option<String>,
    /// Only runs with this tag (repeatable; all must match)
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = crate::results::keep::tag_arg)]
    pub tags: Vec<crate::results::keep::Tag>,
    /// Only runs started at or after this time: a date (2026-11-01), a date and time
    /// (2026-11-01T10:00, UTC unless a zone follows), today, yesterday, or a time ago (30min, 12h,
    /// 2d, 1w)
    #[arg(long, value_name = "DATE", value_parser = crate::clock::since_arg)]
    pub since: Option<String>,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug, Clone)]
pub struct ShowArgs {
    /// Run id, or a unique prefix of one
    pub run: String,
    /// Every profiled figure's functions and notes in full (`run --profile`); without it, one
    /// line per figure
    #[arg(long)]
    pub profile: bool,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Args, Debug, Clone)]
pub struct RmArgs {
    /// Run ids, or unique prefixes
    #[arg(required = true)]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug, Clone, Copy, Default)]
pub struct JsonArg {
    /// Print one JSON document instead of a table
    #[arg(long)]
    pub json: bool,
}

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

/// `run --guest`: the probes inside a QEMU guest, counted exactly.
#[derive(Args, Debug, Clone, Default)]
pub struct GuestArgs {
    /// Run the probes inside a QEMU guest (TCG) booting this kernel: an image path, a Debian
    /// kernel package (fetched once, cached), or a pattern of packages
    /// ('linux-image-6.12.*-cloud-amd64', or a range: 'linux-image-6.1.0-47..57-cloud-amd64'),
    /// booted oldest first. Counts instructions, loads and stores per operation,
    /// user and kernel apart, exactly; keeps one run per kernel and --append set (repeatable)
    #[arg(long = "guest", value_name = "KERNEL")]
    pub kernels: Vec<String>,
    /// With --guest: kernel parameters, e.g. "mitigations=off" (repeatable: every kernel boots
    /// once per set; "" for none)
    #[arg(long, value_name = "PARAMS", requires = "kernels")]
    pub append: Vec<String>,
    /// With --guest: operations in the shorter counted window (the other has twice as many)
    #[arg(long, value_name = "N", requires = "kernels",
          default_value_t = crate::suite::guest::DEFAULT_ITERATIONS)]
    pub guest_iterations: u64,
    /// With --guest: QEMU's CPU model, e.g. Skylake-Client (the kernel chooses its mitigations by
    /// the CPU it sees; `qemu-system-x86_64 -cpu help` lists them) [default: QEMU's qemu64]
    #[arg(long, value_name = "MODEL", requires = "kernels")]
    pub guest_cpu: Option<String>,
    /// With --guest: give up on a guest that has not finished after this long, boot included
    #[arg(long, value_name = "DURATION", requires = "kernels",
          default_value = crate::suite::guest::DEFAULT_TIMEOUT,
          value_parser = crate::units::duration_arg)]
    pub guest_timeout: u64,
    /// With --guest: simulate every reference of the counted windows on this memsim machine
    /// (repeatable; a sweep stands for its presets): misses and memory cycles per instruction
    /// per operation, user and kernel apart, and kernel instructions by function
    #[arg(long = "preset", value_name = "NAME", value_parser = memsim_args::preset(), requires = "kernels")]
    pub presets: Vec<crate::memsim::config::PresetName>,
    /// With --guest: list the kernels the --guest values name (patterns and ranges expanded,
    /// oldest first), their downloads and what the cache holds; fetch and boot nothing
    #[arg(long, requires = "kernels")]
    pub dry_run: bool,
    /// With --guest: the most the kernel cache may hold; the least recently used kernels are
    /// removed to stay under it (never one the command boots), and a sweep that alone is larger
    /// says so
    #[arg(long, value_name = "SIZE", requires = "kernels",
          default_value = crate::capture::system::kernel_cache::DEFAULT_MAX,
          value_parser = crate::capture::system::kernel_cache::size_arg)]
    pub cache_max: u64,
    /// With --guest: exit 4 when a count per operation is over this budget in any guest, e.g.
    /// syscall.null=kernel.instructions:320 (repeatable; MODE user or kernel, EVENT
    /// instructions, loads or stores)
    #[arg(long, value_name = "PROBE=MODE.EVENT:LIMIT", requires = "kernels",
          value_parser = crate::results::gate::budget::Budget::parse)]
    pub fail_if_over: Vec<crate::results::gate::budget::Budget>,
    /// With --guest: budgets read from FILE, one PROBE=MODE.EVENT:LIMIT a line (# comments)
    #[arg(long, value_name = "FILE", requires = "kernels")]
    pub budget_file: Option<PathBuf>,
    /// With --guest and budgets: also write every budget's verdict in every guest as JUnit XML
    /// to FILE
    #[arg(long = "junit", value_name = "FILE", requires = "kernels")]
    pub guest_junit: Option<PathBuf>,
}

/// What the guest's init runs: `osmeter guest-inside`.
#[derive(Args, Debug, Clone)]
pub struct GuestInsideArgs {
    /// What to count: the plan the host wrote into the guest's file system
    #[arg(long)]
    pub plan: PathBuf,
    /// Where the report lines go (the guest's second serial port)
    #[arg(long)]
    pub report: PathBuf,
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

/// The separator of several commands after `osmeter stat --`.
pub const STAT_SEPARATOR: &str = ":::";

/// A percentage from 0 up to 100 (`--threshold`, `--fail-if-slower`).
fn percent_arg(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| "not a number: give a percentage between 0 and 100, e.g. 5".to_string())?;
    if (0.0..100.0).contains(&v) {
        Ok(v)
    } else {
        Err("give a percentage between 0 and 100".into())
    }
}

fn whole(text: &str) -> Result<usize, String> {
    text.trim()
        .parse()
        .map_err(|_| "not a whole number".to_string())
}

/// Samples per round (`run --repeat`): 1 to [`crate::suite::MAX_REPEAT`].
fn samples_arg(text: &str) -> Result<usize, String> {
    use crate::suite::MAX_REPEAT;
    match whole(text)? {
        0 => Err("at least one sample is needed (try --repeat 5)".into()),
        n @ 1..=MAX_REPEAT => Ok(n),
        _ => Err(format!(
            "give at most {MAX_REPEAT} samples a round (--rounds adds rounds, --min-time \
             lengthens each sample)"
        )),
    }
}

/// Runs of the command (`stat -r`): 1 to [`crate::suite::MAX_REPEAT`].
fn command_runs_arg(text: &str) -> Result<usize, String> {
    use crate::suite::MAX_REPEAT;
    match whole(text)? {
        0 => Err("at least 1 run is needed (the number of times the command is run)".into()),
        n @ 1..=MAX_REPEAT => Ok(n),
        _ => Err(format!("give at most {MAX_REPEAT} runs of the command")),
    }
}

/// Discarded samples per round (`--warmup`): 0 to [`crate::suite::MAX_WARMUP`].
fn warmup_arg(text: &str) -> Result<usize, String> {
    use crate::suite::MAX_WARMUP;
    match whole(text)? {
        n @ 0..=MAX_WARMUP => Ok(n),
        _ => Err(format!(
            "give 0 to {MAX_WARMUP} warm-up samples (they are run and thrown away in every round)"
        )),
    }
}

/// Rounds per figure (`--rounds`): 1 to [`crate::suite::MAX_ROUNDS`].
fn rounds_arg(text: &str) -> Result<usize, String> {
    use crate::suite::{DEFAULT_ROUNDS, MAX_ROUNDS};
    match whole(text)? {
        n @ 1..=MAX_ROUNDS => Ok(n),
        _ => Err(format!(
            "give 1 to {MAX_ROUNDS} rounds (2 or more for intervals from the spread between \
             rounds; the default is {DEFAULT_ROUNDS})"
        )),
    }
}

/// Simulation threads (`memsim --threads`): at least one.
fn threads_arg(text: &str) -> Result<usize, String> {
    match whole(text)? {
        0 => Err("give at least 1 thread (or leave --threads out for one per usable CPU)".into()),
        n => Ok(n),
    }
}
