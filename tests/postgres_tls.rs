//! TLS to PostgreSQL, against a real server of the test's own cluster with `ssl=on` and
//! certificates from a CA the test makes: verify-full takes the right server and refuses a wrong
//! host name, an unknown CA, an expired certificate and a server without TLS; verify-ca and require
//! take what they should. One test walks the cases in turn, since they switch the server's TLS
//! settings.

mod common;
#[path = "common/pg.rs"]
mod pg;

use osmeter::results::store::postgres::PostgresStore;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

fn ca(name: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let pem = params.self_signed(&key).unwrap().pem();
    Ca {
        issuer: Issuer::new(params, key),
        pem,
    }
}

/// A server certificate for 127.0.0.1 only (no DNS name), signed by `ca`; `expired` puts its end
/// in the past. Returns (certificate PEM, key PEM).
fn server_cert(ca: &Ca, expired: bool) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "osmeter test server");
    if expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// A server certificate with its host only in the common name (version 3, no subjectAltName).
fn cn_only_cert(ca: &Ca) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// A self-signed X.509 version 1 certificate for CN=127.0.0.1 made as the PostgreSQL manual's
/// quick recipe makes one (`openssl req -new`, then `openssl x509 -req` without extensions);
/// None, with the reason, when openssl is not installed (a failure in CI, which installs it).
fn openssl_v1_self_signed(dir: &Path) -> Option<(String, String)> {
    if common::which("openssl").is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "openssl is missing (apt-get install openssl)"
        );
        eprintln!(
            "skipped the version-1 certificate: openssl is missing (apt-get install openssl)"
        );
        return None;
    }
    let (csr, key, crt) = (dir.join("v1.csr"), dir.join("v1.key"), dir.join("v1.crt"));
    let run = |args: &[&std::ffi::OsStr]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let s = |t: &str| std::ffi::OsString::from(t);
    run(&[
        &s("req"),
        &s("-new"),
        &s("-nodes"),
        &s("-newkey"),
        &s("rsa:2048"),
        &s("-subj"),
        &s("/CN=127.0.0.1"),
        &s("-keyout"),
        key.as_os_str(),
        &s("-out"),
        csr.as_os_str(),
    ]);
    run(&[
        &s("x509"),
        &s("-req"),
        &s("-days"),
        &s("30"),
        &s("-in"),
        csr.as_os_str(),
        &s("-signkey"),
        key.as_os_str(),
        &s("-out"),
        crt.as_os_str(),
    ]);
    Some((
        std::fs::read_to_string(crt).unwrap(),
        std::fs::read_to_string(key).unwrap(),
    ))
}

/// Puts the certificate and key where the server reads them, turns TLS on or off, and waits until
/// the server says it took the setting.
fn serve(cert: Option<&(String, String)>) {
    let cluster = pg::cluster();
    let data = cluster.data_dir();
    let mut admin = cluster.admin("postgres").unwrap();
    if let Some((cert, key)) = cert {
        for (name, text, mode) in [("server.crt", cert, 0o644), ("server.key", key, 0o600)] {
            let path = data.join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            cluster.give_to_server_user(&path).unwrap();
        }
        admin.batch_execute("ALTER SYSTEM SET ssl = on").unwrap();
    } else {
        admin.batch_execute("ALTER SYSTEM SET ssl = off").unwrap();
    }
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
    let want = if cert.is_some() { "on" } else { "off" };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut fresh = cluster.admin("postgres").unwrap();
        let now: String = fresh.query_one("SHOW ssl", &[]).unwrap().get(0);
        if now == want {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not take ssl={want}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn url(host: &str, mode: &str, root: Option<&Path>) -> String {
    let base = pg::fresh_database();
    let base = base.replacen("@127.0.0.1:", &format!("@{host}:"), 1);
    match root {
        Some(r) => format!("{base}?sslmode={mode}&sslrootcert={}", r.display()),
        None => format!("{base}?sslmode={mode}"),
    }
}

fn refused(url: &str) -> String {
    match PostgresStore::open(url) {
        Ok(_) => panic!("{url} was accepted"),
        Err(e) => format!("{e:#}"),
    }
}

/// Sessions of the test role that run over TLS now.
fn tls_sessions() -> i64 {
    let mut admin = pg::cluster().admin("postgres").unwrap();
    admin
        .query_one(
            "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
             WHERE ssl AND usename = $1",
            &[&pg::USER],
        )
        .unwrap()
        .get(0)
}

#[test]
fn tls_modes_take_the_right_server_and_refuse_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let (good, other) = (ca("osmeter test CA"), ca("some other CA"));
    let write = |name: &str, text: &str| -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let good_pem = write("ca.pem", &good.pem);
    let other_pem = write("other-ca.pem", &other.pem);
    pg::cluster();

    serve(Some(&server_cert(&good, false)));
    // verify-full with the right CA and the name in the certificate: connected, over TLS.
    let store = PostgresStore::open(&url("127.0.0.1", "verify-full", Some(&good_pem)))
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert!(tls_sessions() >= 1, "the store's session is not encrypted");
    drop(store);
    // The same through the binary.
    common::TestEnv::new()
        .osmeter()
        .args(["runs", "--store"])
        .arg(url("127.0.0.1", "verify-full", Some(&good_pem)))
        .assert()
        .success();

    // A name the certificate does not hold: the names it holds are named.
    let err = refused(&url("localhost", "verify-full", Some(&good_pem)));
    assert!(
        err.contains("is made out to") && err.contains("127.0.0.1"),
        "{err}"
    );
    assert!(err.contains("verify-ca"), "{err}");
    // verify-ca checks only the CA, so the same name passes.
    PostgresStore::open(&url("localhost", "verify-ca", Some(&good_pem)))
        .unwrap_or_else(|e| panic!("{e:#}"));
    // A CA that did not sign it.
    let err = refused(&url("127.0.0.1", "verify-full", Some(&other_pem)));
    assert!(
        err.contains("not signed by") && err.contains("other-ca.pem"),
        "{err}"
    );
    let err = refused(&url("127.0.0.1", "verify-ca", Some(&other_pem)));
    assert!(err.contains("not signed by"), "{err}");
    // require encrypts without checking; with a root it checks the CA, as libpq does.
    PostgresStore::open(&url("127.0.0.1", "require", None)).unwrap_or_else(|e| panic!("{e:#}"));
    let err = refused(&url("127.0.0.1", "require", Some(&other_pem)));
    assert!(err.contains("not signed by"), "{err}");

    // An expired certificate.
    serve(Some(&server_cert(&good, true)));
    let err = refused(&url("127.0.0.1", "verify-full", Some(&good_pem)));
    assert!(err.contains("expired"), "{err}");
    let err = refused(&url("127.0.0.1", "verify-ca", Some(&good_pem)));
    assert!(err.contains("expired"), "{err}");

    // The host in the common name only (no subjectAltName), as many how-tos make it.
    serve(Some(&cn_only_cert(&good)));
    let err = refused(&url("127.0.0.1", "verify-full", Some(&good_pem)));
    assert!(
        err.contains("no subjectAltName") && err.contains("common name"),
        "{err}"
    );
    PostgresStore::open(&url("127.0.0.1", "verify-ca", Some(&good_pem)))
        .unwrap_or_else(|e| panic!("{e:#}"));

    // The PostgreSQL manual's quick recipe: self-signed, X.509 version 1, CN only.
    if let Some((cert, key)) = openssl_v1_self_signed(dir.path()) {
        let own = write("server-self.pem", &cert);
        serve(Some(&(cert, key)));
        let err = refused(&url("127.0.0.1", "verify-full", Some(&own)));
        assert!(
            err.contains("version 1") && err.contains("subjectAltName"),
            "{err}"
        );
        // rustls takes no version 1 certificate at all, so no sslmode but disable helps.
        let err = refused(&url("127.0.0.1", "require", None));
        assert!(err.contains("whatever the sslmode"), "{err}");
    }

    // A server without TLS: refused, with the way to allow plain text named.
    serve(None);
    let err = refused(&url("127.0.0.1", "verify-full", Some(&good_pem)));
    assert!(
        err.contains("does not offer TLS") && err.contains("sslmode=disable"),
        "{err}"
    );
    PostgresStore::open(&url("127.0.0.1", "disable", None)).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(tls_sessions(), 0);
}
