//! The bearer token: made by the OS's cryptographic generator, and checked
//! in constant time, so that neither guessing the generator's state nor
//! timing the comparison tells a client anything about it.

use sha2::{Digest, Sha256};

/// Why no token could be made.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the operating system's random number generator for the bearer token: {0}")]
pub struct TokenError(getrandom::Error);

/// A new token: 128 random bits from the OS, as 32 hexadecimal digits.
pub(crate) fn generate() -> Result<String, TokenError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(TokenError)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The token a server accepts, kept as its SHA-256 digest.
#[derive(Clone)]
pub(crate) struct Expected([u8; 32]);

impl std::fmt::Debug for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Expected(..)")
    }
}

impl Expected {
    pub(crate) fn new(token: &str) -> Self {
        Self(Sha256::digest(token.as_bytes()).into())
    }

    /// Whether `presented` is the token. Both sides are hashed first, so the
    /// time taken depends neither on where they first differ nor on the
    /// token's length; the digests are compared without early exit.
    pub(crate) fn matches(&self, presented: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let diff = self
            .0
            .iter()
            .zip(digest.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_random_hex() {
        let a = generate().unwrap();
        let b = generate().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn only_the_token_matches() {
        let t = Expected::new("s3cret-token");
        assert!(t.matches("s3cret-token"));
        for wrong in [
            "",
            "s3cret-toke",
            "s3cret-token ",
            "S3cret-token",
            "x3cret-token",
            "s3cret-tokex",
        ] {
            assert!(!t.matches(wrong), "{wrong:?}");
        }
        assert!(!format!("{t:?}").contains("s3cret"));
    }
}
