//! A throwaway PostgreSQL cluster for the tests: made with initdb in a temporary directory, run by an
//! unprivileged user (nobody when the tests run as root, since PostgreSQL refuses root), listening on
//! 127.0.0.1 at a free port and on a socket inside that directory only, with password
//! authentication. One cluster per test binary, a fresh database per test. It is stopped and its
//! directory removed when the test binary exits, whether tests passed or panicked; if the binary is
//! killed, the server dies with it (parent-death signal) and the next run sweeps the directory.
#![allow(dead_code)]

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The role the tests connect as: owns each test database, not a superuser.
pub const USER: &str = "osmeter";
pub const PASSWORD: &str = "pw-for-tests-only";
const ADMIN: &str = "osmeter_admin";
const ADMIN_PASSWORD: &str = "admin-pw-for-tests-only";
/// Who runs the server when the tests run as root.
const NOBODY: u32 = 65534;
const DIR_PREFIX: &str = "osmeter-pgtest-";

pub struct Cluster {
    root: PathBuf,
    pub port: u16,
    pub bin: PathBuf,
    server: Mutex<Option<Child>>,
    next_db: AtomicU32,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// The cluster of this test binary, started on first use.
pub fn cluster() -> &'static Cluster {
    CLUSTER.get_or_init(|| {
        let c = Cluster::start().unwrap_or_else(|e| panic!("{e}"));
        // Statics are never dropped: stop the server when the test binary exits instead.
        // SAFETY: registering a plain extern "C" function with no captured state.
        unsafe { libc::atexit(stop_at_exit) };
        c
    })
}

extern "C" fn stop_at_exit() {
    if let Some(c) = CLUSTER.get() {
        c.stop();
    }
}

/// A fresh, empty database owned by [`USER`]; the URL carries the password.
pub fn fresh_database() -> String {
    cluster().new_database()
}

impl Cluster {
    fn start() -> Result<Cluster, String> {
        let bin = find_binaries()?;
        sweep_stale_dirs();
        let root = std::env::temp_dir().join(format!(
            "{DIR_PREFIX}{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir(&root).map_err(|e| format!("creating {}: {e}", root.display()))?;
        let cluster = Cluster {
            root: root.clone(),
            port: 0,
            bin,
            server: Mutex::new(None),
            next_db: AtomicU32::new(0),
        };
        // From here on, dropping `cluster` on an error removes the directory.
        cluster.give_to_server_user(&root)?;
        let pwfile = root.join("pwfile");
        std::fs::write(&pwfile, ADMIN_PASSWORD).map_err(|e| e.to_string())?;
        cluster.give_to_server_user(&pwfile)?;
        let out = cluster
            .command("initdb")
            .arg("-D")
            .arg(root.join("data"))
            .args([
                "-U",
                ADMIN,
                "--auth=scram-sha-256",
                "--no-locale",
                "-E",
                "UTF8",
            ])
            .args(["--no-sync", "--no-instructions"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .output()
            .map_err(|e| format!("running initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "initdb failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        // A free port can be taken by someone else before the server binds it: try a few.
        let mut cluster = cluster;
        let mut last = String::new();
        for _ in 0..5 {
            match cluster.launch() {
                Ok(()) => break,
                Err(e) => last = e,
            }
        }
        if cluster.server.lock().unwrap().is_none() {
            return Err(format!("the test PostgreSQL server did not start: {last}"));
        }
        let mut admin = cluster.admin("postgres")?;
        admin
            .batch_execute(&format!("CREATE ROLE {USER} LOGIN PASSWORD '{PASSWORD}'"))
            .map_err(|e| format!("creating the test role: {e:#}"))?;
        Ok(cluster)
    }

    /// Starts the server on a fresh port and waits until it accepts connections.
    fn launch(&mut self) -> Result<(), String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        self.port = port;
        self.serve_on(port)
    }

    /// Stops the server as an administrator's restart does (fast shutdown: every session is ended,
    /// unfinished transactions are rolled back) and starts it again on the same port.
    pub fn restart(&self) -> Result<(), String> {
        self.shut_down();
        self.serve_on(self.port)
    }

    /// Starts the server on `port` and waits until it accepts connections.
    fn serve_on(&self, port: u16) -> Result<(), String> {
        let log = self.root.join("server.log");
        let log_file = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let mut cmd = self.command("postgres");
        cmd.arg("-D")
            .arg(self.root.join("data"))
            .args(["-p", &port.to_string(), "-k"])
            .arg(&self.root)
            .args(["-c", "listen_addresses=127.0.0.1"])
            // Durability buys nothing in a throwaway cluster; speed does.
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off", "-c", "max_connections=60"])
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().map_err(|e| e.to_string())?)
            .stderr(log_file);
        // SAFETY: prctl is async-signal-safe; this runs in the child after the user change, which
        // would otherwise clear the parent-death signal.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = spawn_from_lasting_thread(cmd)?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                let mut text = String::new();
                let _ = std::fs::File::open(&log).and_then(|mut f| f.read_to_string(&mut text));
                return Err(format!("postgres exited ({status}): {text}"));
            }
            if self.admin("postgres").is_ok() {
                *self.server.lock().unwrap() = Some(child);
                return Ok(());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err("postgres did not accept connections within 60 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A command of the server's binaries, run as the server's user.
    fn command(&self, name: &str) -> Command {
        let mut c = Command::new(self.bin.join(name));
        c.current_dir(&self.root);
        for var in [
            "PGDATA",
            "PGHOST",
            "PGPORT",
            "PGUSER",
            "PGPASSWORD",
            "PGDATABASE",
        ] {
            c.env_remove(var);
        }
        if is_root() {
            // std drops supplementary groups when it changes the user id.
            c.uid(NOBODY).gid(NOBODY);
        }
        c
    }

    /// The server's data directory (its configuration and the files it reads).
    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    /// Makes `path` the server user's, so the server can read a file the test wrote.
    pub fn give_to_server_user(&self, path: &Path) -> Result<(), String> {
        if is_root() {
            std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY))
                .map_err(|e| format!("chown {}: {e}", path.display()))?;
        }
        Ok(())
    }

    pub fn url(&self, user: &str, password: &str, db: &str) -> String {
        format!("postgres://{user}:{password}@127.0.0.1:{}/{db}", self.port)
    }

    /// The URL of `db` through the server's Unix socket, which processes in other network
    /// namespaces reach as well.
    pub fn socket_url(&self, user: &str, password: &str, db: &str) -> String {
        let dir: String = self
            .root
            .display()
            .to_string()
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    (b as char).to_string()
                }
                other => format!("%{other:02X}"),
            })
            .collect();
        format!("postgres://{user}:{password}@{dir}:{}/{db}", self.port)
    }

    /// A connection as the superuser, for setting up and inspecting.
    pub fn admin(&self, db: &str) -> Result<postgres::Client, String> {
        postgres::Client::connect(&self.url(ADMIN, ADMIN_PASSWORD, db), postgres::NoTls)
            .map_err(|e| format!("{e:#}"))
    }

    pub fn new_database(&self) -> String {
        let name = format!("t{}", self.next_db.fetch_add(1, Ordering::SeqCst));
        self.admin("postgres")
            .and_then(|mut c| {
                c.batch_execute(&format!("CREATE DATABASE {name} OWNER {USER}"))
                    .map_err(|e| format!("{e:#}"))
            })
            .unwrap_or_else(|e| panic!("creating test database {name}: {e}"));
        self.url(USER, PASSWORD, &name)
    }

    /// Fast shutdown, then the directory goes. Safe to call twice.
    pub fn stop(&self) {
        self.shut_down();
        let _ = std::fs::remove_dir_all(&self.root);
    }

    /// Fast shutdown of the server, if it runs; its files stay.
    fn shut_down(&self) {
        let child = self.server.lock().map(|mut s| s.take()).unwrap_or(None);
        if let Some(mut child) = child {
            // SIGINT is PostgreSQL's fast shutdown: sessions are ended, nothing is waited for.
            // SAFETY: signalling our own child, which has not been reaped yet.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            let deadline = Instant::now() + Duration::from_secs(20);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The parent-death signal fires when the spawning *thread* ends, and test threads end with their
/// test: spawn from a thread that lives as long as the process.
fn spawn_from_lasting_thread(mut cmd: Command) -> Result<Child, String> {
    type Job = (Command, std::sync::mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<std::sync::mpsc::Sender<Job>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("pg-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
                // The sender lives in a static, so the loop above never ends.
            })
            .expect("spawning the pg-spawner thread");
        Mutex::new(tx)
    });
    let (reply, answer) = std::sync::mpsc::channel();
    let job_cmd = std::mem::replace(&mut cmd, Command::new("true"));
    spawner
        .lock()
        .unwrap()
        .send((job_cmd, reply))
        .map_err(|e| e.to_string())?;
    answer
        .recv()
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("starting postgres: {e}"))
}

/// The directory holding initdb and postgres: $OSMETER_PG_BIN, Debian's /usr/lib/postgresql/N/bin
/// (newest), or PATH.
fn find_binaries() -> Result<PathBuf, String> {
    let complete = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    if let Some(d) = std::env::var_os("OSMETER_PG_BIN").map(PathBuf::from) {
        return if complete(&d) {
            Ok(d)
        } else {
            Err(format!(
                "OSMETER_PG_BIN={} holds no initdb and postgres: point it at a PostgreSQL \
                 server's bin directory, or unset it after `apt-get install postgresql`",
                d.display()
            ))
        };
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, d)| complete(d))
        .collect();
    debian.sort();
    if let Some((_, d)) = debian.pop() {
        return Ok(d);
    }
    if let Some(d) = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .find(|d| complete(d))
    {
        return Ok(d);
    }
    Err(
        "the PostgreSQL tests need a PostgreSQL server's binaries (initdb, postgres), found \
         neither in /usr/lib/postgresql/*/bin nor on PATH: install them with \
         `apt-get install postgresql` (Debian, Ubuntu), or set OSMETER_PG_BIN to the directory \
         that holds them"
            .into(),
    )
}

/// Removes the directories of earlier test binaries that were killed before they could clean up.
fn sweep_stale_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        // SAFETY: signal 0 only checks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
