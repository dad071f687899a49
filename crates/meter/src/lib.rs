//! How one figure is read: the clock, perf_event counters (user and kernel apart), interference
//! (interrupts, context switches, steal time) and CPU placement.
//!
//! The harness sees all of it through [`Sensors`], so its arithmetic can be tested with fakes.

// osmeter's `eprintln!` (quiet when stderr is closed: osmeter_base::console) for every module
// declared below, in place of std's, as in the other crates of the workspace.
#[allow(unused_macros)]
macro_rules! eprintln {
    ($($arg:tt)*) => {
        ::osmeter_base::eprintln!($($arg)*)
    };
}

pub mod counts;
pub mod interference;
pub mod look;
pub mod machine;
pub mod pages;
pub mod perf;
pub mod placement;
pub mod realtime;
pub mod rt_limit;
pub mod watch;
pub mod yardstick;

use counts::CounterScopes;
use serde::Serialize;
use std::time::Instant;

/// Which privilege level a count covers. Software events (task-clock, faults, switches) count both.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    User,
    Kernel,
    Software,
}

/// One cumulative count as perf_event reports it: the value and how long the event was enabled and
/// actually on a counter (they differ when the kernel multiplexed it with others).
#[derive(Clone, Debug, PartialEq)]
pub struct EventCount {
    pub scope: Scope,
    pub name: &'static str,
    pub value: u64,
    pub enabled_ns: u64,
    pub running_ns: u64,
}

/// Every open event, read at one instant.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CounterReading(pub Vec<EventCount>);

/// Cumulative interference counters at one instant (and, as a delta, what one sample saw).
pub use counts::SampleInterference as InterferenceReading;

/// What the harness reads around every sample.
pub trait Sensors {
    /// Monotonic nanoseconds from an arbitrary origin.
    fn now_ns(&mut self) -> u64;
    fn counters(&mut self) -> CounterReading;
    fn interference(&mut self) -> InterferenceReading;
    /// Attaches (true) or detaches (false) the counters. Attached perf events cost time at every
    /// context switch of the measured thread, so the harness takes its timing samples detached and
    /// its counting samples apart. Sensors without that cost need do nothing.
    fn set_counting(&mut self, _on: bool) {}
    /// Whether counting samples can yield anything.
    fn can_count(&self) -> bool {
        true
    }
    /// Whether the measurement must stop before it is complete, and why. Read between samples.
    fn cut(&mut self) -> Option<Cut> {
        if osmeter_base::interrupt::requested() {
            Some(Cut::Interrupted)
        } else if rt_limit::tripped() {
            Some(Cut::RealTimeLimit)
        } else {
            None
        }
    }
}

/// Why a measurement stopped before it was complete.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Cut {
    /// Ctrl-C or SIGTERM: the whole run stops.
    Interrupted,
    /// A stopping signal reached the measuring process that neither the user's Ctrl-C nor
    /// osmeter sent (another process's kill, a CPU-time limit): this round stops, the run goes on.
    Outside,
    /// The measuring thread ran at SCHED_FIFO for the whole RLIMIT_RTTIME without blocking: this
    /// figure stops, the run goes on.
    RealTimeLimit,
}

impl Cut {
    pub fn describe(self) -> &'static str {
        match self {
            Cut::Interrupted => "interrupted by the user",
            Cut::Outside => "a signal from outside osmeter stopped the measuring process",
            Cut::RealTimeLimit => {
                "the SCHED_FIFO measuring thread ran for its whole real-time limit (RLIMIT_RTTIME) \
                 without blocking"
            }
        }
    }

    /// The error that unwinds a measurement cut before it kept anything.
    pub fn into_error(self) -> anyhow::Error {
        match self {
            Cut::Interrupted => anyhow::Error::new(osmeter_base::interrupt::Interrupted),
            Cut::Outside => anyhow::anyhow!("stopped: {}", self.describe()),
            Cut::RealTimeLimit => anyhow::anyhow!(
                "stopped: {}; lower --min-time or --warmup, or run without --fifo",
                self.describe()
            ),
        }
    }
}

/// Count of each event between two readings, extrapolated to the whole interval where the event was
/// multiplexed (value * enabled / running). `scaled` tells whether that happened. An event that never
/// ran in the interval is left out rather than reported as zero.
pub fn counter_delta(before: &CounterReading, after: &CounterReading) -> CounterScopes {
    let mut out = CounterScopes::default();
    for a in &after.0 {
        let Some(b) = before
            .0
            .iter()
            .find(|b| b.scope == a.scope && b.name == a.name)
        else {
            continue;
        };
        let value = a.value.saturating_sub(b.value) as f64;
        let enabled = a.enabled_ns.saturating_sub(b.enabled_ns);
        let running = a.running_ns.saturating_sub(b.running_ns);
        let count = if running == 0 {
            if enabled > 0 {
                continue; // enabled but never scheduled onto a counter: no information
            }
            value
        } else if running < enabled {
            out.scaled = true;
            value * enabled as f64 / running as f64
        } else {
            value
        };
        let map = match a.scope {
            Scope::User => &mut out.user,
            Scope::Kernel => &mut out.kernel,
            Scope::Software => &mut out.software,
        };
        map.insert(a.name.to_string(), count);
    }
    out
}

/// Counts since the events were opened (for counters enabled at a child's exec, which start at zero).
pub fn counts_since_open(reading: &CounterReading) -> CounterScopes {
    let zero = CounterReading(
        reading
            .0
            .iter()
            .map(|e| EventCount {
                value: 0,
                enabled_ns: 0,
                running_ns: 0,
                ..e.clone()
            })
            .collect(),
    );
    counter_delta(&zero, reading)
}

/// The real sensors: CLOCK_MONOTONIC, perf_event groups opened on demand, and /proc.
pub struct SystemSensors {
    origin: Instant,
    counting: bool,
    /// Open only while the harness takes counting samples.
    counters: Option<perf::CounterSet>,
    unavailable: std::collections::BTreeMap<String, String>,
    interference: interference::InterferenceReader,
}

impl SystemSensors {
    /// Sensors for the calling thread, pinned to `cpu` (steal time is read for that CPU) or not;
    /// `counting` false leaves perf_event out altogether.
    pub fn new(counting: bool, cpu: Option<usize>) -> Self {
        // Opened once here to learn what this machine can count, then closed until needed.
        let unavailable = if counting {
            perf::CounterSet::open_all().unavailable().clone()
        } else {
            Default::default()
        };
        SystemSensors {
            origin: Instant::now(),
            counting,
            counters: None,
            unavailable,
            interference: interference::InterferenceReader::for_cpu(cpu),
        }
    }

    /// Events that cannot be counted here, with the reason.
    pub fn unavailable(&self) -> &std::collections::BTreeMap<String, String> {
        &self.unavailable
    }
}

impl Sensors for SystemSensors {
    fn now_ns(&mut self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
    fn counters(&mut self) -> CounterReading {
        self.counters.as_mut().map(|c| c.read()).unwrap_or_default()
    }
    fn interference(&mut self) -> InterferenceReading {
        self.interference.read()
    }
    fn set_counting(&mut self, on: bool) {
        self.counters = (on && self.counting).then(perf::CounterSet::open_all);
    }
    fn can_count(&self) -> bool {
        self.counting
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(scope: Scope, name: &'static str, value: u64, enabled: u64, running: u64) -> EventCount {
        EventCount {
            scope,
            name,
            value,
            enabled_ns: enabled,
            running_ns: running,
        }
    }

    #[test]
    fn delta_scales_multiplexed_counts() {
        let before = CounterReading(vec![
            ev(Scope::User, "instructions", 1000, 100, 100),
            ev(Scope::Kernel, "instructions", 500, 100, 50),
            ev(Scope::Software, "page-faults", 3, 100, 100),
        ]);
        let after = CounterReading(vec![
            ev(Scope::User, "instructions", 3000, 200, 200),
            ev(Scope::Kernel, "instructions", 1500, 300, 150),
            ev(Scope::Software, "page-faults", 5, 200, 200),
        ]);
        let d = counter_delta(&before, &after);
        assert_eq!(d.user["instructions"], 2000.0);
        // 1000 counted while running 100 of 200 ns enabled: 2000 extrapolated.
        assert_eq!(d.kernel["instructions"], 2000.0);
        assert_eq!(d.software["page-faults"], 2.0);
        assert!(d.scaled);
    }

    #[test]
    fn delta_drops_events_that_never_ran() {
        let before = CounterReading(vec![ev(Scope::User, "cycles", 0, 0, 0)]);
        let after = CounterReading(vec![ev(Scope::User, "cycles", 0, 100, 0)]);
        let d = counter_delta(&before, &after);
        assert!(d.user.is_empty());
        assert!(!d.scaled);
    }

    #[test]
    fn interference_delta_never_goes_negative() {
        let a = InterferenceReading {
            irq_timer: 5,
            steal_ms: 2.0,
            ..Default::default()
        };
        let b = InterferenceReading {
            irq_timer: 9,
            steal_ms: 1.0,
            ..Default::default()
        };
        let d = b.delta(&a);
        assert_eq!(d.irq_timer, 4);
        assert_eq!(d.steal_ms, 0.0);
    }
}
