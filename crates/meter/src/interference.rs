//! Interference seen during a sample: interrupts on any CPU, context switches of the measuring
//! thread, and time the hypervisor stole.
//!
//! Read around every sample, so the files stay open and are re-read from offset 0 with pread into a
//! buffer that is reused; parsing is done by pure functions tested on fixed texts.

use super::InterferenceReading;
use std::fs::File;
use std::os::unix::fs::FileExt;

pub struct InterferenceReader {
    interrupts: Option<File>,
    stat: Option<File>,
    /// The reading thread's schedstat, with the thread it belongs to.
    schedstat: Option<(libc::pid_t, File)>,
    buf: Vec<u8>,
    /// USER_HZ: the unit of /proc/stat times.
    ticks_per_second: f64,
    /// Steal is read for this CPU (the measuring one) when set, else for all CPUs together.
    steal_cpu: Option<usize>,
}

impl InterferenceReader {
    pub fn new() -> Self {
        Self::for_cpu(None)
    }

    /// A reader whose steal time is that of one CPU: time stolen from the other CPU does not
    /// disturb a thread pinned to this one.
    pub fn for_cpu(steal_cpu: Option<usize>) -> Self {
        InterferenceReader {
            interrupts: File::open("/proc/interrupts").ok(),
            stat: File::open("/proc/stat").ok(),
            schedstat: None,
            buf: Vec::with_capacity(64 * 1024),
            ticks_per_second: osmeter_base::system::ticks_per_second(),
            steal_cpu,
        }
    }

    pub fn read(&mut self) -> InterferenceReading {
        let mut out = InterferenceReading::default();
        if let Some(text) = read_whole(self.interrupts.as_ref(), &mut self.buf) {
            let irq = parse_interrupts(text);
            out.irq_timer = irq.timer;
            out.irq_other = irq.other;
        }
        let cpu = self.steal_cpu;
        if let Some(ticks) =
            read_whole(self.stat.as_ref(), &mut self.buf).and_then(|t| parse_steal(t, cpu))
        {
            out.steal_ms = ticks as f64 * 1000.0 / self.ticks_per_second;
        }
        let (voluntary, involuntary) = thread_context_switches();
        out.csw_voluntary = voluntary;
        out.csw_involuntary = involuntary;
        out.run_delay_ns = self.run_delay();
        out
    }

    /// The calling thread's time spent runnable but waiting for a CPU, in ns. The file is opened
    /// again when another thread reads (thread-self names the thread that opened it).
    fn run_delay(&mut self) -> Option<u64> {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        if self.schedstat.as_ref().map(|(t, _)| *t) != Some(tid) {
            self.schedstat = File::open("/proc/thread-self/schedstat")
                .ok()
                .map(|f| (tid, f));
        }
        let text = read_whole(self.schedstat.as_ref().map(|(_, f)| f), &mut self.buf)?;
        parse_run_delay(text)
    }
}

/// The second field of a schedstat line: nanoseconds spent waiting on a run queue.
fn parse_run_delay(text: &str) -> Option<u64> {
    text.split_whitespace().nth(1)?.parse().ok()
}

impl Default for InterferenceReader {
    fn default() -> Self {
        Self::new()
    }
}

/// The whole file from offset 0, as text. /proc files are generated on each read and a seq_file
/// read fills the buffer unless the text ends, so a short read is the end: one call when the buffer
/// is big enough, which it becomes after the first read.
fn read_whole<'a>(file: Option<&File>, buf: &'a mut Vec<u8>) -> Option<&'a str> {
    let file = file?;
    buf.clear();
    loop {
        let len = buf.len();
        if buf.capacity() - len < 4096 {
            buf.reserve(buf.capacity().max(4096));
        }
        let space = buf.capacity() - len;
        buf.resize(len + space, 0);
        match file.read_at(&mut buf[len..], len as u64) {
            Ok(n) => {
                buf.truncate(len + n);
                if n < space {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => buf.truncate(len),
            Err(_) => return None,
        }
    }
    std::str::from_utf8(buf).ok()
}

/// Voluntary and involuntary context switches of the calling thread so far.
fn thread_context_switches() -> (u64, u64) {
    // SAFETY: getrusage fills the zeroed struct it is given.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut ru) != 0 {
            return (0, 0);
        }
        (ru.ru_nvcsw as u64, ru.ru_nivcsw as u64)
    }
}

/// Interrupt totals over all CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrqTotals {
    /// The local timer ("LOC") and every line whose description mentions a timer.
    pub timer: u64,
    /// Every other numbered or named line.
    pub other: u64,
}

/// Lines that count errors or spurious events rather than interrupts delivered to a CPU.
fn is_error_line(name: &str) -> bool {
    name.eq_ignore_ascii_case("ERR") || name.eq_ignore_ascii_case("MIS")
}

/// Sums /proc/interrupts. The header names the CPUs; each line is `NAME:`, up to one count per CPU
/// (some lines have fewer), then a free-text description.
pub fn parse_interrupts(text: &str) -> IrqTotals {
    let mut lines = text.lines();
    let cpus = lines.next().map_or(0, |h| h.split_whitespace().count());
    let mut out = IrqTotals::default();
    for line in lines {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || is_error_line(name) {
            continue;
        }
        let mut sum = 0u64;
        let mut counts = 0;
        let mut description = "";
        let mut rest = rest.trim_start();
        while counts < cpus && !rest.is_empty() {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            match rest[..end].parse::<u64>() {
                Ok(v) => {
                    sum += v;
                    counts += 1;
                    rest = rest[end..].trim_start();
                }
                Err(_) => break,
            }
        }
        if !rest.is_empty() {
            description = rest;
        }
        if counts == 0 {
            continue;
        }
        let timer = name == "LOC" || description.to_ascii_lowercase().contains("timer");
        if timer {
            out.timer += sum;
        } else {
            out.other += sum;
        }
    }
    out
}

/// Steal time in USER_HZ ticks: the eighth value of the `cpuN` line of one CPU, or of the aggregate
/// `cpu` line.
pub fn parse_steal(text: &str, cpu: Option<usize>) -> Option<u64> {
    let prefix = match cpu {
        Some(n) => format!("cpu{n} "),
        None => "cpu ".to_string(),
    };
    let line = text.lines().find(|l| l.starts_with(&prefix))?;
    line.split_whitespace().nth(8)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_delay_is_the_second_schedstat_field_and_this_thread_has_one() {
        assert_eq!(parse_run_delay("1234567 89012 34\n"), Some(89012));
        assert_eq!(parse_run_delay("1234567\n"), None);
        assert_eq!(parse_run_delay("x y z"), None);
        // This kernel keeps schedstat (CI's does; a kernel without CONFIG_SCHED_INFO would not).
        let mut r = InterferenceReader::new();
        let first = r.read().run_delay_ns;
        if std::path::Path::new("/proc/thread-self/schedstat").exists() {
            assert!(first.is_some());
            // Read from another thread, it is that thread's own.
            let other = std::thread::spawn(move || r.read().run_delay_ns)
                .join()
                .unwrap();
            assert!(other.is_some());
        }
    }

    const INTERRUPTS: &str = "\
           CPU0       CPU1
  0:         35          0   IO-APIC   2-edge      timer
  1:          9          1   IO-APIC   1-edge      i8042
  8:          0          0   IO-APIC   8-edge      rtc0
 24:        100         20  PCI-MSI 512000-edge      ahci[0000:00:1f.2]
NMI:          3          4   Non-maskable interrupts
LOC:     266597     268135   Local timer interrupts
RES:       9204       7542   Rescheduling interrupts
HYP:         80
ERR:          7
MIS:          2
";

    #[test]
    fn interrupts_split_timer_from_the_rest() {
        let t = parse_interrupts(INTERRUPTS);
        assert_eq!(t.timer, 35 + 266_597 + 268_135);
        // i8042 10, rtc0 0, ahci 120, NMI 7, RES 16746, HYP 80 (one column only); ERR and MIS not.
        assert_eq!(t.other, 10 + 120 + 7 + 16_746 + 80);
    }

    #[test]
    fn interrupt_descriptions_that_start_with_digits_are_not_counts() {
        // Only as many counts as CPUs are read; "2-edge" never parses as a number anyway.
        let text = "   CPU0\n 40: 5 7 something 9\n";
        // One CPU: 5 is the count, "7 something 9" is the description.
        assert_eq!(parse_interrupts(text), IrqTotals { timer: 0, other: 5 });
    }

    #[test]
    fn interrupts_of_an_empty_or_odd_file() {
        assert_eq!(parse_interrupts(""), IrqTotals::default());
        assert_eq!(
            parse_interrupts("  CPU0 CPU1\nnot a line\nFOO: bar\n"),
            IrqTotals::default()
        );
    }

    #[test]
    fn steal_is_the_eighth_value() {
        let text = "cpu  188928 0 7333 92142 964 0 37 239 0 0\n\
                    cpu0 93995 0 3237 47381 119 0 7 116 0 0\n\
                    intr 1 2 3\n";
        assert_eq!(parse_steal(text, None), Some(239));
        assert_eq!(parse_steal("cpu0 1 2 3 4 5 6 7 8\n", None), None);
        assert_eq!(
            parse_steal("cpu  1 2 3 4 5 6 7 8 9\ncpu0 1 2 3 4 5 6 7 5\n", Some(0)),
            Some(5)
        );
        assert_eq!(parse_steal("cpu0 1 2 3 4 5 6 7 5\n", Some(1)), None);
        // Old kernels without the steal column.
        assert_eq!(parse_steal("cpu  1 2 3 4 5 6 7\n", None), None);
    }

    #[test]
    fn reader_sees_live_counters_move() {
        let mut r = InterferenceReader::new();
        let a = r.read();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let b = r.read();
        // The sleep is a voluntary switch; some CPU takes timer ticks within 30 ms.
        assert!(b.csw_voluntary > a.csw_voluntary, "{a:?} {b:?}");
        assert!(b.irq_timer + b.irq_other > 0, "{b:?}");
        assert!(b.steal_ms >= a.steal_ms);
    }
}
