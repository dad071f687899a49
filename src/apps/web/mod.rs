//! `app.web`: nginx serving a generated file tree on loopback, driven by osmeter's own client
//! replaying a request trace at several concurrency levels, with kept-alive connections and with a
//! new connection per request, from a warm and from a cold page cache (Chen et al. 1996 ran a web
//! server on each system under a trace of real requests, because it exercises the network and the
//! file system together).

pub mod client;
pub mod server;
pub mod trace;
pub mod tree;

use crate::apps::context::{
    figure, find_programs, unprivileged_account, Context, CpuTime, Needed, Outcome, Scale,
};
use crate::units::Unit;
use anyhow::{bail, Context as _, Result};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What `app.web` runs.
pub const NEEDED: &[Needed] = &[Needed {
    program: "nginx",
    package: "nginx-light",
}];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Connection {
    /// One connection per client thread, kept open for all its requests.
    KeepAlive,
    /// A new connection for every request.
    Close,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cache {
    /// Every file read once before the run.
    Warm,
    /// The tree's pages dropped from the page cache before the run (and nothing else's).
    Cold,
}

impl Connection {
    fn name(self) -> &'static str {
        match self {
            Connection::KeepAlive => "keep-alive",
            Connection::Close => "close",
        }
    }
}

impl Cache {
    fn name(self) -> &'static str {
        match self {
            Cache::Warm => "warm",
            Cache::Cold => "cold",
        }
    }
}

/// Latency percentiles of the answered requests, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

/// Percentiles of `latencies_ns` (sorted in place), interpolating between neighbours; `None`
/// when there is none.
pub fn percentiles(latencies_ns: &mut [u64]) -> Option<Percentiles> {
    if latencies_ns.is_empty() {
        return None;
    }
    latencies_ns.sort_unstable();
    let us: Vec<f64> = latencies_ns.iter().map(|&n| n as f64 / 1e3).collect();
    let q = |p| crate::stats::rounds::quantile(&us, p);
    Some(Percentiles {
        p50_us: q(0.50),
        p90_us: q(0.90),
        p99_us: q(0.99),
        max_us: us[us.len() - 1],
    })
}

/// One run of the trace at one concurrency level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    pub concurrency: usize,
    pub connection: Connection,
    pub cache: Cache,
    pub requests: u64,
    pub errors: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub first_error: Option<String>,
    pub seconds: f64,
    pub requests_per_s: f64,
    /// Body bytes received per second.
    pub bytes_per_s: f64,
    pub latency: Option<Percentiles>,
    /// Share of the tree's pages in the page cache when the run started.
    pub resident_share: f64,
    /// nginx's master and workers during the run.
    pub server_cpu: CpuTime,
    /// osmeter's client threads during the run.
    pub client_cpu: CpuTime,
}

/// Everything `app.web` measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebFigures {
    /// `nginx/1.22.1`.
    pub server: String,
    /// The account nginx's workers ran as, when osmeter was root.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub server_user: Option<String>,
    pub scale: Scale,
    pub seed: u64,
    pub files: usize,
    pub tree_bytes: u64,
    pub trace_requests: usize,
    pub trace_bytes: u64,
    /// Why there are no cold runs, when there are none (a tree on tmpfs cannot be made cold).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cold_skipped: Option<String>,
    pub levels: Vec<Level>,
}

/// Sizes of the tree, the trace and the levels for a scale.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub files: usize,
    pub largest: u64,
    pub requests: usize,
    pub concurrency: &'static [usize],
}

pub fn sizes(scale: Scale) -> Sizes {
    match scale {
        // The seed paper's trace held 1024 requests.
        Scale::Quick => Sizes {
            files: 256,
            largest: 1 << 20,
            requests: 1024,
            concurrency: &[1, 4, 16],
        },
        Scale::Full => Sizes {
            files: 2048,
            largest: 4 << 20,
            requests: 8192,
            concurrency: &[1, 2, 4, 8, 16, 32, 64],
        },
    }
}

/// A tree served by a running nginx, removed with its scratch directory on drop.
pub struct Site {
    pub server: server::Server,
    pub tree: tree::Tree,
    pub user: Option<String>,
    // Declared last: dropped after the server has stopped.
    _scratch: crate::scratch::ScratchDir,
}

impl Site {
    /// Generates the tree and starts nginx on it (`access_log`: keep one, bounded runs only).
    pub fn start(ctx: &Context, nginx: &std::path::Path, access_log: bool) -> Result<Site> {
        let size = sizes(ctx.scale);
        let account = unprivileged_account()?;
        let scratch = crate::scratch::ScratchDir::create(&ctx.dir, "web")?;
        let group = account.as_ref().map(|a| a.gid);
        tree::share_with(scratch.path(), group, 0o750)?;
        let root = scratch.path().join("tree");
        std::fs::create_dir(&root).with_context(|| format!("cannot create {}", root.display()))?;
        let tree = tree::Tree::generate(&root, ctx.seed, size.files, size.largest, group)?;
        let prefix = scratch.path().join("server");
        std::fs::create_dir(&prefix)
            .with_context(|| format!("cannot create {}", prefix.display()))?;
        let options = server::ServerOptions {
            access_log,
            account: account.clone(),
        };
        let server = server::Server::start(nginx, &prefix, &root, &options)?;
        Ok(Site {
            server,
            tree,
            user: account.map(|a| a.user),
            _scratch: scratch,
        })
    }

    pub fn urls(&self) -> Vec<String> {
        self.tree.files.iter().map(|f| f.url.clone()).collect()
    }

    pub fn sizes(&self) -> Vec<u64> {
        self.tree.files.iter().map(|f| f.size).collect()
    }

    /// Asks for every file once and checks every byte: an error names the first file served
    /// wrong (and why nginx could not read it, when that is the reason).
    pub fn verify(&self) -> Result<()> {
        let (urls, sizes) = (self.urls(), self.sizes());
        let target = client::Target {
            addr: self.server.addr,
            urls: &urls,
            sizes: &sizes,
        };
        let every: Vec<u32> = (0..urls.len() as u32).collect();
        let seed = self.tree.seed();
        let fill = move |file: usize, offset: u64, out: &mut [u8]| {
            tree::fill_content(seed, file, offset, out)
        };
        let plan = client::Plan {
            trace: &every,
            concurrency: 2,
            keep_alive: true,
            verify: Some(&fill),
        };
        let r = client::replay(&target, plan, &AtomicBool::new(false));
        interrupted()?;
        if r.errors > 0 {
            let mut msg = format!(
                "nginx served {} of {} files wrong; the first: {}",
                r.errors,
                urls.len(),
                r.first_error.unwrap_or_default()
            );
            if let Some(user) = &self.user {
                msg.push_str(&format!(
                    " (nginx's workers run as {user}: every directory above the scratch \
                     directory must let them pass; choose a --dir such as /tmp)"
                ));
            }
            bail!("{msg}; nginx's log: {}", self.server.log_tail());
        }
        Ok(())
    }
}

fn interrupted() -> Result<()> {
    if crate::interrupt::requested() {
        return Err(crate::interrupt::Interrupted.into());
    }
    Ok(())
}

/// Runs `app.web`: skipped when nginx is missing.
pub fn run(ctx: &Context) -> Result<Outcome<WebFigures>> {
    let nginx = match find_programs(NEEDED) {
        Ok(found) => found.into_iter().next().expect("one program"),
        Err(skip) => return Ok(skip),
    };
    let size = sizes(ctx.scale);
    let mut site = Site::start(ctx, &nginx, true)?;
    site.verify()?;
    let cold_skipped = tree::cannot_drop(&site.tree.root);
    let trace = trace::covering(ctx.seed, size.files, size.requests);
    let (urls, sizes) = (site.urls(), site.sizes());
    let target = client::Target {
        addr: site.server.addr,
        urls: &urls,
        sizes: &sizes,
    };
    let mut levels = Vec::new();
    for connection in [Connection::KeepAlive, Connection::Close] {
        for cache in [Cache::Warm, Cache::Cold] {
            if cache == Cache::Cold && cold_skipped.is_some() {
                continue;
            }
            for &concurrency in size.concurrency {
                match cache {
                    Cache::Warm => site.tree.warm_cache()?,
                    Cache::Cold => site.tree.drop_cache()?,
                }
                let resident_share = site.tree.resident_share()?;
                let before = site.server.cpu_time();
                let plan = client::Plan {
                    trace: &trace,
                    concurrency,
                    keep_alive: connection == Connection::KeepAlive,
                    verify: None,
                };
                let mut r = client::replay(&target, plan, &AtomicBool::new(false));
                let server_cpu = site.server.cpu_time().since(before);
                interrupted()?;
                levels.push(Level {
                    concurrency,
                    connection,
                    cache,
                    requests: r.requests,
                    errors: r.errors,
                    first_error: r.first_error.take(),
                    seconds: r.seconds,
                    requests_per_s: r.requests as f64 / r.seconds.max(1e-9),
                    bytes_per_s: r.body_bytes as f64 / r.seconds.max(1e-9),
                    latency: percentiles(&mut r.latencies_ns),
                    resident_share,
                    server_cpu,
                    client_cpu: r.client_cpu,
                });
            }
        }
    }
    let version = server::version(&nginx);
    site.server.stop();
    Ok(Outcome::Measured(WebFigures {
        server: version,
        server_user: site.user.clone(),
        scale: ctx.scale,
        seed: ctx.seed,
        files: size.files,
        tree_bytes: site.tree.total_bytes(),
        trace_requests: trace.len(),
        trace_bytes: trace.iter().map(|&f| sizes[f as usize]).sum(),
        cold_skipped,
        levels,
    }))
}

/// Serves and requests the quick tree's trace over and over until `stop` is set: the `app.web`
/// load of `osmeter latency`. `count` receives the requests answered.
pub fn serve_until(ctx: &Context, stop: &AtomicBool, count: &AtomicU64) -> Result<()> {
    let nginx = match find_programs::<()>(NEEDED) {
        Ok(found) => found.into_iter().next().expect("one program"),
        Err(Outcome::Skipped { reason, install }) => {
            bail!("{reason}: {}", install.unwrap_or_default())
        }
        Err(Outcome::Measured(())) => unreachable!("find_programs only skips"),
    };
    let size = sizes(ctx.scale);
    let site = Site::start(ctx, &nginx, false)?;
    site.verify()?;
    let trace = trace::covering(ctx.seed, size.files, size.requests);
    let (urls, sizes) = (site.urls(), site.sizes());
    let target = client::Target {
        addr: site.server.addr,
        urls: &urls,
        sizes: &sizes,
    };
    while !stop.load(Ordering::Relaxed) && !crate::interrupt::requested() {
        let plan = client::Plan {
            trace: &trace,
            concurrency: 2,
            keep_alive: true,
            verify: None,
        };
        let r = client::replay(&target, plan, stop);
        if r.errors > 0 && r.requests == r.errors {
            bail!(
                "every request failed: {}",
                r.first_error.unwrap_or_default()
            );
        }
        count.fetch_add(r.requests - r.errors, Ordering::Relaxed);
    }
    Ok(())
}

impl WebFigures {
    /// One figure per unit: requests/s, bytes/s and latency percentiles of every level.
    pub fn figures(&self) -> Vec<crate::results::figure::Figure> {
        let mut out = Vec::new();
        for l in &self.levels {
            let at = format!(
                "app.web {} {} c={}",
                l.connection.name(),
                l.cache.name(),
                l.concurrency
            );
            out.push(figure(
                format!("{at} requests"),
                Unit::OpsPerSecond,
                l.requests_per_s,
                Vec::new(),
            ));
            out.push(figure(
                format!("{at} bytes"),
                Unit::BytesPerSecond,
                l.bytes_per_s,
                Vec::new(),
            ));
            if let Some(p) = l.latency {
                for (name, us) in [("p50", p.p50_us), ("p90", p.p90_us), ("p99", p.p99_us)] {
                    out.push(figure(
                        format!("{at} latency {name}"),
                        Unit::Nanoseconds,
                        us * 1e3,
                        Vec::new(),
                    ));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
