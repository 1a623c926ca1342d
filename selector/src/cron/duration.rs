//! Go's `time.ParseDuration`, for `@every <duration>` schedules: signed
//! decimal numbers with units `ns`, `us` (`µs`), `ms`, `s`, `m`, `h`, as in
//! `1h30m` or `1.5h`, with Go's error messages.

const UNITS: [(&str, u64); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("\u{b5}s", 1_000),
    ("\u{3bc}s", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// The duration `text` in nanoseconds.
pub(super) fn parse(text: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {text:?}");
    let (neg, mut s) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !s.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let whole: u64 = if digits == 0 {
            0
        } else {
            s[..digits].parse().map_err(|_| invalid())?
        };
        s = &s[digits..];
        let (mut frac, mut scale, mut frac_digits) = (0u64, 1f64, 0);
        if let Some(rest) = s.strip_prefix('.') {
            frac_digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            for d in rest[..frac_digits].bytes() {
                // Digits past what 63 bits hold are dropped, as Go drops them.
                if let Some(f) = frac
                    .checked_mul(10)
                    .and_then(|f| f.checked_add(u64::from(d - b'0')))
                    .filter(|f| *f <= 1 << 63)
                {
                    frac = f;
                    scale *= 10.0;
                }
            }
            s = &rest[frac_digits..];
        }
        if digits == 0 && frac_digits == 0 {
            return Err(invalid());
        }
        let unit_len = s.len()
            - s.trim_start_matches(|c: char| c != '.' && !c.is_ascii_digit())
                .len();
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {text:?}"));
        }
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        let Some(&(_, per)) = UNITS.iter().find(|(u, _)| *u == unit) else {
            return Err(format!("time: unknown unit {unit:?} in duration {text:?}"));
        };
        let mut v = whole.checked_mul(per).ok_or_else(invalid)?;
        if frac > 0 {
            v += (frac as f64 * (per as f64 / scale)) as u64;
        }
        total = total
            .checked_add(v)
            .filter(|t| *t <= 1 << 63)
            .ok_or_else(invalid)?;
    }
    if neg {
        return Ok((total as i128).wrapping_neg() as i64);
    }
    i64::try_from(total).map_err(|_| invalid())
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn durations_read_as_go_reads_them() {
        let s = 1_000_000_000;
        assert_eq!(parse("1h30m"), Ok(5400 * s));
        assert_eq!(parse("1.5h"), Ok(5400 * s));
        assert_eq!(parse("-2m"), Ok(-120 * s));
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse("300ms"), Ok(300_000_000));
        assert_eq!(parse("1\u{b5}s"), Ok(1000));
        assert_eq!(parse("x"), Err("time: invalid duration \"x\"".into()));
        assert_eq!(
            parse("1"),
            Err("time: missing unit in duration \"1\"".into())
        );
        assert_eq!(
            parse("1d"),
            Err("time: unknown unit \"d\" in duration \"1d\"".into())
        );
    }
}
