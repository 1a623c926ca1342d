//! Go durations (`time.ParseDuration`), as the settings are written:
//! `50s`, `1m`, `1m30s`, `500ms`.

use std::time::Duration;

/// Parses a Go duration: a sequence of decimal numbers, each with an
/// optional fraction and a unit (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`),
/// e.g. `1h2m3.5s`; a bare `0` is zero. Negative durations are refused.
pub(crate) fn parse(text: &str) -> Option<Duration> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        let ms = Duration::from_millis;
        for (text, want) in [
            ("50s", Some(ms(50_000))),
            ("1m", Some(ms(60_000))),
            ("1m30s", Some(ms(90_000))),
            ("500ms", Some(ms(500))),
            ("1.5s", Some(ms(1_500))),
            ("0", Some(Duration::ZERO)),
            ("", None),
            ("30", None),
            ("-5s", None),
            ("5x", None),
        ] {
            assert_eq!(parse(text), want, "{text:?}");
        }
    }
}
