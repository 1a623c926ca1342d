//! Durations and sizes on the command line as Kubernetes writes them:
//! `10s`, `1m30s`, `500ms` (Go's `time.ParseDuration`, which every
//! Kubernetes component's flags use) and `64Mi`, `1G`, `512` (resource
//! quantities, in bytes).

use std::time::Duration;

use windlass_selector::Quantity;

/// A Go duration: one or more decimal numbers, each with a unit (`ns`,
/// `us` or `µs`, `ms`, `s`, `m`, `h`), such as `10s`, `1.5m` or `1h30m`;
/// `0` alone needs no unit. Negative durations are refused.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let invalid = || {
        format!("{text:?} is not a duration: write a number and a unit, such as 10s, 500ms, 1m30s")
    };
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.is_empty() || text.starts_with('-') {
        return Err(invalid());
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    let mut total = 0.0_f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        if number.is_empty() || number == "." {
            return Err(invalid());
        }
        let value: f64 = number.parse().map_err(|_| invalid())?;
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let seconds = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => return Err(format!("{text:?} is missing a unit (such as s, ms or m)")),
            other => {
                return Err(format!(
                    "{text:?} has an unknown unit {other:?}: use ns, us, ms, s, m or h"
                ));
            }
        };
        total += value * seconds;
        rest = after;
    }
    Duration::try_from_secs_f64(total).map_err(|_| invalid())
}

/// A Kubernetes quantity of bytes, read as the API server reads one
/// (`windlass_selector::Quantity`): a number with an optional binary (`Ki`,
/// `Mi`, `Gi`, `Ti`, `Pi`, `Ei`) or decimal (`k`, `M`, `G`, `T`, `P`, `E`)
/// suffix, or a decimal exponent (`1e6`). A fraction of a byte is rounded
/// up, as the API server's `Value` rounds it.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    // The API server reads a bare suffix (`Mi`) as zero; on a command line
    // that is a slip, not a size.
    if !text.bytes().any(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{text:?} is not a quantity of bytes: write a number with an optional suffix, such as 64Mi, 1Gi or 500M"
        ));
    }
    let quantity = Quantity::parse(text).map_err(|e| {
        format!("{text:?} is not a quantity of bytes, such as 64Mi, 1Gi or 500M: {e}")
    })?;
    if quantity.is_negative() {
        return Err(format!("{text:?} is negative: a size must be 0 or more"));
    }
    u64::try_from(quantity.value()).map_err(|_| format!("{text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_go_reads_them() {
        let ms = Duration::from_millis;
        for (text, want) in [
            ("0", Duration::ZERO),
            ("10s", ms(10_000)),
            ("500ms", ms(500)),
            ("1m30s", ms(90_000)),
            ("1.5m", ms(90_000)),
            ("2h", ms(7_200_000)),
            ("1h0m1s", ms(3_601_000)),
            ("250us", Duration::from_micros(250)),
            ("250µs", Duration::from_micros(250)),
            ("15ns", Duration::from_nanos(15)),
            (".5s", ms(500)),
        ] {
            assert_eq!(parse_duration(text), Ok(want), "{text}");
        }
        for bad in ["", "10", "-1s", "1x", "s", "1.s.", "1d", "ms10"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(parse_duration("10").unwrap_err().contains("missing a unit"));
        assert!(
            parse_duration("1d")
                .unwrap_err()
                .contains("unknown unit \"d\"")
        );
    }

    #[test]
    fn quantities_read_as_kubernetes_reads_them() {
        for (text, want) in [
            ("64Mi", 64 << 20),
            ("1Gi", 1 << 30),
            ("512", 512),
            ("1k", 1000),
            ("500M", 500_000_000),
            ("1.5Ki", 1536),
            ("1e3", 1000),
            ("0.5", 1),
        ] {
            assert_eq!(parse_bytes(text), Ok(want), "{text}");
        }
        for bad in ["", "Mi", "64MB", "-1", "1ki", "64 Mi"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
        assert!(
            parse_bytes("64MB")
                .unwrap_err()
                .contains("\"64MB\" is not a quantity of bytes")
        );
        assert!(parse_bytes("-1").unwrap_err().contains("negative"));
    }
}
