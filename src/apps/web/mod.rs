//! `app.web`: nginx serving a generated file tree on loopback, driven by osmeter's own client
//! replaying a request trace at several concurrency levels, with kept-alive connections and with a
//! new connection per request, from a warm and from a cold page cache (Chen et al. 1996 ran a web
//! server on each system under a trace of real requests, because it exercises the network and the
//! file system together).

pub mod app;
pub mod client;
pub mod reach;
pub mod server;
pub mod trace;
pub mod tree;

use crate::apps::context::{unprivileged_account, Context, Scale};
use crate::apps::packages::{need, Need};
use anyhow::{bail, Context as _, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What `app.web` runs.
pub const NEEDS: &[Need] = &[need("/usr/sbin/nginx", "nginx-light")];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connection {
    /// One connection per client thread, kept open for all its requests.
    KeepAlive,
    /// A new connection for every request.
    Close,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cache {
    /// Every file read once before the run.
    Warm,
    /// The tree's pages dropped from the page cache before the run (and nothing else's).
    Cold,
}

impl Connection {
    pub fn name(self) -> &'static str {
        match self {
            Connection::KeepAlive => "keep-alive",
            Connection::Close => "close",
        }
    }
}

impl Cache {
    pub fn name(self) -> &'static str {
        match self {
            Cache::Warm => "warm",
            Cache::Cold => "cold",
        }
    }
}

/// Latency percentiles of the answered requests, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
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
        // Each variant of the probe generates its tree afresh: large enough to exceed the
        // caches of the CPU, small enough to write in a second. One client, a busy site, and
        // many more clients than CPUs: each level is 10 whole replays (5 statistics, 2
        // connection modes), so the levels are few.
        Scale::Full => Sizes {
            files: 512,
            largest: 2 << 20,
            requests: 4096,
            concurrency: &[1, 16, 64],
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
        let r = client::replay(&target, plan, &AtomicBool::new(false))?;
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

/// Serves and requests the quick tree's trace over and over until `stop` is set: the `app.web`
/// load of `osmeter latency`. `count` receives the requests answered.
pub fn serve_until(ctx: &Context, stop: &AtomicBool, count: &AtomicU64) -> Result<()> {
    crate::apps::packages::require(NEEDS)?;
    let size = sizes(ctx.scale);
    let site = Site::start(ctx, std::path::Path::new(NEEDS[0].program), false)?;
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
        let r = client::replay(&target, plan, stop)?;
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

#[cfg(test)]
mod tests;
