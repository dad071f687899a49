//! Many kernels in one `--guest`: a pattern over the kernel packages the archive offers
//! (`linux-image-6.12.*-cloud-amd64`), or a range of one number in their names
//! (`linux-image-6.1.0-47..57-cloud-amd64`), resolved with apt-cache and ordered by Debian
//! version, so that a sweep reads as the kernels' history.

use super::debver;
use anyhow::{bail, Result};

/// A `--guest` value that names many packages: a glob (`*` any text, `?` one character) with
/// at most one range `N..M` standing for one number of the name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamePattern {
    /// The glob before the range's number (the whole glob without a range).
    before: String,
    range: Option<(u64, u64)>,
    after: String,
}

/// How a range is written, for the errors about one.
const RANGE_HELP: &str = "a range is two numbers around `..` in place of one number of the \
    name, e.g. linux-image-6.1.0-47..57-cloud-amd64 (47 to 57) or \
    linux-image-6.12.100..118+deb12-cloud-amd64";

/// Whether a `--guest` value is a pattern rather than one package or file.
pub fn is_pattern(spec: &str) -> bool {
    spec.contains(['*', '?']) || spec.contains("..")
}

impl NamePattern {
    /// Parses a pattern; without `linux-` in front, `linux-image-` is understood
    /// (`6.1.0-47..57-cloud-amd64`).
    pub fn parse(spec: &str) -> std::result::Result<Self, String> {
        let full = if spec.starts_with("linux-") {
            spec.to_string()
        } else {
            format!("linux-image-{spec}")
        };
        if !full.starts_with("linux-image-") {
            return Err(format!(
                "{spec}: a kernel pattern names linux-image-* packages (the images a guest boots)"
            ));
        }
        let Some((left, right)) = full.split_once("..") else {
            return Ok(NamePattern {
                before: full,
                range: None,
                after: String::new(),
            });
        };
        if right.contains("..") {
            return Err(format!("{spec}: one range per pattern; {RANGE_HELP}"));
        }
        let low = &left[left.trim_end_matches(|c: char| c.is_ascii_digit()).len()..];
        let high_len = right.len() - right.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let high = &right[..high_len];
        if low.is_empty() || high.is_empty() {
            return Err(format!("{spec}: {RANGE_HELP}"));
        }
        let number = |t: &str| {
            t.parse::<u64>()
                .map_err(|_| format!("{spec}: {t} is too large a number for a range"))
        };
        let (lo, hi) = (number(low)?, number(high)?);
        if lo > hi {
            return Err(format!(
                "{spec}: the range {lo}..{hi} is empty (the first number is the lower bound: \
                 write {hi}..{lo})"
            ));
        }
        Ok(NamePattern {
            before: left[..left.len() - low.len()].to_string(),
            range: Some((lo, hi)),
            after: right[high_len..].to_string(),
        })
    }

    pub fn matches(&self, name: &str) -> bool {
        let Some((lo, hi)) = self.range else {
            return glob(&self.before, name);
        };
        let bytes = name.as_bytes();
        let mut start = 0;
        while start < bytes.len() {
            if !bytes[start].is_ascii_digit() {
                start += 1;
                continue;
            }
            let end = start
                + bytes[start..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
            let in_range = name[start..end]
                .parse::<u64>()
                .is_ok_and(|n| (lo..=hi).contains(&n));
            if in_range && glob(&self.before, &name[..start]) && glob(&self.after, &name[end..]) {
                return true;
            }
            start = end;
        }
        false
    }

    /// The pattern as text with no glob characters, for "did you mean".
    fn literal(&self) -> String {
        let range = self.range.map_or(String::new(), |(lo, _)| lo.to_string());
        format!("{}{range}{}", self.before, self.after).replace(['*', '?'], "")
    }
}

/// `*` matches any text, `?` one character; everything else itself.
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut i, mut j) = (0, 0);
    // Where the last `*` was, and the text position it has taken up to: on a mismatch, the star
    // takes one character more.
    let mut star: Option<(usize, usize)> = None;
    while j < t.len() {
        if i < p.len() && (p[i] == '?' || p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// Packages that hold no kernel to boot: debugging symbols and the template for signing.
fn bootable_name(name: &str) -> bool {
    !name.ends_with("-dbg") && !name.ends_with("-signed-template")
}

/// One kernel package of a sweep, as the archive describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub name: String,
    pub version: String,
    /// The download's size in bytes.
    pub size: u64,
    /// A meta-package (`linux-image-6.12-cloud-amd64`) that only depends on a kernel.
    pub meta: bool,
}

/// Parses `apt-cache show` stanzas.
pub fn parse_show(text: &str) -> Vec<Candidate> {
    let mut out = Vec::new();
    for stanza in text.split("\n\n") {
        let field = |key: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':').map(str::trim))
        };
        let (Some(name), Some(version)) = (field("Package"), field("Version")) else {
            continue;
        };
        let meta = field("Depends").is_some_and(|d| {
            d.split(',')
                .any(|dep| dep.trim().starts_with("linux-image-"))
        });
        if out.iter().any(|c: &Candidate| c.name == name) {
            continue;
        }
        out.push(Candidate {
            name: name.to_string(),
            version: version.to_string(),
            size: field("Size").and_then(|s| s.parse().ok()).unwrap_or(0),
            meta,
        });
    }
    out
}

/// Oldest first by Debian version, then by name (flavours of one version side by side).
pub fn order(candidates: &mut [Candidate]) {
    candidates
        .sort_by(|a, b| debver::compare(&a.version, &b.version).then_with(|| a.name.cmp(&b.name)));
}

/// The names of `known` that the pattern matches and that hold a kernel.
pub fn matching<'a>(pattern: &NamePattern, known: &'a [String]) -> Vec<&'a str> {
    known
        .iter()
        .map(String::as_str)
        .filter(|n| bootable_name(n) && pattern.matches(n))
        .collect()
}

/// The nearest known names to a pattern that matched none: those "did you mean" finds, else
/// those sharing the longest beginning with it.
pub fn nearest<'a>(pattern: &NamePattern, known: &'a [String]) -> Vec<&'a str> {
    let literal = pattern.literal();
    let bootable = || {
        known
            .iter()
            .map(String::as_str)
            .filter(|n| bootable_name(n))
    };
    let close = crate::suggest::closest(&literal, bootable());
    if !close.is_empty() {
        return close;
    }
    let common = |n: &str| {
        literal
            .chars()
            .zip(n.chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    let best = bootable().map(common).max().unwrap_or(0);
    bootable().filter(|n| common(n) == best).take(3).collect()
}

fn apt_cache(args: &[&str]) -> Result<String> {
    let out = crate::programs::command("apt-cache")
        .args(args)
        .output()
        .map_err(|e| {
            crate::system::processes::cannot_start_or(
                "apt-cache",
                &e,
                "a pattern of kernel packages needs apt; or give the kernel images' paths",
            )
        })?;
    if !out.status.success() {
        bail!(
            "apt-cache {} failed: {} (run apt-get update)",
            args.first().copied().unwrap_or(""),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What the archive says of one package, or None when it says nothing.
pub fn describe(name: &str) -> Result<Option<Candidate>> {
    let text = apt_cache(&["show", "--no-all-versions", name])?;
    Ok(parse_show(&text).into_iter().find(|c| c.name == name))
}

/// The kernels a pattern names, oldest first; a pattern that matches nothing is a usage error
/// naming the nearest packages.
pub fn resolve(spec: &str) -> Result<Vec<Candidate>> {
    let pattern = NamePattern::parse(spec).map_err(|e| crate::usage!("--guest {e}"))?;
    let mut known: Vec<String> = apt_cache(&["pkgnames", "linux-image-"])?
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    known.sort();
    let names = matching(&pattern, &known);
    if names.is_empty() {
        let near = nearest(&pattern, &known);
        return Err(crate::usage!(
            "--guest {spec}: no kernel package the archive offers matches{} (apt-cache \
             pkgnames linux-image- lists them all; run apt-get update if the list is old)",
            if near.is_empty() {
                String::new()
            } else {
                format!("; the nearest: {}", near.join(", "))
            }
        ));
    }
    let mut args = vec!["show", "--no-all-versions"];
    args.extend(names.iter().copied());
    let mut found: Vec<Candidate> = parse_show(&apt_cache(&args)?)
        .into_iter()
        // A meta-package stands for one of the kernels, which the pattern names itself.
        .filter(|c| !c.meta)
        .collect();
    if found.is_empty() {
        return Err(crate::usage!(
            "--guest {spec}: matches only meta-packages ({}), which stand for one kernel each: \
             name that kernel, or widen the pattern",
            names.join(", ")
        ));
    }
    order(&mut found);
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn archive() -> Vec<String> {
        let mut names = Vec::new();
        for n in 47..=57 {
            for f in ["amd64", "cloud-amd64", "rt-amd64", "cloud-amd64-dbg"] {
                names.push(format!("linux-image-6.1.0-{n}-{f}"));
            }
        }
        for n in [100, 101, 107, 111, 118] {
            for f in [
                "amd64",
                "cloud-amd64",
                "cloud-amd64-unsigned",
                "cloud-amd64-dbg",
            ] {
                names.push(format!("linux-image-6.12.{n}+deb12-{f}"));
            }
        }
        names.extend(["linux-image-6.12-cloud-amd64", "linux-image-cloud-amd64"].map(String::from));
        names.sort();
        names
    }

    fn matched(spec: &str) -> Vec<String> {
        let p = NamePattern::parse(spec).unwrap();
        matching(&p, &archive())
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn globs_match_whole_names() {
        assert!(glob("a*c", "abbc") && glob("a*c", "ac") && glob("a?c", "abc"));
        assert!(!glob("a*c", "abcd") && !glob("a?c", "ac") && !glob("abc", "ab"));
        assert!(glob("*", "") && glob("**x*", "yxz") && !glob("*x", "xy"));
        let cloud = matched("linux-image-6.12.*-cloud-amd64");
        assert_eq!(cloud.len(), 5, "{cloud:?}");
        assert!(cloud.iter().all(|n| n.ends_with("+deb12-cloud-amd64")));
        // Symbol packages are never booted; unsigned images are, when named.
        assert!(!matched("linux-image-6.1.0-47-*")
            .iter()
            .any(|n| n.ends_with("-dbg")));
        assert_eq!(matched("linux-image-6.12.1?1+deb12-*-unsigned").len(), 2);
    }

    #[test]
    fn ranges_stand_for_one_number() {
        let r = matched("linux-image-6.1.0-50..52-cloud-amd64");
        assert_eq!(
            r,
            ["50", "51", "52"].map(|n| format!("linux-image-6.1.0-{n}-cloud-amd64"))
        );
        // linux-image- is understood, and a range works with a glob after it.
        assert_eq!(matched("6.1.0-56..57-*").len(), 6);
        assert_eq!(matched("6.12.100..107+deb12-cloud-amd64").len(), 3);
        // 6.12.1 is not in 100..118: the number is the whole run of digits.
        assert!(!NamePattern::parse("6.12.100..118+deb12-amd64")
            .unwrap()
            .matches("linux-image-6.12.1+deb12-amd64"));
    }

    #[test]
    fn bad_ranges_say_how_to_write_one() {
        for bad in ["6.1.0-..57-amd64", "6.1.0-47..-amd64", "6.1.0-47..57..59"] {
            let e = NamePattern::parse(bad).unwrap_err();
            assert!(e.contains(bad) && e.contains("range"), "{e}");
        }
        let e = NamePattern::parse("6.1.0-57..47-amd64").unwrap_err();
        assert!(e.contains("empty") && e.contains("47..57"), "{e}");
        assert!(NamePattern::parse("linux-headers-*")
            .unwrap_err()
            .contains("linux-image-*"));
        assert!(NamePattern::parse("6.1.0-1..99999999999999999999").is_err());
    }

    #[test]
    fn a_pattern_that_matches_nothing_names_the_nearest() {
        let known = archive();
        let p = NamePattern::parse("linux-image-6.1.0-5?-clod-amd64").unwrap();
        assert!(matching(&p, &known).is_empty());
        let near = nearest(&p, &known);
        assert!(
            !near.is_empty() && near[0].contains("cloud-amd64"),
            "{near:?}"
        );
        let p = NamePattern::parse("linux-image-7.*").unwrap();
        assert!(nearest(&p, &known)
            .iter()
            .all(|n| n.starts_with("linux-image-")));
    }

    #[test]
    fn candidates_sort_by_debian_version_not_by_text() {
        let show = "Package: linux-image-6.1.0-9-cloud-amd64\nVersion: 6.1.27-1\nSize: 10\n\
            Depends: kmod, linux-base\n\n\
            Package: linux-image-6.1.0-10-cloud-amd64\nVersion: 6.1.38-1\nSize: 20\n\n\
            Package: linux-image-6.1.0-10-cloud-amd64\nVersion: 6.1.37-1\nSize: 20\n\n\
            Package: linux-image-6.1-cloud-amd64\nVersion: 6.1.38-1\n\
            Depends: linux-image-6.1.0-10-cloud-amd64 (= 6.1.38-1)\n";
        let mut c = parse_show(show);
        assert_eq!(c.len(), 3, "{c:?}");
        assert!(c[2].meta && !c[0].meta && c[1].size == 20);
        c.retain(|c| !c.meta);
        c.reverse();
        order(&mut c);
        assert_eq!(c[0].name, "linux-image-6.1.0-9-cloud-amd64");
    }

    proptest! {
        /// A range matches exactly the names whose number lies in it.
        #[test]
        fn a_range_matches_its_numbers(lo in 0u64..200, len in 0u64..50, n in 0u64..300) {
            let p = NamePattern::parse(&format!("6.1.0-{lo}..{}-cloud-amd64", lo + len))
                .unwrap();
            let name = format!("linux-image-6.1.0-{n}-cloud-amd64");
            prop_assert_eq!(p.matches(&name), (lo..=lo + len).contains(&n));
        }
    }
}
