//! CronJob schedules as Kubernetes runs them: parsed as robfig/cron v3's
//! `ParseStandard` parses them (five fields — minute, hour, day of month,
//! month, day of week — or a descriptor such as `@daily` or `@every 1h`,
//! optionally after `TZ=<zone> `) and stepped as its `SpecSchedule.Next`
//! steps them, on the wall clock of an IANA time zone. The API server
//! validates `spec.schedule` and `spec.timeZone` with this module and the
//! cronjob plugin schedules with it, so both agree on what a schedule
//! means.
//!
//! Daylight saving time behaves as in kube-controller-manager: a wall time
//! the zone skips does not fire that day (`30 2 * * *` in New York skips
//! the second Sunday of March), and one it repeats fires at both instants
//! (`30 1 * * *` fires at 01:30 EDT and again at 01:30 EST).
//!
//! ```
//! use windlass_selector::cron::{Schedule, TimeZone};
//! let paris = TimeZone::load("Europe/Paris").unwrap();
//! let nine = Schedule::parse("0 9 * * *").unwrap().with_zone(paris);
//! // 2026-01-15T00:00Z: 09:00 in Paris is 08:00 UTC in winter.
//! assert_eq!(nine.next(1_768_435_200), Some(1_768_435_200 + 8 * 3600));
//! ```

mod duration;
mod parse;
mod zone;

pub use zone::{TimeZone, UnknownTimeZone};

use parse::STAR;

/// A schedule that does not parse, in robfig/cron's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CronError(String);

impl CronError {
    fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// A parsed schedule and the zone whose wall clock it reads.
#[derive(Debug, Clone)]
pub struct Schedule {
    kind: Kind,
    zone: TimeZone,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// Five fields (or a descriptor that stands for them); seconds are 0.
    Fields(Fields),
    /// `@every`: this many seconds after the previous time.
    Every(i64),
}

/// Each field as a bit set of the values it allows, plus [`STAR`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fields {
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
}

impl Fields {
    /// robfig's `dayMatches`: when either day field was a star both must
    /// match, otherwise either may.
    fn day_matches(&self, day: u32, weekday: u32) -> bool {
        let dom = self.dom & (1 << day) != 0;
        let dow = self.dow & (1 << weekday) != 0;
        if (self.dom | self.dow) & STAR != 0 {
            dom && dow
        } else {
            dom || dow
        }
    }
}

/// How far `next` and `prev` look: robfig gives up five years on.
const YEARS: i64 = 5;

impl Schedule {
    /// Parses `spec` as `cron.ParseStandard` does. A `TZ=`/`CRON_TZ=`
    /// prefix sets the zone; otherwise it is UTC.
    pub fn parse(spec: &str) -> Result<Self, CronError> {
        parse::parse(spec)
    }

    /// The same schedule on the wall clock of `zone`, as the controller
    /// schedules `spec.timeZone` (by prefixing `TZ=<zone>`).
    pub fn with_zone(mut self, zone: TimeZone) -> Self {
        self.zone = zone;
        self
    }

    /// The zone it reads.
    pub fn zone(&self) -> &TimeZone {
        &self.zone
    }

    /// The first scheduled instant after `after` (both in seconds since
    /// the epoch), or `None` when none comes within five years
    /// (`0 0 30 2 *`).
    pub fn next(&self, after: i64) -> Option<i64> {
        match &self.kind {
            Kind::Every(secs) => after.checked_add(*secs),
            Kind::Fields(f) => next_of(f, &self.zone, after),
        }
    }

    /// The last scheduled instant at or before `at`, within five years:
    /// the instant `next` reaches from just before it. Found by bisection
    /// over `next`, which never decreases as its argument grows, so it
    /// agrees with `next` through any daylight saving change.
    pub fn prev(&self, at: i64) -> Option<i64> {
        let fires_by = |t: i64| self.next(t).is_some_and(|n| n <= at);
        // An hour back, then twice as far each time, to a time it fired since.
        let mut back = 3600;
        let mut lo = at - back;
        while !fires_by(lo) {
            if back > YEARS * 366 * 86_400 {
                return None;
            }
            back *= 2;
            lo = at - back;
        }
        // `fires_by(lo)` holds and `fires_by(at)` does not: bisect.
        let mut hi = at;
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fires_by(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        self.next(lo)
    }
}

/// robfig's `SpecSchedule.Next`, step for step, on `zone`'s wall clock:
/// a field that does not match is stepped (months and days on the wall
/// clock through Go's `time.Date`, hours and minutes as elapsed time),
/// and a step that wraps the field starts over from the month. Those
/// choices are what make its daylight saving behaviour, so they are kept.
fn next_of(f: &Fields, zone: &TimeZone, after: i64) -> Option<i64> {
    // The upcoming whole second.
    let mut t = after.checked_add(1)?;
    // Set once any field has moved `t` (and reset the fields below it).
    let mut added = false;
    let year_limit = zone.wall(t).year + YEARS;
    'wrap: loop {
        if zone.wall(t).year > year_limit {
            return None;
        }
        while f.month & (1 << zone.wall(t).month) == 0 {
            if !added {
                added = true;
                let w = zone.wall(t);
                t = zone.date(w.year, i64::from(w.month), 1, 0, 0);
            }
            t = zone.add_date(t, 1, 0);
            if zone.wall(t).month == 1 {
                continue 'wrap;
            }
        }
        loop {
            let w = zone.wall(t);
            if f.day_matches(w.day, w.weekday) {
                break;
            }
            if !added {
                added = true;
                t = zone.date(w.year, i64::from(w.month), i64::from(w.day), 0, 0);
            }
            t = zone.add_date(t, 0, 1);
            // A day whose midnight the zone skips starts at 01:00 (or, going
            // back, at 23:00 the day before): put it back on the hour 0.
            let hour = i64::from(zone.wall(t).hour);
            if hour > 12 {
                t += (24 - hour) * 3600;
            } else {
                t -= hour * 3600;
            }
            if zone.wall(t).day == 1 {
                continue 'wrap;
            }
        }
        while f.hour & (1 << zone.wall(t).hour) == 0 {
            if !added {
                added = true;
                let w = zone.wall(t);
                t = zone.date(w.year, i64::from(w.month), i64::from(w.day), w.hour, 0);
            }
            t += 3600;
            if zone.wall(t).hour == 0 {
                continue 'wrap;
            }
        }
        while f.minute & (1 << zone.wall(t).minute) == 0 {
            if !added {
                added = true;
                t -= t.rem_euclid(60);
            }
            t += 60;
            if zone.wall(t).minute == 0 {
                continue 'wrap;
            }
        }
        // The seconds field of a standard schedule is 0.
        while zone.wall(t).second != 0 {
            added = true;
            t += 1;
            if zone.wall(t).second == 0 {
                continue 'wrap;
            }
        }
        return Some(t);
    }
}

#[cfg(test)]
mod tests;
