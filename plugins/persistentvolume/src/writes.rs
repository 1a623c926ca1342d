//! Small helpers over outcomes: joining the parts of one reconcile, and
//! asking whether a part already writes an object.

use windlass_sdk::{ObjectRef, Outcome};

/// `first`'s writes and events, then `then`'s.
pub(crate) fn join(mut first: Outcome, then: Outcome) -> Outcome {
    first.writes.extend(then.writes);
    first.events.extend(then.events);
    first
}

/// Whether `out` already writes the object `target`.
pub(crate) fn touches(out: &Outcome, target: &ObjectRef) -> bool {
    out.writes.iter().any(|w| w.target() == *target)
}
