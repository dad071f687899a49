//! Debian's version comparison (deb-version(7), dpkg's `verrevcmp`), so that kernels sort as the
//! archive means them to: `6.1.0-9` before `6.1.0-10`, `6.12.100~rc1` before `6.12.100`. String
//! order gets both wrong, and calling `dpkg --compare-versions` once per pair would start
//! hundreds of processes to sort one sweep.

use std::cmp::Ordering;

/// A version split as dpkg splits it: `[epoch:]upstream[-revision]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version<'a> {
    pub epoch: u64,
    pub upstream: &'a str,
    pub revision: &'a str,
}

impl<'a> Version<'a> {
    /// Splits a version; an epoch that is no number counts as 0 and stays in the upstream part,
    /// which then sorts it as text (dpkg refuses such a version; sorting must not).
    pub fn parse(text: &'a str) -> Self {
        let text = text.trim();
        let (epoch, rest) = match text.split_once(':') {
            Some((e, rest)) if !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()) => {
                (e.parse().unwrap_or(u64::MAX), rest)
            }
            _ => (0, text),
        };
        // The revision is everything after the last hyphen (the upstream part may hold hyphens).
        let (upstream, revision) = rest.rsplit_once('-').unwrap_or((rest, ""));
        Version {
            epoch,
            upstream,
            revision,
        }
    }
}

/// A character's weight in the non-digit parts: `~` sorts before everything, even the end of the
/// part; letters before other characters.
fn order(c: Option<u8>) -> i32 {
    match c {
        None => 0,
        Some(b'~') => -1,
        Some(c) if c.is_ascii_digit() => 0,
        Some(c) if c.is_ascii_alphabetic() => i32::from(c),
        Some(c) => i32::from(c) + 256,
    }
}

/// dpkg's `verrevcmp`: alternate runs of non-digits (compared by [`order`]) and digits (compared
/// as numbers, of any length, leading zeros ignored).
fn compare_part(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        while (i < a.len() && !a[i].is_ascii_digit()) || (j < b.len() && !b[j].is_ascii_digit()) {
            let (ca, cb) = (order(a.get(i).copied()), order(b.get(j).copied()));
            if ca != cb {
                return ca.cmp(&cb);
            }
            i += 1;
            j += 1;
        }
        while i < a.len() && a[i] == b'0' {
            i += 1;
        }
        while j < b.len() && b[j] == b'0' {
            j += 1;
        }
        let (si, sj) = (i, j);
        while i < a.len() && a[i].is_ascii_digit() {
            i += 1;
        }
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        // Without leading zeros the longer run is the larger number; of equal length, the text
        // order is the numeric one (no overflow, whatever the length).
        let by_number = (i - si)
            .cmp(&(j - sj))
            .then_with(|| a[si..i].cmp(&b[sj..j]));
        if by_number != Ordering::Equal {
            return by_number;
        }
    }
    Ordering::Equal
}

/// Compares two Debian versions as `dpkg --compare-versions` does.
pub fn compare(a: &str, b: &str) -> Ordering {
    let (a, b) = (Version::parse(a), Version::parse(b));
    a.epoch
        .cmp(&b.epoch)
        .then_with(|| compare_part(a.upstream, b.upstream))
        .then_with(|| compare_part(a.revision, b.revision))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use Ordering::{Equal, Greater, Less};

    /// Known answers, from dpkg's own test suite (lib/dpkg/t/t-version.c) and from the kernels
    /// of this archive.
    #[test]
    fn known_answers() {
        let cases = [
            ("0", "0", Equal),
            ("0", "00", Equal),
            ("1", "2", Less),
            ("2", "1", Greater),
            ("1:0", "0:9", Greater),
            ("0:1", "1", Equal),
            ("1.0", "1.0-0", Equal),
            ("1.0~rc1", "1.0", Less),
            ("1.0~~", "1.0~", Less),
            ("1.0~", "1.0", Less),
            ("1.0", "1.0+b1", Less),
            ("1.0a", "1.0", Greater),
            ("1.0a", "1.0+", Less),
            ("1.0-1", "1.0-2", Less),
            ("1.0-10", "1.0-9", Greater),
            ("1.2-3-4", "1.2-3-5", Less),
            ("000100", "99", Greater),
            ("1.18446744073709551617", "1.18446744073709551616", Greater),
            ("6.1.147-1", "6.1.58-1", Greater),
            ("6.12.100-1~deb12u1", "6.12.100-1", Less),
            ("6.12.101-1~deb12u1", "6.12.100-1", Greater),
            ("6.1.0-47", "6.1.0-57", Less),
            ("6.12.118+deb12", "6.12.99+deb12", Greater),
        ];
        for (a, b, want) in cases {
            assert_eq!(compare(a, b), want, "{a} against {b}");
            assert_eq!(compare(b, a), want.reverse(), "{b} against {a}");
        }
    }

    #[test]
    fn versions_split_as_dpkg_splits_them() {
        let v = Version::parse("2:6.12.100-1~deb12u1");
        assert_eq!(
            (v.epoch, v.upstream, v.revision),
            (2, "6.12.100", "1~deb12u1")
        );
        let v = Version::parse("1.2-3-4");
        assert_eq!((v.upstream, v.revision), ("1.2-3", "4"));
        assert_eq!(Version::parse("x:1").epoch, 0);
    }

    fn version() -> impl Strategy<Value = String> {
        "([0-9]{1,2}:)?[0-9][0-9a-z.+~]{0,6}(-[0-9a-z.+~]{1,4})?"
    }

    proptest! {
        /// A total order: antisymmetric and transitive, and equal to itself.
        #[test]
        fn an_order(a in version(), b in version(), c in version()) {
            prop_assert_eq!(compare(&a, &a), Equal);
            prop_assert_eq!(compare(&a, &b), compare(&b, &a).reverse());
            if compare(&a, &b) != Greater && compare(&b, &c) != Greater {
                prop_assert_ne!(compare(&a, &c), Greater);
            }
        }

        /// Numbers compare as numbers, whatever their lengths.
        #[test]
        fn numbers_as_numbers(x in 0u64..1_000_000, y in 0u64..1_000_000) {
            prop_assert_eq!(compare(&format!("6.1.0-{x}"), &format!("6.1.0-{y}")), x.cmp(&y));
        }
    }
}
