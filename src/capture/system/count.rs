//! A counting boot: the guest runs with the plugin in count mode, which writes the running
//! totals of instructions, loads and stores (user and kernel apart) at every marker the guest
//! executes. What the windows mean is up to the caller; this boots, collects the totals, the
//! console and what the guest wrote on its second serial port, and cleans up.

use super::capture::Watchdog;
use super::kernel::Kernel;
use super::qemu::{self, GuestConfig};
use super::PLUGIN;
use anyhow::{bail, Context, Result};
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// Running totals at a marker; index 0 user, 1 kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub instructions: [u64; 2],
    pub loads: [u64; 2],
    pub stores: [u64; 2],
}

impl Totals {
    /// What happened between `earlier` and this marker.
    pub fn since(&self, earlier: &Totals) -> Totals {
        let d = |a: [u64; 2], b: [u64; 2]| [a[0].wrapping_sub(b[0]), a[1].wrapping_sub(b[1])];
        Totals {
            instructions: d(self.instructions, earlier.instructions),
            loads: d(self.loads, earlier.loads),
            stores: d(self.stores, earlier.stores),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    /// 1 opens a window, 2 closes it.
    pub code: u8,
    pub totals: Totals,
}

/// The plugin's lines: `mark CODE UI KI UL KL US KS`.
pub fn parse_marks(text: &str) -> Result<Vec<Mark>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let nums: Vec<u64> = words
                .iter()
                .skip(1)
                .map(|w| w.parse::<u64>())
                .collect::<std::result::Result<_, _>>()
                .with_context(|| format!("the QEMU plugin wrote a bad count line {line:?}"))?;
            if words.first() != Some(&"mark") || nums.len() != 7 {
                bail!("the QEMU plugin wrote a bad count line {line:?}");
            }
            Ok(Mark {
                code: nums[0] as u8,
                totals: Totals {
                    instructions: [nums[1], nums[2]],
                    loads: [nums[3], nums[4]],
                    stores: [nums[5], nums[6]],
                },
            })
        })
        .collect()
}

pub struct CountBoot<'a> {
    pub qemu: &'a Path,
    pub kernel: &'a Kernel,
    pub initrd: &'a Path,
    pub memory_mib: u32,
    pub append: &'a str,
    pub cpu: Option<&'a str>,
    pub timeout: Duration,
    /// Where the plugin, the console and the report port go (the caller's scratch directory).
    pub scratch: &'a Path,
}

pub struct Counted {
    pub marks: Vec<Mark>,
    pub console: String,
    /// What the guest wrote to its second serial port.
    pub report: String,
    pub timed_out: bool,
    pub status: std::process::ExitStatus,
    /// The kernel command line the guest booted with.
    pub cmdline: String,
    /// QEMU's own complaints (a kernel it cannot load, say).
    pub qemu_errors: String,
}

/// `qemu-system-x86_64 --version`, first line.
pub fn qemu_version(qemu: &Path) -> String {
    crate::programs::command(qemu)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Boots the guest and collects the totals at its markers: from the plugin's count lines, or,
/// with a `sink`, from its stream of every reference in every window, which the sink sees too.
pub fn boot(req: &CountBoot, sink: Option<&mut dyn super::windows::WindowSink>) -> Result<Counted> {
    let plugin = req.scratch.join("osmeter-trace.so");
    let console = req.scratch.join("console.txt");
    let report = req.scratch.join("report.txt");
    let qemu_errors = req.scratch.join("qemu-stderr.txt");
    std::io::Write::write_all(&mut crate::scratch::create_new(&plugin)?, PLUGIN)?;
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot create the count pipe");
    }
    let (rfd, wfd) = (fds[0], fds[1]);
    // SAFETY: rfd is a fresh descriptor we own.
    let mut reader = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(rfd) };
    let cfg = GuestConfig {
        qemu: req.qemu,
        kernel: &req.kernel.image,
        initrd: req.initrd,
        memory_mib: req.memory_mib,
        plugin: Some((&plugin, 3)),
        mode: if sink.is_some() {
            qemu::PluginMode::Windows
        } else {
            qemu::PluginMode::Count
        },
        append: req.append,
        cpu: req.cpu,
        console: &console,
        symbols: &report,
    };
    let mut cmd = cfg.command();
    super::qemu::wire_plugin_pipe(&mut cmd, wfd, &qemu_errors)?;
    let spawned = cmd.spawn();
    // SAFETY: the parent's copy of the write end is ours to close; QEMU has its own.
    unsafe { libc::close(wfd) };
    let mut child = spawned
        .map_err(|e| crate::system::processes::cannot_start(&req.qemu.display().to_string(), &e))?;
    let watchdog = Watchdog::start(child.id(), req.timeout)?;
    let marks = match sink {
        Some(sink) => super::windows::read(&mut reader, sink),
        None => {
            let mut text = String::new();
            reader
                .read_to_string(&mut text)
                .map_err(anyhow::Error::from)
                .and_then(|_| parse_marks(&text))
        }
    };
    drop(reader);
    let status = child.wait().context("waiting for QEMU")?;
    let timed_out = watchdog.stop();
    // A guest stopped by the watchdog or by Ctrl-C may leave its last record cut: what it
    // counted before says how far it got, and the error that matters is the stop itself.
    let marks = if timed_out || crate::interrupt::requested() {
        marks.unwrap_or_default()
    } else {
        marks.context("cannot read the QEMU plugin's counts")?
    };
    Ok(Counted {
        marks,
        console: qemu::read_console(&console).unwrap_or_default(),
        report: String::from_utf8_lossy(&std::fs::read(&report).unwrap_or_default())
            .replace('\r', ""),
        timed_out,
        status,
        cmdline: cfg.cmdline(),
        qemu_errors: std::fs::read_to_string(&qemu_errors).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_lines_become_totals_and_differences() {
        let m = parse_marks("mark 1 10 20 3 4 5 6\nmark 2 15 120 4 14 5 7\n").unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].code, m[1].code), (1, 2));
        let d = m[1].totals.since(&m[0].totals);
        assert_eq!(d.instructions, [5, 100]);
        assert_eq!(d.loads, [1, 10]);
        assert_eq!(d.stores, [0, 1]);
        assert!(parse_marks("mark 1 2 3\n").is_err());
        assert!(parse_marks("mask 1 2 3 4 5 6 7\n").is_err());
        assert!(parse_marks("mark x 2 3 4 5 6 7\n").is_err());
    }
}
