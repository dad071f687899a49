//! Which PostgreSQL server a `postgres://` URL names, how to connect to it, and what to tell the user
//! when that fails. Nothing here ever prints the password.

use super::tls::Tls;
use anyhow::{anyhow, Result};
use postgres::config::{Config, Host, SslMode};
use postgres::error::SqlState;
use std::time::Duration;

/// How long to wait for a server that does not answer: long enough for a slow network, short enough
/// that a run at the end of a suite does not hang on a host that is gone.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The parts of the URL that may be shown: server, user and database, never the password.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub server: String,
    pub user: String,
    pub dbname: String,
    pub tls: Tls,
}

impl Target {
    fn of(config: &Config, tls: Tls) -> Target {
        let ports = config.get_ports();
        let servers: Vec<String> = config
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(i, h)| {
                // libpq rule: one port for every host, or one per host; 5432 when none is given.
                let port = ports
                    .get(i)
                    .or_else(|| ports.first().filter(|_| ports.len() == 1))
                    .copied()
                    .unwrap_or(5432);
                match h {
                    Host::Tcp(name) if name.contains(':') => format!("[{name}]:{port}"),
                    Host::Tcp(name) => format!("{name}:{port}"),
                    Host::Unix(dir) => format!("{} (port {port})", dir.display()),
                }
            })
            .collect();
        let user = config
            .get_user()
            .map(str::to_string)
            .or_else(|| std::env::var("USER").ok())
            .unwrap_or_else(|| "(login name)".to_string());
        Target {
            server: if servers.is_empty() {
                "localhost:5432".to_string()
            } else {
                servers.join(",")
            },
            dbname: config.get_dbname().unwrap_or(&user).to_string(),
            user,
            tls,
        }
    }

    /// `postgres://user@host:port/db`, safe to print.
    pub fn describe(&self) -> String {
        format!("postgres://{}@{}/{}", self.user, self.server, self.dbname)
    }
}

/// Parses the URL; the error names no part of it, since it may hold a password.
pub fn parse(url: &str) -> Result<(Config, Target)> {
    // The parser splits user:password from the host at the first '@', so a password with a bare
    // '@' would put its tail into the host name, which is shown in messages.
    let authority = url
        .split_once("://")
        .map(|(_, rest)| rest.split(['/', '?']).next().unwrap_or(""))
        .unwrap_or("");
    if authority.matches('@').count() > 1 {
        return Err(crate::usage!(
            "the PostgreSQL URL given as the store has more than one '@' before the host; an '@' \
             in the user name or password must be written %40"
        ));
    }
    let (url, sslmode, sslrootcert) = super::tls::split_url(url)?;
    let mut config: Config = url.parse().map_err(|e: postgres::Error| {
        // The parser's own words name the option at fault, never its value.
        let why = std::error::Error::source(&e)
            .map(|s| s.to_string())
            .unwrap_or_else(|| e.to_string());
        // A password holding ':', '/', '?' or '#' cuts the URL in the wrong place just as '@' does.
        let hint = if url.contains('@') {
            "; a user name or password holding any of @ : / ? # % & = + or a space must have it \
             percent-encoded (%40 for @, %3A for :, %2F for /, ...), or leave the password out \
             of the URL and put it in $PGPASSWORD as it is"
        } else {
            ""
        };
        crate::usage!(
            "the PostgreSQL URL given as the store is malformed ({why}); \
             expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE{hint}"
        )
    })?;
    let hosts = config.get_hosts().len() + config.get_hostaddrs().len();
    if hosts == 0 {
        return Err(crate::usage!(
            "the PostgreSQL URL names no host; expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
        ));
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    // Keeps the password out of command lines and manifests, as libpq does.
    if config.get_password().is_none() {
        if let Some(pw) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
            use std::os::unix::ffi::OsStrExt;
            config.password(pw.as_bytes());
        }
    }
    if config.get_application_name().is_none() {
        config.application_name("osmeter");
    }
    let tls = Tls::of(&config, sslmode.as_deref(), sslrootcert.as_deref())?;
    config.ssl_mode(match tls.mode {
        super::tls::SslMode::Disable => SslMode::Disable,
        super::tls::SslMode::Prefer => SslMode::Prefer,
        _ => SslMode::Require,
    });
    let target = Target::of(&config, tls);
    Ok((config, target))
}

/// Connects within the connect timeout, handshake included: the client library bounds only the
/// TCP connection, and a port that accepts but never answers (a dead backend behind a proxy, the
/// wrong service) would otherwise hang the command for good.
pub fn connect(config: &Config, target: &Target) -> Result<postgres::Client> {
    let limit = *config.get_connect_timeout().unwrap_or(&CONNECT_TIMEOUT);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut attempt = config.clone();
    // libpq's order: the URL, then $PGPASSWORD (both in `config` already), then the password file.
    let mut passfile = None;
    if attempt.get_password().is_none() {
        if let Some((password, path)) = from_passfile(config, target) {
            attempt.password(password);
            passfile = Some(path);
        }
    }
    let tls = target.tls.client_config()?;
    // On time-out the thread is left behind, blocked; it ends with the process.
    std::thread::Builder::new()
        .name("pg-connect".into())
        .spawn(move || {
            let _ = tx.send(match tls {
                Some(tls) => attempt.connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls)),
                None => attempt.connect(postgres::NoTls),
            });
        })
        .map_err(|e| crate::system::limits::cannot_start("the thread that connects", &e))?;
    // A little over the limit, so the library's own time-out (with its cause) wins when it fires.
    match rx.recv_timeout(limit + Duration::from_secs(1)) {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(explain_connect(&e, config, target, passfile.as_deref())),
        Err(_) => Err(anyhow!(
            "PostgreSQL at {} took the connection but did not answer within {} s: check that \
             a PostgreSQL server (not another service) listens there and is not overloaded \
             (connect_timeout=SECONDS in the URL waits longer)",
            target.server,
            limit.as_secs()
        )),
    }
}

/// The password file's password for the first server of the URL, matched as libpq matches it:
/// the host as written (a socket in the default directory as `localhost`), the port, the
/// database and the user.
fn from_passfile(config: &Config, target: &Target) -> Option<(Vec<u8>, std::path::PathBuf)> {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.clone(),
        Some(Host::Unix(dir))
            if dir == std::path::Path::new("/var/run/postgresql")
                || dir == std::path::Path::new("/run/postgresql")
                || dir == std::path::Path::new("/tmp") =>
        {
            "localhost".to_string()
        }
        Some(Host::Unix(dir)) => dir.display().to_string(),
        None => config.get_hostaddrs().first()?.to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config
        .get_user()
        .map(str::to_string)
        .or_else(|| std::env::var("USER").ok())?;
    let key = super::pgpass::Key {
        host: &host,
        port: &port,
        dbname: &target.dbname,
        user: &user,
    };
    super::pgpass::find(&key)
}

/// Turns a failed connection into what went wrong and what to do about it.
fn explain_connect(
    err: &postgres::Error,
    config: &Config,
    target: &Target,
    passfile: Option<&std::path::Path>,
) -> anyhow::Error {
    let (server, user, db) = (&target.server, &target.user, &target.dbname);
    if let Some(db_err) = err.as_db_error() {
        let code = db_err.code();
        let said = db_err.message();
        if *code == SqlState::INVALID_PASSWORD
            || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        {
            let source = match passfile {
                _ if config.get_password().is_some() => {
                    "the password in the URL (or $PGPASSWORD)".to_string()
                }
                Some(file) => format!("the password in {}", file.display()),
                None => "a password: none was given (put it in ~/.pgpass or $PGPASSFILE, \
                         $PGPASSWORD, or the URL)"
                    .to_string(),
            };
            return anyhow!(
                "PostgreSQL at {server} refused user {user:?} for database {db:?}: {said}; \
                 check the user name and {source}, and that the server's pg_hba.conf lets this \
                 host in"
            );
        }
        if *code == SqlState::INVALID_CATALOG_NAME {
            return anyhow!(
                "database {db:?} does not exist on the PostgreSQL server at {server}: create it \
                 (e.g. `createdb -h HOST -U {user} {db}`) or name an existing one in the URL"
            );
        }
        if *code == SqlState::TOO_MANY_CONNECTIONS
            || *code == SqlState::CANNOT_CONNECT_NOW
            || *code == SqlState::ADMIN_SHUTDOWN
        {
            return anyhow!(
                "PostgreSQL at {server} is not accepting connections now ({said}); try again later"
            );
        }
        return anyhow!("PostgreSQL at {server} refused the connection as {user:?}: {said}");
    }
    let text = format!("{err:#}");
    let cause = std::error::Error::source(err)
        .map(|s| s.to_string())
        .unwrap_or_else(|| text.clone());
    if let Some(why) = super::tls::explain(&format!("{text}: {cause}"), &target.tls, server) {
        return anyhow!(why);
    }
    if text.contains("timeout") || cause.contains("timed out") {
        return anyhow!(
            "no answer from PostgreSQL at {server} (user {user:?}) within {} s: check the host \
             name and port, that the server is up, and that no firewall drops the traffic \
             (connect_timeout=SECONDS in the URL waits longer)",
            config
                .get_connect_timeout()
                .unwrap_or(&CONNECT_TIMEOUT)
                .as_secs()
        );
    }
    anyhow!(
        "cannot reach PostgreSQL at {server} (user {user:?}): {cause}; check that the server is \
         running and listens on that address and port (listen_addresses and port in \
         postgresql.conf), and that no firewall is in the way"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_hides_the_password() {
        let (_, t) = parse("postgres://osm:s3cret@db.example:6543/fleet").unwrap();
        assert_eq!(t.describe(), "postgres://osm@db.example:6543/fleet");
        let (_, t) = parse("postgresql://osm:s3cret@db.example/fleet").unwrap();
        assert_eq!(t.server, "db.example:5432");
        let (_, t) = parse("postgres://osm@[::1]:5000").unwrap();
        assert_eq!(t.describe(), "postgres://osm@[::1]:5000/osm");
    }

    #[test]
    fn a_malformed_url_is_a_usage_error_that_does_not_echo_it() {
        let err = parse("postgres://osm:s3cret@db:notaport/x").unwrap_err();
        assert!(err.is::<crate::error::UsageError>());
        let text = format!("{err:#}");
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("postgres://USER"), "{text}");
    }

    #[test]
    fn a_password_with_a_bare_at_sign_is_refused_without_showing_it() {
        for url in [
            "postgres://osm:p@ss@127.0.0.1:1/fleet",
            "postgresql://osm:s3cr@t@db.example/fleet?connect_timeout=1",
            "postgres://osm:a@b@c@db/x",
        ] {
            let err = parse(url).unwrap_err();
            assert!(err.is::<crate::error::UsageError>());
            let text = format!("{err:#}");
            for secret in ["ss@", "p@ss", "t@db", "b@c", "s3cr"] {
                assert!(!text.contains(secret), "{text}");
            }
            assert!(text.contains("%40"), "{text}");
        }
        // Written as the message says, it connects as that user with that password.
        let (config, t) = parse("postgres://osm:p%40ss@127.0.0.1:5/fleet").unwrap();
        assert_eq!(config.get_password(), Some(&b"p@ss"[..]));
        assert_eq!(t.describe(), "postgres://osm@127.0.0.1:5/fleet");
        // An '@' after the host (in the query) is not the host's.
        assert!(parse("postgres://osm@db/fleet?application_name=a@b").is_ok());
    }

    #[test]
    fn a_port_that_accepts_but_never_answers_times_out() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // Accepted by the kernel's backlog; nobody ever reads or writes.
        let url = format!("postgres://osm:s3cret@127.0.0.1:{port}/fleet?connect_timeout=1");
        let (config, target) = parse(&url).unwrap();
        let t0 = std::time::Instant::now();
        let err = connect(&config, &target).err().unwrap().to_string();
        assert!(t0.elapsed() < Duration::from_secs(30));
        assert!(
            err.contains(&format!("127.0.0.1:{port}")) && err.contains("did not answer within 1 s"),
            "{err}"
        );
        drop(listener);
    }

    #[test]
    fn unreachable_server_names_host_port_and_user() {
        // A port nothing listens on: bind one, note it, close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("postgres://osm:s3cret@127.0.0.1:{port}/fleet");
        let (config, target) = parse(&url).unwrap();
        let err = connect(&config, &target).err().unwrap().to_string();
        assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
        assert!(err.contains("\"osm\"") && err.contains("running"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
    }
}
