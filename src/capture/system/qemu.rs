//! Booting the guest under QEMU in TCG mode with osmeter's plugin, and reading what the guest
//! said on its console.
//!
//! Repeatability: one vCPU, `-icount shift=0,sleep=off` (guest time is instruction count, idle
//! jumps straight to the next timer), a fixed real-time clock, a seeded generator behind RDRAND
//! and RDSEED (`-seed`), and kernel options that turn off address randomisation (`nokaslr
//! norandmaps randomize_kstack_offset=off`). With those, the same
//! guest gives the same trace byte for byte.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const QEMU: &str = "qemu-system-x86_64";

/// Kernel command line: serial console, no randomisation, no page-table isolation (it would add
/// a CR3 load to every system call), unpack the initramfs before init runs (an asynchronous
/// unpack can leave programs "busy" when init executes them), power off on panic.
pub const KERNEL_ARGS: &str = "console=ttyS0 quiet panic=-1 nokaslr norandmaps \
     randomize_kstack_offset=off pti=off initramfs_async=0";

/// The seed of QEMU's generator for guest-visible random numbers (`-seed`).
const GUEST_SEED: &str = "1";

/// What osmeter's plugin writes to its descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginMode {
    /// Every reference of the first window (`trace --system`).
    Trace,
    /// Every reference of every window (`run --guest --preset`).
    Windows,
    /// Only the running totals of instructions, loads and stores at each marker.
    Count,
}

pub struct GuestConfig<'a> {
    pub qemu: &'a Path,
    pub kernel: &'a Path,
    pub initrd: &'a Path,
    pub memory_mib: u32,
    /// The plugin and the descriptor it writes to in QEMU's process; none for a boot that only
    /// reads the kernel's symbol table.
    pub plugin: Option<(&'a Path, i32)>,
    /// What the plugin writes.
    pub mode: PluginMode,
    /// Kernel parameters added after [`KERNEL_ARGS`] (a later one wins where they clash).
    pub append: &'a str,
    /// QEMU's CPU model (`-cpu`), when not its default: the kernel picks its mitigations by
    /// the CPU it sees.
    pub cpu: Option<&'a str>,
    pub console: &'a Path,
    /// Where the guest's second serial port (its symbol table) goes.
    pub symbols: &'a Path,
}

impl GuestConfig<'_> {
    pub fn command(&self) -> Command {
        let mut c = crate::programs::command(self.qemu);
        let ram = u64::from(self.memory_mib) << 20;
        c.args([
            "-accel",
            "tcg",
            "-nodefaults",
            "-display",
            "none",
            "-no-reboot",
        ])
        .args(["-machine", "pc,memory-backend=osmeter-ram"])
        .args([
            "-object".to_string(),
            format!("memory-backend-memfd,id=osmeter-ram,size={ram}"),
        ])
        .args(["-m".to_string(), format!("{}M", self.memory_mib)])
        .args(["-smp", "1", "-icount", "shift=0,sleep=off"]);
        if let Some(model) = self.cpu {
            c.args(["-cpu", model]);
        }
        // RDRAND and RDSEED (on the Intel models) and any other guest-visible randomness come
        // from QEMU's own generator: seeded, the guest kernel's random state is the same every
        // boot (slab freelists, hash seeds), and so are the references a simulation sees.
        c.args(["-seed", GUEST_SEED])
            .args(["-rtc", "base=2020-01-01T00:00:00,clock=vm"])
            .arg("-kernel")
            .arg(self.kernel)
            .arg("-initrd")
            .arg(self.initrd)
            .args(["-append", &self.cmdline()])
            .arg("-serial")
            .arg(format!("file:{}", self.console.display()))
            .arg("-serial")
            .arg(format!("file:{}", self.symbols.display()));
        if let Some((plugin, fd)) = self.plugin {
            let mode = match self.mode {
                PluginMode::Trace => "trace",
                PluginMode::Windows => "windows",
                PluginMode::Count => "count",
            };
            c.arg("-plugin").arg(format!(
                "{},fd={fd},ram={ram},mode={mode}",
                plugin.display()
            ));
        }
        c
    }

    /// The kernel command line: osmeter's repeatable base, then the user's parameters.
    pub fn cmdline(&self) -> String {
        if self.append.trim().is_empty() {
            KERNEL_ARGS.to_string()
        } else {
            format!("{KERNEL_ARGS} {}", self.append.trim())
        }
    }
}

/// The QEMU executable, or what to install.
/// QEMU's standard streams and the plugin's pipe: no input, no output, errors into a new scratch
/// file `errors` (their tail goes into the message when the guest fails), the write end `wfd` of
/// the plugin's pipe as descriptor 3 (`plugin: Some((.., 3))`), and QEMU ended with osmeter.
pub fn wire_plugin_pipe(cmd: &mut Command, wfd: std::os::fd::RawFd, errors: &Path) -> Result<()> {
    use std::os::unix::process::CommandExt;
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(crate::scratch::create_new(errors)?);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(wfd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    crate::interrupt::die_with_parent(cmd);
    Ok(())
}

pub fn find_qemu() -> Result<PathBuf> {
    super::workloads::host_program(QEMU).map_err(|_| {
        anyhow::anyhow!(
            "{QEMU} is not installed: install the Debian package qemu-system-x86 \
             (osmeter trace --system --install does it when run as root)"
        )
    })
}

/// How the command inside the guest ended, from the helper's console lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuestOutcome {
    Exited(i32),
    Killed(i32),
    CannotRun(String),
    /// The guest never reported: it panicked, hung or was stopped.
    Silent,
}

pub fn outcome(console: &str) -> GuestOutcome {
    for line in console.lines().rev() {
        let Some(rest) = line.trim_end_matches('\r').split("osmeter-guest: ").nth(1) else {
            continue;
        };
        if let Some(code) = rest.strip_prefix("exit ") {
            return GuestOutcome::Exited(code.trim().parse().unwrap_or(-1));
        }
        if let Some(sig) = rest.strip_prefix("killed by signal ") {
            return GuestOutcome::Killed(sig.trim().parse().unwrap_or(0));
        }
        if let Some(why) = rest.strip_prefix("cannot run ") {
            return GuestOutcome::CannotRun(why.trim().to_string());
        }
    }
    GuestOutcome::Silent
}

/// The last `n` lines of the console, for error messages.
pub fn console_tail(console: &str, n: usize) -> String {
    let lines: Vec<&str> = console
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.trim().is_empty())
        .collect();
    let from = lines.len().saturating_sub(n);
    lines[from..]
        .iter()
        .map(|l| format!("  | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks the guest's symbol table dump and returns it without the serial line's carriage
/// returns.
pub fn clean_symbols(raw: &[u8]) -> Result<String> {
    let text = String::from_utf8_lossy(raw).replace('\r', "");
    let text_symbols = text
        .lines()
        .filter(|l| matches!(l.split_whitespace().nth(1), Some("t" | "T")))
        .count();
    if text_symbols < 100 {
        bail!(
            "the symbol table has only {text_symbols} text symbols (for a kernel built \
             without CONFIG_KALLSYMS, give its System.map with --system-map)"
        );
    }
    // Read as every user of the cached table will read it: a dump that lost a line break on its
    // way out of the guest (two symbols on one line) must not become the cached table.
    crate::kernel_parts::SymbolTable::parse(&text)?;
    Ok(text)
}

pub fn read_console(path: &Path) -> Result<String> {
    let raw = std::fs::read(path)
        .with_context(|| format!("cannot read the guest console {}", path.display()))?;
    Ok(String::from_utf8_lossy(&raw).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helpers_last_report_wins() {
        let c = "boot\r\nosmeter-guest: exit 0\r\nosmeter-guest: exit 3\r\n[ 1.0] reboot: Power down\r\n";
        assert_eq!(outcome(c), GuestOutcome::Exited(3));
        assert_eq!(
            outcome("osmeter-guest: killed by signal 9\n"),
            GuestOutcome::Killed(9)
        );
        assert_eq!(
            outcome("osmeter-guest: cannot run /usr/bin/x: No such file or directory\n"),
            GuestOutcome::CannotRun("/usr/bin/x: No such file or directory".into())
        );
        assert_eq!(
            outcome("Kernel panic - not syncing: VFS"),
            GuestOutcome::Silent
        );
    }

    #[test]
    fn the_tail_keeps_the_last_non_empty_lines() {
        let t = console_tail("a\r\n\r\nb\nc\n\n", 2);
        assert_eq!(t, "  | b\n  | c");
    }

    #[test]
    fn a_symbol_dump_without_text_symbols_is_refused() {
        assert!(clean_symbols(b"0000 A x\r\n").is_err());
        let good: String = (0..200)
            .map(|i| format!("ffffffff81{i:06x} T f{i}\r\n"))
            .collect();
        let clean = clean_symbols(good.as_bytes()).unwrap();
        assert!(!clean.contains('\r'));
        assert_eq!(clean.lines().count(), 200);
    }

    #[test]
    fn the_command_line_asks_for_a_repeatable_guest() {
        let p = Path::new("/x");
        let cfg = GuestConfig {
            qemu: p,
            kernel: p,
            initrd: p,
            memory_mib: 256,
            plugin: Some((Path::new("/p.so"), 3)),
            mode: PluginMode::Trace,
            append: "mitigations=off",
            cpu: Some("Skylake-Client"),
            console: p,
            symbols: p,
        };
        let args: Vec<String> = cfg
            .command()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let joined = args.join(" ");
        assert!(joined.contains("-icount shift=0,sleep=off"));
        assert!(joined.contains("-smp 1"));
        assert!(joined.contains("/p.so,fd=3,ram=268435456,mode=trace"));
        assert!(joined.contains("initramfs_async=0 mitigations=off"));
        assert!(joined.contains("-cpu Skylake-Client"));
        assert!(joined.contains("size=268435456"));
        assert!(joined.contains("nokaslr"));
        assert!(joined.contains("-seed 1"), "RDRAND must repeat: {joined}");
    }
}
