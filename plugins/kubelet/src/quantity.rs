//! Kubernetes resource quantities (`500m`, `32Gi`, `1.5`, `1e3`), read by
//! the API server's own parser (`windlass_selector::Quantity`) as exact
//! numbers, so that two spellings of one amount compare equal (the API
//! server may store `1000m` as `1`) and QoS classes can add requests up.

use windlass_selector::Quantity;

/// An amount in billionths of the unit (`1` is 10⁹, `1m` is 10⁶, `1Ki`
/// is 1024·10⁹), as Kubernetes keeps it.
pub(crate) type Nanos = i128;

/// Parses a quantity as the API server does; `None` if it is not one.
pub(crate) fn parse(text: &str) -> Option<Nanos> {
    Quantity::parse(text).ok().map(|q| q.nanos())
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
            // No digits read as 0, as Go's parser reads them.
            ("Gi", Some(0)),
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
