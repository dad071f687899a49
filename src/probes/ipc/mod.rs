//! Inter-process communication: context switches through pipe ping-pong, pipe bandwidth, and
//! wake-up round trips through futexes, eventfds and UNIX sockets.

mod echo;
mod partner;
mod wake;

use super::util::{param_str, param_u64};
use super::{Built, Origin, ProbeDef, ProbeEnv, Scale};
use crate::meter::placement;
use crate::params;
use crate::results::model::{Params, Unit};
use anyhow::{bail, Result};

pub const PROBES: &[ProbeDef] = &[
    ProbeDef {
        id: "ipc.pipe_pingpong",
        summary:
            "one-byte round trip between two processes over a pair of pipes (write, then block \
                  in read until the child echoes); on one CPU that is two context switches",
        params: "placement=same|cross: the child on the measuring CPU or on another one",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Ousterhout89, Origin::PerfBench],
        variants: placements,
        build: |env, p| {
            two_party(env, p, |cpu| {
                Ok(Box::new(echo::Echo::pipes(cpu)?) as Box<dyn crate::harness::Workload>)
            })
        },
    },
    ProbeDef {
        id: "ipc.pipe_bandwidth",
        summary: "write of one block into a pipe that a child process reads and discards",
        params: "size=bytes per write; placement=same|cross: the reader's CPU",
        unit: Unit::BytesPerSecond,
        origins: &[Origin::Lmbench],
        variants: bandwidth_variants,
        build: build_bandwidth,
    },
    ProbeDef {
        id: "ipc.futex_roundtrip",
        summary:
            "futex round trip between two threads: FUTEX_WAKE the partner, FUTEX_WAIT for its \
                  wake back",
        params: "placement=same|cross: the partner thread's CPU",
        unit: Unit::Nanoseconds,
        origins: &[Origin::LEBench, Origin::PerfBench, Origin::Osmeter],
        variants: placements,
        build: |env, p| {
            two_party(env, p, |cpu| {
                Ok(Box::new(wake::FutexRoundTrip::new(cpu)?) as Box<dyn crate::harness::Workload>)
            })
        },
    },
    ProbeDef {
        id: "ipc.eventfd_roundtrip",
        summary: "eventfd round trip between two threads: write the partner's eventfd, block \
                  reading our own until it answers",
        params: "placement=same|cross: the partner thread's CPU",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Osmeter],
        variants: placements,
        build: |env, p| {
            two_party(env, p, |cpu| {
                Ok(Box::new(wake::EventfdRoundTrip::new(cpu)?)
                    as Box<dyn crate::harness::Workload>)
            })
        },
    },
    ProbeDef {
        id: "ipc.unix_roundtrip",
        summary: "one-byte round trip to a child process over a UNIX stream socket pair",
        params: "placement=same|cross: the child on the measuring CPU or on another one",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Lmbench],
        variants: placements,
        build: |env, p| {
            two_party(env, p, |cpu| {
                Ok(Box::new(echo::Echo::unix_socket(cpu)?) as Box<dyn crate::harness::Workload>)
            })
        },
    },
];

const CROSS_NEEDS_TWO: &str = "cross-CPU placement needs two usable CPUs";

fn placements(_: Scale) -> Vec<Params> {
    vec![
        params![("placement", "same")],
        params![("placement", "cross")],
    ]
}

fn bandwidth_variants(scale: Scale) -> Vec<Params> {
    match scale {
        Scale::Quick => vec![params![("size", 65536), ("placement", "same")]],
        Scale::Full => [4096, 65536, 1 << 20]
            .into_iter()
            .flat_map(|size| {
                ["same", "cross"]
                    .into_iter()
                    .map(move |pl| params![("size", size), ("placement", pl)])
            })
            .collect(),
    }
}

/// The partner's CPU for a `placement` parameter, or why this machine cannot provide it.
fn partner_cpu(env: &ProbeEnv, params: &Params) -> Result<Result<usize, String>> {
    let cross = match param_str(params, "placement")? {
        "same" => false,
        "cross" => true,
        other => bail!("placement must be same or cross, not {other:?}"),
    };
    Ok(placement::partner_cpu(env.cpu, cross).ok_or_else(|| CROSS_NEEDS_TWO.to_string()))
}

fn two_party(
    env: &ProbeEnv,
    params: &Params,
    make: impl FnOnce(usize) -> Result<Box<dyn crate::harness::Workload>>,
) -> Result<Built> {
    Ok(match partner_cpu(env, params)? {
        Ok(cpu) => Built::Ready(make(cpu)?),
        Err(why) => Built::Skip(why),
    })
}

fn build_bandwidth(env: &ProbeEnv, params: &Params) -> Result<Built> {
    let size = param_u64(params, "size")?;
    if size == 0 || size > 1 << 30 {
        bail!("size must be between 1 byte and 1 GiB, not {size}");
    }
    two_party(env, params, |cpu| {
        Ok(Box::new(echo::PipeBandwidth::new(cpu, size as usize)?))
    })
}

#[cfg(test)]
mod tests;
