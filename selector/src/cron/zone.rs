//! Time zones as Go's `time` package loads and applies them: a zone from
//! the IANA database bundled into the binary (the plugin sandbox has no
//! `/usr/share/zoneinfo`), a wall clock read off an instant, and an instant
//! made from wall-clock fields with `time.Date`'s normalization and its
//! choice in a gap or an overlap, which robfig/cron's `Next` inherits.

use jiff::tz::{TimeZone as JiffZone, TimeZoneDatabase};

use crate::civil::{civil_from_days, days_from_civil};

/// A time zone loaded by name, as `time.LoadLocation` would.
#[derive(Debug, Clone)]
pub struct TimeZone {
    name: String,
    zone: JiffZone,
}

/// A zone name `time.LoadLocation` would refuse, with its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct UnknownTimeZone {
    message: String,
}

impl UnknownTimeZone {
    fn unknown(name: &str) -> Self {
        Self {
            message: format!("unknown time zone {name}"),
        }
    }
}

impl TimeZone {
    /// UTC, the zone of a schedule without one (the controller's local
    /// zone in a cluster).
    pub fn utc() -> Self {
        Self {
            name: "UTC".into(),
            zone: JiffZone::UTC,
        }
    }

    /// The zone `name` from the bundled IANA database. As
    /// `time.LoadLocation`: `""` and `UTC` are UTC, `Local` is the local
    /// zone (UTC here), names are case-sensitive, and a name climbing out
    /// of the database (`..`, a leading `/`) is refused.
    pub fn load(name: &str) -> Result<Self, UnknownTimeZone> {
        match name {
            "" | "UTC" | "Local" => return Ok(Self::utc()),
            n if n.contains("..") || n.starts_with('/') || n.starts_with('\\') => {
                return Err(UnknownTimeZone {
                    message: "time: invalid location name".into(),
                });
            }
            _ => {}
        }
        let zone = TimeZoneDatabase::bundled()
            .get(name)
            .map_err(|_| UnknownTimeZone::unknown(name))?;
        // jiff finds names whatever their case; Go opens a file by that name.
        if zone.iana_name() != Some(name) {
            return Err(UnknownTimeZone::unknown(name));
        }
        Ok(Self {
            name: name.to_owned(),
            zone,
        })
    }

    /// The name it was loaded by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Seconds east of UTC at the instant `unix`.
    fn offset(&self, unix: i64) -> i64 {
        jiff::Timestamp::from_second(unix)
            .map(|t| i64::from(self.zone.to_offset(t).seconds()))
            .unwrap_or(0)
    }

    /// The wall clock at the instant `unix` (seconds since the epoch).
    pub(super) fn wall(&self, unix: i64) -> Wall {
        Wall::of_local(unix + self.offset(unix))
    }

    /// Go's `time.Date(year, month, day, hour, minute, second, 0, zone)`:
    /// out-of-range fields carry over (month 13 is next January, day 32
    /// the next month's first), and a wall time the zone skips or repeats
    /// resolves as Go resolves it — with the offset found at the instant
    /// `wall - offset(wall-as-UTC)`, so that (for example) New York's
    /// missing 02:30 becomes 01:30 EST and Paris's becomes 03:30 CEST.
    pub(super) fn date(&self, year: i64, month: i64, day: i64, hour: u32, minute: u32) -> i64 {
        let m0 = month - 1;
        let (year, month) = (year + m0.div_euclid(12), m0.rem_euclid(12) + 1);
        let days = days_from_civil(year, month, 1) + day - 1;
        let local = days * 86_400 + i64::from(hour) * 3600 + i64::from(minute) * 60;
        let guess = self.offset(local);
        local - self.offset(local - guess)
    }

    /// Go's `t.AddDate(0, months, days)`: the same wall clock that many
    /// months and days on, through [`date`](Self::date).
    pub(super) fn add_date(&self, unix: i64, months: i64, days: i64) -> i64 {
        let w = self.wall(unix);
        let at = self.date(
            w.year,
            i64::from(w.month) + months,
            i64::from(w.day) + days,
            w.hour,
            w.minute,
        );
        at + i64::from(w.second)
    }
}

/// Wall-clock fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Wall {
    pub(super) year: i64,
    pub(super) month: u32,
    pub(super) day: u32,
    pub(super) hour: u32,
    pub(super) minute: u32,
    pub(super) second: u32,
    /// 0 = Sunday, as Go's `Weekday`.
    pub(super) weekday: u32,
}

impl Wall {
    /// The fields of `local` seconds counted from 1970-01-01T00:00 on the
    /// wall clock.
    fn of_local(local: i64) -> Self {
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400) as u32;
        let (year, month, day) = civil_from_days(days);
        Wall {
            year,
            month: month as u32,
            day: day as u32,
            hour: secs / 3600,
            minute: secs / 60 % 60,
            second: secs % 60,
            // 1970-01-01 was a Thursday.
            weekday: (days + 4).rem_euclid(7) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_load_as_go_loads_them() {
        assert_eq!(
            TimeZone::load("Europe/Paris").unwrap().name(),
            "Europe/Paris"
        );
        assert_eq!(TimeZone::load("").unwrap().name(), "UTC");
        // Backward links and legacy names load by their own names.
        for name in [
            "Etc/GMT+5",
            "US/Eastern",
            "Asia/Calcutta",
            "EST5EDT",
            "GMT",
            "Japan",
        ] {
            assert_eq!(TimeZone::load(name).unwrap().name(), name);
        }
        for (name, says) in [
            ("Mars/Olympus", "unknown time zone Mars/Olympus"),
            ("europe/paris", "unknown time zone europe/paris"),
            ("../etc/passwd", "time: invalid location name"),
        ] {
            assert_eq!(TimeZone::load(name).unwrap_err().to_string(), says);
        }
    }

    #[test]
    fn dates_normalize_and_resolve_gaps_and_overlaps_as_go() {
        let utc = TimeZone::utc();
        // 2026-13-01 is 2027-01-01; 2026-02-29 is 2026-03-01.
        assert_eq!(utc.date(2026, 13, 1, 0, 0), utc.date(2027, 1, 1, 0, 0));
        assert_eq!(utc.date(2026, 2, 29, 0, 0), utc.date(2026, 3, 1, 0, 0));
        assert_eq!(utc.date(1970, 1, 1, 0, 0), 0);
        let ny = TimeZone::load("America/New_York").unwrap();
        let paris = TimeZone::load("Europe/Paris").unwrap();
        let at = |s: &str| s.parse::<jiff::Timestamp>().unwrap().as_second();
        // Skipped 02:30: New York goes back to 01:30 EST, Paris on to 03:30 CEST.
        assert_eq!(ny.date(2026, 3, 8, 2, 30), at("2026-03-08T06:30:00Z"));
        assert_eq!(paris.date(2026, 3, 29, 2, 30), at("2026-03-29T01:30:00Z"));
        // Repeated 01:30 in New York: the first (EDT); 02:30 in Paris: the second (CET).
        assert_eq!(ny.date(2026, 11, 1, 1, 30), at("2026-11-01T05:30:00Z"));
        assert_eq!(paris.date(2026, 10, 25, 2, 30), at("2026-10-25T01:30:00Z"));
        let w = ny.wall(at("2026-11-01T06:30:00Z"));
        assert_eq!((w.day, w.hour, w.minute, w.weekday), (1, 1, 30, 0));
    }
}
