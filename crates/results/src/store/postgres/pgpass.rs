//! The password file of PostgreSQL's own clients ($PGPASSFILE, else ~/.pgpass), read as libpq
//! reads it, so a fleet's password can live in one private file instead of a URL that every
//! process listing, shell history and child environment would show.
//!
//! Each line is `host:port:database:user:password`; `*` alone matches anything in the first four
//! fields, `\:` and `\\` stand for a colon and a backslash, a line starting with `#` is a comment,
//! and the first line that matches wins. A file that others may read or write, or that is not a
//! regular file, is ignored with a warning, as libpq does.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What a connection is matched on, as libpq spells it.
#[derive(Debug, Clone, PartialEq)]
pub struct Key<'a> {
    pub host: &'a str,
    pub port: &'a str,
    pub dbname: &'a str,
    pub user: &'a str,
}

/// The password of the first line of `text` that matches `key`; `None` when no line does (or
/// the one that does holds an empty password).
pub fn lookup(text: &[u8], key: &Key) -> Option<Vec<u8>> {
    let wanted = [key.host, key.port, key.dbname, key.user];
    for line in text.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.first() == Some(&b'#') {
            continue;
        }
        let Some(fields) = fields(line) else {
            continue;
        };
        let matches = fields[..4]
            .iter()
            .zip(wanted)
            .all(|(field, want)| field.wildcard || field.text == want.as_bytes());
        if matches {
            let password = fields[4].text.clone();
            return (!password.is_empty()).then_some(password);
        }
    }
    None
}

struct Field {
    text: Vec<u8>,
    /// A bare `*` (an escaped one, `\*`, is a literal star).
    wildcard: bool,
}

/// The five fields of a line (the password ends at the next bare colon, as in libpq); `None` for
/// a line with fewer than four colons.
fn fields(line: &[u8]) -> Option<Vec<Field>> {
    let mut out = Vec::with_capacity(5);
    let mut text = Vec::new();
    let mut raw_star = true;
    let mut bytes = line.iter();
    while let Some(&b) = bytes.next() {
        match b {
            b'\\' => {
                raw_star = false;
                match bytes.next() {
                    Some(&c) => text.push(c),
                    None => text.push(b'\\'),
                }
            }
            b':' => {
                out.push(Field {
                    wildcard: raw_star && text == b"*",
                    text: std::mem::take(&mut text),
                });
                raw_star = true;
                if out.len() == 5 {
                    return Some(out);
                }
            }
            _ => text.push(b),
        }
    }
    if out.len() == 4 {
        out.push(Field {
            wildcard: false,
            text,
        });
        return Some(out);
    }
    None
}

/// $PGPASSFILE, else `.pgpass` in the home directory.
pub fn path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PGPASSFILE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())?;
    Some(home.join(".pgpass"))
}

/// The password for `key` from the password file, with the file it came from. A missing or
/// unreadable file gives nothing; one that is not a regular file, or that group or others may
/// use, is ignored with a warning saying what to do.
pub fn find(key: &Key) -> Option<(Vec<u8>, PathBuf)> {
    let path = path()?;
    let text = read_private(&path)?;
    lookup(&text, key).map(|pw| (pw, path))
}

fn read_private(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        eprintln!(
            "osmeter: warning: the password file {} is not a regular file, so it is not read; \
             point $PGPASSFILE at a file (mode 0600)",
            path.display()
        );
        return None;
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        eprintln!(
            "osmeter: warning: the password file {} may be used by its group or others (mode \
             {mode:o}), so it is not read; make it private with `chmod 0600 {}`",
            path.display(),
            path.display()
        );
        return None;
    }
    std::fs::read(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Key = Key {
        host: "db.example",
        port: "5432",
        dbname: "fleet",
        user: "osm",
    };

    fn pw(text: &str, key: &Key) -> Option<String> {
        lookup(text.as_bytes(), key).map(|p| String::from_utf8(p).unwrap())
    }

    #[test]
    fn the_first_matching_line_wins() {
        let text = "other:5432:fleet:osm:no\ndb.example:5432:fleet:osm:yes\n*:*:*:*:late\n";
        assert_eq!(pw(text, &KEY).as_deref(), Some("yes"));
        let text = "*:*:*:*:first\ndb.example:5432:fleet:osm:second\n";
        assert_eq!(pw(text, &KEY).as_deref(), Some("first"));
    }

    #[test]
    fn a_star_matches_any_value_of_its_field() {
        assert_eq!(
            pw("db.example:*:*:osm:s3cret", &KEY).as_deref(),
            Some("s3cret")
        );
        assert_eq!(
            pw("*:5432:fleet:*:s3cret\r\n", &KEY).as_deref(),
            Some("s3cret")
        );
        assert_eq!(pw("db.example:*:*:ana:s3cret", &KEY), None);
        assert_eq!(pw("db.example:5433:*:*:s3cret", &KEY), None);
    }

    #[test]
    fn backslashes_escape_colons_backslashes_and_stars() {
        let v6 = Key {
            host: "::1",
            ..KEY.clone()
        };
        assert_eq!(pw("\\:\\:1:*:*:*:pw", &v6).as_deref(), Some("pw"));
        assert_eq!(
            pw("*:*:*:*:a\\:b\\\\c:ignored", &KEY).as_deref(),
            Some("a:b\\c")
        );
        // An escaped star is a star, not a wildcard.
        assert_eq!(pw("\\*:*:*:*:pw", &KEY), None);
        let star = Key {
            host: "*",
            ..KEY.clone()
        };
        assert_eq!(pw("\\*:*:*:*:pw", &star).as_deref(), Some("pw"));
    }

    #[test]
    fn comments_short_lines_and_empty_passwords_give_nothing() {
        assert_eq!(pw("# db.example:5432:fleet:osm:no", &KEY), None);
        assert_eq!(pw("db.example:5432:fleet:osm", &KEY), None);
        assert_eq!(pw("db.example:5432:fleet:osm:", &KEY), None);
        assert_eq!(pw("", &KEY), None);
        // A comment does not stop the lines after it.
        assert_eq!(pw("#x\n*:*:*:*:after", &KEY).as_deref(), Some("after"));
    }

    #[test]
    fn a_file_others_may_read_is_not_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "*:*:*:*:s3cret\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(read_private(&file), None);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            read_private(&file).as_deref(),
            Some(&b"*:*:*:*:s3cret\n"[..])
        );
        assert_eq!(read_private(dir.path()), None);
    }
}
