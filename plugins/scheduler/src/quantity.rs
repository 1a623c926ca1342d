//! Kubernetes resource quantities (`100m`, `1.5`, `2Gi`, `5G`, `1e3`),
//! parsed by the API server's own parser (`windlass_selector::Quantity`,
//! exact to the nano-unit) and rounded up the way `Quantity.Value()` /
//! `MilliValue()` do, saturating at the bounds of `i64`.

use windlass_selector::Quantity;

/// The quantity in whole units, rounded up (`Quantity.Value()`), e.g.
/// bytes of memory. `None` if `text` is not a quantity.
pub(crate) fn value(text: &str) -> Option<i64> {
    scaled(text, 1_000_000_000)
}

/// The quantity in thousandths, rounded up (`Quantity.MilliValue()`), e.g.
/// millicores of CPU. `None` if `text` is not a quantity.
pub(crate) fn milli_value(text: &str) -> Option<i64> {
    scaled(text, 1_000_000)
}

/// The quantity in units of `nanos_per_unit` nano-units, rounded towards
/// +∞ as Go's `ScaledValue` rounds.
fn scaled(text: &str, nanos_per_unit: i128) -> Option<i64> {
    let nanos = Quantity::parse(text.trim()).ok()?.nanos();
    let mut units = nanos / nanos_per_unit;
    if nanos % nanos_per_unit > 0 {
        units += 1;
    }
    Some(i64::try_from(units).unwrap_or(if units < 0 { i64::MIN } else { i64::MAX }))
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
            // No digits read as 0, as Go's parser reads them.
            ("m", 0, 0),
            ("Gi", 0, 0),
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
        for text in ["", "abc", "1x", "1Gb", "1.2.3", "1e", "--1", "1 Gi"] {
            assert_eq!(value(text), None, "{text:?}");
        }
    }
}
