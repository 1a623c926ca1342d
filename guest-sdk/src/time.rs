//! `Time`: the host's clock as a plugin sees it, and Kubernetes timestamps.
//!
//! A plugin has no clock of its own: each request carries the instant the
//! host built it ([`crate::Request::now`]), and objects carry RFC 3339
//! timestamps (`creationTimestamp`, `lastTransitionTime`, ...). `Time`
//! compares and converts the two, so a plugin can tell whether a pod has
//! been ready for `minReadySeconds` or a grace period has run out, and how
//! long to wait (`Outcome::requeue_after`) until the next thing falls due.

use std::fmt;
use std::time::Duration;

use windlass_selector::civil::{civil_from_days, days_from_civil};

/// An instant, in milliseconds since the Unix epoch (UTC).
///
/// ```
/// use std::time::Duration;
/// use windlass_sdk::Time;
/// let t = Time::parse("2026-11-23T10:00:00Z").unwrap();
/// assert_eq!(t + Duration::from_secs(90), Time::parse("2026-11-23T10:01:30Z").unwrap());
/// assert_eq!(t.to_rfc3339(), "2026-11-23T10:00:00Z");
/// assert_eq!(Time::parse("2026-11-23T10:00:00.250000+01:00").unwrap().millis(),
///            t.millis() - 3_600_000 + 250);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(i64);

impl Time {
    /// 1970-01-01T00:00:00Z.
    pub const UNIX_EPOCH: Time = Time(0);

    /// The instant `millis` milliseconds after the Unix epoch.
    pub const fn from_millis(millis: i64) -> Self {
        Time(millis)
    }

    /// Milliseconds since the Unix epoch.
    pub const fn millis(self) -> i64 {
        self.0
    }

    /// Parses an RFC 3339 timestamp as Kubernetes writes them
    /// (`2026-11-23T10:00:00Z`, with optional fractional seconds and a
    /// `Z` or `±hh:mm` offset). `None` if it is not one.
    pub fn parse(text: &str) -> Option<Self> {
        let b = text.as_bytes();
        if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
            return None;
        }
        if b[13] != b':' || b[16] != b':' {
            return None;
        }
        let num = |from: usize, to: usize| -> Option<i64> {
            let s = text.get(from..to)?;
            if !s.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            s.parse().ok()
        };
        let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
        let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
        if !(1..=12).contains(&month)
            || day < 1
            || day > days_in_month(year, month)
            || hour > 23
            || minute > 59
            || second > 60
        {
            return None;
        }
        let mut rest = &text[19..];
        let mut millis = 0i64;
        if let Some(frac) = rest.strip_prefix('.') {
            let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return None;
            }
            let ms: String = frac[..digits]
                .chars()
                .chain("000".chars())
                .take(3)
                .collect();
            millis = ms.parse().ok()?;
            rest = &frac[digits..];
        }
        let offset_minutes = match rest {
            "Z" | "z" => 0,
            _ => {
                let rb = rest.as_bytes();
                if rb.len() != 6 || !matches!(rb[0], b'+' | b'-') || rb[3] != b':' {
                    return None;
                }
                let h: i64 = rest.get(1..3)?.parse().ok()?;
                let m: i64 = rest.get(4..6)?.parse().ok()?;
                let sign = if rb[0] == b'-' { -1 } else { 1 };
                sign * (h * 60 + m)
            }
        };
        let days = days_from_civil(year, month, day);
        let seconds =
            days * 86_400 + hour * 3600 + minute * 60 + second.min(59) - offset_minutes * 60;
        Some(Time(seconds * 1000 + millis))
    }

    /// The RFC 3339 form Kubernetes uses for `metav1.Time`: UTC, whole
    /// seconds, `Z` (`2026-11-23T10:00:00Z`).
    pub fn to_rfc3339(self) -> String {
        let secs = self.0.div_euclid(1000);
        let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        let (y, m, d) = civil_from_days(days);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        )
    }

    /// The UTC calendar date: year, month (1-12), day (1-31).
    pub fn date(self) -> (i64, u32, u32) {
        let (y, m, d) = civil_from_days(self.0.div_euclid(86_400_000));
        (y, m as u32, d as u32)
    }

    /// Midnight UTC of a calendar date (`month` 1-12, `day` 1-31).
    ///
    /// ```
    /// use windlass_sdk::Time;
    /// let t = Time::from_date(2028, 2, 29);
    /// assert_eq!(t.to_rfc3339(), "2028-02-29T00:00:00Z");
    /// assert_eq!(t.date(), (2028, 2, 29));
    /// ```
    pub fn from_date(year: i64, month: u32, day: u32) -> Time {
        Time(days_from_civil(year, i64::from(month), i64::from(day)) * 86_400_000)
    }

    /// How long after `earlier` this is; zero if it is not after it.
    pub fn since(self, earlier: Time) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0).max(0) as u64)
    }

    /// How long until `later`; zero if it has passed.
    pub fn until(self, later: Time) -> Duration {
        later.since(self)
    }
}

impl std::ops::Add<Duration> for Time {
    type Output = Time;

    fn add(self, d: Duration) -> Time {
        Time(
            self.0
                .saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        )
    }
}

impl std::ops::Sub<Duration> for Time {
    type Output = Time;

    fn sub(self, d: Duration) -> Time {
        Time(
            self.0
                .saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        )
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_orders() {
        for s in [
            "1970-01-01T00:00:00Z",
            "2000-02-29T23:59:59Z",
            "2026-11-23T10:00:00Z",
            "1969-12-31T23:59:59Z",
        ] {
            assert_eq!(Time::parse(s).unwrap().to_rfc3339(), s);
        }
        assert_eq!(Time::parse("1970-01-01T00:00:01Z").unwrap().millis(), 1000);
        let a = Time::parse("2026-01-01T00:00:00Z").unwrap();
        let b = Time::parse("2026-01-01T00:00:30.5Z").unwrap();
        assert!(a < b);
        assert_eq!(b.since(a), Duration::from_millis(30_500));
        assert_eq!(a.since(b), Duration::ZERO);
    }

    #[test]
    fn refuses_what_is_not_a_timestamp() {
        for bad in [
            "",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01 00:00:00",
            "2026-01-01T00:00:00.Z",
            "2026-01-01T00:00:00+0100",
            "abcd-01-01T00:00:00Z",
        ] {
            assert_eq!(Time::parse(bad), None, "{bad}");
        }
    }
}
