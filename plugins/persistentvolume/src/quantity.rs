//! Kubernetes resource quantities (`10Gi`, `1.5G`, `500Mi`, `100m`,
//! `1e3`), read exactly, to compare a volume's capacity with a claim's
//! request as `resource.Quantity.Cmp` does.
//!
//! A quantity is kept as `digits × 10^pow10 × 2^pow2`: a binary suffix
//! adds to `pow2`, a decimal suffix, an exponent or a fraction adds to
//! `pow10`, so `1.5Gi` is `15 × 10^-1 × 2^30` with nothing rounded.

use std::cmp::Ordering;

/// A parsed quantity.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quantity {
    negative: bool,
    digits: u128,
    pow10: i32,
    pow2: u32,
}

impl Quantity {
    /// Nothing: what a missing capacity or request counts as.
    pub(crate) const ZERO: Quantity = Quantity {
        negative: false,
        digits: 0,
        pow10: 0,
        pow2: 0,
    };

    /// Parses `<sign><number><suffix>` as the API server accepts it;
    /// `None` if `text` is not a quantity.
    pub(crate) fn parse(text: &str) -> Option<Quantity> {
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let number_len = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_len);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
            return None;
        }
        let (pow10, pow2) = suffix_powers(suffix)?;
        let mut q = Quantity {
            negative,
            digits: 0,
            pow10: pow10.checked_sub(i32::try_from(fraction.len()).ok()?)?,
            pow2,
        };
        for d in whole.bytes().chain(fraction.bytes()) {
            q.digits = q
                .digits
                .checked_mul(10)?
                .checked_add(u128::from(d - b'0'))?;
        }
        Some(q.normalized())
    }

    /// The same value with trailing decimal zeros moved into the exponent,
    /// so that exact comparisons need smaller multiplications.
    fn normalized(mut self) -> Quantity {
        if self.digits == 0 {
            return Quantity::ZERO;
        }
        while self.digits.is_multiple_of(10) {
            self.digits /= 10;
            self.pow10 += 1;
        }
        self
    }

    /// The magnitude scaled by `10^pow10 × 2^pow2`, if it fits.
    fn scaled(self, pow10: u32, pow2: u32) -> Option<u128> {
        let tens = 10u128.checked_pow(pow10)?;
        let twos = 1u128.checked_shl(pow2)?;
        self.digits.checked_mul(tens)?.checked_mul(twos)
    }

    /// The magnitude's base-10 logarithm: only for values too far apart to
    /// compare exactly, where its rounding cannot change the answer.
    fn log10(self) -> f64 {
        (self.digits as f64).log10() + f64::from(self.pow10) + f64::from(self.pow2) * 2f64.log10()
    }

    fn cmp_magnitude(self, other: Quantity) -> Ordering {
        match (self.digits, other.digits) {
            (0, 0) => return Ordering::Equal,
            (0, _) => return Ordering::Less,
            (_, 0) => return Ordering::Greater,
            _ => {}
        }
        let pow10 = self.pow10.min(other.pow10);
        let pow2 = self.pow2.min(other.pow2);
        let a = self.scaled(self.pow10.abs_diff(pow10), self.pow2 - pow2);
        let b = other.scaled(other.pow10.abs_diff(pow10), other.pow2 - pow2);
        match (a, b) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => self.log10().total_cmp(&other.log10()),
        }
    }
}

/// The powers of ten and of two a suffix stands for.
fn suffix_powers(suffix: &str) -> Option<(i32, u32)> {
    let binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if let Some(i) = binary.iter().position(|s| *s == suffix) {
        return Some((0, 10 * (i as u32 + 1)));
    }
    let decimal = match suffix {
        "n" => -9,
        "u" => -6,
        "m" => -3,
        "" => 0,
        "k" => 3,
        "M" => 6,
        "G" => 9,
        "T" => 12,
        "P" => 15,
        "E" => 18,
        _ => {
            // `e` or `E` and a signed integer: a decimal exponent.
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            exponent.parse().ok()?
        }
    };
    Some((decimal, 0))
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        let sign = |q: &Quantity| match (q.digits, q.negative) {
            (0, _) => 0,
            (_, true) => -1,
            (_, false) => 1,
        };
        match sign(self).cmp(&sign(other)) {
            Ordering::Equal if sign(self) < 0 => other.cmp_magnitude(*self),
            Ordering::Equal => self.cmp_magnitude(*other),
            unequal => unequal,
        }
    }
}
