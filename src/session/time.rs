//! RFC 3339 timestamps in UTC with milliseconds (`2026-12-01T07:29:36.672Z`), the form
//! Claude Code writes, without a date-time crate.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `time` as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC). Times before 1970 print as the epoch.
pub fn format_rfc3339_millis(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let millis = since.subsec_millis();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Parse `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `None` if it is not that shape or
/// before 1970. Fractions beyond nanoseconds are cut.
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let b = text.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(range)?;
        part.iter().all(u8::is_ascii_digit).then(|| part.iter().fold(0i64, |n, c| n * 10 + i64::from(c - b'0')))
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' {
        return None;
    }
    if b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut pos = 19;
    let mut nanos: u32 = 0;
    if b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            if pos - start < 9 {
                nanos = nanos * 10 + u32::from(b[pos] - b'0');
            }
            pos += 1;
        }
        let digits = pos - start;
        if digits == 0 {
            return None;
        }
        for _ in digits..9 {
            nanos *= 10;
        }
    }
    let offset = match b.get(pos)? {
        b'Z' | b'z' if pos + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if pos + 6 == b.len() && b[pos + 3] == b':' => {
            let minutes = num(pos + 1..pos + 3)? * 60 + num(pos + 4..pos + 6)?;
            if *sign == b'+' { minutes * 60 } else { -minutes * 60 }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset;
    let secs = u64::try_from(secs).ok()?;
    Some(UNIX_EPOCH + Duration::new(secs, nanos))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01 (inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_rfc3339_millis(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        // 1796110176586 ms is the `sentAtMs` of the fixture's first prompt.
        let t = UNIX_EPOCH + Duration::from_millis(1_796_110_176_586);
        assert_eq!(format_rfc3339_millis(t), "2026-12-01T07:29:36.586Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(format_rfc3339_millis(leap + Duration::from_nanos(999_999_999)), "2000-02-29T00:00:00.999Z");
    }

    #[test]
    fn parses_what_it_formats_and_offsets() {
        let t = UNIX_EPOCH + Duration::from_millis(1_796_110_176_672);
        assert_eq!(parse_rfc3339("2026-12-01T07:29:36.672Z"), Some(t));
        assert_eq!(parse_rfc3339(&format_rfc3339_millis(t)), Some(t));
        assert_eq!(parse_rfc3339("2026-12-01T09:29:36.672+02:00"), Some(t));
        assert_eq!(parse_rfc3339("2026-12-01T07:29:36Z"), Some(t - Duration::from_millis(672)));
        for _ in 0..200 {
            let ms: u64 = rand::random_range(0..8_000_000_000_000);
            let t = UNIX_EPOCH + Duration::from_millis(ms);
            assert_eq!(parse_rfc3339(&format_rfc3339_millis(t)), Some(t));
        }
        for bad in ["", "2026-12-01", "2026-13-01T00:00:00Z", "2026-12-01T07:29:36.Z", "2026-12-01T07:29:36", "x"] {
            assert_eq!(parse_rfc3339(bad), None, "{bad:?}");
        }
    }
}
