//! Arguments of `paper`, `trace`, `memsim`, `completions` and `man`.

use super::memsim_args;
use super::{threads_arg, JsonArg, KeepArgs, MeasureArgs};
use clap::{Args, Subcommand};
use std::path::PathBuf;

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
