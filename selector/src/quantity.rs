//! Kubernetes resource quantities (`100m`, `1.5`, `2Gi`, `5G`, `1e3`): parsed
//! the way the API server parses them, compared and added exactly, and printed
//! in the canonical form the API server stores and reports (`1500m`, `1`, `2Gi`).
//!
//! A quantity is held as a whole number of nano-units (`i128`), which is
//! exactly the precision Kubernetes keeps: anything finer is rounded up, away
//! from zero, as the API server rounds it. The suffix family it was written
//! with (decimal SI, binary SI or a decimal exponent) is kept too, because it
//! decides how the canonical form is printed (`1024Mi` prints as `1Gi`,
//! `1073741824` stays a plain number).

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

/// Nano-units per unit.
const NANO: i128 = 1_000_000_000;

/// The largest magnitude accepted, in nano-units (about 1.7e23 units): it
/// leaves room to add many of them and to print any of them.
const MAX_NANOS: i128 = i128::MAX / 1_000_000;

/// The digits a quantity's number may carry, beyond which it is refused
/// rather than silently rounded (the API server keeps 10^-9 precision, and
/// nothing realistic needs this many digits).
const MAX_DIGITS: usize = 64;

/// How a quantity is written, which decides how its canonical form is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// No suffix or one of `n u m k M G T P E`.
    DecimalSI,
    /// One of `Ki Mi Gi Ti Pi Ei`.
    BinarySI,
    /// `e<n>` or `E<n>` (`1e3`).
    DecimalExponent,
}

/// Why a quantity string was refused, in the API server's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Not a number followed by a suffix.
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    /// A suffix that is none of the known ones.
    #[error("unable to parse quantity's suffix")]
    Suffix,
    /// Beyond what this server represents (about 10^23 units, 64 digits).
    #[error("quantity {0:?} is too large or too long (at most about 10^23, and 64 digits)")]
    TooLarge(String),
}

/// A Kubernetes resource quantity.
///
/// Equality, ordering and hashing compare values only: `1Gi`, `1024Mi` and
/// `1073741824` are equal. [`Display`](fmt::Display) prints the canonical form.
///
/// ```
/// use windlass_selector::Quantity;
/// let a: Quantity = "1".parse().unwrap();
/// let b: Quantity = "500m".parse().unwrap();
/// assert_eq!((a + b).to_string(), "1500m");
/// assert_eq!("1024Mi".parse::<Quantity>().unwrap().to_string(), "1Gi");
/// assert!("5G".parse::<Quantity>().unwrap() > "1024Mi".parse().unwrap());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

impl Quantity {
    /// Zero, as the API server writes it (`0`).
    pub const ZERO: Quantity = Quantity {
        nanos: 0,
        format: Format::DecimalSI,
    };

    /// `units` whole units in decimal SI (`3` prints as `3`).
    pub fn from_units(units: i64) -> Self {
        Self {
            nanos: i128::from(units) * NANO,
            format: Format::DecimalSI,
        }
    }

    /// Parses a quantity exactly as the API server does (see the module docs).
    pub fn parse(s: &str) -> Result<Self, QuantityError> {
        parse(s)
    }

    /// The suffix family the quantity was written with.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// The value in nano-units.
    pub fn nanos(&self) -> i128 {
        self.nanos
    }

    /// The value in milli-units, rounded up (away from zero), as the API
    /// server's `MilliValue` gives it.
    pub fn milli_value(&self) -> i128 {
        ceil_div(self.nanos, 1_000_000)
    }

    /// The value in whole units, rounded up (away from zero), as `Value`.
    pub fn value(&self) -> i128 {
        ceil_div(self.nanos, NANO)
    }

    /// The quantity rounded up to whole units, keeping its format.
    pub fn round_up_to_units(&self) -> Self {
        Self {
            nanos: self.value() * NANO,
            format: self.format,
        }
    }

    /// Adds `other` as the API server's `Quantity.Add` does: the sum keeps
    /// this quantity's format, unless this one is zero (then it takes
    /// `other`'s).
    pub fn add(&mut self, other: &Quantity) {
        if self.nanos == 0 {
            self.format = other.format;
        }
        self.nanos = clamp(self.nanos.saturating_add(other.nanos));
    }

    /// Subtracts `other`, with the same format rule as [`Quantity::add`].
    pub fn sub(&mut self, other: &Quantity) {
        if self.nanos == 0 {
            self.format = other.format;
        }
        self.nanos = clamp(self.nanos.saturating_sub(other.nanos));
    }
}

impl Default for Quantity {
    fn default() -> Self {
        Self::ZERO
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl Hash for Quantity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.nanos.hash(state);
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl std::ops::Add for Quantity {
    type Output = Quantity;
    fn add(mut self, rhs: Quantity) -> Quantity {
        Quantity::add(&mut self, &rhs);
        self
    }
}

impl std::ops::Sub for Quantity {
    type Output = Quantity;
    fn sub(mut self, rhs: Quantity) -> Quantity {
        Quantity::sub(&mut self, &rhs);
        self
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s)
    }
}

impl fmt::Display for Quantity {
    /// The canonical form: the API server's `Quantity.String()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        let mut format = self.format;
        if format == Format::BinarySI && (self.nanos.abs() < 1024 * NANO || self.nanos % NANO != 0)
        {
            // Small or fractional binary values print in decimal, as upstream:
            // that avoids both rounding and `0.5Ki`-style surprises.
            format = Format::DecimalSI;
        }
        if format == Format::BinarySI {
            let mut units = self.nanos / NANO;
            let mut exponent = 0;
            while exponent < BINARY_SUFFIXES.len() && units % 1024 == 0 {
                units /= 1024;
                exponent += 1;
            }
            let suffix = match exponent {
                0 => "",
                e => BINARY_SUFFIXES[e - 1],
            };
            return write!(f, "{units}{suffix}");
        }
        // A mantissa without trailing zeros, then an exponent lowered to a
        // multiple of three (so the mantissa stays a whole number).
        let mut mantissa = self.nanos;
        let mut exponent: i32 = -9;
        while mantissa % 10 == 0 {
            mantissa /= 10;
            exponent += 1;
        }
        let lower = exponent.rem_euclid(3);
        mantissa *= 10i128.pow(lower as u32);
        exponent -= lower;
        match format {
            Format::DecimalExponent if exponent == 0 => write!(f, "{mantissa}"),
            Format::DecimalExponent => write!(f, "{mantissa}e{exponent}"),
            _ => {
                // Past `E` there is no suffix: print the rest of the
                // exponent into the mantissa.
                if exponent > 18 {
                    mantissa *= 10i128.pow((exponent - 18) as u32);
                    exponent = 18;
                }
                let suffix = match exponent {
                    -9 => "n",
                    -6 => "u",
                    -3 => "m",
                    0 => "",
                    3 => "k",
                    6 => "M",
                    9 => "G",
                    12 => "T",
                    15 => "P",
                    _ => "E",
                };
                write!(f, "{mantissa}{suffix}")
            }
        }
    }
}

const BINARY_SUFFIXES: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// Keeps sums within what parses and prints.
fn clamp(nanos: i128) -> i128 {
    nanos.clamp(-MAX_NANOS, MAX_NANOS)
}

/// `ceil(n / d)` for `d > 0`, rounding away from zero (upstream's `RoundUp`),
/// for one integer type: truncating division, then one step away from zero
/// when there is a remainder.
macro_rules! ceil_div_in {
    ($n:expr, $d:expr) => {{
        let (n, d) = ($n, $d);
        let q = n / d;
        if n % d == 0 {
            q
        } else if n > 0 {
            q + 1
        } else {
            q - 1
        }
    }};
}

/// `ceil(n / d)` for `d > 0`, rounding away from zero (upstream's `RoundUp`).
#[inline]
fn ceil_div(n: i128, d: i128) -> i128 {
    // Most quantities are below 2^63 nano-units (9.2e9 units, 8Gi), where
    // the division is `i64`'s, which a constant divisor makes a
    // multiplication; `i128` division is a library call (LimitRange bounds
    // compare several of these per container on every pod create).
    if let (Ok(n), Ok(d)) = (i64::try_from(n), i64::try_from(d)) {
        return i128::from(ceil_div_in!(n, d));
    }
    ceil_div_in!(n, d)
}

/// What a suffix means: `(base, exponent, format)`.
fn interpret(suffix: &str) -> Option<(u32, i64, Format)> {
    let decimal = |e| Some((10, e, Format::DecimalSI));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        _ => {
            if let Some(i) = BINARY_SUFFIXES.iter().position(|s| *s == suffix) {
                return Some((2, 10 * (i as i64 + 1), Format::BinarySI));
            }
            let rest = suffix.strip_prefix(['e', 'E']).filter(|r| !r.is_empty())?;
            // Go's ParseInt: an optional sign, then digits only.
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Exponents this large only ever mean "too large" or "rounds to
            // 1n"; clamping keeps the arithmetic below in range.
            let e = rest.parse::<i64>().unwrap_or(if rest.starts_with('-') {
                i64::MIN
            } else {
                i64::MAX
            });
            Some((10, e.clamp(-1_000, 1_000), Format::DecimalExponent))
        }
    }
}

/// The parse, following upstream's `ParseQuantity` step by step: a sign,
/// leading zeros, the whole part, the fraction, then the suffix (suffix
/// letters, an optional sign, digits).
fn parse(s: &str) -> Result<Quantity, QuantityError> {
    if s.is_empty() {
        return Err(QuantityError::Format);
    }
    let b = s.as_bytes();
    let mut pos = 0;
    let negative = match b[0] {
        b'-' => {
            pos = 1;
            true
        }
        b'+' => {
            pos = 1;
            false
        }
        _ => false,
    };
    while pos < b.len() && b[pos] == b'0' {
        pos += 1;
    }
    if pos == b.len() {
        // Only a sign and zeros (upstream reads `-` and `+` as zero too).
        return Ok(Quantity::ZERO);
    }
    let whole_start = pos;
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let whole = &s[whole_start..pos];
    let mut fraction = "";
    if pos < b.len() && b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        fraction = &s[start..pos];
    }
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() && matches!(b[pos], b'+' | b'-') {
        pos += 1;
    }
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < b.len() {
        return Err(QuantityError::Format);
    }
    let (base, exponent, format) = interpret(&s[suffix_start..]).ok_or(QuantityError::Suffix)?;
    let sign = |n: i128| Quantity {
        nanos: if negative { -n } else { n },
        format,
    };
    if let Some(n) = small_magnitude(whole, fraction, base, exponent) {
        return Ok(sign(n));
    }

    // The number as digits × 10^scale, without leading or trailing zeros.
    let mut digits: Vec<u8> = whole
        .bytes()
        .chain(fraction.bytes())
        .map(|c| c - b'0')
        .collect();
    let mut scale = -(fraction.len() as i64);
    let leading = digits.iter().take_while(|d| **d == 0).count();
    digits.drain(..leading);
    while digits.last() == Some(&0) {
        digits.pop();
        scale += 1;
    }
    if digits.is_empty() {
        return Ok(Quantity { nanos: 0, format });
    }
    if digits.len() > MAX_DIGITS {
        return Err(QuantityError::TooLarge(s.to_owned()));
    }
    // value = digits × 10^scale × base^exponent, in nano-units.
    let (twos, tens) = if base == 2 {
        (exponent, scale + 9)
    } else {
        (0, scale + exponent + 9)
    };
    for _ in 0..twos {
        double(&mut digits);
    }
    let magnitude = if tens >= 0 {
        if digits.len() as i64 + tens > 40 {
            return Err(QuantityError::TooLarge(s.to_owned()));
        }
        digits.extend(std::iter::repeat_n(0, tens as usize));
        to_i128(&digits)
    } else {
        // Below a nano-unit: drop those digits and round up if any was
        // not zero (away from zero, as upstream).
        let drop = (-tens) as usize;
        let kept = digits.len().saturating_sub(drop);
        let rounded = digits[kept..].iter().any(|d| *d != 0);
        digits.truncate(kept);
        to_i128(&digits).map(|n| n + i128::from(rounded))
    };
    match magnitude {
        Some(n) if n <= MAX_NANOS => Ok(sign(n)),
        _ => Err(QuantityError::TooLarge(s.to_owned())),
    }
}

/// The magnitude in nano-units computed in `u128` arithmetic, for the
/// quantities people write (few digits, ordinary suffixes); `None` when it
/// would overflow, which the exact digit-by-digit path then handles.
fn small_magnitude(whole: &str, fraction: &str, base: u32, exponent: i64) -> Option<i128> {
    if whole.len() + fraction.len() > 30 {
        return None;
    }
    let mantissa = whole
        .bytes()
        .chain(fraction.bytes())
        .fold(0u128, |n, d| n * 10 + u128::from(d - b'0'));
    let scale = -(fraction.len() as i64);
    let (value, tens) = if base == 2 {
        (
            mantissa.checked_mul(1u128.checked_shl(exponent as u32)?)?,
            scale + 9,
        )
    } else {
        (mantissa, scale + exponent + 9)
    };
    let n = if tens >= 0 {
        value.checked_mul(10u128.checked_pow(tens as u32)?)?
    } else {
        let d = 10u128.checked_pow((-tens) as u32)?;
        value / d + u128::from(value % d != 0)
    };
    i128::try_from(n).ok().filter(|n| *n <= MAX_NANOS)
}

/// Doubles a big number held as decimal digits, most significant first.
fn double(digits: &mut Vec<u8>) {
    let mut carry = 0;
    for d in digits.iter_mut().rev() {
        let v = *d * 2 + carry;
        *d = v % 10;
        carry = v / 10;
    }
    if carry > 0 {
        digits.insert(0, carry);
    }
}

/// Decimal digits to a number, `None` past `i128`.
fn to_i128(digits: &[u8]) -> Option<i128> {
    digits
        .iter()
        .try_fold(0i128, |n, d| n.checked_mul(10)?.checked_add(i128::from(*d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn parses_exactly() {
        assert_eq!(q("100m").nanos(), 100_000_000);
        assert_eq!(q("1.5").nanos(), 1_500_000_000);
        assert_eq!(q("0.1"), q("100m"));
        assert_eq!(q("2Gi").nanos(), 2 * (1 << 30) * NANO);
        assert_eq!(q("5G").nanos(), 5_000_000_000 * NANO);
        assert_eq!(q("1e3"), q("1k"));
        assert_eq!(q("1E3"), q("1000"));
        assert_eq!(q("1.5Ki"), q("1536"));
        assert_eq!(q("+2"), q("2"));
        assert_eq!(q("-1.5").nanos(), -1_500_000_000);
        assert_eq!(q(".5"), q("500m"));
        assert_eq!(q("1."), q("1"));
        assert_eq!(q("0.000001"), q("1u"));
        assert_eq!(q("12e-3"), q("12m"));
        assert_eq!(q("007"), q("7"));
    }

    #[test]
    fn finer_than_nano_rounds_up_away_from_zero() {
        assert_eq!(q("0.1n").nanos(), 1);
        assert_eq!(q("1.0000000001").nanos(), NANO + 1);
        assert_eq!(q("-0.1n").nanos(), -1);
        assert_eq!(q("1e-30").nanos(), 1);
        assert_eq!(q("0.1Ki").nanos(), 102_400_000_000);
    }

    #[test]
    fn zero_in_every_spelling() {
        // Upstream's parser reads a bare sign, a bare dot and a bare
        // exponent (`e3`) as zero too.
        for z in ["0", "0.0", "-0", "+", "-", ".", "e3", "0Ki", "0e9", "000m"] {
            assert!(q(z).is_zero(), "{z}");
            assert_eq!(q(z).to_string(), "0", "{z}");
        }
    }

    #[test]
    fn refuses_what_upstream_refuses() {
        for bad in [
            "", "abc", "1 ", " 1", "1x", "1.2.3", "--1", "1Mi3", "1ee3", "1e", "1KiB",
        ] {
            assert!(Quantity::parse(bad).is_err(), "{bad:?} parsed");
        }
        assert_eq!(Quantity::parse("1x"), Err(QuantityError::Format));
        assert_eq!(Quantity::parse("1ki"), Err(QuantityError::Suffix));
        assert_eq!(Quantity::parse("1ee3"), Err(QuantityError::Suffix));
        assert!(matches!(
            Quantity::parse("1e400"),
            Err(QuantityError::TooLarge(_))
        ));
        assert!(Quantity::parse(&"9".repeat(65)).is_err());
    }

    #[test]
    fn canonical_forms() {
        let cases = [
            ("1.5", "1500m"),
            ("1500m", "1500m"),
            ("1", "1"),
            ("1000m", "1"),
            ("1000", "1k"),
            ("0.1", "100m"),
            ("2Gi", "2Gi"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("512", "512"),
            ("0.5Ki", "512"),
            ("1023Ki", "1023Ki"),
            ("1.1Ki", "1126400m"),
            ("5G", "5G"),
            ("1e3", "1e3"),
            ("1.5e3", "1500"),
            ("12e-3", "12e-3"),
            ("100M", "100M"),
            ("1000000000", "1G"),
            ("1073741824", "1073741824"),
            ("-2Gi", "-2Gi"),
            ("-1.5", "-1500m"),
            ("1n", "1n"),
            ("10u", "10u"),
            ("1000E", "1000E"),
            ("8Ei", "8Ei"),
            ("1024Ei", "1024Ei"),
        ];
        for (input, canonical) in cases {
            assert_eq!(q(input).to_string(), canonical, "{input}");
        }
    }

    #[test]
    fn arithmetic_keeps_upstream_formats() {
        // The sum keeps the left operand's format, unless it is zero.
        let mut used = Quantity::ZERO;
        used.add(&q("512Mi"));
        used.add(&q("512Mi"));
        assert_eq!(used.to_string(), "1Gi");
        assert_eq!((q("1") + q("500m")).to_string(), "1500m");
        assert_eq!((q("2") - q("1500m")).to_string(), "500m");
        assert_eq!((q("1Gi") + q("1G")).to_string(), "2073741824");
        assert_eq!((q("1G") + q("1Gi")).to_string(), "2073741824");
        assert!((q("1") - q("2")).is_negative());
    }

    #[test]
    fn compares_by_value() {
        assert_eq!(q("1Gi"), q("1073741824"));
        assert!(q("5G") > q("1024Mi"));
        assert!(q("999m") < q("1"));
        assert_eq!(q("1.5").milli_value(), 1500);
        assert_eq!(q("0.5m").milli_value(), 1);
        assert_eq!(q("1.2").value(), 2);
        assert_eq!(q("1.2").round_up_to_units().to_string(), "2");
        assert_eq!(Quantity::from_units(3).to_string(), "3");
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    fn any_format() -> impl Strategy<Value = Format> {
        prop_oneof![
            Just(Format::DecimalSI),
            Just(Format::BinarySI),
            Just(Format::DecimalExponent),
        ]
    }

    proptest! {
        #[test]
        fn parsing_never_panics(s in "\\PC{0,24}") {
            let _ = Quantity::parse(&s);
        }

        #[test]
        fn parsing_quantity_shaped_text_never_panics(
            s in "[+-]?[0-9]{0,30}(\\.[0-9]{0,30})?([eEinumkKMGTP]{0,3}[+-]?[0-9]{0,5})?"
        ) {
            if let Ok(q) = Quantity::parse(&s) {
                // Whatever parses prints and parses back to itself.
                prop_assert_eq!(Quantity::parse(&q.to_string()), Ok(q));
            }
        }

        #[test]
        fn the_canonical_form_parses_back(
            nanos in -MAX_NANOS..=MAX_NANOS,
            format in any_format(),
        ) {
            let q = Quantity { nanos, format };
            let text = q.to_string();
            let back = Quantity::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            prop_assert_eq!(back, q);
            prop_assert_eq!(back.nanos(), nanos);
            // Canonical means printing it again changes nothing.
            prop_assert_eq!(back.to_string(), text);
        }

        #[test]
        fn the_fast_path_agrees_with_the_exact_one(
            whole in "[0-9]{0,20}", fraction in "[0-9]{0,12}",
            suffix in prop_oneof![Just(""), Just("m"), Just("n"), Just("Ki"), Just("Ei"), Just("G"), Just("e-12"), Just("e7")],
        ) {
            let (base, exponent, _) = interpret(suffix).unwrap();
            if let Some(fast) = small_magnitude(&whole, &fraction, base, exponent) {
                // The exact path alone, by a text too long for the fast one.
                let padded = format!("{}{whole}.{fraction}{}{suffix}", "0".repeat(31), "0".repeat(31));
                prop_assert_eq!(Quantity::parse(&padded).map(|q| q.nanos()), Ok(fast));
            }
        }

        #[test]
        fn small_values_round_trip(units in -100_000i64..100_000, milli in 0i64..1000, format in any_format()) {
            let q = Quantity { nanos: i128::from(units) * NANO + i128::from(milli) * 1_000_000, format };
            prop_assert_eq!(Quantity::parse(&q.to_string()), Ok(q));
        }

        #[test]
        fn rounding_in_i64_agrees_with_i128(nanos in -MAX_NANOS..=MAX_NANOS, small in i64::MIN..=i64::MAX) {
            for n in [nanos, i128::from(small)] {
                let q = Quantity { nanos: n, format: Format::DecimalSI };
                let exact = |d: i128| {
                    let (quot, rem) = (n / d, n % d);
                    if rem == 0 { quot } else if n > 0 { quot + 1 } else { quot - 1 }
                };
                prop_assert_eq!(q.milli_value(), exact(1_000_000));
                prop_assert_eq!(q.value(), exact(NANO));
            }
        }

        #[test]
        fn addition_is_exact(a in -1_000_000_000_000i64..1_000_000_000_000, b in -1_000_000_000_000i64..1_000_000_000_000) {
            let (qa, qb) = (Quantity { nanos: a.into(), format: Format::DecimalSI }, Quantity { nanos: b.into(), format: Format::BinarySI });
            prop_assert_eq!((qa + qb).nanos(), i128::from(a) + i128::from(b));
            prop_assert_eq!(qa + qb - qb, qa);
        }
    }
}
