//! `Error`: why a reconcile could not finish, and whether to retry.

use std::fmt;

/// A reconcile that could not finish.
///
/// `retry: true` asks the host to retry with backoff; `retry: false` means
/// "do not retry until the object changes" (e.g. an invalid spec).
/// Most conversions (`From<String>`, `From<&str>`, `From<std::fmt::Error>`)
/// make retrying errors; a JSON error is permanent, since the same input will
/// fail the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What went wrong, for the operator.
    pub message: String,
    /// True: retry with backoff. False: wait until the object changes.
    pub retry: bool,
}

impl Error {
    /// An error the host retries with backoff.
    pub fn retry(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retry: true,
        }
    }

    /// An error the host does not retry until the object changes.
    pub fn permanent(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retry: false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(message: String) -> Self {
        Self::retry(message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Self {
        Self::retry(message)
    }
}

impl From<fmt::Error> for Error {
    fn from(e: fmt::Error) -> Self {
        Self::retry(e.to_string())
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Self::permanent(format!("invalid JSON: {e}"))
    }
}

impl From<std::num::ParseIntError> for Error {
    fn from(e: std::num::ParseIntError) -> Self {
        Self::permanent(e.to_string())
    }
}

impl From<Box<dyn std::error::Error + Send + Sync>> for Error {
    fn from(e: Box<dyn std::error::Error + Send + Sync>) -> Self {
        Self::retry(e.to_string())
    }
}
