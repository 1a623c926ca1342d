//! Cron schedules as Kubernetes reads them (robfig/cron's standard parser):
//! five fields — minute, hour, day of month, month, day of week — each `*`,
//! `?`, a value, a range `a-b`, a step `*/n` or `a-b/n`, or a list of
//! those; month and weekday names (`JAN`, `MON`); the descriptors
//! `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`
//! and `@hourly`. When both day fields are restricted a day matches
//! either, as in cron. Times are UTC, to the minute.

use windlass_sdk::Time;

/// A parsed schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Schedule {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Both day fields restricted: a day matches either.
    either_day: bool,
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

impl Schedule {
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let expanded = match text {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other if other.starts_with('@') => {
                return Err(format!("unrecognized descriptor: {other}"));
            }
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "expected exactly 5 fields, found {}: {text}",
                fields.len()
            ));
        }
        let restricted = |f: &str| !f.starts_with('*') && !f.starts_with('?');
        Ok(Schedule {
            minutes: field(fields[0], 0, 59, &[])?,
            hours: field(fields[1], 0, 23, &[])?,
            days: field(fields[2], 1, 31, &[])?,
            months: field(fields[3], 1, 12, &MONTHS)?,
            weekdays: field(fields[4], 0, 6, &WEEKDAYS)?,
            either_day: restricted(fields[2]) && restricted(fields[4]),
        })
    }

    fn day_matches(&self, c: &Civil) -> bool {
        let dom = self.days & (1 << c.day) != 0;
        let dow = self.weekdays & (1 << c.weekday) != 0;
        if self.either_day {
            dom || dow
        } else {
            dom && dow
        }
    }

    /// The first scheduled minute after `t`, if one comes within five
    /// years (`0 0 30 2 *` never does).
    pub(crate) fn next(&self, t: Time) -> Option<Time> {
        let mut m = t.millis().div_euclid(60_000) + 1;
        for _ in 0..200_000 {
            let c = Civil::of(m);
            if self.months & (1 << c.month) == 0 {
                m = Civil::minute_of(c.year + i64::from(c.month == 12), c.month % 12 + 1, 1);
            } else if !self.day_matches(&c) {
                m = (m.div_euclid(1440) + 1) * 1440;
            } else if self.hours & (1 << c.hour) == 0 {
                m = (m.div_euclid(60) + 1) * 60;
            } else if self.minutes & (1 << c.minute) == 0 {
                m += 1;
            } else {
                return Some(Time::from_millis(m * 60_000));
            }
            if m > t.millis().div_euclid(60_000) + 5 * 366 * 1440 {
                return None;
            }
        }
        None
    }

    /// The last scheduled minute at or before `t`, within five years.
    pub(crate) fn prev(&self, t: Time) -> Option<Time> {
        let start = t.millis().div_euclid(60_000);
        let mut m = start;
        for _ in 0..200_000 {
            let c = Civil::of(m);
            if self.months & (1 << c.month) == 0 {
                m = Civil::minute_of(c.year, c.month, 1) - 1;
            } else if !self.day_matches(&c) {
                m = m.div_euclid(1440) * 1440 - 1;
            } else if self.hours & (1 << c.hour) == 0 {
                m = m.div_euclid(60) * 60 - 1;
            } else if self.minutes & (1 << c.minute) == 0 {
                m -= 1;
            } else {
                return Some(Time::from_millis(m * 60_000));
            }
            if m < start - 5 * 366 * 1440 {
                return None;
            }
        }
        None
    }
}

/// One field as a bit set of the values it allows.
fn field(text: &str, min: u32, max: u32, names: &[&str]) -> Result<u64, String> {
    let value = |s: &str| -> Result<u32, String> {
        if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
            return Ok(i as u32 + min);
        }
        let n: u32 = s
            .parse()
            .map_err(|_| format!("failed to parse int from {s}"))?;
        if n < min || n > max {
            return Err(format!("{n} out of range [{min}, {max}]: {text}"));
        }
        Ok(n)
    };
    let mut bits = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s
                    .parse()
                    .map_err(|_| format!("failed to parse int from {s}"))?;
                if step == 0 {
                    return Err(format!("step of range should be a positive number: {part}"));
                }
                (r, Some(step))
            }
            None => (part, None),
        };
        let (lo, hi) = match range {
            "*" | "?" => (min, max),
            r => match r.split_once('-') {
                Some((a, b)) => (value(a)?, value(b)?),
                None => {
                    let v = value(r)?;
                    // `5/10`: from 5 to the end, every 10.
                    (v, if step.is_some() { max } else { v })
                }
            },
        };
        if lo > hi {
            return Err(format!(
                "beginning of range ({lo}) beyond end of range ({hi}): {part}"
            ));
        }
        let mut v = lo;
        while v <= hi {
            bits |= 1 << v;
            v += step.unwrap_or(1);
        }
    }
    Ok(bits)
}

/// A UTC minute as calendar fields.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    /// 0 = Sunday.
    weekday: u32,
}

impl Civil {
    fn of(minute: i64) -> Self {
        let days = minute.div_euclid(1440);
        let in_day = minute.rem_euclid(1440);
        let (year, month, day) = Time::from_millis(minute * 60_000).date();
        Civil {
            year,
            month,
            day,
            hour: (in_day / 60) as u32,
            minute: (in_day % 60) as u32,
            // 1970-01-01 was a Thursday.
            weekday: (days + 4).rem_euclid(7) as u32,
        }
    }

    /// The first minute of `year`-`month`-`day`.
    fn minute_of(year: i64, month: u32, day: u32) -> i64 {
        Time::from_date(year, month, day).millis() / 60_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Time {
        Time::parse(text).unwrap()
    }

    fn next(s: &str, from: &str) -> String {
        Schedule::parse(s)
            .unwrap()
            .next(at(from))
            .map(Time::to_rfc3339)
            .unwrap_or_default()
    }

    fn prev(s: &str, from: &str) -> String {
        Schedule::parse(s)
            .unwrap()
            .prev(at(from))
            .map(Time::to_rfc3339)
            .unwrap_or_default()
    }

    #[test]
    fn next_and_prev_follow_the_fields() {
        let from = "2026-11-28T03:14:30Z"; // a Saturday
        for (schedule, after, before) in [
            ("* * * * *", "2026-11-28T03:15:00Z", "2026-11-28T03:14:00Z"),
            (
                "*/5 * * * *",
                "2026-11-28T03:15:00Z",
                "2026-11-28T03:10:00Z",
            ),
            ("0 * * * *", "2026-11-28T04:00:00Z", "2026-11-28T03:00:00Z"),
            (
                "30 9 * * MON-FRI",
                "2026-11-30T09:30:00Z",
                "2026-11-27T09:30:00Z",
            ),
            ("0 0 1 * *", "2026-12-01T00:00:00Z", "2026-11-01T00:00:00Z"),
            ("@yearly", "2027-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
            ("@weekly", "2026-11-29T00:00:00Z", "2026-11-22T00:00:00Z"),
            (
                "0 12 29 2 *",
                "2028-02-29T12:00:00Z",
                "2024-02-29T12:00:00Z",
            ),
            // Both day fields restricted: either matches (the 1st, or a Monday).
            ("0 0 1 * 1", "2026-11-30T00:00:00Z", "2026-11-23T00:00:00Z"),
            (
                "15,45 2-4/2 * JAN,nov ?",
                "2026-11-28T04:15:00Z",
                "2026-11-28T02:45:00Z",
            ),
        ] {
            assert_eq!(next(schedule, from), after, "next of {schedule}");
            assert_eq!(prev(schedule, from), before, "prev of {schedule}");
        }
        // A time that is scheduled is its own prev, not its own next.
        assert_eq!(
            prev("0 * * * *", "2026-11-28T03:00:00Z"),
            "2026-11-28T03:00:00Z"
        );
        assert_eq!(
            next("0 * * * *", "2026-11-28T03:00:00Z"),
            "2026-11-28T04:00:00Z"
        );
        // Never.
        assert_eq!(next("0 0 30 2 *", from), "");
    }

    #[test]
    fn bad_schedules_say_why() {
        for (text, says) in [
            ("* * * *", "expected exactly 5 fields, found 4"),
            ("60 * * * *", "60 out of range [0, 59]"),
            ("*/0 * * * *", "step of range should be a positive number"),
            (
                "5-1 * * * *",
                "beginning of range (5) beyond end of range (1)",
            ),
            ("x * * * *", "failed to parse int from x"),
            ("@often", "unrecognized descriptor: @often"),
            ("* * * * 7", "7 out of range [0, 6]"),
        ] {
            let err = Schedule::parse(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
