//! Cota-Robles and Held 1999: the worst-case latencies and underruns of its tables, read from a
//! latency run.

use super::*;

const fn worst(
    row: &'static str,
    suffix: &'static str,
    label: &'static str,
    class: ClassName,
    path: Path,
    horizon_s: f64,
) -> Comparison {
    Comparison {
        table: "3",
        cells: Cells::Where {
            rows: Sel::Is(row),
            columns: Sel::EndsWith(suffix),
        },
        label,
        now: Now::Latency(LatencyFigure {
            class,
            path,
            horizon_s,
        }),
    }
}

const HOUR: f64 = 3600.0;
const DAY: f64 = 86_400.0;
const WEEK: f64 = 7.0 * DAY;
const HIGH_TIMER: &str = "interrupt to high-priority RT thread";
const MEDIUM_TIMER: &str = "interrupt to medium-priority RT thread";
const HIGH_WAKE: &str = "DPC to high-priority RT thread (added)";
const MEDIUM_WAKE: &str = "DPC to medium-priority RT thread (added)";

const fn underruns(row: &'static str, ask: Underrun) -> Comparison {
    Comparison {
        table: "mttf",
        cells: Cells::Where {
            rows: Sel::Is(row),
            columns: Sel::Is("value"),
        },
        label: "this machine",
        now: Now::Underruns(UnderrunFigure {
            class: ClassName::High,
            path: Path::Timer,
            ask,
        }),
    }
}

pub(super) static SPEC: Spec = Spec {
    comparisons: &[
        underruns(
            "DPC datapump, 3D game, 12 ms of buffering: time between underruns",
            Underrun::MttfAt { tolerance_ms: 12.0 },
        ),
        underruns(
            "DPC datapump, 3D game, 20 ms of buffering: time between underruns",
            Underrun::MttfAt { tolerance_ms: 20.0 },
        ),
        underruns(
            "thread datapump, 3D game: buffering for an hour between underruns",
            Underrun::ToleranceFor { mttf_s: HOUR },
        ),
        worst(HIGH_TIMER, "_hour", "this machine, hour", ClassName::High, Path::Timer, HOUR),
        worst(HIGH_TIMER, "_day", "this machine, day", ClassName::High, Path::Timer, DAY),
        worst(HIGH_TIMER, "_week", "this machine, week", ClassName::High, Path::Timer, WEEK),
        worst(MEDIUM_TIMER, "_hour", "this machine, hour", ClassName::Medium, Path::Timer, HOUR),
        worst(MEDIUM_TIMER, "_day", "this machine, day", ClassName::Medium, Path::Timer, DAY),
        worst(MEDIUM_TIMER, "_week", "this machine, week", ClassName::Medium, Path::Timer, WEEK),
        worst(HIGH_WAKE, "_hour", "this machine, hour", ClassName::High, Path::Futex, HOUR),
        worst(HIGH_WAKE, "_day", "this machine, day", ClassName::High, Path::Futex, DAY),
        worst(HIGH_WAKE, "_week", "this machine, week", ClassName::High, Path::Futex, WEEK),
        worst(MEDIUM_WAKE, "_hour", "this machine, hour", ClassName::Medium, Path::Futex, HOUR),
        worst(MEDIUM_WAKE, "_day", "this machine, day", ClassName::Medium, Path::Futex, DAY),
        worst(MEDIUM_WAKE, "_week", "this machine, week", ClassName::Medium, Path::Futex, WEEK),
    ],
    derived: &[],
    notes: &[
        (
            "3",
            "today: the median worst case expected over an hour, a day and a week of continuous \
             running, from a Gumbel fit of the per-second maxima of the latency run, under the load \
             that run had; timer path for interrupt-to-thread, futex wake for DPC-to-thread",
        ),
        (
            "mttf",
            "today: the buffer model (an underrun whenever a wake is later than the buffering \
             absorbs) over the Gumbel fit of the per-second maxima of the high-priority class's \
             timer path in the latency run, under that run's load: the mean time between \
             underruns is a window's width over the chance its maximum exceeds the buffering; a \
             Linux real-time thread stands for both of the paper's datapumps; measured underruns \
             of a computing thread are `osmeter latency --compute`",
        ),
    ],
    elsewhere: Some(
        "today's side is a latency run of the high and medium SCHED_FIFO classes on the timer \
         and futex paths: `osmeter paper cota-robles99` measures one (60 s under the desktop load; \
         --duration and --load change them), or `--run ID` reuses a stored `osmeter latency` run",
    ),
    cpu_relative: false,
};
