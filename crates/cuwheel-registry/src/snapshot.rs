//! Debian's snapshot archive: every file Debian ever published, under
//! `<base>/<YYYYMMDDTHHMMSSZ>/` with the `dists/` and `pool/` layout of a
//! mirror at that moment (the service answers a timestamp with the last
//! import at or before it). `cuwheel fetch` reads a pinned `.deb` there when
//! no suite of the mirror carries it any more.
//!
//! In: the `Date` of a suite's Release file (what the lock records as the
//! suite's `index-date`), and the base URL (`--debian-snapshot`,
//! `CUWHEEL_DEBIAN_SNAPSHOT`, else the public service). Out: timestamps and
//! URLs. Pure: no clock, no network.

use anyhow::{Context, Result, bail};

/// Replaces the public snapshot service's base URL.
pub const SNAPSHOT_VARIABLE: &str = "CUWHEEL_DEBIAN_SNAPSHOT";

/// How long after the index date the second look is taken. The archive
/// writes a Release at its `Date`, the snapshot service imports it some
/// hours later (four imports a day), and a timestamp is answered with the
/// last import at or before it: so the index date itself may show the
/// previous import, which lacks what that Release newly added, while half a
/// day later shows the import of that Release (or a later one, which still
/// carries every version that was not superseded in between).
const SECOND_LOOK_HOURS: i64 = 12;

/// The public snapshot service's archive of Debian's main archive. Its host
/// is written here and nowhere else.
pub fn public_base() -> String {
    let host = ["snapshot", "debian", "org"].join(".");
    format!("https://{host}/archive/debian")
}

/// The base URL to use: `flag`, else `$CUWHEEL_DEBIAN_SNAPSHOT`, else
/// [`public_base`]; without a trailing `/`.
pub fn base(flag: Option<&str>) -> String {
    let chosen = flag
        .map(str::to_owned)
        .or_else(|| std::env::var(SNAPSHOT_VARIABLE).ok())
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
        .unwrap_or_else(public_base);
    chosen.trim_end_matches('/').to_owned()
}

/// The archive as it was at `timestamp`: a mirror URL apt can read.
pub fn url(base: &str, timestamp: &str) -> String {
    format!("{}/{timestamp}/", base.trim_end_matches('/'))
}

/// The timestamps to look at for a suite whose index the lock read at
/// `index_date`, in order: the index date, then [`SECOND_LOOK_HOURS`] later.
pub fn looks(index_date: &str) -> Result<Vec<String>> {
    let seconds = parse_timestamp(index_date)?;
    Ok(vec![
        format_timestamp(seconds),
        format_timestamp(seconds + SECOND_LOOK_HOURS * 3600),
    ])
}

/// A Release file's `Date` (RFC 2822, as Debian writes it: `Sat, 22 Nov
/// 2025 08:19:06 UTC`) as a snapshot timestamp (`20251122T081906Z`).
pub fn timestamp(date: &str) -> Result<String> {
    let bad = || {
        format!(
            "`{date}` is not a date such as `Sat, 22 Nov 2025 08:19:06 UTC` (a Release file's Date)"
        )
    };
    let rest = match date.split_once(',') {
        Some((_weekday, rest)) => rest,
        None => date,
    };
    let words: Vec<&str> = rest.split_whitespace().collect();
    let [day, month, year, time, zone] = words[..] else {
        bail!(bad());
    };
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| *m == month)
    .with_context(bad)? as i64
        + 1;
    let number = |text: &str| text.parse::<i64>().ok().with_context(bad);
    let (day, year) = (number(day)?, number(year)?);
    let clock: Vec<i64> = time.split(':').map(number).collect::<Result<_>>()?;
    let [hour, minute, second] = clock[..] else {
        bail!(bad());
    };
    let offset = match zone {
        "UTC" | "GMT" | "Z" | "+0000" | "-0000" => 0,
        _ => {
            let sign = match zone.chars().next() {
                Some('+') => 1,
                Some('-') => -1,
                _ => bail!(bad()),
            };
            let digits = number(&zone[1..])?;
            if zone.len() != 5 {
                bail!(bad());
            }
            sign * ((digits / 100) * 3600 + (digits % 100) * 60)
        }
    };
    if !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        bail!(bad());
    }
    let seconds =
        days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset;
    Ok(format_timestamp(seconds))
}

/// Seconds since 1970 of a `YYYYMMDDTHHMMSSZ` timestamp.
fn parse_timestamp(timestamp: &str) -> Result<i64> {
    let bad = || format!("`{timestamp}` is not a timestamp such as 20251122T081906Z");
    let bytes = timestamp.as_bytes();
    if bytes.len() != 16
        || bytes[8] != b'T'
        || bytes[15] != b'Z'
        || !timestamp[..8].bytes().all(|b| b.is_ascii_digit())
        || !timestamp[9..15].bytes().all(|b| b.is_ascii_digit())
    {
        bail!(bad());
    }
    let field = |range: std::ops::Range<usize>| -> i64 {
        timestamp[range].parse().expect("checked digits")
    };
    let (year, month, day) = (field(0..4), field(4..6), field(6..8));
    let (hour, minute, second) = (field(9..11), field(11..13), field(13..15));
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        bail!(bad());
    }
    Ok(days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second)
}

fn format_timestamp(seconds: i64) -> String {
    let (days, rest) = (seconds.div_euclid(86400), seconds.rem_euclid(86400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146097 + day_of_era - 719468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let day_of_era = z - era * 146097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_dates_become_snapshot_timestamps() {
        assert_eq!(
            timestamp("Sat, 22 Nov 2025 08:19:06 UTC").unwrap(),
            "20251122T081906Z"
        );
        assert_eq!(
            timestamp("Thu, 29 Feb 2024 23:59:59 +0000").unwrap(),
            "20240229T235959Z"
        );
        // An offset is taken back to UTC, across a year's end.
        assert_eq!(
            timestamp("Wed, 01 Jan 2025 01:30:00 +0200").unwrap(),
            "20241231T233000Z"
        );
        for bad in [
            "",
            "22 Nov 2025",
            "Sat, 22 Foo 2025 08:19:06 UTC",
            "Sat, 22 Nov 2025 25:00:00 UTC",
        ] {
            let err = timestamp(bad).unwrap_err().to_string();
            assert!(err.contains("Release file's Date"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_second_look_is_half_a_day_later() {
        assert_eq!(
            looks("20251231T200000Z").unwrap(),
            ["20251231T200000Z", "20260101T080000Z"]
        );
        assert!(looks("2025-12-31").is_err());
        assert!(looks("20251331T200000Z").is_err());
    }

    #[test]
    fn days_round_trip() {
        for days in [-800_000, -1, 0, 59, 365 * 30 + 7, 20_000, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn urls_are_the_base_and_the_timestamp() {
        assert_eq!(
            url("http://127.0.0.1:9/archive/debian/", "20251122T081906Z"),
            "http://127.0.0.1:9/archive/debian/20251122T081906Z/"
        );
        assert!(public_base().starts_with("https://snapshot."));
        assert!(public_base().ends_with("/archive/debian"));
        assert_eq!(base(Some("http://h/x/")), "http://h/x");
    }
}
