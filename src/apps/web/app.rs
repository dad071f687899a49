//! The `app.web` probe: nginx started inside the workload's cgroup (so its master and workers are
//! counted with osmeter's client threads), serving the generated tree on loopback. An operation is
//! one request of the trace, sent by `clients` client threads at once, over kept-alive connections
//! or a new connection each, from a warm page cache or one dropped before every sample.
//!
//! `stat=time` makes the figure the time per request (its inverse is requests per second, and the
//! figure is also a bandwidth: the trace's mean body per request); `stat=p50|p90|p99` makes it that
//! percentile of the latency of the sample's requests, each timed by the client from its first
//! byte sent (the connect, for a new connection) to the last byte of its body.

use super::{client, percentiles, sizes, trace, tree, Cache, Connection, Site, NEEDS};
use crate::apps::context::Context;
use crate::apps::packages::Need;
use crate::apps::App;
use crate::harness::env::ProbeEnv;
use crate::results::model::Params;
use crate::results::params::{param_str, param_u64};
use anyhow::{bail, Context as _, Result};
use std::sync::atomic::AtomicBool;

/// Every generated input follows from this.
pub const SEED: u64 = 0x0C4E_1996;

/// What the figure of an `app.web` variant is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    /// Time per request (1 / requests per second).
    Time,
    P50,
    P90,
    P99,
}

impl Stat {
    pub const ALL: [Stat; 4] = [Stat::Time, Stat::P50, Stat::P90, Stat::P99];

    /// The statistics the suite lists for a cache state (`--set stat=p90` gives the others). Each
    /// is a whole replay of the trace, so the list is what a reader needs: throughput and the
    /// typical and tail latency warm; throughput and the tail when every first read goes to disk.
    pub fn listed(cache: Cache) -> &'static [Stat] {
        match cache {
            Cache::Warm => &[Stat::Time, Stat::P50, Stat::P99],
            Cache::Cold => &[Stat::Time, Stat::P99],
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Stat::Time => "time",
            Stat::P50 => "p50",
            Stat::P90 => "p90",
            Stat::P99 => "p99",
        }
    }
}

fn choose<T: Copy>(key: &str, value: &str, all: &[T], name: fn(T) -> &'static str) -> Result<T> {
    match all.iter().find(|c| name(**c) == value) {
        Some(c) => Ok(*c),
        None => bail!(
            "app.web: {key}={value:?} is not one of {}: choose one with --set {key}=...",
            all.iter().map(|c| name(*c)).collect::<Vec<_>>().join(", ")
        ),
    }
}

pub struct WebApp {
    ctx: Context,
    connection: Connection,
    cache: Cache,
    clients: usize,
    stat: Stat,
    site: Option<Site>,
    trace: Vec<u32>,
    urls: Vec<String>,
    sizes: Vec<u64>,
    /// The requests of the next sample, continuing the trace where the last one ended.
    batch: Vec<u32>,
    next: usize,
    /// The last sample's figure times its requests, for a percentile variant.
    timed: Option<u64>,
    version: String,
    resident: f64,
}

impl WebApp {
    pub fn new(env: &ProbeEnv, p: &Params) -> Result<WebApp> {
        let text = |k: &str| param_str(p, k).context("app.web");
        let connection = choose(
            "conn",
            text("conn")?,
            &[Connection::KeepAlive, Connection::Close],
            Connection::name,
        )?;
        let cache = choose(
            "cache",
            text("cache")?,
            &[Cache::Warm, Cache::Cold],
            Cache::name,
        )?;
        let stat = choose("stat", text("stat")?, &Stat::ALL, Stat::name)?;
        let clients = param_u64(p, "clients").context("app.web")?;
        if !(1..=1024).contains(&clients) {
            bail!("app.web: clients={clients}: give 1 to 1024 client threads");
        }
        Ok(WebApp {
            ctx: Context::new(env.scratch, env.scale, SEED),
            connection,
            cache,
            clients: clients as usize,
            stat,
            site: None,
            trace: Vec::new(),
            urls: Vec::new(),
            sizes: Vec::new(),
            batch: Vec::new(),
            next: 0,
            timed: None,
            version: String::new(),
            resident: 0.0,
        })
    }

    /// Why this variant cannot run in `dir`: a cold cache on a file system whose pages are the
    /// files themselves.
    pub fn unavailable(&self) -> Option<String> {
        if self.cache != Cache::Cold {
            return None;
        }
        tree::cannot_drop(&self.ctx.dir).map(|why| {
            format!("{why}; give a --dir on a disk file system to measure a cold page cache")
        })
    }
}

impl App for WebApp {
    fn needs(&self) -> &'static [Need] {
        NEEDS
    }

    fn start(&mut self) -> Result<()> {
        let nginx = std::path::Path::new(NEEDS[0].program);
        self.version = super::server::version(nginx);
        // nginx's workers run as nobody when osmeter is root: the run's private scratch directory
        // lets nobody's group pass (only pass: it cannot list it) on the way to the tree.
        if let Some(account) = crate::apps::context::unprivileged_account()? {
            tree::share_with(&self.ctx.dir, Some(account.gid), 0o710)?;
        }
        let site = Site::start(&self.ctx, nginx, true)?;
        site.verify()?;
        let size = sizes(self.ctx.scale);
        self.trace = trace::covering(self.ctx.seed, size.files, size.requests);
        self.urls = site.urls();
        self.sizes = site.sizes();
        if self.cache == Cache::Warm {
            site.tree.warm_cache()?;
        }
        self.site = Some(site);
        Ok(())
    }

    fn prepare(&mut self, iters: u64) -> Result<()> {
        let Some(site) = &self.site else {
            bail!("nginx was not started; this is a bug");
        };
        match self.cache {
            Cache::Warm => {}
            Cache::Cold => site.tree.drop_cache()?,
        }
        self.resident = site.tree.resident_share()?;
        let n = self.trace.len();
        self.batch = (0..iters as usize)
            .map(|i| self.trace[(self.next + i) % n])
            .collect();
        self.next = (self.next + iters as usize) % n;
        Ok(())
    }

    fn run_once(&mut self, _index: u64) -> Result<()> {
        self.run(1)
    }

    fn run(&mut self, iters: u64) -> Result<()> {
        let Some(site) = &self.site else {
            bail!("nginx was not started; this is a bug");
        };
        let target = client::Target {
            addr: site.server.addr,
            urls: &self.urls,
            sizes: &self.sizes,
        };
        let plan = client::Plan {
            trace: &self.batch[..(iters as usize).min(self.batch.len())],
            concurrency: self.clients,
            keep_alive: self.connection == Connection::KeepAlive,
            verify: None,
        };
        let mut r = client::replay(&target, plan, &AtomicBool::new(false))?;
        if crate::interrupt::requested() {
            return Err(crate::interrupt::Interrupted.into());
        }
        if r.errors > 0 {
            bail!(
                "nginx failed {} of {} requests; the first: {}; nginx's log: {}",
                r.errors,
                r.requests,
                r.first_error.unwrap_or_default(),
                site.server.log_tail()
            );
        }
        if r.requests != iters {
            bail!("the client sent {} of {iters} requests", r.requests);
        }
        let p = percentiles(&mut r.latencies_ns);
        self.timed = match (self.stat, p) {
            (Stat::Time, _) | (_, None) => None,
            (Stat::P50, Some(p)) => Some((p.p50_us * 1e3 * iters as f64) as u64),
            (Stat::P90, Some(p)) => Some((p.p90_us * 1e3 * iters as f64) as u64),
            (Stat::P99, Some(p)) => Some((p.p99_us * 1e3 * iters as f64) as u64),
        };
        Ok(())
    }

    fn timed_ns(&mut self) -> Option<u64> {
        self.timed.take()
    }

    fn bytes_per_op(&self) -> Option<u64> {
        let total: u64 = self.trace.iter().map(|&f| self.sizes[f as usize]).sum();
        (!self.trace.is_empty()).then(|| total / self.trace.len() as u64)
    }

    fn notes(&self) -> Vec<String> {
        let what = match self.stat {
            Stat::Time => "the figure is the time per request (1 / requests per second)".into(),
            s => format!(
                "the figure is the {} latency of the sample's requests",
                s.name()
            ),
        };
        vec![format!(
            "{} serving {} files on loopback to {} client thread{} ({}, page cache {}: {:.0}% of \
             the tree resident at the last sample's start); {what}",
            self.version,
            self.urls.len(),
            self.clients,
            if self.clients == 1 { "" } else { "s" },
            match self.connection {
                Connection::KeepAlive => "kept-alive connections",
                Connection::Close => "a new connection per request",
            },
            self.cache.name(),
            100.0 * self.resident,
        )]
    }

    fn max_iters(&self) -> u64 {
        1 << 20
    }
}
