//! Loopback networking: TCP bandwidth with a small and a default receive buffer, request/reply
//! round trips over TCP and UDP, and TCP connection set-up. Only 127.0.0.1 is ever used; the other
//! party is a forked partner process pinned to the same or another CPU.

mod partner;
mod sock;
#[cfg(test)]
mod tests;
mod work;

use super::util::param_str;
use super::{Built, Origin, ProbeDef, ProbeEnv, Scale};
use crate::harness::Workload;
use crate::meter::placement::partner_cpu;
use crate::params;
use crate::results::model::{Params, Unit};
use anyhow::{bail, Result};

/// Receive buffer of Chen et al.'s network test.
const SMALL_RCVBUF: i32 = 24 << 10;

pub const PROBES: &[ProbeDef] = &[
    ProbeDef {
        id: "net.tcp_bandwidth",
        summary: "256 KB sent over loopback TCP and fully received by a partner process, which \
                  acknowledges each transfer with one byte (TCP_NODELAY both ways)",
        params: "rcvbuf: SO_RCVBUF of the receiver set before listen (24576, or \"default\" for \
                 autotuning); placement: partner on the same or another CPU",
        unit: Unit::BytesPerSecond,
        origins: &[Origin::Chen96],
        variants: bandwidth_variants,
        build: |env, p| {
            let rcvbuf = rcvbuf_param(p)?;
            with_partner(env, p, |cpu| work::Bandwidth::new(cpu, rcvbuf))
        },
    },
    ProbeDef {
        id: "net.tcp_roundtrip",
        summary: "1-byte request and 1-byte reply with a partner process over loopback TCP \
                  (TCP_NODELAY)",
        params: "placement: partner on the same or another CPU",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Lmbench, Origin::LEBench],
        variants: placement_variants,
        build: |env, p| with_partner(env, p, work::RoundTrip::tcp),
    },
    ProbeDef {
        id: "net.udp_roundtrip",
        summary: "1-byte request datagram and 1-byte reply with a partner process over \
                  127.0.0.1 UDP",
        params: "placement: partner on the same or another CPU",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Lmbench, Origin::LEBench],
        variants: placement_variants,
        build: |env, p| with_partner(env, p, work::RoundTrip::udp),
    },
    ProbeDef {
        id: "net.tcp_connect",
        summary: "socket, connect to a partner's listener on 127.0.0.1, wait for its accept and \
                  close, close with a reset (SO_LINGER 0)",
        params: "placement: partner on the same or another CPU",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Lmbench],
        variants: placement_variants,
        build: |env, p| with_partner(env, p, work::Connect::new),
    },
];

/// Latency probes: same CPU in the quick suite (available on any machine, and the steadier of
/// the two), both placements in full.
fn placement_variants(scale: Scale) -> Vec<Params> {
    let places: &[&str] = match scale {
        Scale::Quick => &["same"],
        Scale::Full => &["same", "cross"],
    };
    places.iter().map(|p| params![("placement", *p)]).collect()
}

/// Bandwidth: sender and receiver on two CPUs in the quick suite, the way a stream usually runs.
fn bandwidth_variants(scale: Scale) -> Vec<Params> {
    let places: &[&str] = match scale {
        Scale::Quick => &["cross"],
        Scale::Full => &["same", "cross"],
    };
    let mut out = Vec::new();
    for place in places {
        out.push(params![("rcvbuf", SMALL_RCVBUF), ("placement", *place)]);
        out.push(params![("rcvbuf", "default"), ("placement", *place)]);
    }
    out
}

/// `rcvbuf` is a byte count or "default" (leave the kernel's autotuning alone).
fn rcvbuf_param(p: &Params) -> Result<Option<i32>> {
    match p.get("rcvbuf") {
        Some(v) if v.as_str() == Some("default") => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if n > 0 && n <= i32::MAX as u64 => Ok(Some(n as i32)),
            _ => bail!("rcvbuf must be a byte count or \"default\", not {v}"),
        },
        None => bail!("parameter rcvbuf is missing"),
    }
}

fn with_partner<W: Workload + 'static>(
    env: &ProbeEnv,
    p: &Params,
    make: impl FnOnce(usize) -> Result<W>,
) -> Result<Built> {
    let cross = match param_str(p, "placement")? {
        "same" => false,
        "cross" => true,
        other => bail!("placement must be same or cross, not {other:?}"),
    };
    match partner_cpu(env.cpu, cross) {
        Some(cpu) => Ok(Built::Ready(Box::new(make(cpu)?))),
        None => Ok(Built::Skip(
            "cross-CPU placement needs two usable CPUs".into(),
        )),
    }
}
