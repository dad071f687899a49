//! From what the guest reported (one line per probe point) and the plugin's totals at each marker
//! to counts per operation: each point's two windows (n and 2n operations) are paired with the
//! markers in order, and their difference over n is one operation.

use super::inside::{Outcome, ReportLine, LOOP};
use super::sim::Simulation;
use crate::capture::system::count::{Mark, Totals};
use crate::results::guest::{GuestDoc, GuestProbe, ModeCounts, OpCounts, GUEST_SCHEMA};
use crate::results::model::Status;

/// How far the guest got, when it did not finish.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// osmeter never ran inside the guest (the kernel did not boot, or init failed).
    NotStarted,
    /// The guest stopped after reporting this point (None: before the first).
    CutShort(Option<String>),
    /// The report and the markers do not fit together.
    Mismatch(String),
}

/// What the document says about the guest besides the counts.
pub struct Meta {
    pub kernel: String,
    pub kernel_key: String,
    pub append: String,
    pub cmdline: String,
    pub qemu: String,
    pub iterations: u64,
    pub cpu: Option<String>,
    /// Where the kernel's symbols came from, or why there are none (streamed boots only).
    pub symbols: Option<String>,
}

fn per_op(short: &Totals, long: &Totals, n: u64) -> OpCounts {
    let d = long.since(short);
    // Wrapping differences of u64 read back as signed: a window may see a timer tick the other
    // does not, so the longer one is not bound to count more.
    let v = |x: u64| (x as i64) as f64 / n as f64;
    let mode = |i: usize| ModeCounts {
        instructions: v(d.instructions[i]),
        loads: v(d.loads[i]),
        stores: v(d.stores[i]),
    };
    OpCounts {
        user: mode(0),
        kernel: mode(1),
    }
}

/// A probe's counts less the empty loop's user counts, or, where the loop counted more than the
/// whole operation in some user figure (a loop of another shape than the probe's: unrolled,
/// or compiled otherwise), why the counts are kept as measured: a negative count would be no
/// count at all.
fn loop_subtracted(c: &OpCounts, l: &OpCounts) -> std::result::Result<OpCounts, String> {
    let less = c.minus_user(l);
    let over: Vec<String> = less
        .user
        .by_name()
        .iter()
        .zip(l.user.by_name())
        .filter(|((_, v), _)| *v < 0.0)
        .map(|((name, _), (_, lv))| format!("{lv} user {name}"))
        .collect();
    if over.is_empty() {
        return Ok(less);
    }
    Err(format!(
        "the empty loop's own counts ({}) exceed this operation's: user counts include the \
         loop's turn, not subtracted",
        over.join(", ")
    ))
}

/// The windows of one point: `windows` pairs of (open, close) markers from `marks`.
fn windows(
    marks: &mut std::slice::Iter<Mark>,
    count: u32,
    label: &str,
) -> Result<Vec<Totals>, Stop> {
    let mut out = Vec::new();
    for _ in 0..count {
        match (marks.next(), marks.next()) {
            (Some(a), Some(b)) if a.code == 1 && b.code == 2 => out.push(b.totals.since(&a.totals)),
            _ => {
                return Err(Stop::Mismatch(format!(
                    "the markers of {label} are missing or out of order"
                )))
            }
        }
    }
    Ok(out)
}

/// The document of one guest: its report paired with the markers' totals, and with what `sim`
/// simulated over the same windows when the references were streamed.
pub fn document(
    report: &str,
    marks: &[Mark],
    meta: Meta,
    sim: Option<&Simulation>,
) -> Result<GuestDoc, Stop> {
    let mut lines = report
        .lines()
        .filter_map(|l| serde_json::from_str::<ReportLine>(l.trim()).ok());
    let (release, build, seccomp_rules) = match lines.next() {
        Some(ReportLine::Start {
            release,
            build,
            seccomp_rules,
        }) => (release, build, seccomp_rules),
        _ => return Err(Stop::NotStarted),
    };
    let mut marks = marks.iter();
    let mut doc = GuestDoc {
        schema: GUEST_SCHEMA.into(),
        kernel: meta.kernel,
        kernel_key: meta.kernel_key,
        release: (!release.is_empty()).then_some(release),
        build,
        append: meta.append,
        cmdline: meta.cmdline,
        qemu: meta.qemu,
        iterations: meta.iterations,
        cpu: meta.cpu,
        loop_overhead: None,
        seccomp_rules,
        presets: sim.map(|s| s.presets().to_vec()).unwrap_or_default(),
        symbols: meta.symbols,
        probes: Vec::new(),
    };
    // Windows before this point's, in the whole boot (the simulation's windows are numbered so).
    let mut before = 0usize;
    let mut last: Option<String> = None;
    let mut done = false;
    for line in lines {
        let (probe, params, count, outcome) = match line {
            ReportLine::Point {
                probe,
                params,
                windows,
                outcome,
            } => (probe, params, windows, outcome),
            ReportLine::Done => {
                done = true;
                break;
            }
            ReportLine::Start { .. } => continue,
        };
        let label = crate::results::model::label(&probe, &params);
        let w = windows(&mut marks, count, &label)?;
        let first = before;
        before += w.len();
        let mut p = GuestProbe {
            probe,
            params,
            status: Status::Ok,
            reason: None,
            iterations: 0,
            per_op: None,
            simulated: Vec::new(),
            kernel_parts: None,
        };
        match outcome {
            Outcome::Ok {
                iterations,
                subtract_loop,
                short,
                long,
                disturbed,
            } if (short.max(long) as usize) < w.len() => {
                let mut c = per_op(&w[short as usize], &w[long as usize], iterations);
                if disturbed {
                    p.reason = Some(format!(
                        "no window of {} operations (or twice that) passed without an \
                         interrupt in {} tries: the counts include its handling",
                        iterations,
                        super::inside::TRIES
                    ));
                }
                if subtract_loop {
                    if let Some(l) = &doc.loop_overhead {
                        match loop_subtracted(&c, l) {
                            Ok(less) => c = less,
                            Err(why) => {
                                p.reason = Some(match p.reason.take() {
                                    Some(r) => format!("{r}; {why}"),
                                    None => why,
                                })
                            }
                        }
                    }
                }
                if let Some(sim) = sim {
                    let (short, long) = (first + short as usize, first + long as usize);
                    let (simulated, parts) =
                        sim.per_op(short, long, iterations).ok_or_else(|| {
                            Stop::Mismatch(format!(
                                "the simulation of {label} misses windows {short} and {long}"
                            ))
                        })?;
                    p.simulated = simulated;
                    p.kernel_parts = parts;
                }
                p.iterations = iterations;
                p.per_op = Some(c);
            }
            Outcome::Ok { .. } => {
                return Err(Stop::Mismatch(format!(
                    "{label} reported {} windows",
                    w.len()
                )))
            }
            Outcome::Skipped { reason } => {
                p.status = Status::Skipped;
                p.reason = Some(reason);
            }
            Outcome::Failed { error } => {
                p.status = Status::Failed;
                p.reason = Some(error);
            }
        }
        if p.probe == LOOP {
            doc.loop_overhead = p.per_op;
        } else {
            doc.probes.push(p);
        }
        last = Some(label);
    }
    if !done {
        return Err(Stop::CutShort(last));
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::model::Params;

    fn mark(code: u8, ui: u64, ki: u64) -> Mark {
        Mark {
            code,
            totals: Totals {
                instructions: [ui, ki],
                loads: [ui / 2, ki / 2],
                stores: [0, ki / 4],
            },
        }
    }

    fn point(probe: &str, windows: u32, outcome: Outcome) -> String {
        serde_json::to_string(&ReportLine::Point {
            probe: probe.into(),
            params: Params::new(),
            windows,
            outcome,
        })
        .unwrap()
    }

    fn meta() -> Meta {
        Meta {
            kernel: "k".into(),
            kernel_key: "key".into(),
            append: String::new(),
            cmdline: "c".into(),
            qemu: "q".into(),
            iterations: 10,
            cpu: None,
            symbols: None,
        }
    }

    fn ok() -> Outcome {
        Outcome::Ok {
            iterations: 10,
            subtract_loop: true,
            short: 0,
            long: 1,
            disturbed: false,
        }
    }

    #[test]
    fn the_difference_of_two_windows_is_one_operation_less_the_loop() {
        let report = [
            r#"{"line":"start","release":"6.1.0","build":"debug"}"#.to_string(),
            point(LOOP, 2, ok()),
            point("syscall.null", 2, ok()),
            point(
                "app.make",
                0,
                Outcome::Skipped {
                    reason: "why".into(),
                },
            ),
            r#"{"line":"done"}"#.to_string(),
        ]
        .join("\n");
        // Loop: windows of 10 and 20 turns cost 100 and 150 user instructions: 5 a turn.
        // Probe: 1000 + 20 a call in user, 6000 more kernel instructions per ten calls.
        let marks = [
            mark(1, 0, 0),
            mark(2, 100, 0),
            mark(1, 200, 0),
            mark(2, 350, 0),
            mark(1, 1000, 5000),
            mark(2, 1200, 11000),
            mark(1, 2000, 20000),
            mark(2, 2400, 32000),
        ];
        let doc = document(&report, &marks, meta(), None).unwrap();
        assert_eq!(doc.release.as_deref(), Some("6.1.0"));
        assert_eq!(doc.build, "debug");
        assert_eq!(doc.loop_overhead.unwrap().user.instructions, 5.0);
        let c = doc.probes[0].per_op.unwrap();
        assert_eq!(c.user.instructions, 15.0);
        assert_eq!(c.kernel.instructions, 600.0);
        assert_eq!(c.kernel.loads, 300.0);
        assert_eq!(doc.probes[1].status, Status::Skipped);
        assert_eq!(doc.probes[1].reason.as_deref(), Some("why"));
    }

    #[test]
    fn a_loop_that_counts_more_than_the_operation_is_not_subtracted_and_says_why() {
        let counts = |ui: f64| OpCounts {
            user: ModeCounts {
                instructions: ui,
                loads: 1.0,
                stores: 0.0,
            },
            kernel: ModeCounts {
                instructions: 700.0,
                ..Default::default()
            },
        };
        let less = loop_subtracted(&counts(11.0), &counts(5.0)).unwrap();
        assert_eq!((less.user.instructions, less.user.loads), (6.0, 0.0));
        assert_eq!(less.kernel.instructions, 700.0);
        // The debug build's sched_yield before the empty loop matched probe loops: 11 against
        // 15, which gave -4.
        let why = loop_subtracted(&counts(11.0), &counts(15.0)).unwrap_err();
        assert!(
            why.contains("15 user instructions") && why.contains("not subtracted"),
            "{why}"
        );
    }

    #[test]
    fn the_clean_windows_are_the_ones_used() {
        let report = [
            r#"{"line":"start","release":"6.1.0"}"#.to_string(),
            point(
                "syscall.null",
                3,
                Outcome::Ok {
                    iterations: 10,
                    subtract_loop: false,
                    short: 1,
                    long: 2,
                    disturbed: true,
                },
            ),
            r#"{"line":"done"}"#.to_string(),
        ]
        .join("\n");
        // The first window took a tick of 40000 kernel instructions; it is not used.
        let marks = [
            mark(1, 0, 0),
            mark(2, 100, 46000),
            mark(1, 1000, 50000),
            mark(2, 1100, 56000),
            mark(1, 2000, 60000),
            mark(2, 2200, 72000),
        ];
        let doc = document(&report, &marks, meta(), None).unwrap();
        let c = doc.probes[0].per_op.unwrap();
        assert_eq!((c.user.instructions, c.kernel.instructions), (10.0, 600.0));
        assert!(doc.probes[0].reason.as_ref().unwrap().contains("interrupt"));
        assert_eq!(doc.build, "");
    }

    #[test]
    fn a_guest_that_stopped_says_how_far_it_got() {
        assert_eq!(
            document("[ 1.0] Kernel panic", &[], meta(), None),
            Err(Stop::NotStarted)
        );
        let report = format!(
            "{}\n{}",
            r#"{"line":"start","release":""}"#,
            point(LOOP, 2, ok())
        );
        let marks = [mark(1, 0, 0), mark(2, 1, 0), mark(1, 2, 0), mark(2, 4, 0)];
        assert_eq!(
            document(&report, &marks, meta(), None),
            Err(Stop::CutShort(Some(LOOP.into())))
        );
        assert!(matches!(
            document(&report, &marks[..3], meta(), None),
            Err(Stop::Mismatch(_))
        ));
    }
}
