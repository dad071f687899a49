//! A short look at the machine, read from /proc: load, each CPU's time by state, which tasks are
//! runnable where, and each task's CPU time. The run takes one before and one after it measures,
//! and [`super::watch`] takes them while it measures, to say who else used the measuring CPU.
//!
//! Parsing is done by pure functions tested on fixed texts; the readers return what could be read
//! (a /proc that hides other users' tasks gives fewer tasks, not an error).

use serde::{Deserialize, Serialize};

/// What the machine looked like at one instant.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Look {
    /// Load averages over 1, 5 and 15 minutes.
    pub loadavg: [f64; 3],
    /// Tasks in state R on each CPU (by index), osmeter's own left out.
    pub runnable: Vec<u32>,
    /// Each CPU's clock in MHz (by index), where /proc/cpuinfo or cpufreq states it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mhz: Vec<f64>,
}

impl Look {
    /// Reads the machine now; `own` tells osmeter's own processes apart.
    pub fn now(own: u32) -> Look {
        let tasks = scan_tasks();
        let ours = own_tree(&tasks, own);
        let cpus = crate::placement::allowed_cpus()
            .into_iter()
            .max()
            .map_or(1, |c| c + 1);
        let mut runnable = vec![0; cpus];
        for t in tasks
            .iter()
            .filter(|t| t.state == 'R' && !ours.contains(&t.tgid))
        {
            if let Some(n) = runnable.get_mut(t.cpu) {
                *n += 1;
            }
        }
        Look {
            loadavg: read("/proc/loadavg")
                .and_then(|t| parse_loadavg(&t))
                .unwrap_or_default(),
            runnable,
            mhz: read("/proc/cpuinfo")
                .map(|t| parse_mhz(&t))
                .unwrap_or_default(),
        }
    }
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

pub fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut it = text.split_whitespace().map(|w| w.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// The `cpu MHz` lines of /proc/cpuinfo, in CPU order.
pub fn parse_mhz(text: &str) -> Vec<f64> {
    text.lines()
        .filter(|l| l.starts_with("cpu MHz"))
        .filter_map(|l| l.split_once(':')?.1.trim().parse().ok())
        .collect()
}

/// One task (thread) as its /proc stat line states it.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub tid: u32,
    /// The process it belongs to.
    pub tgid: u32,
    /// The process's parent.
    pub ppid: u32,
    pub comm: String,
    pub state: char,
    /// User and system time so far, in USER_HZ ticks.
    pub ticks: u64,
    /// The CPU it last ran on.
    pub cpu: usize,
}

/// Parses a `/proc/PID/task/TID/stat` line: `tid (comm) state ppid ...`, utime and stime the 14th
/// and 15th fields, the last CPU the 39th. The command may hold spaces and parentheses, so the
/// fields are counted from the last `)`.
pub fn parse_task_stat(text: &str, tgid: u32) -> Option<Task> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let tid = text[..open].trim().parse().ok()?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3).copied();
    let num = |n: usize| field(n)?.parse::<u64>().ok();
    Some(Task {
        tid,
        tgid,
        ppid: num(4)? as u32,
        comm,
        state: field(3)?.chars().next()?,
        ticks: num(14)? + num(15)?,
        cpu: num(39)? as usize,
    })
}

/// Every task on the machine that /proc shows.
pub fn scan_tasks() -> Vec<Task> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in procs.flatten() {
        let Some(tgid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(threads) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in threads.flatten() {
            if let Some(task) = std::fs::read_to_string(t.path().join("stat"))
                .ok()
                .and_then(|s| parse_task_stat(&s, tgid))
            {
                out.push(task);
            }
        }
    }
    out
}

/// The processes that are `own` or descend from it: osmeter, its measuring processes and their
/// partners, whose use of the CPU is the measurement, not a disturbance of it.
pub fn own_tree(tasks: &[Task], own: u32) -> std::collections::BTreeSet<u32> {
    let parent: std::collections::BTreeMap<u32, u32> =
        tasks.iter().map(|t| (t.tgid, t.ppid)).collect();
    let mut ours = std::collections::BTreeSet::new();
    for &tgid in parent.keys() {
        let mut at = tgid;
        // The chain ends at init (1) or the kernel's threads (0); a bound guards a cycle seen
        // across a pid reused while scanning.
        for _ in 0..64 {
            if at == own {
                ours.insert(tgid);
                break;
            }
            match parent.get(&at) {
                Some(&p) if p != at && p > 0 => at = p,
                _ => break,
            }
        }
    }
    ours
}

/// Each CPU's busy and total time in USER_HZ ticks, and its stolen time, from /proc/stat's `cpuN`
/// lines (user nice system idle iowait irq softirq steal ...).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub busy: u64,
    pub total: u64,
    pub steal: u64,
}

pub fn parse_cpu_ticks(text: &str) -> Vec<(usize, CpuTicks)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("cpu")?;
            let (n, values) = rest.split_once(' ')?;
            let cpu = n.parse::<usize>().ok()?;
            let v: Vec<u64> = values
                .split_whitespace()
                .take(8)
                .filter_map(|w| w.parse().ok())
                .collect();
            let at = |i: usize| v.get(i).copied().unwrap_or(0);
            let idle = at(3) + at(4);
            let total: u64 = v.iter().sum();
            Some((
                cpu,
                CpuTicks {
                    busy: total - idle,
                    total,
                    steal: at(7),
                },
            ))
        })
        .collect()
}

/// Each CPU's ticks now.
pub fn cpu_ticks() -> Vec<(usize, CpuTicks)> {
    read("/proc/stat")
        .map(|t| parse_cpu_ticks(&t))
        .unwrap_or_default()
}

/// Each of `cpus`'s busy share (time not idle) over `over`, for those /proc/stat states.
pub fn busy_shares(cpus: &[usize], over: std::time::Duration) -> Vec<(usize, f64)> {
    let before = cpu_ticks();
    std::thread::sleep(over);
    let after = cpu_ticks();
    cpus.iter()
        .filter_map(|&c| {
            let a = before.iter().find(|(n, _)| *n == c)?.1;
            let b = after.iter().find(|(n, _)| *n == c)?.1;
            let total = b.total.saturating_sub(a.total);
            let busy = b.busy.saturating_sub(a.busy);
            Some((
                c,
                if total > 0 {
                    busy as f64 / total as f64
                } else {
                    0.0
                },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_line_with_spaces_and_parentheses_in_its_command() {
        let line = "4242 (my (odd) cmd) R 17 4242 4242 0 -1 4194304 100 0 0 0 250 30 0 0 20 0 1 0 \
                    999 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        let t = parse_task_stat(line, 4242).unwrap();
        assert_eq!(t.tid, 4242);
        assert_eq!(t.comm, "my (odd) cmd");
        assert_eq!((t.state, t.ppid, t.ticks, t.cpu), ('R', 17, 280, 1));
        assert_eq!(parse_task_stat("12 (x) S", 12), None);
    }

    #[test]
    fn the_own_tree_holds_descendants_and_nothing_else() {
        let task = |tgid, ppid| Task {
            tid: tgid,
            tgid,
            ppid,
            comm: String::new(),
            state: 'S',
            ticks: 0,
            cpu: 0,
        };
        // 100 is osmeter; 101 its worker, 102 the worker's partner; 50 and 200 strangers.
        let tasks = [
            task(1, 0),
            task(50, 1),
            task(100, 50),
            task(101, 100),
            task(102, 101),
            task(200, 1),
        ];
        let ours: Vec<u32> = own_tree(&tasks, 100).into_iter().collect();
        assert_eq!(ours, vec![100, 101, 102]);
    }

    #[test]
    fn cpu_lines_give_busy_total_and_steal() {
        let text =
            "cpu  10 0 5 100 2 0 1 3 0 0\ncpu0 4 1 2 50 1 0 0 2 0 0\ncpu1 6 0 3 50 1 0 1 1\n\
                    intr 5\n";
        let got = parse_cpu_ticks(text);
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0],
            (
                0,
                CpuTicks {
                    busy: 9,
                    total: 60,
                    steal: 2
                }
            )
        );
        assert_eq!(got[1].1.busy, 11);
    }

    #[test]
    fn load_and_clock() {
        assert_eq!(
            parse_loadavg("0.92 1.46 1.63 1/86 13460\n"),
            Some([0.92, 1.46, 1.63])
        );
        assert_eq!(parse_loadavg("x"), None);
        let info = "processor\t: 0\ncpu MHz\t\t: 2445.424\nprocessor\t: 1\ncpu MHz\t\t: 2000\n";
        assert_eq!(parse_mhz(info), vec![2445.424, 2000.0]);
    }

    #[test]
    fn this_process_is_seen_and_is_its_own() {
        let me = std::process::id();
        let tasks = scan_tasks();
        assert!(tasks.iter().any(|t| t.tgid == me), "{} tasks", tasks.len());
        assert!(own_tree(&tasks, me).contains(&me));
        assert!(!cpu_ticks().is_empty());
    }
}
