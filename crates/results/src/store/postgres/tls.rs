//! TLS to the PostgreSQL server, chosen in the store URL as libpq users know it: `sslmode=` one of
//! disable, prefer, require, verify-ca, verify-full, and `sslrootcert=` the CA certificates (PEM) to
//! trust, or `system` for the system's. The client library knows neither the verify modes nor
//! `sslrootcert`, so both are taken out of the URL here and the handshake is made with rustls (no
//! system OpenSSL). A URL that names a host on another machine without `sslmode` gets verify-full:
//! a fleet's password and results do not cross a network in clear text unless the user says so.

use anyhow::{anyhow, Context, Result};
use postgres::config::{Config, Host};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use std::path::PathBuf;
use std::sync::Arc;

/// How much of the server's identity the client checks, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Plain text.
    Disable,
    /// TLS when the server offers it, plain text otherwise; the certificate is not checked.
    Prefer,
    /// TLS or no connection; the certificate is checked only when `sslrootcert` is given.
    Require,
    /// TLS with a certificate signed by a trusted CA, for any host name.
    VerifyCa,
    /// TLS with a certificate signed by a trusted CA for the host name in the URL.
    VerifyFull,
}

impl SslMode {
    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    fn parse(text: &str) -> Result<SslMode> {
        Ok(match text {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(crate::usage!(
                    "sslmode={other} in the store URL: give disable, prefer, require, verify-ca \
                     or verify-full"
                ))
            }
        })
    }
}

/// Where the trusted CA certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// The system's certificate store (/etc/ssl/certs and the like).
    System,
    /// A PEM file of one or more CA certificates.
    File(PathBuf),
}

/// The TLS settings of one store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    pub mode: SslMode,
    /// Whether the URL chose the mode (otherwise it follows from the host).
    pub chosen: bool,
    pub roots: Roots,
    /// Whether `sslrootcert` was given (with `require`, it asks for the CA check as libpq does).
    pub roots_given: bool,
}

/// Takes `sslmode` and `sslrootcert` out of the URL's query string; returns the URL the client
/// library is given and the two values, percent-decoded.
pub fn split_url(url: &str) -> Result<(String, Option<String>, Option<String>)> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), None, None));
    };
    let (mut mode, mut root) = (None, None);
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => mode = Some(percent_decode(value)?),
            "sslrootcert" => root = Some(percent_decode(value)?),
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, mode, root))
}

fn percent_decode(text: &str) -> Result<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    crate::usage!("the store URL has a '%' not followed by two hex digits")
                })?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| crate::usage!("the store URL decodes to invalid UTF-8"))
}

/// Whether every host of the URL is this machine (a Unix socket or a loopback address), where
/// nothing crosses a network.
pub fn all_local(config: &Config) -> bool {
    let hosts_local = config.get_hosts().iter().all(|h| match h {
        Host::Unix(_) => true,
        Host::Tcp(name) => {
            name == "localhost"
                || name
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
    });
    hosts_local && config.get_hostaddrs().iter().all(|a| a.is_loopback())
}

impl Tls {
    /// The settings of a URL: its own `sslmode`, or plain text to this machine and verify-full
    /// to any other.
    pub fn of(config: &Config, mode: Option<&str>, root: Option<&str>) -> Result<Tls> {
        let chosen = mode.is_some();
        let mode = match mode {
            Some(m) => SslMode::parse(m)?,
            None if all_local(config) => SslMode::Disable,
            None => SslMode::VerifyFull,
        };
        let roots = match root {
            None | Some("system") => Roots::System,
            Some("") => return Err(crate::usage!("sslrootcert= in the store URL names no file")),
            Some(path) => Roots::File(PathBuf::from(path)),
        };
        Ok(Tls {
            mode,
            chosen,
            roots,
            roots_given: root.is_some(),
        })
    }

    /// The check the handshake makes: the mode, with `require` strengthened to verify-ca when
    /// roots were given.
    fn check(&self) -> SslMode {
        match self.mode {
            SslMode::Require if self.roots_given => SslMode::VerifyCa,
            m => m,
        }
    }

    /// The client configuration for the handshake (None for plain text).
    pub fn client_config(&self) -> Result<Option<ClientConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .context("the TLS library offers no protocol version")?;
        let verifier: Arc<dyn ServerCertVerifier> = match self.check() {
            SslMode::Disable => return Ok(None),
            SslMode::Prefer | SslMode::Require => Arc::new(Unchecked(provider)),
            SslMode::VerifyCa => Arc::new(AnyName(self.webpki(provider)?)),
            SslMode::VerifyFull => self.webpki(provider)?,
        };
        Ok(Some(
            builder
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth(),
        ))
    }

    fn webpki(&self, provider: Arc<CryptoProvider>) -> Result<Arc<WebPkiServerVerifier>> {
        let roots = Arc::new(self.root_store()?);
        WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| anyhow!("cannot check server certificates: {e}"))
    }

    fn root_store(&self) -> Result<RootCertStore> {
        let mut store = RootCertStore::empty();
        match &self.roots {
            Roots::File(path) => {
                let text = std::fs::read(path).map_err(|e| {
                    crate::usage!(
                        "sslrootcert={}: cannot read it ({e}); give a PEM file of the CA \
                         certificates that signed the server's certificate",
                        path.display()
                    )
                })?;
                let certs = pem_certificates(&text);
                if certs.is_empty() {
                    return Err(crate::usage!(
                        "sslrootcert={}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it",
                        path.display()
                    ));
                }
                for cert in certs {
                    store
                        .add(cert)
                        .map_err(|e| crate::usage!("sslrootcert={}: {e}", path.display()))?;
                }
            }
            Roots::System => {
                let found = rustls_native_certs::load_native_certs();
                let (added, _) = store.add_parsable_certificates(found.certs);
                if added == 0 {
                    return Err(anyhow!(
                        "sslmode={} checks the server's certificate, and this system has no CA \
                         certificates (install ca-certificates, or give sslrootcert=FILE in the \
                         URL)",
                        self.mode.name()
                    ));
                }
            }
        }
        Ok(store)
    }
}

/// The certificates of a PEM text.
fn pem_certificates(pem: &[u8]) -> Vec<CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem)
        .filter_map(|c| c.ok())
        .collect()
}

/// verify-ca: the chain must lead to a trusted CA; the name in the certificate is not compared
/// with the host name (the chain is checked before the name, so only that one error is forgiven).
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// require and prefer without roots: encrypted, but whoever answers is taken as the server (as
/// libpq does). The handshake's signatures are still checked against the certificate it shows.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// What a failed TLS handshake means for the user, from the error's text (the client library
/// passes the TLS library's error on as text); None when the failure was not about TLS.
pub fn explain(text: &str, tls: &Tls, server: &str) -> Option<String> {
    let roots = match &tls.roots {
        Roots::File(p) => format!("the CA certificates in {}", p.display()),
        Roots::System => "the system's CA certificates".to_string(),
    };
    if text.contains("server does not support TLS") {
        let why = if tls.chosen {
            format!("the URL asks for sslmode={}", tls.mode.name())
        } else {
            "osmeter sends a password and results to another machine only over TLS".to_string()
        };
        return Some(format!(
            "PostgreSQL at {server} does not offer TLS, and {why}: turn TLS on at the server \
             (ssl=on with a certificate in postgresql.conf), or add sslmode=disable to the URL to \
             send the password and results in clear text over a network you trust"
        ));
    }
    if text.contains("UnknownIssuer") || text.contains("unknown issuer") {
        return Some(format!(
            "the certificate of PostgreSQL at {server} is not signed by {roots}: give the CA that \
             signed it with sslrootcert=FILE in the URL (a self-signed certificate is its own CA: \
             give the certificate itself)"
        ));
    }
    if text.contains("UnsupportedCertVersion") {
        return Some(format!(
            "the certificate of PostgreSQL at {server} is an X.509 version 1 certificate (what \
             `openssl x509 -req` makes without extensions, as quick how-tos do), which cannot \
             name its host in a subjectAltName; libpq accepts it, but osmeter's TLS library \
             (rustls) takes only version 3 certificates, whatever the sslmode: reissue it as \
             version 3 with the host in subjectAltName (add `-extfile <(printf \
             'subjectAltName=DNS:HOST')` to that command, or IP:ADDRESS)"
        ));
    }
    if text.contains("not valid for any names") {
        return Some(format!(
            "the certificate of PostgreSQL at {server} has no subjectAltName naming a host (its \
             host is only in the common name, CN, as many how-tos make it; libpq accepts that, \
             TLS clients that follow RFC 6125 do not): reissue it with the host in \
             subjectAltName (`-addext subjectAltName=DNS:HOST` or IP:ADDRESS to `openssl req`), \
             or use sslmode=verify-ca to check only that a trusted CA signed it"
        ));
    }
    if let Some((_, names)) = text.split_once("is only valid for ") {
        let names = readable_names(names);
        return Some(format!(
            "the certificate of PostgreSQL at {server} is made out to {names}, not to the host \
             in the URL: connect by a name the certificate lists, reissue it with this one in \
             subjectAltName, or use sslmode=verify-ca to check only that a trusted CA signed it"
        ));
    }
    if text.contains("NotValidForName") || text.contains("not valid for name") {
        return Some(format!(
            "the certificate of PostgreSQL at {server} is not made out to that host name: \
             connect by a name the certificate lists, or use sslmode=verify-ca to check only that \
             a trusted CA signed it"
        ));
    }
    if text.contains("Expired") || text.contains("expired") {
        return Some(format!(
            "the certificate of PostgreSQL at {server} has expired: renew it on the server (and \
             check this machine's clock)"
        ));
    }
    if text.contains("NotValidYet") || text.contains("not valid yet") {
        return Some(format!(
            "the certificate of PostgreSQL at {server} is not valid yet: check this machine's \
             clock and the server's"
        ));
    }
    if text.contains("invalid peer certificate") || (text.contains("tls") && text.contains("alert"))
    {
        return Some(format!(
            "the TLS handshake with PostgreSQL at {server} failed ({text}); check the server's \
             certificate and sslrootcert"
        ));
    }
    None
}

/// The names rustls lists in its debug form (`DnsName("db.example") or IpAddress(10.0.0.1)`)
/// as a person writes them (`db.example or 10.0.0.1`), up to the end of that error.
fn readable_names(listed: &str) -> String {
    let listed = listed.split(": ").next().unwrap_or(listed);
    listed
        .split(", ")
        .flat_map(|part| part.split(" or "))
        .map(|name| {
            let name = name.trim();
            name.strip_prefix("DnsName(\"")
                .and_then(|n| n.strip_suffix("\")"))
                .or_else(|| {
                    name.strip_prefix("IpAddress(")
                        .and_then(|n| n.strip_suffix(')'))
                })
                .unwrap_or(name)
                .to_string()
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_certificate_holds_read_as_people_write_them() {
        assert_eq!(
            readable_names("DnsName(\"db.example\"), DnsName(\"db\") or IpAddress(10.0.0.1): x"),
            "db.example, db, 10.0.0.1"
        );
        assert_eq!(readable_names("IpAddress(127.0.0.1)"), "127.0.0.1");
    }

    fn tls(url: &str) -> Result<Tls> {
        let (rest, mode, root) = split_url(url)?;
        let config: Config = rest.parse()?;
        Tls::of(&config, mode.as_deref(), root.as_deref())
    }

    #[test]
    fn a_remote_host_gets_verify_full_unless_the_url_says_otherwise() {
        assert_eq!(
            tls("postgres://u@db.example/f").unwrap().mode,
            SslMode::VerifyFull
        );
        assert_eq!(
            tls("postgres://u@10.1.2.3/f").unwrap().mode,
            SslMode::VerifyFull
        );
        for local in [
            "postgres://u@localhost/f",
            "postgres://u@127.0.0.1:5433/f",
            "postgres://u@[::1]/f",
            "postgres://u@%2Frun%2Fpostgresql/f",
        ] {
            assert_eq!(tls(local).unwrap().mode, SslMode::Disable, "{local}");
        }
        let t = tls("postgres://u@db.example/f?sslmode=disable").unwrap();
        assert_eq!((t.mode, t.chosen), (SslMode::Disable, true));
        let t = tls("postgres://u@localhost/f?sslmode=verify-full").unwrap();
        assert_eq!(t.mode, SslMode::VerifyFull);
    }

    #[test]
    fn sslmode_and_sslrootcert_leave_the_url_and_the_rest_stays() {
        let (rest, mode, root) = split_url(
            "postgres://u:p%40w@h/db?connect_timeout=3&sslmode=verify-ca&sslrootcert=%2Fetc%2Fca.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u:p%40w@h/db?connect_timeout=3");
        assert_eq!(mode.as_deref(), Some("verify-ca"));
        assert_eq!(root.as_deref(), Some("/etc/ca.pem"));
        let (rest, mode, _) = split_url("postgres://u@h/db?sslmode=require").unwrap();
        assert_eq!(
            (rest.as_str(), mode.as_deref()),
            ("postgres://u@h/db", Some("require"))
        );
        let t = tls("postgres://u@h/db?sslmode=require&sslrootcert=/x.pem").unwrap();
        assert_eq!(t.check(), SslMode::VerifyCa);
    }

    #[test]
    fn a_bad_mode_or_root_is_a_usage_error() {
        for url in [
            "postgres://u@h/db?sslmode=allow-anything",
            "postgres://u@h/db?sslrootcert=",
            "postgres://u@h/db?sslmode=%zz",
        ] {
            let err = tls(url).unwrap_err();
            assert!(err.is::<crate::error::UsageError>(), "{url}: {err:#}");
        }
        let missing = tls("postgres://u@h/db?sslmode=verify-full&sslrootcert=/no/such.pem")
            .unwrap()
            .client_config()
            .unwrap_err();
        assert!(
            format!("{missing:#}").contains("/no/such.pem"),
            "{missing:#}"
        );
    }
}
