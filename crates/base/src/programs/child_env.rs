//! The environment of every program osmeter starts: the command under `stat`, load commands,
//! valgrind under `trace`, QEMU, the workloads' servers and tools, osmeter's own workers.
//!
//! osmeter's own secrets stay with osmeter. A shared store is often named by a URL that holds its
//! password, and the command a user measures is anything at all (a script from elsewhere, a build
//! that uploads its logs): it must not be able to read that password from its environment. So
//! children get $OSMETER_STORE with the password taken out of the URL (a child osmeter still finds
//! the same store, and its password in ~/.pgpass or $PGPASSFILE) and no $PGPASSWORD.
//!
//! Every child is started through [`command`] (a `std::process::Command`) or [`envp`] (for the
//! places that fork and exec by hand), so there is one list of what is taken out.

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::Command;

/// The variable naming the store (a SQLite path or a postgres:// URL).
pub const STORE_ENV: &str = "OSMETER_STORE";

/// Variables that are nothing but a secret: never passed on.
const SECRET_VARS: &[&str] = &["PGPASSWORD"];

/// A `Command` for `program` whose environment lacks osmeter's secrets.
pub fn command(program: impl AsRef<OsStr>) -> Command {
    let mut cmd = Command::new(program);
    scrub(&mut cmd);
    cmd
}

/// Takes osmeter's secrets out of `cmd`'s environment (as inherited from osmeter).
pub fn scrub(cmd: &mut Command) -> &mut Command {
    for var in SECRET_VARS {
        cmd.env_remove(var);
    }
    if let Some(value) = std::env::var_os(STORE_ENV) {
        match passwordless(&value) {
            Some(clean) if clean.is_empty() => cmd.env_remove(STORE_ENV),
            Some(clean) => cmd.env(STORE_ENV, clean),
            None => cmd,
        };
    }
    cmd
}

/// osmeter's environment as a child gets it, name and value apart.
pub fn vars() -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| !SECRET_VARS.iter().any(|s| k == *s))
        .filter_map(|(k, v)| {
            if k != STORE_ENV {
                return Some((k, v));
            }
            match passwordless(&v) {
                Some(clean) if clean.is_empty() => None,
                Some(clean) => Some((k, clean)),
                None => Some((k, v)),
            }
        })
        .collect()
}

/// [`vars`] as `NAME=value` strings for execve (a variable holding a NUL cannot be passed and is
/// left out).
pub fn envp() -> Vec<CString> {
    vars()
        .into_iter()
        .filter_map(|(k, v)| {
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            CString::new(kv).ok()
        })
        .collect()
}

/// A store value with its password taken out: `None` when it holds none (a SQLite path, a URL
/// without one), an empty string when it cannot be read well enough to take it out (then the
/// whole variable goes).
fn passwordless(value: &OsStr) -> Option<OsString> {
    let Some(text) = value.to_str() else {
        let lower = value.as_bytes().to_ascii_lowercase();
        let postgres = lower.starts_with(b"postgres://") || lower.starts_with(b"postgresql://");
        return postgres.then(OsString::new);
    };
    let lower = text.to_ascii_lowercase();
    let scheme = ["postgres://", "postgresql://"]
        .into_iter()
        .find(|s| lower.starts_with(s))?;
    let rest = &text[scheme.len()..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let mut changed = false;
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => {
                changed = true;
                format!("{user}@{host}")
            }
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    // `?password=...` is a libpq parameter like any other.
    let (path, query) = match tail.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (tail, None),
    };
    let mut out = format!("{}{authority}{path}", &text[..scheme.len()]);
    if let Some(query) = query {
        let (query, fragment) = match query.split_once('#') {
            Some((q, f)) => (q, Some(f)),
            None => (query, None),
        };
        let kept: Vec<&str> = query
            .split('&')
            .filter(|kv| {
                let key = kv.split('=').next().unwrap_or("");
                let secret =
                    key.eq_ignore_ascii_case("password") || key.eq_ignore_ascii_case("sslpassword");
                changed |= secret;
                !secret
            })
            .collect();
        if !kept.is_empty() {
            out.push('?');
            out.push_str(&kept.join("&"));
        }
        if let Some(f) = fragment {
            out.push('#');
            out.push_str(f);
        }
    }
    changed.then(|| out.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(s: &str) -> Option<String> {
        passwordless(OsStr::new(s)).map(|v| v.into_string().unwrap())
    }

    #[test]
    fn the_password_leaves_the_url_and_the_rest_stays() {
        assert_eq!(
            clean("postgres://osm:s3cret@db.example:6543/fleet").as_deref(),
            Some("postgres://osm@db.example:6543/fleet")
        );
        assert_eq!(
            clean("postgresql://osm:p%40ss@db/fleet?sslmode=require&password=x&connect_timeout=3")
                .as_deref(),
            Some("postgresql://osm@db/fleet?sslmode=require&connect_timeout=3")
        );
        assert_eq!(
            clean("POSTGRES://db/fleet?PASSWORD=x").as_deref(),
            Some("POSTGRES://db/fleet")
        );
    }

    #[test]
    fn values_without_a_password_are_kept_as_they_are() {
        assert_eq!(clean("postgres://osm@db.example/fleet"), None);
        assert_eq!(clean("postgres://db/fleet?sslmode=require"), None);
        assert_eq!(clean("/home/ana/runs.db"), None);
        assert_eq!(clean("user:pw@host.db"), None);
    }

    /// A child started with `Command::new` would inherit the secrets: every one goes through
    /// [`command`] (tests aside, whose environment is the test's own). Every crate of the workspace
    /// is read, since the children are started above this one: the root package's src/ and each
    /// crates/*/src.
    #[test]
    fn every_child_is_started_through_this_module() {
        fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if path.is_dir() {
                    walk(&path, found);
                    continue;
                }
                if !name.ends_with(".rs") || name.ends_with("tests.rs") || name == "child_env.rs" {
                    continue;
                }
                let source = std::fs::read_to_string(&path).unwrap();
                let code = source.split("#[cfg(test)]").next().unwrap();
                for (n, line) in code.lines().enumerate() {
                    if line.contains("Command::new(") && !line.contains("clap::Command::new(") {
                        found.push(format!("{}:{}", path.display(), n + 1));
                    }
                }
            }
        }
        // This crate is crates/base of the workspace.
        let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        assert!(
            workspace.join("src/main.rs").is_file(),
            "the workspace's root package is not at {}",
            workspace.display()
        );
        let mut dirs = vec![workspace.join("src")];
        for entry in std::fs::read_dir(workspace.join("crates")).unwrap() {
            dirs.push(entry.unwrap().path().join("src"));
        }
        let mut found = Vec::new();
        for dir in dirs.iter().filter(|d| d.is_dir()) {
            walk(dir, &mut found);
        }
        assert!(
            found.is_empty(),
            "start these through crate::programs::command: {found:?}"
        );
    }

    #[test]
    fn a_url_that_is_not_text_goes_whole() {
        let raw = OsStr::from_bytes(b"postgres://osm:s\xffcret@db/fleet");
        assert_eq!(passwordless(raw), Some(OsString::new()));
    }
}
