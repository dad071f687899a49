//! Arguments of the commands that boot guest kernels: `run --guest`, `bisect`, `guest-check`.

use super::memsim_args;
use super::{JsonArg, KeepArgs};
use clap::Args;
use std::path::PathBuf;

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
