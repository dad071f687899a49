//! What each probe says about itself, beside the registry: what it measures (an OS primitive, the
//! hardware, the CPU reference, or the harness) and what one operation must cost in the software counters every
//! machine can read. A figure whose counters contradict its probe's claim is not what its name says
//! (a page-fault probe that faults once per 170 pages does not time page faults), and the run marks
//! it.
//!
//! The table is kept here, one entry per probe id, rather than in each subsystem's registry entry,
//! so that entries can be added without touching every probe file; a test keeps the two in step.

use crate::results::figure::Role;
use crate::results::model::{ClaimCheck, CounterScopes, Params};

/// Bounds (inclusive) on one operation's count of an event, for a variant; None when the probe
/// makes no claim for that variant.
pub type PerOp = fn(&Params) -> Option<[f64; 2]>;

/// A probe's claim about one software event.
pub struct Claim {
    /// Name as in `counters.software`: page-faults, minor-faults, major-faults, context-switches,
    /// cpu-migrations.
    pub event: &'static str,
    pub per_op: PerOp,
    /// Why the probe expects it, said to the reader when it does not hold.
    pub why: &'static str,
}

pub struct ProbeClaims {
    pub id: &'static str,
    pub role: Role,
    pub claims: &'static [Claim],
}

// Bounds shared by many probes. A sample lasts milliseconds, so a timer tick or a preemption
// spread over thousands of operations stays far below these.
fn none_at_all(_: &Params) -> Option<[f64; 2]> {
    Some([0.0, 0.001])
}
fn hardly_any(_: &Params) -> Option<[f64; 2]> {
    Some([0.0, 0.01])
}
fn exactly_one(_: &Params) -> Option<[f64; 2]> {
    Some([0.9, 1.1])
}
/// The measuring thread blocks once per operation: a wait for a child or a thread.
fn blocks_once(_: &Params) -> Option<[f64; 2]> {
    Some([0.5, 4.0])
}
/// A round trip with a partner: on the same CPU the measuring thread gives the CPU up about once
/// per trip; on another CPU at most once (the answer may come before it sleeps).
fn round_trip(p: &Params) -> Option<[f64; 2]> {
    match p.get("placement").and_then(|v| v.as_str()) {
        Some("same") => Some([0.8, 2.0]),
        Some("cross") => Some([0.0, 1.2]),
        _ => None,
    }
}
fn pages_touched(p: &Params) -> Option<[f64; 2]> {
    let touch = p.get("touch").and_then(|v| v.as_bool())?;
    if !touch {
        return Some([0.0, 0.01]);
    }
    let pages =
        p.get("size").and_then(|v| v.as_u64())? as f64 / crate::probes::memory::page_size() as f64;
    // At most one fault per page; huge pages (THP) may serve many pages in one.
    Some([1.0, 1.1 * pages.max(1.0)])
}
fn fsync_waits(_: &Params) -> Option<[f64; 2]> {
    Some([0.5, 100.0])
}

const NO_NEW_MEMORY: Claim = Claim {
    event: "page-faults",
    per_op: none_at_all,
    why: "the operation touches only memory mapped before timing",
};
const NO_SLEEP: Claim = Claim {
    event: "context-switches",
    per_op: hardly_any,
    why: "the operation never sleeps",
};
const FROM_THE_PAGE_CACHE: Claim = Claim {
    event: "major-faults",
    per_op: none_at_all,
    why: "the file is in the page cache, so nothing waits for the device",
};
const PARTNER_ROUND_TRIP: Claim = Claim {
    event: "context-switches",
    per_op: round_trip,
    why: "a round trip with a partner: about one switch away per trip on one CPU, at most one \
          across CPUs",
};

const fn app(id: &'static str) -> ProbeClaims {
    ProbeClaims {
        id,
        role: Role::Other,
        claims: &[],
    }
}

const fn os(id: &'static str, claims: &'static [Claim]) -> ProbeClaims {
    ProbeClaims {
        id,
        role: Role::Os,
        claims,
    }
}

pub const TABLE: &[ProbeClaims] = &[
    ProbeClaims {
        id: "cpu.null",
        // The harness's own empty loop.
        role: Role::Other,
        claims: &[NO_NEW_MEMORY],
    },
    ProbeClaims {
        id: "cpu.reference",
        role: Role::CpuReference,
        claims: &[NO_NEW_MEMORY],
    },
    os("syscall.null", &[NO_NEW_MEMORY, NO_SLEEP]),
    os("syscall.dup", &[NO_NEW_MEMORY, NO_SLEEP]),
    os("syscall.clock_gettime", &[NO_NEW_MEMORY, NO_SLEEP]),
    os(
        "syscall.sched_yield",
        &[
            NO_NEW_MEMORY,
            Claim {
                event: "context-switches",
                per_op: hardly_any,
                why: "with no other runnable thread on the CPU sched_yield returns at once; \
                      switches mean the CPU was shared",
            },
        ],
    ),
    os("signal.install", &[NO_NEW_MEMORY, NO_SLEEP]),
    os("signal.deliver", &[NO_NEW_MEMORY, NO_SLEEP]),
    os(
        "thread.create_join",
        &[Claim {
            event: "context-switches",
            per_op: blocks_once,
            why: "the joining thread waits for the new thread to run and exit",
        }],
    ),
    os(
        "process.fork_exit",
        &[
            Claim {
                event: "context-switches",
                per_op: blocks_once,
                why: "the parent waits for its child to run and exit",
            },
            Claim {
                event: "page-faults",
                per_op: |_| Some([0.0, 32.0]),
                why: "after a fork the parent takes a few copy-on-write faults; many more mean \
                      its memory grew with earlier work",
            },
        ],
    ),
    os(
        "process.exec",
        &[Claim {
            event: "context-switches",
            per_op: blocks_once,
            why: "the parent waits for its child to exec the helper and exit",
        }],
    ),
    os("ipc.pipe_pingpong", &[PARTNER_ROUND_TRIP]),
    os("ipc.pipe_bandwidth", &[NO_NEW_MEMORY]),
    os("ipc.futex_roundtrip", &[PARTNER_ROUND_TRIP]),
    os("ipc.eventfd_roundtrip", &[PARTNER_ROUND_TRIP]),
    os("ipc.unix_roundtrip", &[PARTNER_ROUND_TRIP]),
    os("select.select", &[NO_NEW_MEMORY, NO_SLEEP]),
    os("select.poll", &[NO_NEW_MEMORY, NO_SLEEP]),
    os("select.epoll", &[NO_NEW_MEMORY, NO_SLEEP]),
    ProbeClaims {
        id: "memory.copy",
        role: Role::Hardware,
        claims: &[NO_NEW_MEMORY],
    },
    ProbeClaims {
        id: "memory.latency",
        role: Role::Hardware,
        claims: &[Claim {
            event: "page-faults",
            per_op: |_| Some([0.0, 0.0001]),
            why: "every node was written before timing",
        }],
    },
    os(
        "memory.page_fault",
        &[Claim {
            event: "page-faults",
            per_op: exactly_one,
            why: "each operation is the first touch of a page no earlier fault has mapped",
        }],
    ),
    os(
        "memory.mmap_munmap",
        &[Claim {
            event: "page-faults",
            per_op: pages_touched,
            why: "untouched mappings take no fault; touched ones at most one per page",
        }],
    ),
    os(
        "memory.brk",
        &[Claim {
            event: "page-faults",
            per_op: hardly_any,
            why: "the grown heap is never touched",
        }],
    ),
    os("fs.read_cached", &[FROM_THE_PAGE_CACHE, NO_NEW_MEMORY]),
    os("fs.read_128k", &[FROM_THE_PAGE_CACHE]),
    os("fs.open_close", &[FROM_THE_PAGE_CACHE, NO_SLEEP]),
    os("fs.create_delete", &[FROM_THE_PAGE_CACHE]),
    os("fs.metadata", &[FROM_THE_PAGE_CACHE]),
    os(
        "fs.write_fsync",
        &[Claim {
            event: "context-switches",
            per_op: fsync_waits,
            why: "fsync waits for the device to report the data stored; a file system whose \
                  fsync never sleeps (tmpfs, or a device that does not flush) is not timing it",
        }],
    ),
    os("fs.small_files", &[FROM_THE_PAGE_CACHE]),
    os("net.tcp_bandwidth", &[NO_NEW_MEMORY]),
    // Whole programs: their counters are a cgroup's, and they claim nothing per operation.
    app("app.andrew"),
    app("app.ghostscript"),
    app("app.interp"),
    app("app.web"),
    app("app.wish"),
    app("app.bitblt"),
    os("net.tcp_roundtrip", &[PARTNER_ROUND_TRIP]),
    os("net.udp_roundtrip", &[PARTNER_ROUND_TRIP]),
    os(
        "net.tcp_connect",
        &[Claim {
            event: "page-faults",
            per_op: |_| Some([0.0, 1.0]),
            why: "connecting touches no new memory of the measuring process beyond the odd \
                  socket buffer",
        }],
    ),
];

/// The claims of a probe, by id.
pub fn of(id: &str) -> Option<&'static ProbeClaims> {
    TABLE.iter().find(|c| c.id == id)
}

/// Events a sample may hold beyond its operations' own: a fault on a page of the harness's, a
/// preemption at a tick. They vanish among thousands of operations, but a sample of a few dozen
/// long operations (256 KB transfers of 150 us) would otherwise blame them on every operation.
pub const PER_SAMPLE_SLACK: f64 = 2.0;

/// Checks a figure's counters (per operation) against its probe's claims, allowing
/// [`PER_SAMPLE_SLACK`] events per sample of `ops_per_sample` operations above the claimed bound.
/// Claims whose event was not counted (no perf_event here, or --no-counters) are left out: nothing
/// is known about them.
pub fn check(
    id: &str,
    params: &Params,
    counters: &CounterScopes,
    ops_per_sample: u64,
) -> Vec<ClaimCheck> {
    let Some(entry) = of(id) else {
        return Vec::new();
    };
    entry
        .claims
        .iter()
        .filter_map(|claim| {
            let [low, high] = (claim.per_op)(params)?;
            let expected = [low, high + PER_SAMPLE_SLACK / ops_per_sample.max(1) as f64];
            let seen = *counters.software.get(claim.event)?;
            Some(ClaimCheck {
                event: claim.event.to_string(),
                expected,
                seen,
                holds: expected[0] <= seen && seen <= expected[1],
                why: claim.why.to_string(),
            })
        })
        .collect()
}

/// The workload's checks of its own conditions over a figure's rounds, one per check: the first
/// round where it did not hold (its `why` says in how many rounds), else the first round's.
pub fn over_rounds(per_round: &[&[ClaimCheck]]) -> Vec<ClaimCheck> {
    let mut out: Vec<ClaimCheck> = Vec::new();
    let events: Vec<&str> = per_round
        .iter()
        .flat_map(|r| r.iter().map(|c| c.event.as_str()))
        .fold(Vec::new(), |mut seen, e| {
            if !seen.contains(&e) {
                seen.push(e);
            }
            seen
        });
    for event in events {
        let of_event: Vec<&ClaimCheck> = per_round
            .iter()
            .filter_map(|r| r.iter().find(|c| c.event == event))
            .collect();
        let failed = of_event.iter().filter(|c| !c.holds).count();
        let mut pick = (*of_event.iter().find(|c| !c.holds).unwrap_or(&of_event[0])).clone();
        if failed > 0 && of_event.len() > 1 {
            pick.why = format!("in {failed} of {} rounds; {}", of_event.len(), pick.why);
        }
        out.push(pick);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params;

    #[test]
    fn every_probe_has_one_entry_and_every_entry_a_probe() {
        let ids: Vec<&str> = crate::probes::registry().iter().map(|p| p.id).collect();
        for id in &ids {
            assert_eq!(
                TABLE.iter().filter(|c| c.id == *id).count(),
                1,
                "{id} needs exactly one entry"
            );
        }
        for c in TABLE {
            assert!(ids.contains(&c.id), "{} is not a probe", c.id);
        }
        // The harness's own loop and the hardware figures are told apart from the OS ones.
        assert_eq!(of("cpu.null").unwrap().role, Role::Other);
        assert_eq!(of("cpu.reference").unwrap().role, Role::CpuReference);
        assert_eq!(of("memory.latency").unwrap().role, Role::Hardware);
        assert_eq!(of("memory.copy").unwrap().role, Role::Hardware);
        assert_eq!(of("syscall.null").unwrap().role, Role::Os);
    }

    #[test]
    fn events_claimed_are_software_events_osmeter_counts() {
        let counted: Vec<&str> = crate::meter::perf::events::SOFTWARE_GROUP
            .iter()
            .map(|e| e.name)
            .collect();
        for c in TABLE {
            for claim in c.claims {
                assert!(counted.contains(&claim.event), "{}: {}", c.id, claim.event);
            }
        }
    }

    fn counters(event: &str, v: f64) -> CounterScopes {
        let mut c = CounterScopes::default();
        c.software.insert(event.to_string(), v);
        c
    }

    #[test]
    fn a_file_fault_probe_that_rarely_faults_is_contradicted() {
        // The known case: 0.01 faults per "page fault".
        let p = params![("kind", "file")];
        let checks = check(
            "memory.page_fault",
            &p,
            &counters("page-faults", 0.0058),
            200_000,
        );
        assert_eq!(checks.len(), 1);
        assert!(!checks[0].holds);
        let text = checks[0].contradiction();
        assert!(
            text.contains("page-faults 0.0058 per operation where 0.9-1.1"),
            "{text}"
        );
        let ok = check(
            "memory.page_fault",
            &p,
            &counters("page-faults", 1.0),
            200_000,
        );
        assert!(ok[0].holds);
    }

    #[test]
    fn claims_depend_on_the_variant() {
        let same = params![("placement", "same")];
        let cross = params![("placement", "cross")];
        let c = counters("context-switches", 0.0);
        assert!(!check("ipc.pipe_pingpong", &same, &c, 10_000)[0].holds);
        assert!(check("ipc.pipe_pingpong", &cross, &c, 10_000)[0].holds);
        let untouched = params![("size", 67108864), ("touch", false)];
        let touched = params![("size", 67108864), ("touch", true)];
        let faults = counters("page-faults", 16384.0);
        assert!(!check("memory.mmap_munmap", &untouched, &faults, 100)[0].holds);
        assert!(check("memory.mmap_munmap", &touched, &faults, 100)[0].holds);
    }

    /// A fault or two per sample is the harness's, not the operation's: 256 KB transfers, 66 to a
    /// sample, showing one fault per sample are not contradicted; the same rate over 10,000
    /// operations a sample is 150 faults a sample, and is.
    #[test]
    fn a_few_events_per_sample_are_not_blamed_on_long_operations() {
        let p = params![("placement", "cross"), ("rcvbuf", "default")];
        let one_per_sample = counters("page-faults", 1.0 / 66.0);
        assert!(check("net.tcp_bandwidth", &p, &one_per_sample, 66)[0].holds);
        assert!(!check("net.tcp_bandwidth", &p, &one_per_sample, 10_000)[0].holds);
        // Three a sample is more than the slack.
        let three = counters("page-faults", 3.0 / 66.0);
        assert!(!check("net.tcp_bandwidth", &p, &three, 66)[0].holds);
    }

    #[test]
    fn nothing_is_claimed_without_counts() {
        assert!(check(
            "memory.page_fault",
            &params![("kind", "anon")],
            &CounterScopes::default(),
            1000
        )
        .is_empty());
        assert!(check(
            "no.such",
            &Params::new(),
            &counters("page-faults", 1.0),
            1000
        )
        .is_empty());
    }

    #[test]
    fn a_check_that_failed_in_any_round_marks_the_figure() {
        let check = |seen: f64| ClaimCheck {
            event: "fresh-inode-share".into(),
            expected: [0.0, 0.5],
            seen,
            holds: seen <= 0.5,
            why: "freed inodes held back".into(),
        };
        let (ok, bad) = ([check(0.0)], [check(1.0)]);
        let merged = over_rounds(&[&ok, &bad, &ok]);
        assert_eq!(merged.len(), 1);
        assert!(!merged[0].holds);
        assert_eq!(merged[0].why, "in 1 of 3 rounds; freed inodes held back");
        assert_eq!(
            merged[0].contradiction(),
            "the probe's own check failed: fresh-inode-share 1 where 0-0.5 is expected \
             (in 1 of 3 rounds; freed inodes held back)"
        );
        let fine = over_rounds(&[&ok, &ok]);
        assert!(fine[0].holds);
        assert_eq!(fine[0].why, "freed inodes held back");
        assert!(over_rounds(&[&[], &[]]).is_empty());
    }
}
