//! What happens to a key after its reconcile: done, again soon (the cache
//! was behind), backed off, or given up — and what the next request tells
//! the plugin about the last attempt's failed write.
//!
//! [`Retries`] is plain per-key bookkeeping over the reconcile's result;
//! the worker carries out the [`Next`] it returns against the queue.

use std::collections::HashMap;
use std::time::Duration;

use crate::contract::WriteFailure;
use crate::model::ObjectKey;
use crate::runtime::PluginError;
use crate::writer::WriteError;

/// Delay before reconciling again after a conflict (the cache was behind).
pub(super) const STALE_RETRY: Duration = Duration::from_millis(20);
/// After this many conflicts or not-founds in a row, a key is not the
/// cache being behind but a write that cannot succeed as it is (a namespace
/// that does not exist, say): it backs off like a failure and says so in an
/// event, instead of retrying every few milliseconds.
const STALE_STREAK: u32 = 5;

/// Why a reconcile did not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Failure {
    /// A write met a conflict or not-found: the cache was behind.
    Stale(String),
    /// Another decision came first (a binding's assumption was refused):
    /// reconcile again soon, however often it happens.
    Race(String),
    /// Worth retrying, with backoff.
    Retry(String),
    /// Not worth retrying until the object changes (the plugin said so).
    GiveUp(String),
}

impl From<WriteError> for Failure {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Stale(e) => Failure::Stale(e.to_string()),
            WriteError::Assumed(m) => Failure::Race(m),
            other => Failure::Retry(other.to_string()),
        }
    }
}

impl From<PluginError> for Failure {
    fn from(e: PluginError) -> Self {
        if e.retry() {
            Failure::Retry(e.to_string())
        } else {
            Failure::GiveUp(e.to_string())
        }
    }
}

/// What the queue does with a key after its reconcile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Next {
    /// Succeeded: forget its failures, and visit it again after the delay
    /// the plugin asked for, if any.
    Done { requeue_after: Option<Duration> },
    /// The cache was behind, or another decision came first: reconcile
    /// again after [`STALE_RETRY`], not counted as a failure.
    Soon { why: String },
    /// Back off and tell the object's users why (a Warning event).
    Backoff { report: String },
    /// A write keeps meeting conflicts: back off like a failure, and say so.
    StaleBackoff { report: String },
    /// Forget it until the object changes, and say why.
    GiveUp { report: String },
}

/// Per key: conflicts in a row, and the last attempt's failed write.
#[derive(Debug, Default)]
pub(super) struct Retries {
    stale_streak: HashMap<ObjectKey, u32>,
    last_failure: HashMap<ObjectKey, WriteFailure>,
}

impl Retries {
    /// The failed write of `key`'s last attempt, for its next request.
    pub fn last_failure(&self, key: &ObjectKey) -> Option<WriteFailure> {
        self.last_failure.get(key).cloned()
    }

    /// Records how an attempt's writes went: all done (`Ok`), or failed,
    /// with the failure the next request tells the plugin when there is one
    /// to tell (an API server's answer to a write).
    pub fn writes(&mut self, key: &ObjectKey, result: Result<(), Option<WriteFailure>>) {
        match result {
            Ok(()) => {
                self.last_failure.remove(key);
            }
            Err(Some(failure)) => {
                self.last_failure.insert(key.clone(), failure);
            }
            Err(None) => {}
        }
    }

    /// What to do with `key` after a reconcile that ended with `result`.
    pub fn next(&mut self, key: &ObjectKey, result: Result<Option<Duration>, Failure>) -> Next {
        if !matches!(result, Err(Failure::Stale(_))) {
            self.stale_streak.remove(key);
        }
        match result {
            Ok(requeue_after) => Next::Done { requeue_after },
            Err(Failure::Stale(e)) => {
                let streak = self.stale_streak.entry(key.clone()).or_default();
                *streak += 1;
                if *streak < STALE_STREAK {
                    Next::Soon { why: e }
                } else {
                    Next::StaleBackoff {
                        report: format!("a write keeps failing: {e}"),
                    }
                }
            }
            Err(Failure::Race(e)) => Next::Soon { why: e },
            // No delay in the message: repeats must aggregate.
            Err(Failure::Retry(e)) => Next::Backoff { report: e },
            Err(Failure::GiveUp(e)) => Next::GiveUp {
                report: format!("{e} (not retried until the object changes)"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ObjectKey {
        ObjectKey::new(Some("ns"), "a")
    }

    fn stale() -> Result<Option<Duration>, Failure> {
        Err(Failure::Stale("409".into()))
    }

    #[test]
    fn conflicts_retry_soon_until_they_keep_coming() {
        let mut r = Retries::default();
        for _ in 1..STALE_STREAK {
            assert!(matches!(r.next(&key(), stale()), Next::Soon { .. }));
        }
        assert_eq!(
            r.next(&key(), stale()),
            Next::StaleBackoff {
                report: "a write keeps failing: 409".into()
            }
        );
        // Any other result ends the streak.
        assert_eq!(
            r.next(&key(), Ok(None)),
            Next::Done {
                requeue_after: None
            }
        );
        assert!(matches!(r.next(&key(), stale()), Next::Soon { .. }));
    }

    #[test]
    fn races_are_never_backed_off_and_failures_say_whether_they_retry() {
        let mut r = Retries::default();
        for _ in 0..2 * STALE_STREAK {
            let race = Err(Failure::Race("assumed".into()));
            assert!(matches!(r.next(&key(), race), Next::Soon { .. }));
        }
        assert_eq!(
            r.next(&key(), Err(Failure::Retry("boom".into()))),
            Next::Backoff {
                report: "boom".into()
            }
        );
        assert_eq!(
            r.next(&key(), Err(Failure::GiveUp("bad".into()))),
            Next::GiveUp {
                report: "bad (not retried until the object changes)".into()
            }
        );
        let later = Some(Duration::from_secs(3));
        assert_eq!(
            r.next(&key(), Ok(later)),
            Next::Done {
                requeue_after: later
            }
        );
    }

    #[test]
    fn the_last_failed_write_is_told_until_an_attempt_writes_cleanly() {
        let mut r = Retries::default();
        let failure = WriteFailure {
            write: 2,
            code: 422,
            reason: "Invalid".into(),
            message: "no".into(),
        };
        r.writes(&key(), Err(Some(failure.clone())));
        assert_eq!(r.last_failure(&key()), Some(failure.clone()));
        // A failure with nothing to tell (the plugin's own) keeps it.
        r.writes(&key(), Err(None));
        assert_eq!(r.last_failure(&key()), Some(failure));
        r.writes(&key(), Ok(()));
        assert_eq!(r.last_failure(&key()), None);
    }
}
