//! The schedule text as robfig/cron v3's `ParseStandard` reads it (its
//! `Parser.Parse`, `normalizeFields`, `getField`, `getRange`,
//! `parseDescriptor`), with its error messages word for word, since the
//! API server returns them to `kubectl`.

use super::zone::TimeZone;
use super::{CronError, Fields, Kind, Schedule};

/// Set in a field's bits when it was `*` or `?` (robfig's `starBit`):
/// a day field so marked makes the two day fields both have to match.
pub(super) const STAR: u64 = 1 << 63;

struct Bounds {
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

pub(super) fn parse(spec: &str) -> Result<Schedule, CronError> {
    if spec.is_empty() {
        return Err(CronError::new("empty spec string"));
    }
    let (zone, spec) = zone_prefix(spec)?;
    if spec.starts_with('@') {
        return descriptor(spec).map(|kind| Schedule { kind, zone });
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(CronError::new(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        )));
    }
    Ok(Schedule {
        kind: Kind::Fields(Fields {
            minute: field(fields[0], &MINUTES)?,
            hour: field(fields[1], &HOURS)?,
            dom: field(fields[2], &DOM)?,
            month: field(fields[3], &MONTHS)?,
            dow: field(fields[4], &DOW)?,
        }),
        zone,
    })
}

/// A leading `TZ=<zone> ` or `CRON_TZ=<zone> `, and the rest of the text.
fn zone_prefix(spec: &str) -> Result<(TimeZone, &str), CronError> {
    if !(spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=")) {
        return Ok((TimeZone::utc(), spec));
    }
    let eq = spec.find('=').unwrap_or_default();
    // robfig slices up to the first space; with none, Go would panic.
    let Some(space) = spec.find(' ') else {
        return Err(CronError::new("expected exactly 5 fields, found 0: []"));
    };
    let name = spec.get(eq + 1..space).unwrap_or_default();
    let zone = TimeZone::load(name)
        .map_err(|e| CronError::new(format!("provided bad location {name}: {e}")))?;
    Ok((zone, spec[space..].trim()))
}

fn descriptor(spec: &str) -> Result<Kind, CronError> {
    let all = |b: &Bounds| bits(b.min, b.max, 1) | STAR;
    let once = |b: &Bounds| 1u64 << b.min;
    let fields = |minute, hour, dom, month, dow| {
        Ok(Kind::Fields(Fields {
            minute,
            hour,
            dom,
            month,
            dow,
        }))
    };
    match spec {
        "@yearly" | "@annually" => fields(
            once(&MINUTES),
            once(&HOURS),
            once(&DOM),
            once(&MONTHS),
            all(&DOW),
        ),
        "@monthly" => fields(
            once(&MINUTES),
            once(&HOURS),
            once(&DOM),
            all(&MONTHS),
            all(&DOW),
        ),
        "@weekly" => fields(
            once(&MINUTES),
            once(&HOURS),
            all(&DOM),
            all(&MONTHS),
            once(&DOW),
        ),
        "@daily" | "@midnight" => fields(
            once(&MINUTES),
            once(&HOURS),
            all(&DOM),
            all(&MONTHS),
            all(&DOW),
        ),
        "@hourly" => fields(
            once(&MINUTES),
            all(&HOURS),
            all(&DOM),
            all(&MONTHS),
            all(&DOW),
        ),
        _ => match spec.strip_prefix("@every ") {
            Some(text) => {
                let nanos = super::duration::parse(text)
                    .map_err(|e| CronError::new(format!("failed to parse duration {spec}: {e}")))?;
                // robfig's `Every`: at least a second, whole seconds.
                Ok(Kind::Every((nanos / 1_000_000_000).max(1)))
            }
            None => Err(CronError::new(format!("unrecognized descriptor: {spec}"))),
        },
    }
}

/// A comma-separated list of ranges; empty items are skipped, as Go's
/// `strings.FieldsFunc` skips them.
fn field(text: &str, b: &Bounds) -> Result<u64, CronError> {
    text.split(',')
        .filter(|r| !r.is_empty())
        .try_fold(0, |acc, r| Ok(acc | range(r, b)?))
}

/// `number | number "-" number [ "/" number ]`, `*` or `?`, or a name.
fn range(expr: &str, b: &Bounds) -> Result<u64, CronError> {
    let parts: Vec<&str> = expr.split('/').collect();
    let ends: Vec<&str> = parts[0].split('-').collect();
    let single = ends.len() == 1;
    let (start, mut end, mut extra) = if ends[0] == "*" || ends[0] == "?" {
        (b.min, b.max, STAR)
    } else {
        let start = int_or_name(ends[0], b)?;
        let end = match ends.len() {
            1 => start,
            2 => int_or_name(ends[1], b)?,
            _ => return Err(CronError::new(format!("too many hyphens: {expr}"))),
        };
        (start, end, 0)
    };
    let step = match parts.len() {
        1 => 1,
        2 => {
            let step = int(parts[1])?;
            // `N/step` runs from N to the end of the field.
            if single {
                end = b.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(CronError::new(format!("too many slashes: {expr}"))),
    };
    if start < b.min {
        return Err(CronError::new(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        )));
    }
    if end > b.max {
        return Err(CronError::new(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
        )));
    }
    if start > end {
        return Err(CronError::new(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        )));
    }
    if step == 0 {
        return Err(CronError::new(format!(
            "step of range should be a positive number: {expr}"
        )));
    }
    Ok(bits(start, end, step) | extra)
}

fn int_or_name(expr: &str, b: &Bounds) -> Result<u32, CronError> {
    let lower = expr.to_ascii_lowercase();
    match b.names.iter().position(|n| *n == lower) {
        Some(i) => Ok(i as u32 + b.min),
        None => int(expr),
    }
}

/// Go's `strconv.Atoi`, then robfig's refusal of negatives. Values past
/// `u32` are out of every field's range anyway, so they saturate.
fn int(expr: &str) -> Result<u32, CronError> {
    let n: i64 = expr.parse().map_err(|e: std::num::ParseIntError| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        CronError::new(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: {why}"
        ))
    })?;
    if n < 0 {
        return Err(CronError::new(format!(
            "negative number ({n}) not allowed: {expr}"
        )));
    }
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

/// The values `min..=max` every `step`.
fn bits(min: u32, max: u32, step: u32) -> u64 {
    (min..=max)
        .step_by(step as usize)
        .fold(0, |acc, v| acc | 1 << v)
}
