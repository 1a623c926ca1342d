//! Go durations (`time.ParseDuration`), as Kubernetes writes them in
//! annotations, settings and messages: `30s`, `1m30s`, `500ms`.

use std::time::Duration;

/// Parses a Go duration (`time.ParseDuration`): a sequence of decimal
/// numbers, each with an optional fraction and a unit (`ns`, `us`, `µs`,
/// `ms`, `s`, `m`, `h`), e.g. `1h2m3.5s`; a bare `0` is zero. Negative
/// durations are refused.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(windlass_sdk::duration::parse("1m30s"), Some(Duration::from_secs(90)));
/// assert_eq!(windlass_sdk::duration::parse("-1s"), None);
/// ```
pub fn parse(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    rest = rest.strip_prefix('+').unwrap_or(rest);
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    if rest.is_empty() {
        return None;
    }
    let mut nanos: u128 = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let whole: u128 = if digits == 0 {
            0
        } else {
            rest[..digits].parse().ok()?
        };
        rest = &rest[digits..];
        let (mut frac, mut scale) = (0u128, 1u128);
        if let Some(after) = rest.strip_prefix('.') {
            let n = after.bytes().take_while(u8::is_ascii_digit).count();
            // Past nanosecond precision the digits cannot matter.
            for b in after[..n].bytes().take(18) {
                frac = frac * 10 + u128::from(b - b'0');
                scale *= 10;
            }
            if digits == 0 && n == 0 {
                return None;
            }
            rest = &after[n..];
        } else if digits == 0 {
            return None;
        }
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(rest.len(), |(i, _)| i);
        let unit: u128 = match &rest[..unit_len] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        rest = &rest[unit_len..];
        nanos = nanos
            .checked_add(whole.checked_mul(unit)?)?
            .checked_add(frac * unit / scale)?;
    }
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    Some(Duration::new(secs, (nanos % 1_000_000_000) as u32))
}

/// A whole number of seconds as Go prints a `time.Duration`: `10s`,
/// `1m20s`, `5m0s`, `1h0m0s`.
pub fn format_secs(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m{s}s"),
        _ => format!("{h}h{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        let ms = Duration::from_millis;
        for (text, want) in [
            ("30s", Some(ms(30_000))),
            ("1m30s", Some(ms(90_000))),
            ("500ms", Some(ms(500))),
            ("1.5s", Some(ms(1_500))),
            (".5s", Some(ms(500))),
            ("2h45m", Some(ms(9_900_000))),
            ("0", Some(Duration::ZERO)),
            ("0s", Some(Duration::ZERO)),
            ("+10s", Some(ms(10_000))),
            ("1500us", Some(Duration::from_micros(1500))),
            ("", None),
            ("30", None),
            ("-5s", None),
            ("5x", None),
            ("s", None),
            (".s", None),
            ("1.s", Some(ms(1_000))),
        ] {
            assert_eq!(parse(text), want, "{text:?}");
        }
    }

    #[test]
    fn prints_like_go() {
        for (secs, want) in [
            (0, "0s"),
            (10, "10s"),
            (80, "1m20s"),
            (160, "2m40s"),
            (300, "5m0s"),
            (3600, "1h0m0s"),
        ] {
            assert_eq!(format_secs(secs), want);
        }
    }
}
