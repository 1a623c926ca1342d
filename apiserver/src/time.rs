//! RFC 3339 timestamps and kubectl-style ages, without a date-time dependency.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now.
pub(crate) fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// `2026-11-22T02:18:07Z` for the current time.
pub(crate) fn now_rfc3339() -> String {
    format_rfc3339(now_secs())
}

/// Formats Unix seconds as an RFC 3339 UTC timestamp with second precision.
///
/// Every create and update stamps one or two of these, so the digits are
/// written directly: `format!` with padding cost ten times as much. Years
/// outside 0..=9999 are clamped; RFC 3339 cannot express them.
pub(crate) fn format_rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let mut b = *b"0000-00-00T00:00:00Z";
    let mut put = |at: usize, width: usize, mut n: i64| {
        for i in (at..at + width).rev() {
            b[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, y.clamp(0, 9999));
    put(5, 2, m);
    put(8, 2, d);
    put(11, 2, rem / 3600);
    put(14, 2, (rem % 3600) / 60);
    put(17, 2, rem % 60);
    String::from_utf8(b.to_vec()).expect("ASCII digits and separators")
}

/// Parses the `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)` form the API uses.
pub(crate) fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || (b[10] != b'T' && b[10] != b't') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &s[19..];
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        rest = &r[n..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 => {
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            sign * (rest[1..3].parse::<i64>().ok()? * 3600 + rest[4..6].parse::<i64>().ok()? * 60)
        }
        _ => return None,
    };
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se - offset)
}

/// The age column kubectl shows (`5s`, `3m20s`, `2d4h`, ...), like
/// apimachinery's `duration.HumanDuration`.
pub(crate) fn human_age(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let s = secs.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86_400);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        if s % 60 == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{}s", s % 60)
        }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        if m % 60 == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        if h % 24 == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{}h", h % 24)
        }
    } else if d < 365 * 2 {
        format!("{d}d")
    } else if d < 365 * 8 {
        if d % 365 == 0 {
            format!("{}y", d / 365)
        } else {
            format!("{}y{}d", d / 365, d % 365)
        }
    } else {
        format!("{}y", d / 365)
    }
}

/// Days since 1970-01-01 to (year, month, day); Howard Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_timestamps() {
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(1_795_313_887), "2026-11-22T02:18:07Z");
        assert_eq!(format_rfc3339(951_868_799), "2000-02-29T23:59:59Z");
        assert_eq!(format_rfc3339(-1), "1969-12-31T23:59:59Z");
        assert_eq!(parse_rfc3339("2026-11-22T02:18:07Z"), Some(1_795_313_887));
        assert_eq!(
            parse_rfc3339("2026-11-22T03:18:07.123+01:00"),
            Some(1_795_313_887)
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn ages_look_like_kubectl() {
        assert_eq!(human_age(5), "5s");
        assert_eq!(human_age(200), "3m20s");
        assert_eq!(human_age(3600), "60m");
        assert_eq!(human_age(5 * 3600 + 60), "5h1m");
        assert_eq!(human_age(3 * 86_400 + 3600 * 4), "3d4h");
    }
}
