//! What the whole machine did while a workload ran: where every CPU's time went (/proc/stat: user,
//! kernel, interrupts, idle, steal) and how many interrupts each device raised (/proc/interrupts).
//! A workload's own processes are counted apart, through their cgroup; these figures also
//! take in kernel threads, interrupt handlers and other tenants, which is what the seeds meant by
//! time in interrupts and idle.

use super::counts::CounterValues;
use osmeter_base::system::ticks_per_second;
use std::collections::BTreeMap;

/// Whether an event is one of the machine's CPU times, read from /proc/stat in clock ticks (10 ms
/// at the usual USER_HZ of 100). A sample shorter than a tick reads none or a whole one, so over
/// samples and rounds these are averaged, never taken at the median: the median of 0, 0, 0, 10 ms
/// and 0 is 0, where the mean says a fifth of a tick fell in that state.
pub fn tick_counted(event: &str) -> bool {
    event.starts_with("machine-") && event.ends_with("-ns")
}

/// Cumulative time of all CPUs together, in USER_HZ ticks, by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// The aggregate `cpu` line of /proc/stat (fields missing on old kernels read as 0).
    pub fn parse(stat: &str) -> Option<CpuTimes> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        (v.len() >= 4).then(|| CpuTimes {
            user: at(0),
            nice: at(1),
            system: at(2),
            idle: at(3),
            iowait: at(4),
            irq: at(5),
            softirq: at(6),
            steal: at(7),
        })
    }

    /// Time spent in each state between `before` and `self`, nanoseconds summed over CPUs, under
    /// the names the figures use (`machine-...-ns`).
    pub fn delta_ns(&self, before: &CpuTimes, ticks_per_second: f64) -> CounterValues {
        let ns = |a: u64, b: u64| a.saturating_sub(b) as f64 * 1e9 / ticks_per_second;
        [
            (
                "machine-user-ns",
                ns(self.user + self.nice, before.user + before.nice),
            ),
            ("machine-kernel-ns", ns(self.system, before.system)),
            ("machine-irq-ns", ns(self.irq, before.irq)),
            ("machine-softirq-ns", ns(self.softirq, before.softirq)),
            ("machine-idle-ns", ns(self.idle, before.idle)),
            ("machine-iowait-ns", ns(self.iowait, before.iowait)),
            ("machine-steal-ns", ns(self.steal, before.steal)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// Interrupts by source, summed over CPUs: a device (`virtio0-requests`, `ahci[0000:00:1f.2]`)
/// for numbered lines, the line's own name for the architecture's (`LOC`, `RES`, `TLB`).
pub fn interrupts_by_source(text: &str) -> BTreeMap<String, u64> {
    let mut lines = text.lines();
    let cpus = lines.next().map_or(0, |h| h.split_whitespace().count());
    let mut out = BTreeMap::new();
    for line in lines {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || name == "ERR" || name == "MIS" {
            continue;
        }
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let counts: Vec<u64> = fields
            .iter()
            .take(cpus)
            .map_while(|f| f.parse().ok())
            .collect();
        if counts.is_empty() {
            continue;
        }
        let described = &fields[counts.len()..];
        // Numbered lines end with the device that requested them; named ones are described in
        // words ("Local timer interrupts"), so their short name is the clearer key.
        let source = match (name.parse::<u64>().is_ok(), described.last()) {
            (true, Some(device)) => device.to_string(),
            _ => name.to_string(),
        };
        *out.entry(source).or_insert(0) += counts.iter().sum::<u64>();
    }
    out
}

/// Interrupts raised between two readings, by source, as counter values named `irq:SOURCE`;
/// sources that raised none are left out.
pub fn interrupt_delta(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> CounterValues {
    after
        .iter()
        .filter_map(|(k, &a)| {
            let d = a.saturating_sub(before.get(k).copied().unwrap_or(0));
            (d > 0).then(|| (format!("irq:{k}"), d as f64))
        })
        .collect()
}

/// One reading of the machine, for a delta later.
#[derive(Clone, Debug, Default)]
pub struct MachineReading {
    pub cpu: Option<CpuTimes>,
    pub interrupts: BTreeMap<String, u64>,
}

impl MachineReading {
    pub fn now() -> MachineReading {
        MachineReading {
            cpu: std::fs::read_to_string("/proc/stat")
                .ok()
                .and_then(|t| CpuTimes::parse(&t)),
            interrupts: std::fs::read_to_string("/proc/interrupts")
                .map(|t| interrupts_by_source(&t))
                .unwrap_or_default(),
        }
    }

    /// What happened since `before`: CPU time by state and interrupts by source.
    pub fn since(&self, before: &MachineReading) -> CounterValues {
        let mut out = interrupt_delta(&before.interrupts, &self.interrupts);
        if let (Some(a), Some(b)) = (&self.cpu, &before.cpu) {
            out.extend(a.delta_ns(b, ticks_per_second()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERRUPTS: &str = "\
           CPU0       CPU1
  1:          9          1   IO-APIC   1-edge      i8042
 24:        100         20   PCI-MSI 512000-edge      virtio0-requests
 25:          3          4   PCI-MSI 512001-edge      virtio0-requests
NMI:          3          4   Non-maskable interrupts
LOC:     266597     268135   Local timer interrupts
HYP:         80
ERR:          7
";

    #[test]
    fn interrupts_are_named_by_device_and_summed_over_cpus() {
        let m = interrupts_by_source(INTERRUPTS);
        assert_eq!(m["i8042"], 10);
        // Two queues of one device add up under the device's name.
        assert_eq!(m["virtio0-requests"], 127);
        assert_eq!(m["LOC"], 266_597 + 268_135);
        assert_eq!(m["NMI"], 7);
        // A line with fewer columns than CPUs still counts.
        assert_eq!(m["HYP"], 80);
        assert!(!m.contains_key("ERR"));
    }

    #[test]
    fn interrupt_delta_keeps_only_sources_that_fired() {
        let a = interrupts_by_source(INTERRUPTS);
        let mut b = a.clone();
        *b.get_mut("LOC").unwrap() += 250;
        b.insert("virtio1-input.0".into(), 5);
        let d = interrupt_delta(&a, &b);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d["irq:LOC"], 250.0);
        assert_eq!(d["irq:virtio1-input.0"], 5.0);
    }

    #[test]
    fn cpu_times_delta_in_nanoseconds() {
        let a = CpuTimes::parse("cpu  100 5 50 1000 3 2 1 0 0 0\ncpu0 1 2 3 4\n").unwrap();
        let b = CpuTimes::parse("cpu  110 5 70 1100 3 4 2 1 0 0\n").unwrap();
        let d = b.delta_ns(&a, 100.0);
        assert_eq!(d["machine-user-ns"], 100e6);
        assert_eq!(d["machine-kernel-ns"], 200e6);
        assert_eq!(d["machine-irq-ns"], 20e6);
        assert_eq!(d["machine-softirq-ns"], 10e6);
        assert_eq!(d["machine-idle-ns"], 1000e6);
        assert_eq!(d["machine-steal-ns"], 10e6);
        assert_eq!(d["machine-iowait-ns"], 0.0);
        assert!(CpuTimes::parse("intr 1 2\n").is_none());
        // A kernel without the later columns.
        assert_eq!(CpuTimes::parse("cpu 1 2 3 4\n").unwrap().steal, 0);
    }

    #[test]
    fn live_readings_move() {
        let a = MachineReading::now();
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(50) {
            std::hint::black_box(0);
        }
        let d = MachineReading::now().since(&a);
        let total: f64 = d
            .iter()
            .filter(|(k, _)| k.starts_with("machine-"))
            .map(|(_, v)| v)
            .sum();
        // 50 ms of wall time on every CPU is at least some ticks somewhere.
        assert!(total > 0.0, "{d:?}");
    }
}
