//! Wall-clock time as runs record it: RFC 3339 UTC stamps (`2026-11-24T03:54:09Z`, which sort as
//! the times they name), run ids that sort by time, and the times a user may type for `--since`.

use crate::usage;
use anyhow::Result;

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// RFC 3339 UTC time from the system clock, without pulling in a date crate.
pub fn now_rfc3339() -> String {
    rfc3339(unix_now())
}

/// Seconds since the epoch as an RFC 3339 UTC stamp.
pub fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Year, month, day of a day number (days since 1970-01-01), proleptic Gregorian (Howard
/// Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The day number of a date: the inverse of [`civil_from_days`].
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A run id that sorts by time and does not collide between hosts: time, then random bits.
pub fn new_run_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut rnd = [0u8; 4];
    // SAFETY: getrandom writes at most rnd.len() bytes into rnd.
    unsafe { libc::getrandom(rnd.as_mut_ptr().cast(), rnd.len(), 0) };
    format!("{:x}-{:08x}", now.as_secs(), u32::from_ne_bytes(rnd))
}

fn number(text: &str) -> Option<i64> {
    text.parse().ok()
}

/// Seconds since the epoch of a stored stamp (RFC 3339, as [`rfc3339`] writes them), or a date.
pub fn parse_stamp(text: &str) -> Option<i64> {
    parse_absolute(text.trim())
}

/// Year, month and day of `YYYY-MM-DD`, not yet checked.
fn date_parts(date: &str) -> Option<(i64, i64, i64)> {
    let mut parts = date.splitn(3, '-');
    Some((
        number(parts.next()?)?,
        number(parts.next()?)?,
        number(parts.next()?)?,
    ))
}

fn leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Why a date of the right shape names no day (`2026-02-30`), for the error.
fn missing_day(text: &str) -> Option<String> {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let date = text.split(['T', ' ']).next()?;
    let (y, m, d) = date_parts(date)?;
    let days = days_in_month(y, m);
    ((1..=12).contains(&m) && d > days && d <= 31).then(|| {
        let month = MONTHS[(m - 1) as usize];
        let leap_note = if m == 2 && !leap(y) {
            format!(" ({y} is not a leap year)")
        } else {
            String::new()
        };
        format!("{date} is no date: {month} {y} has {days} days{leap_note}")
    })
}

/// `2026-11-01`, `2026-11-01T10:00`, `2026-11-01T10:00:00Z`, `2026-11-01 10:00:00+01:00`.
fn parse_absolute(text: &str) -> Option<i64> {
    let (date, time) = match text.split_once(['T', ' ']) {
        Some((d, t)) => (d, Some(t)),
        None => (text, None),
    };
    let (y, m, d) = date_parts(date)?;
    if !(1..=12).contains(&m)
        || !(1..=days_in_month(y, m)).contains(&d)
        || !(1970..=9999).contains(&y)
    {
        return None;
    }
    let mut secs = days_from_civil(y, m, d) * 86_400;
    if let Some(t) = time {
        // A zone: Z, or +hh:mm / -hh:mm after the time.
        let (clock, offset) = if let Some(c) = t.strip_suffix(['Z', 'z']) {
            (c, 0)
        } else if let Some(i) = t.rfind(['+', '-']).filter(|i| *i >= 5) {
            let (c, z) = t.split_at(i);
            let sign = if z.starts_with('-') { -1 } else { 1 };
            let (h, mi) = z[1..].split_once(':').unwrap_or((&z[1..], "0"));
            (c, sign * (number(h)? * 3600 + number(mi)? * 60))
        } else {
            (t, 0)
        };
        let mut hms = clock.splitn(3, ':');
        let h = number(hms.next()?)?;
        let mi = hms.next().map_or(Some(0), number)?;
        let s = hms
            .next()
            .map_or(Some(0), |v| v.split('.').next().and_then(number))?;
        if !(0..24).contains(&h) || !(0..60).contains(&mi) || !(0..=60).contains(&s) {
            return None;
        }
        secs += h * 3600 + mi * 60 + s - offset;
    }
    Some(secs)
}

/// `90s`, `30min`, `12h`, `2d`, `1w`: how long ago.
fn parse_ago(text: &str) -> Option<i64> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = text.split_at(split);
    let n: i64 = n.parse().ok()?;
    let unit_s = match unit {
        "s" => 1,
        "min" | "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return None,
    };
    n.checked_mul(unit_s)
}

/// The start of the period `--since` names, as an RFC 3339 UTC stamp (which compares with the
/// stored start times as the times themselves): a date or date and time (UTC unless a zone is
/// given), `today`, `yesterday`, or a time ago (`90s`, `30min`, `12h`, `2d`, `1w`).
pub fn parse_since(text: &str) -> Result<String> {
    parse_since_at(text, unix_now())
}

/// `--since`, read by clap (a bad one is a usage error).
pub fn since_arg(text: &str) -> std::result::Result<String, String> {
    parse_since(text).map_err(|e| e.to_string())
}

fn parse_since_at(text: &str, now: i64) -> Result<String> {
    let t = text.trim();
    let midnight = now.div_euclid(86_400) * 86_400;
    let secs = match t {
        "now" => Some(now),
        "today" => Some(midnight),
        "yesterday" => Some(midnight - 86_400),
        _ => parse_ago(t)
            .map(|ago| now - ago)
            .or_else(|| parse_absolute(t)),
    };
    secs.map(rfc3339).ok_or_else(|| {
        if let Some(why) = missing_day(t) {
            return usage!("{why}; give a day of that month");
        }
        usage!(
            "cannot read {text:?} as a time: give a date (2026-11-01), a date and time (2026-11-01T10:00, UTC \
             unless a zone such as +01:00 follows), today, yesterday, or a time ago (30min, 12h, \
             2d, 1w)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_and_dates_round_trip() {
        for days in [-1000, 0, 1, 59, 365, 11_000, 20_000, 40_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_798_000_000), "2026-12-23T04:26:40Z");
    }

    #[test]
    fn since_takes_dates_times_zones_and_times_ago() {
        let now = 1_795_000_000; // 2026-11-18T11:06:40Z
        let at = |t: &str| parse_since_at(t, now).unwrap();
        assert_eq!(at("2026-11-01"), "2026-11-01T00:00:00Z");
        assert_eq!(at("2026-11-01T10:00"), "2026-11-01T10:00:00Z");
        assert_eq!(at("2026-11-01 10:00:30Z"), "2026-11-01T10:00:30Z");
        assert_eq!(at("2026-11-01T10:00:00+01:00"), "2026-11-01T09:00:00Z");
        assert_eq!(at("2026-11-01T10:00:00-02:30"), "2026-11-01T12:30:00Z");
        assert_eq!(at("today"), "2026-11-18T00:00:00Z");
        assert_eq!(at("yesterday"), "2026-11-17T00:00:00Z");
        assert_eq!(at("2d"), "2026-11-16T11:06:40Z");
        assert_eq!(at("90s"), "2026-11-18T11:05:10Z");
        assert_eq!(at("1w"), "2026-11-11T11:06:40Z");
        for bad in [
            "",
            "soon",
            "2026-13-01",
            "2026-11-01T25:00",
            "5 parsecs",
            "-2d",
        ] {
            let err = parse_since_at(bad, now).unwrap_err().to_string();
            assert!(err.contains("give a date"), "{bad}: {err}");
        }
    }

    #[test]
    fn days_a_month_does_not_have_are_refused_with_the_reason() {
        let now = 1_795_000_000;
        for (bad, says) in [
            (
                "2026-02-30",
                "February 2026 has 28 days (2026 is not a leap year)",
            ),
            ("2026-04-31", "April 2026 has 30 days"),
            (
                "2025-02-29T10:00",
                "February 2025 has 28 days (2025 is not a leap year)",
            ),
            (
                "2100-02-29",
                "February 2100 has 28 days (2100 is not a leap year)",
            ),
        ] {
            let err = parse_since_at(bad, now).unwrap_err();
            assert!(err.is::<crate::error::UsageError>());
            assert!(err.to_string().contains(says), "{bad}: {err}");
        }
        assert_eq!(
            parse_since_at("2024-02-29", now).unwrap(),
            "2024-02-29T00:00:00Z"
        );
        assert_eq!(
            parse_since_at("2000-02-29", now).unwrap(),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            parse_since_at("2026-12-31", now).unwrap(),
            "2026-12-31T00:00:00Z"
        );
    }
}
