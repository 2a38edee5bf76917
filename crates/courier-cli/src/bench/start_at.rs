//! `--start-at <RFC 3339 time>`: agents on several machines start their runs together.
//!
//! A merged report adds up what the agents measured over the same wall-clock window; agents
//! started by hand or by a scheduler drift by seconds. Each agent prepares everything (server,
//! clients), then waits for the agreed instant. Clocks are as good as the machines' NTP. The
//! parser takes the RFC 3339 profile of ISO 8601 that `date -u +%FT%TZ` and Kubernetes print:
//! `2026-11-26T18:00:00Z`, with optional fractional seconds and a `±HH:MM` offset.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Parses an RFC 3339 date-time into a `SystemTime`; the error says what was expected.
pub fn parse(text: &str) -> Result<SystemTime, String> {
    let bad = || format!("`{text}` is not an RFC 3339 time: write e.g. 2026-11-26T18:00:00Z");
    let t = text.trim();
    if t.len() < 20 || !t.is_char_boundary(19) {
        return Err(bad());
    }
    let (date_time, zone) = t.split_at(19);
    let b = date_time.as_bytes();
    if b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(bad());
    }
    let num = |range: std::ops::Range<usize>| -> Result<i64, String> {
        let part = &date_time[range];
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        part.parse().map_err(|_| bad())
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=days_in_month(year, month)).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(bad());
    }
    // Fractional seconds, then the zone.
    let (fraction, zone) = match zone.strip_prefix('.') {
        Some(rest) => {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(bad());
            }
            let nanos: f64 = format!("0.{}", &rest[..digits])
                .parse()
                .map_err(|_| bad())?;
            (Duration::from_secs_f64(nanos), &rest[digits..])
        }
        None => (Duration::ZERO, zone),
    };
    let offset_secs = match zone {
        "Z" | "z" => 0,
        z if z.len() == 6 && (z.starts_with('+') || z.starts_with('-')) && &z[3..4] == ":" => {
            let h: i64 = z[1..3].parse().map_err(|_| bad())?;
            let m: i64 = z[4..6].parse().map_err(|_| bad())?;
            let sign = if z.starts_with('-') { -1 } else { 1 };
            sign * (h * 3600 + m * 60)
        }
        _ => return Err(bad()),
    };
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
        - offset_secs;
    let secs = u64::try_from(secs).map_err(|_| bad())?;
    Ok(UNIX_EPOCH + Duration::from_secs(secs) + fraction)
}

/// How long until `at`; `None` if it has passed.
pub fn until(at: SystemTime) -> Option<Duration> {
    at.duration_since(SystemTime::now()).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(text: &str) -> f64 {
        parse(text)
            .unwrap_or_else(|e| panic!("{e}"))
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    }

    #[test]
    fn parses_utc_offsets_and_fractions() {
        assert_eq!(secs("1970-01-01T00:00:00Z"), 0.0);
        // `date -u -d 2026-11-26T18:00:00Z +%s`
        assert_eq!(secs("2026-11-26T18:00:00Z"), 1_795_716_000.0);
        assert_eq!(secs("2026-11-26T19:30:00+01:30"), 1_795_716_000.0);
        assert_eq!(secs("2026-11-26T17:00:00-01:00"), 1_795_716_000.0);
        assert_eq!(secs("2024-02-29T00:00:00.25Z"), 1_709_164_800.25);
    }

    #[test]
    fn refuses_what_is_not_rfc_3339() {
        for bad in [
            "2026-11-26",
            "2026-11-26T18:00:00",
            "2026-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-11-26T24:00:00Z",
            "2026-11-26T18:00:00+0100",
            "2026-11-26T18:00:00.Z",
            "tomorrow at six",
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains("RFC 3339"), "{bad}: {err}");
        }
    }
}
