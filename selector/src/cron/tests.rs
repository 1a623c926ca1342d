//! Schedules parsed and stepped as robfig/cron parses and steps them, in
//! UTC and across daylight saving changes.

use super::{Schedule, TimeZone};

fn at(text: &str) -> i64 {
    text.parse::<jiff::Timestamp>().unwrap().as_second()
}

fn show(secs: Option<i64>) -> String {
    secs.map(|s| jiff::Timestamp::from_second(s).unwrap().to_string())
        .unwrap_or_default()
}

fn schedule(spec: &str, zone: &str) -> Schedule {
    Schedule::parse(spec)
        .unwrap()
        .with_zone(TimeZone::load(zone).unwrap())
}

/// The next `n` times after `from`, in UTC.
fn times(spec: &str, zone: &str, from: &str, n: usize) -> Vec<String> {
    let s = schedule(spec, zone);
    let mut t = at(from);
    (0..n)
        .map(|_| {
            t = s.next(t).unwrap();
            show(Some(t))
        })
        .collect()
}

#[test]
fn next_and_prev_follow_the_fields() {
    let from = "2026-11-28T03:14:30Z"; // a Saturday
    for (spec, after, before) in [
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
        // `*/2` is no star to robfig: the 1st or any Sunday, Tuesday, ...
        (
            "0 0 1 * */2",
            "2026-11-29T00:00:00Z",
            "2026-11-28T00:00:00Z",
        ),
        (
            "15,45 2-4/2 * JAN,nov ?",
            "2026-11-28T04:15:00Z",
            "2026-11-28T02:45:00Z",
        ),
        ("@every 90m", "2026-11-28T04:44:30Z", ""),
    ] {
        let s = Schedule::parse(spec).unwrap();
        assert_eq!(show(s.next(at(from))), after, "next of {spec}");
        if !before.is_empty() {
            assert_eq!(show(s.prev(at(from))), before, "prev of {spec}");
        }
    }
    let hourly = Schedule::parse("0 * * * *").unwrap();
    // A time that is scheduled is its own prev, not its own next.
    let three = at("2026-11-28T03:00:00Z");
    assert_eq!(hourly.prev(three), Some(three));
    assert_eq!(hourly.next(three), Some(three + 3600));
    // Never.
    assert_eq!(Schedule::parse("0 0 30 2 *").unwrap().next(three), None);
    assert_eq!(Schedule::parse("0 0 30 2 *").unwrap().prev(three), None);
}

#[test]
fn utc_by_name_is_utc() {
    let from = at("2026-11-28T03:14:30Z");
    for spec in ["*/7 3 * * *", "0 0 29 2 *", "@monthly"] {
        let plain = Schedule::parse(spec).unwrap();
        for zone in ["UTC", "Etc/UTC", ""] {
            let zoned = schedule(spec, zone);
            assert_eq!(zoned.next(from), plain.next(from), "{spec} in {zone:?}");
            assert_eq!(zoned.prev(from), plain.prev(from), "{spec} in {zone:?}");
        }
    }
}

#[test]
fn a_wall_time_skipped_by_spring_forward_does_not_fire_that_day() {
    // New York, 2026-03-08: 02:00 EST becomes 03:00 EDT.
    let ny = "America/New_York";
    assert_eq!(
        times("30 2 * * *", ny, "2026-03-07T00:00:00Z", 2),
        ["2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z"]
    );
    assert_eq!(
        times("30 1 * * *", ny, "2026-03-07T12:00:00Z", 2),
        ["2026-03-08T06:30:00Z", "2026-03-09T05:30:00Z"]
    );
    // Hourly runs on through the change: 01:00 EST, then 03:00 EDT.
    assert_eq!(
        times("0 * * * *", ny, "2026-03-08T05:30:00Z", 3),
        [
            "2026-03-08T06:00:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-08T08:00:00Z"
        ]
    );
    // prev agrees: the last 02:30 before the 9th's is the 7th's.
    let s = schedule("30 2 * * *", ny);
    assert_eq!(
        show(s.prev(at("2026-03-09T06:00:00Z"))),
        "2026-03-07T07:30:00Z"
    );
}

#[test]
fn a_wall_time_repeated_by_fall_back_fires_at_both_instants() {
    // New York, 2026-11-01: 02:00 EDT becomes 01:00 EST; 01:30 comes twice.
    let ny = "America/New_York";
    assert_eq!(
        times("30 1 * * *", ny, "2026-10-31T12:00:00Z", 3),
        [
            "2026-11-01T05:30:00Z",
            "2026-11-01T06:30:00Z",
            "2026-11-02T06:30:00Z"
        ]
    );
    // 02:30 comes once, in EST.
    assert_eq!(
        times("30 2 * * *", ny, "2026-10-31T12:00:00Z", 2),
        ["2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z"]
    );
    let s = schedule("30 1 * * *", ny);
    assert_eq!(
        show(s.prev(at("2026-11-01T06:45:00Z"))),
        "2026-11-01T06:30:00Z"
    );
    assert_eq!(
        show(s.prev(at("2026-11-01T06:15:00Z"))),
        "2026-11-01T05:30:00Z"
    );
}

#[test]
fn zones_east_of_utc_and_off_the_hour() {
    // Kolkata is UTC+05:30 all year.
    assert_eq!(
        times("0 9 * * *", "Asia/Kolkata", "2026-06-01T00:00:00Z", 2),
        ["2026-06-01T03:30:00Z", "2026-06-02T03:30:00Z"]
    );
    assert_eq!(
        times("15 0 1 * *", "Asia/Kolkata", "2026-06-01T00:00:00Z", 1),
        ["2026-06-30T18:45:00Z"]
    );
    // Paris: 09:00 is 08:00 UTC in winter, 07:00 in summer; 2026-03-29
    // skips 02:00-03:00.
    let paris = "Europe/Paris";
    assert_eq!(
        times("0 9 * * *", paris, "2026-03-28T00:00:00Z", 2),
        ["2026-03-28T08:00:00Z", "2026-03-29T07:00:00Z"]
    );
    assert_eq!(
        times("30 2 * * *", paris, "2026-03-28T00:00:00Z", 2),
        ["2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z"]
    );
}

#[test]
fn a_zone_prefix_sets_the_zone() {
    let s = Schedule::parse("CRON_TZ=Asia/Kolkata 0 9 * * *").unwrap();
    assert_eq!(s.zone().name(), "Asia/Kolkata");
    assert_eq!(
        show(s.next(at("2026-06-01T00:00:00Z"))),
        "2026-06-01T03:30:00Z"
    );
}

#[test]
fn bad_schedules_say_why_in_robfigs_words() {
    for (spec, says) in [
        ("", "empty spec string"),
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("60 * * * *", "end of range (60) above maximum (59): 60"),
        ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
        (
            "*/0 * * * *",
            "step of range should be a positive number: */0",
        ),
        (
            "5-1 * * * *",
            "beginning of range (5) beyond end of range (1): 5-1",
        ),
        (
            "x * * * *",
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
        ),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("1/2/3 * * * *", "too many slashes: 1/2/3"),
        ("0/-1 * * * *", "negative number (-1) not allowed: -1"),
        ("@often", "unrecognized descriptor: @often"),
        (
            "@every 1d",
            "failed to parse duration @every 1d: time: unknown unit \"d\" in duration \"1d\"",
        ),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        (
            "TZ=Mars/Olympus * * * * *",
            "provided bad location Mars/Olympus: unknown time zone Mars/Olympus",
        ),
    ] {
        let err = Schedule::parse(spec).unwrap_err().to_string();
        assert_eq!(err, says, "{spec:?}");
    }
}
