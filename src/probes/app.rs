//! Application workloads (group `app`): whole programs, measured whole. The workloads live in
//! [`crate::apps`]; this is their registry table. An app figure's operation is one whole run of the
//! workload (an Andrew phase, an interpreter start, a rendering), and its counters are those of
//! every process the workload involved (see [`crate::apps`]).

use super::{Built, Origin, ProbeDef, ProbeEnv, Scale};
use crate::apps;
use crate::params;
use crate::results::model::{Params, Unit};
use anyhow::Result;

/// App probes light enough for the quick suite's one-minute budget.
pub const LIGHT: &[&str] = &["app.interp"];

pub const PROBES: &[ProbeDef] = &[
    ProbeDef {
        id: "app.andrew",
        summary: "the modified Andrew benchmark: make the directories of a generated C program, \
                  copy it, stat every file, read every byte, compile it with gcc -O2; one figure \
                  per phase and the total, in the scratch directory or in an ext4 image mounted \
                  by the kernel or by fuse2fs",
        params: "phase=mkdir|copy|stat|read|compile|total fs=dir|ext4|fuse sources=N",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Ousterhout89],
        variants: andrew_variants,
        build: build_andrew,
    },
    ProbeDef {
        id: "app.ghostscript",
        summary: "Ghostscript renders a generated PostScript document (text, curves, fills, \
                  images) at 150 dpi, counted whole",
        params: "pages=N",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Chen96],
        variants: ghostscript_variants,
        build: build_ghostscript,
    },
    ProbeDef {
        id: "app.interp",
        summary: "interpreter start-up: python3, perl and tclsh started with nothing to do, and \
              exited, counted whole (every process, user and kernel apart)",
        params: "interp=python3|perl|tclsh",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Osmeter],
        variants: interp_variants,
        build: build_interp,
    },
    ProbeDef {
        id: "app.web",
        summary: "nginx serves a generated file tree on loopback to osmeter's client replaying a \
                  trace (Zipf popularity, web-like sizes): time per request (1/throughput; also \
                  a bandwidth) or a latency percentile, per connection mode, page cache state \
                  and number of clients; nginx counted whole with the client",
        params: "conn=keep-alive|close cache=warm|cold clients=N stat=time|p50|p90|p99 (p90 only \
                 with --set)",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Chen96],
        variants: web_variants,
        build: build_web,
    },
    ProbeDef {
        id: "app.wish",
        summary: "wish (Tcl/Tk) builds, changes and destroys panels of widgets on osmeter's \
                  Xvfb: one whole wish run per operation, the X server counted whole with it",
        params: "panels=N",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Chen96],
        variants: wish_variants,
        build: build_wish,
    },
    ProbeDef {
        id: "app.bitblt",
        summary: "a 570x1520 image scrolled one row per frame through a 570x760 window on \
                  osmeter's Xvfb, sent by the client (PutImage) or copied in the server \
                  (CopyArea): time per frame (also a bandwidth), the X server counted whole",
        params: "depth=1|24 path=put-image|copy-area",
        unit: Unit::Nanoseconds,
        origins: &[Origin::Chen96],
        variants: bitblt_variants,
        build: build_bitblt,
    },
];

fn web_variants(scale: Scale) -> Vec<Params> {
    let mut out = Vec::new();
    use apps::web::{app::Stat, Cache, Connection};
    for conn in [Connection::KeepAlive, Connection::Close] {
        for cache in [Cache::Warm, Cache::Cold] {
            for &clients in apps::web::sizes(scale).concurrency {
                for stat in Stat::listed(cache) {
                    out.push(params![
                        ("conn", conn.name()),
                        ("cache", cache.name()),
                        ("clients", clients as u64),
                        ("stat", stat.name())
                    ]);
                }
            }
        }
    }
    out
}

fn build_web(env: &ProbeEnv, p: &Params) -> Result<Built> {
    let app = apps::web::app::WebApp::new(env, p)?;
    if let Some(why) = app.unavailable() {
        return Ok(Built::Skip(why));
    }
    apps::whole(app)
}

fn wish_variants(scale: Scale) -> Vec<Params> {
    let panels: &[u64] = match scale {
        Scale::Quick => &[10],
        Scale::Full => &[1, 100],
    };
    panels.iter().map(|&n| params![("panels", n)]).collect()
}

fn build_wish(env: &ProbeEnv, p: &Params) -> Result<Built> {
    apps::whole(apps::x11::app::WishApp::new(env, p)?)
}

fn bitblt_variants(_: Scale) -> Vec<Params> {
    let mut out = Vec::new();
    for depth in [1u64, 24] {
        for path in ["put-image", "copy-area"] {
            out.push(params![("depth", depth), ("path", path)]);
        }
    }
    out
}

fn build_bitblt(env: &ProbeEnv, p: &Params) -> Result<Built> {
    apps::whole(apps::x11::app::BitbltApp::new(env, p)?)
}

fn andrew_variants(scale: Scale) -> Vec<Params> {
    let (sources, systems): (u64, &[&str]) = match scale {
        Scale::Quick => (4, &["dir"]),
        Scale::Full => (10, apps::andrew::FILE_SYSTEMS),
    };
    let mut out = Vec::new();
    for fs in systems {
        for phase in apps::andrew::PHASES.iter().chain(&["total"]) {
            out.push(params![
                ("phase", *phase),
                ("fs", *fs),
                ("sources", sources)
            ]);
        }
    }
    out
}

fn build_andrew(env: &ProbeEnv, p: &Params) -> Result<Built> {
    let fs = crate::probes::util::param_str(p, "fs")?;
    if let Some(why) = apps::image::Kind::parse(fs).and_then(apps::image::unavailable) {
        return Ok(Built::Skip(why));
    }
    apps::whole(apps::andrew::Andrew::new(env, p)?)
}

fn ghostscript_variants(scale: Scale) -> Vec<Params> {
    vec![params![(
        "pages",
        match scale {
            Scale::Quick => 2,
            Scale::Full => 13,
        }
    )]]
}

fn build_ghostscript(env: &ProbeEnv, p: &Params) -> Result<Built> {
    apps::whole(apps::ghostscript::Ghostscript::new(env, p)?)
}

fn interp_variants(_: Scale) -> Vec<Params> {
    apps::interp::names()
        .map(|n| params![("interp", n)])
        .collect()
}

fn build_interp(env: &ProbeEnv, p: &Params) -> Result<Built> {
    apps::whole(apps::interp::Interp::new(env, p)?)
}
