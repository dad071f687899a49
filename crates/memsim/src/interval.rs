//! Per-interval statistics: miss rates and MCPI of a machine over every N references of the
//! trace, so that a program's phases show.
//!
//! `Intervals` wraps whatever simulates the machine (the plain machine or the attributed one),
//! cuts each batch at the interval boundaries and takes the difference of the machine's counts
//! across each interval. Counts are exact: the machine's statistics are exact between any two
//! references.

use super::machine::{ModeStats, Stats};
use super::sweep::Simulator;
use super::trace::packed::Refs;
use serde::{Deserialize, Serialize};

/// The shortest interval: shorter ones would make the result larger than the trace is useful.
pub const MIN_INTERVAL: u64 = 1000;

/// Memory one interval of one machine takes until the run is saved, generously: the point, its
/// JSON in the stored document and its line of text (measured: 2000 intervals of a 2 M-reference
/// trace raised the peak by 1.6 MB, 0.8 KiB each).
pub const INTERVAL_BYTES: u64 = 1024;

/// One interval of one machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IntervalPoint {
    /// Index in the trace of the interval's first reference.
    pub first: u64,
    pub references: u64,
    pub instructions: u64,
    pub system_instructions: u64,
    /// Stall cycles per instruction of the interval; user and system divide by all its
    /// instructions, so they add up to the total (as in the machine table).
    pub mcpi: IntervalMcpi,
    /// First-level miss rates over all references of the interval (0 without accesses).
    pub l1i_miss_rate: f64,
    pub l1d_miss_rate: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IntervalMcpi {
    pub user: f64,
    pub system: f64,
    pub total: f64,
}

/// Every interval of one machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IntervalResult {
    pub machine: String,
    /// References per interval (the last may be shorter).
    pub every: u64,
    pub intervals: Vec<IntervalPoint>,
    /// The intervals stopped at the most that fit in memory; the rest of the trace has none (the
    /// command refuses such a result and names an interval that fits).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_short: bool,
}

/// A simulator whose statistics can be read between batches.
pub(crate) trait Observed: Simulator {
    fn snapshot(&mut self) -> Stats;
    fn name(&self) -> String;
}

/// A simulator with its statistics taken every `every` references (or passed through).
pub(crate) struct Intervals<S> {
    inner: S,
    every: Option<u64>,
    left: u64,
    seen: u64,
    prev: Stats,
    points: Vec<IntervalPoint>,
    /// The most points kept (what fits in memory); past it the machine runs on without them.
    most: usize,
    cut_short: bool,
}

impl<S: Observed> Intervals<S> {
    pub fn new(inner: S, every: Option<u64>) -> Self {
        Intervals {
            inner,
            every,
            left: every.unwrap_or(0),
            seen: 0,
            prev: Stats::default(),
            points: Vec::new(),
            most: usize::MAX,
            cut_short: false,
        }
    }

    /// Keeps at most `most` intervals (None: no bound).
    pub fn at_most(mut self, most: Option<u64>) -> Self {
        self.most = most.map_or(usize::MAX, |m| usize::try_from(m).unwrap_or(usize::MAX));
        self
    }

    fn close(&mut self) {
        let every = self.every.unwrap_or(0);
        let now = self.inner.snapshot();
        let references = now.refs - self.prev.refs;
        if references == 0 {
            return;
        }
        let d = |f: &dyn Fn(&ModeStats) -> u64| -> [u64; 2] {
            [0, 1].map(|m| f(&now.mode[m]) - f(&self.prev.mode[m]))
        };
        let instr = d(&|m| m.instructions);
        let stall = d(&|m| m.stall.iter().sum());
        let all = instr[0] + instr[1];
        let rate = |misses: [u64; 2], accesses: [u64; 2]| {
            ratio(misses[0] + misses[1], accesses[0] + accesses[1])
        };
        self.points.push(IntervalPoint {
            first: self.seen - references,
            references,
            instructions: all,
            system_instructions: instr[1],
            mcpi: IntervalMcpi {
                user: ratio(stall[0], all),
                system: ratio(stall[1], all),
                total: ratio(stall[0] + stall[1], all),
            },
            l1i_miss_rate: rate(d(&|m| m.l1i.misses), d(&|m| m.l1i.accesses)),
            l1d_miss_rate: rate(d(&|m| m.l1d.misses), d(&|m| m.l1d.accesses)),
        });
        debug_assert!(references <= every.max(1) || every == 0);
        self.prev = now;
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

impl<S: Observed> Simulator for Intervals<S> {
    type Output = (S::Output, Option<IntervalResult>);

    fn reads_words(&self) -> bool {
        self.inner.reads_words()
    }

    fn run(&mut self, mut batch: Refs<'_>) {
        let Some(every) = self.every.filter(|_| !self.cut_short) else {
            return self.inner.run(batch);
        };
        while !batch.is_empty() {
            let n = batch
                .len()
                .min(usize::try_from(self.left).unwrap_or(usize::MAX));
            let (now, rest) = batch.split_at(n);
            self.inner.run(now);
            batch = rest;
            self.left -= n as u64;
            self.seen += n as u64;
            if self.left == 0 {
                self.close();
                self.left = every;
                if self.points.len() >= self.most {
                    self.cut_short = true;
                    return self.inner.run(batch);
                }
            }
        }
    }

    fn finish(mut self) -> Self::Output {
        let result = self.every.map(|every| {
            if !self.cut_short {
                self.close();
            }
            IntervalResult {
                machine: self.inner.name(),
                every,
                intervals: std::mem::take(&mut self.points),
                cut_short: self.cut_short,
            }
        });
        (self.inner.finish(), result)
    }
}

/// The intervals as a table, one line per interval.
pub fn render(results: &[IntervalResult]) -> String {
    let mut t = String::new();
    for r in results {
        t.push_str(&format!(
            "{}: every {} references\n      first reference   instr  %system   MCPI user  system   total   l1i miss  l1d miss\n",
            r.machine, r.every
        ));
        for p in &r.intervals {
            t.push_str(&format!(
                "  {:>19} {:>7} {:>7.1}% {:>11.4} {:>7.4} {:>7.4} {:>9.3}% {:>8.3}%\n",
                p.first,
                p.instructions,
                100.0 * ratio(p.system_instructions, p.instructions),
                p.mcpi.user,
                p.mcpi.system,
                p.mcpi.total,
                100.0 * p.l1i_miss_rate,
                100.0 * p.l1d_miss_rate
            ));
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memsim::config::preset;
    use crate::memsim::machine::Machine;
    use crate::memsim::trace::packed::Batch;
    use crate::memsim::trace::read_all;
    use crate::memsim::trace::synth::Synth;
    use crate::memsim::trace::Ref;

    #[test]
    fn intervals_stop_at_the_most_that_fit_and_the_machine_runs_on() {
        let refs = read_all(&mut Synth::new(25_000, 9)).unwrap();
        let cfg = preset("ds5000-200").unwrap();
        let mut whole = Machine::new(&cfg);
        whole.run(&refs);
        let mut sim = Intervals::new(Machine::new(&cfg), Some(1000)).at_most(Some(3));
        for b in refs.chunks(4096) {
            sim.run(Batch::from_refs(b).view());
        }
        let (stats, intervals) = sim.finish();
        assert_eq!(stats, whole.stats(), "every reference still simulated");
        let iv = intervals.unwrap();
        assert!(iv.cut_short);
        assert_eq!(iv.intervals.len(), 3);
    }

    #[test]
    fn intervals_add_up_to_the_whole_run_at_any_batching() {
        let refs = read_all(&mut Synth::new(25_000, 9)).unwrap();
        let cfg = preset("ds5000-200").unwrap();
        let mut whole = Machine::new(&cfg);
        whole.run(&refs);
        let whole = whole.stats();
        for (every, batch) in [(1000u64, 4096usize), (3000, 1000), (7777, 25_000)] {
            let mut sim = Intervals::new(Machine::new(&cfg), Some(every));
            for b in refs.chunks(batch) {
                sim.run(Batch::from_refs(b).view());
            }
            let (stats, intervals) = sim.finish();
            assert_eq!(stats, whole, "the wrapper changes nothing");
            let iv = intervals.unwrap();
            assert_eq!(iv.machine, "ds5000-200");
            let n = 25_000u64.div_ceil(every) as usize;
            assert_eq!(iv.intervals.len(), n, "every {every}");
            assert!(iv.intervals[..n - 1].iter().all(|p| p.references == every));
            let starts: Vec<u64> = iv.intervals.iter().map(|p| p.first).collect();
            assert!(starts
                .iter()
                .enumerate()
                .all(|(i, &f)| f == i as u64 * every));
            let instr: u64 = iv.intervals.iter().map(|p| p.instructions).sum();
            let all = whole.mode[0].instructions + whole.mode[1].instructions;
            assert_eq!(instr, all);
            // Stalls: the interval MCPIs weighted by instructions give the run's stalls.
            let stalls: f64 = iv
                .intervals
                .iter()
                .map(|p| p.mcpi.total * p.instructions as f64)
                .sum();
            let want: u64 = whole.mode.iter().map(|m| m.stall.iter().sum::<u64>()).sum();
            assert!((stalls - want as f64).abs() < 1e-6 * want as f64 + 1e-6);
            assert!(iv
                .intervals
                .iter()
                .all(|p| (p.mcpi.user + p.mcpi.system - p.mcpi.total).abs() < 1e-9));
        }
    }

    #[test]
    fn phases_show() {
        // A loop over 2 KB (fits the 64 KB data cache), then a stride through 8 MB (misses
        // every time): the second half's data miss rate is far above the first's.
        use crate::memsim::trace::{Kind, Mode};
        let mut refs = Vec::new();
        for i in 0..20_000u64 {
            refs.push(Ref::new(
                Kind::Instr,
                Mode::User,
                1,
                4,
                0x40_0000 + 4 * (i % 64),
            ));
            let a = if i < 10_000 {
                0x100_0000 + 4 * (i % 512)
            } else {
                0x100_0000 + 4096 * i
            };
            refs.push(Ref::new(Kind::Read, Mode::User, 1, 4, a));
        }
        let mut sim = Intervals::new(Machine::new(&preset("ds5000-200").unwrap()), Some(10_000));
        sim.run(Batch::from_refs(&refs).view());
        let iv = sim.finish().1.unwrap();
        let rates: Vec<f64> = iv.intervals.iter().map(|p| p.l1d_miss_rate).collect();
        assert_eq!(rates.len(), 4);
        assert!(rates[1] < 0.01 && rates[3] > 0.99, "{rates:?}");
        assert!(iv.intervals[3].mcpi.total > 10.0 * iv.intervals[1].mcpi.total);
    }

    #[test]
    fn without_an_interval_nothing_is_taken() {
        let refs = read_all(&mut Synth::new(5_000, 2)).unwrap();
        let mut sim = Intervals::new(Machine::new(&preset("pentium").unwrap()), None);
        sim.run(Batch::from_refs(&refs).view());
        assert!(sim.finish().1.is_none());
    }
}
