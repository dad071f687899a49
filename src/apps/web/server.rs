//! nginx started by osmeter: its own configuration, logs, pid file and temporary directories in
//! the workload's scratch directory, listening on a free loopback port, in its own process group
//! under a guardian ([`crate::guard`]) that ends it when the workload stops or osmeter dies. When
//! osmeter runs as root, nginx's workers (the processes that serve) run as `nobody`.

use crate::apps::context::{alive, shell_word, CpuTime, Unprivileged};
use crate::guard::Guarded;
use anyhow::{bail, Context, Result};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// nginx gets this long to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// And this long to exit after SIGTERM before its processes are killed.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// Start attempts: the free port found can be taken by someone else before nginx binds it.
const ATTEMPTS: usize = 3;

/// How the server is set up.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Keep an access log, as the servers of the seed paper did (not for an endless load).
    pub access_log: bool,
    /// The account of the workers when osmeter is root.
    pub account: Option<Unprivileged>,
}

/// A running nginx.
pub struct Server {
    guarded: Guarded,
    pub addr: SocketAddr,
    prefix: PathBuf,
}

impl Server {
    /// Starts `nginx` serving `docroot`; `prefix` (an empty private directory) receives its
    /// configuration, logs and temporary files.
    pub fn start(
        nginx: &Path,
        prefix: &Path,
        docroot: &Path,
        options: &ServerOptions,
    ) -> Result<Server> {
        let mut last = None;
        for attempt in 0..ATTEMPTS {
            let dir = prefix.join(format!("try{attempt}"));
            std::fs::create_dir(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            match start_once(nginx, &dir, docroot, options) {
                Ok(s) => return Ok(s),
                Err(e) if format!("{e:#}").contains("Address already in use") => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.expect("at least one attempt"))
    }

    /// The master's pid, which is also the process group of every nginx process.
    pub fn pid(&self) -> libc::pid_t {
        self.guarded.shell_pid()
    }

    /// CPU time of the master and the workers so far.
    pub fn cpu_time(&self) -> CpuTime {
        CpuTime::of_group(self.pid())
    }

    /// Stops nginx and every process it started (also done on drop).
    pub fn stop(&mut self) {
        self.guarded.stop();
    }

    /// The last lines of nginx's error log, for an error message.
    pub fn log_tail(&self) -> String {
        log_tail(&self.prefix.join("error.log"))
    }
}

fn start_once(nginx: &Path, dir: &Path, docroot: &Path, options: &ServerOptions) -> Result<Server> {
    let port = free_port()?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let conf = dir.join("nginx.conf");
    std::fs::write(&conf, config(dir, docroot, addr, options))
        .with_context(|| format!("cannot write {}", conf.display()))?;
    let log = dir.join("error.log");
    // exec: the shell becomes nginx's master, so its pid is the process group's.
    let command = format!(
        "exec {} -q -e {} -p {} -c {}",
        shell_word(nginx.as_os_str()),
        shell_word(log.as_os_str()),
        shell_word(dir.as_os_str()),
        shell_word(conf.as_os_str()),
    );
    // The guardian's limit on real-time CPU time; nginx never asks for a real-time class.
    let guarded = Guarded::spawn(&command, 1_000_000, STOP_GRACE)
        .with_context(|| format!("cannot start {}", nginx.display()))?;
    let mut server = Server {
        guarded,
        addr,
        prefix: dir.to_path_buf(),
    };
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(server);
        }
        if !alive(server.pid()) {
            server.stop();
            bail!(
                "nginx exited at start-up: {}",
                log_tail(&dir.join("error.log"))
            );
        }
        if Instant::now() > deadline || crate::interrupt::requested() {
            server.stop();
            bail!(
                "nginx did not listen on {addr} within {} s: {}",
                START_TIMEOUT.as_secs(),
                log_tail(&dir.join("error.log"))
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A loopback port nobody listens on now.
fn free_port() -> Result<u16> {
    let l = TcpListener::bind(("127.0.0.1", 0)).context("cannot find a free loopback port")?;
    Ok(l.local_addr()?.port())
}

/// nginx's configuration: every path it writes is under `dir`, it serves `docroot` on `addr`
/// only, keeps connections open for as many requests as a client sends, and sends files with
/// sendfile as a tuned static server does.
pub fn config(dir: &Path, docroot: &Path, addr: SocketAddr, options: &ServerOptions) -> String {
    let d = |name: &str| quoted(&dir.join(name));
    let user = match &options.account {
        Some(a) => format!("user {} {};\n", a.user, a.group),
        None => String::new(),
    };
    let access = if options.access_log {
        d("access.log")
    } else {
        "off".into()
    };
    format!(
        "# Written by osmeter for one run; removed with its scratch directory.\n\
         {user}daemon off;\n\
         master_process on;\n\
         worker_processes auto;\n\
         pid {nginx_pid};\n\
         error_log {error_log} warn;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n\
         \x20   access_log {access};\n\
         \x20   default_type application/octet-stream;\n\
         \x20   sendfile on;\n\
         \x20   tcp_nopush on;\n\
         \x20   keepalive_timeout 60s;\n\
         \x20   keepalive_requests 1000000;\n\
         \x20   client_body_temp_path {body};\n\
         \x20   proxy_temp_path {proxy};\n\
         \x20   fastcgi_temp_path {fastcgi};\n\
         \x20   uwsgi_temp_path {uwsgi};\n\
         \x20   scgi_temp_path {scgi};\n\
         \x20   server {{\n\
         \x20       listen {addr};\n\
         \x20       root {root};\n\
         \x20       location / {{ }}\n\
         \x20   }}\n\
         }}\n",
        nginx_pid = d("nginx.pid"),
        error_log = d("error.log"),
        body = d("body"),
        proxy = d("proxy"),
        fastcgi = d("fastcgi"),
        uwsgi = d("uwsgi"),
        scgi = d("scgi"),
        root = quoted(docroot),
    )
}

/// A path as a quoted nginx string.
fn quoted(path: &Path) -> String {
    let text = path.to_string_lossy();
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `nginx/1.22.1`, from `nginx -v` (which writes it to stderr).
pub fn version(nginx: &Path) -> String {
    crate::programs::command(nginx)
        .arg("-v")
        .output()
        .ok()
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stderr).into_owned();
            Some(text.split_once("version: ")?.1.trim().to_string())
        })
        .unwrap_or_else(|| "nginx (version unknown)".into())
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    if lines.is_empty() {
        return "(nginx wrote nothing to its error log)".into();
    }
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}
