//! Kubernetes resource quantities (`100m`, `1.5`, `2Gi`, `5G`, `1e3`), parsed
//! exactly and rounded up the way `Quantity.Value()` / `MilliValue()` do.
//!
//! A quantity is a decimal number with an optional suffix: a binary SI one
//! (`Ki` … `Ei`, powers of 1024), a decimal SI one (`n`, `u`, `m`, `k`, `M`
//! … `E`) or a decimal exponent (`e3`, `E-2`). The value is computed with
//! integers only (no float rounding): mantissa × 10^a × 2^b, then divided
//! and rounded up, saturating at the bounds of `i64`.

/// The quantity in whole units, rounded up (`Quantity.Value()`), e.g.
/// bytes of memory. `None` if `text` is not a quantity.
pub(crate) fn value(text: &str) -> Option<i64> {
    scaled(text, 0)
}

/// The quantity in thousandths, rounded up (`Quantity.MilliValue()`), e.g.
/// millicores of CPU. `None` if `text` is not a quantity.
pub(crate) fn milli_value(text: &str) -> Option<i64> {
    scaled(text, 3)
}

/// The quantity × 10^`scale`, rounded up (towards +∞).
fn scaled(text: &str, scale: i32) -> Option<i64> {
    let b = text.trim().as_bytes();
    let (negative, b) = match b.first()? {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    // The digits, with the position of the decimal point.
    let mut mantissa: i128 = 0;
    let mut digits = 0usize;
    let mut fraction_digits = 0i32;
    let mut seen_point = false;
    let mut i = 0;
    // Digits past what an i128 holds cannot change a result that saturates
    // at i64 anyway; they only shift the exponent.
    let mut dropped = 0i32;
    while i < b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                digits += 1;
                if mantissa < 10i128.pow(30) {
                    mantissa = mantissa * 10 + i128::from(c - b'0');
                    if seen_point {
                        fraction_digits += 1;
                    }
                } else if !seen_point {
                    dropped += 1;
                }
            }
            b'.' if !seen_point => seen_point = true,
            _ => break,
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    let (pow10, pow2) = suffix(&b[i..])?;
    let exp10 = pow10 + dropped - fraction_digits + scale;
    let mut numerator = mantissa;
    let mut denominator: i128 = 1;
    if exp10 >= 0 {
        numerator = mul_pow(numerator, 10, exp10)?;
    } else {
        denominator = 10i128.checked_pow((-exp10) as u32).unwrap_or(i128::MAX);
    }
    numerator = mul_pow(numerator, 2, pow2)?;
    let magnitude = if negative {
        // Rounding up a negative number truncates its magnitude.
        -(numerator / denominator)
    } else {
        numerator / denominator + i128::from(numerator % denominator != 0)
    };
    Some(magnitude.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
}

/// `n × base^exp`, saturating at a value far beyond `i64`; `None` for an
/// exponent no quantity can have.
fn mul_pow(n: i128, base: i128, exp: i32) -> Option<i128> {
    if n == 0 {
        return Some(0);
    }
    if exp > 80 {
        return Some(i128::MAX / 2);
    }
    Some(
        base.checked_pow(exp as u32)
            .and_then(|p| n.checked_mul(p))
            .unwrap_or(i128::MAX / 2),
    )
}

/// The powers of ten and of two a suffix stands for.
fn suffix(s: &[u8]) -> Option<(i32, i32)> {
    Some(match s {
        b"" => (0, 0),
        b"n" => (-9, 0),
        b"u" => (-6, 0),
        b"m" => (-3, 0),
        b"k" => (3, 0),
        b"M" => (6, 0),
        b"G" => (9, 0),
        b"T" => (12, 0),
        b"P" => (15, 0),
        b"E" => (18, 0),
        b"Ki" => (0, 10),
        b"Mi" => (0, 20),
        b"Gi" => (0, 30),
        b"Ti" => (0, 40),
        b"Pi" => (0, 50),
        b"Ei" => (0, 60),
        [b'e' | b'E', rest @ ..] => {
            let text = std::str::from_utf8(rest).ok()?;
            let n: i32 = text.parse().ok()?;
            if !(-100..=100).contains(&n) {
                return None;
            }
            (n, 0)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_up_like_kubernetes() {
        // (text, Value(), MilliValue())
        let table: &[(&str, i64, i64)] = &[
            ("0", 0, 0),
            ("1", 1, 1000),
            ("100m", 1, 100),
            ("1.5", 2, 1500),
            ("0.5", 1, 500),
            ("2Gi", 2 << 30, (2i64 << 30) * 1000),
            ("5G", 5_000_000_000, 5_000_000_000_000),
            ("1e3", 1000, 1_000_000),
            ("1E3", 1000, 1_000_000),
            ("1.5e-3", 1, 2),
            ("128974848", 128_974_848, 128_974_848_000),
            ("129e6", 129_000_000, 129_000_000_000),
            ("123Mi", 123 << 20, (123i64 << 20) * 1000),
            ("1Ki", 1024, 1_024_000),
            ("250m", 1, 250),
            ("1m", 1, 1),
            ("0.1m", 1, 1),
            ("500u", 1, 1),
            ("1n", 1, 1),
            ("+3", 3, 3000),
            (".5", 1, 500),
            ("5.", 5, 5000),
            ("12k", 12_000, 12_000_000),
            ("1Ei", 1 << 60, i64::MAX),
            ("10E", i64::MAX, i64::MAX),
        ];
        for &(text, v, m) in table {
            assert_eq!(value(text), Some(v), "Value({text})");
            assert_eq!(milli_value(text), Some(m), "MilliValue({text})");
        }
    }

    #[test]
    fn negative_quantities_round_towards_positive() {
        assert_eq!(value("-1.5"), Some(-1));
        assert_eq!(milli_value("-100m"), Some(-100));
    }

    #[test]
    fn rejects_what_is_not_a_quantity() {
        for text in ["", "abc", "1x", "1Gb", "m", "1.2.3", "1e", "--1", "1 Gi"] {
            assert_eq!(value(text), None, "{text:?}");
        }
    }
}
