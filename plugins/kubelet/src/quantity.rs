//! Kubernetes resource quantities (`500m`, `32Gi`, `1.5`, `1e3`), read as
//! exact numbers so that two spellings of one amount compare equal (the API
//! server may store `1000m` as `1`) and QoS classes can add requests up.

/// An amount in billionths of the unit (`1` is 10⁹, `1m` is 10⁶, `1Ki`
/// is 1024·10⁹), exact for every quantity Kubernetes accepts in practice.
pub(crate) type Nanos = i128;

/// Parses a quantity: an optionally signed decimal number and a suffix
/// (binary `Ki`…`Ei`, decimal `n u m k M G T P E`, or an exponent `e3`).
/// `None` if it is not one.
pub(crate) fn parse(text: &str) -> Option<Nanos> {
    let (negative, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let number_len = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b'.')
        .count();
    let (number, suffix) = body.split_at(number_len);
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && frac.is_empty() || frac.contains('.') {
        return None;
    }
    let mut mantissa: i128 = 0;
    for b in whole.bytes().chain(frac.bytes()) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(i128::from(b - b'0'))?;
    }
    // The value is mantissa · 10^(exp10 - frac digits) · 2^exp2.
    let (exp10, exp2): (i32, u32) = match suffix {
        "" => (0, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        s if s.starts_with(['e', 'E']) => {
            let e: i32 = s[1..].parse().ok()?;
            if !(-30..=30).contains(&e) {
                return None;
            }
            (e, 0)
        }
        _ => return None,
    };
    let scale = 9 + exp10 - i32::try_from(frac.len()).ok()?;
    let mut value = mantissa.checked_mul(1i128.checked_shl(exp2)?)?;
    if scale >= 0 {
        value = value.checked_mul(10i128.checked_pow(scale.unsigned_abs())?)?;
    } else {
        // Below a billionth nothing Kubernetes schedules on is left.
        value /= 10i128.checked_pow(scale.unsigned_abs())?;
    }
    Some(if negative { -value } else { value })
}

/// Whether two quantities are the same amount (or, when either does not
/// parse, the same text).
pub(crate) fn same(a: &str, b: &str) -> bool {
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: i128 = 1_000_000_000;

    #[test]
    fn reads_every_suffix() {
        for (text, want) in [
            ("1", Some(G)),
            ("500m", Some(G / 2)),
            ("0.5", Some(G / 2)),
            ("1.5", Some(3 * G / 2)),
            ("2k", Some(2_000 * G)),
            ("1Ki", Some(1024 * G)),
            ("32Gi", Some(32 * (1 << 30) * G)),
            ("1.5Gi", Some(3 * (1 << 29) * G)),
            ("1e3", Some(1_000 * G)),
            ("100n", Some(100)),
            ("-1", Some(-G)),
            ("110", Some(110 * G)),
            ("", None),
            ("Gi", None),
            ("1.2.3", None),
            ("12Q", None),
            ("1 Gi", None),
        ] {
            assert_eq!(parse(text), want, "{text:?}");
        }
    }

    #[test]
    fn compares_amounts_not_spellings() {
        assert!(same("1000m", "1"));
        assert!(same("1024Mi", "1Gi"));
        assert!(!same("1G", "1Gi"));
        assert!(same("odd", "odd"));
        assert!(!same("odd", "1"));
    }
}
