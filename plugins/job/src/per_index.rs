//! `backoffLimitPerIndex`: which indexes have failed for good, the failure
//! counts a replacement pod carries, and each index's own back-off, as
//! upstream's `calculateFailedIndexes`, `getNewIndexFailureCounts` and
//! `getRemainingTimePerIndex` decide them.

use std::collections::BTreeSet;
use std::time::Duration;

use windlass_sdk::Time;

use crate::backoff;
use crate::job::{Spec, Stored};
use crate::pods::{IndexFailures, Phase, Pod};
use crate::policy::Action;

/// The indexes that failed for good: those already recorded, and those of
/// failed pods that a `FailIndex` rule matched or whose counted failure
/// took their index past the limit.
pub(crate) fn failed_indexes(spec: &Spec, stored: &Stored, pods: &[Pod]) -> BTreeSet<u32> {
    let Some(limit) = spec.backoff_limit_per_index else {
        return BTreeSet::new();
    };
    let completions = spec.completions.unwrap_or(0);
    let mut failed = stored.failed_indexes.clone();
    failed.extend(
        pods.iter()
            .filter(|p| p.phase == Phase::Failed)
            .filter(|p| {
                p.verdict
                    .as_ref()
                    .is_some_and(|v| v.action == Action::FailIndex)
                    || (p.counted_failure() && p.index_failures.counted >= limit)
            })
            .filter_map(|p| p.index),
    );
    failed.retain(|&i| i < completions);
    failed
}

/// The failed pod of `index` a replacement takes over from: the one with
/// the most failures before it, the latest to end among those.
pub(crate) fn last_failed(pods: &[Pod], index: u32) -> Option<&Pod> {
    let total = |p: &Pod| p.index_failures.counted + p.index_failures.ignored;
    pods.iter()
        .filter(|p| p.phase == Phase::Failed && p.index == Some(index))
        .max_by_key(|p| (total(p), p.finished()))
}

/// Whether failed pod `p` keeps its finalizer for now, as upstream's
/// `getPodsWithDelayedDeletionPerIndex` delays it: it is the one its
/// index's replacement takes its failure count from (its index neither
/// succeeded nor failed for good, and no pod of it running yet), so it
/// must not be deleted before that replacement exists.
pub(crate) fn held(
    spec: &Spec,
    pods: &[Pod],
    completed: &BTreeSet<u32>,
    failed_indexes: &BTreeSet<u32>,
    p: &Pod,
) -> bool {
    let Some(i) = p.index.filter(|_| spec.backoff_limit_per_index.is_some()) else {
        return false;
    };
    i < spec.completions.unwrap_or(0)
        && !completed.contains(&i)
        && !failed_indexes.contains(&i)
        && !pods
            .iter()
            .any(|q| q.phase == Phase::Active && q.index == Some(i))
        && last_failed(pods, i).is_some_and(|last| last.uid == p.uid)
}

/// The failure counts a new pod of the index carries.
pub(crate) fn failures_for(last: Option<&Pod>) -> IndexFailures {
    last.map(Pod::failures_after).unwrap_or_default()
}

/// How long the index must still wait before a new pod, after its last
/// failed pod: the back-off for all its failures, ignored ones included.
pub(crate) fn remaining(last: Option<&Pod>, now: Time) -> Option<Duration> {
    let last = last?;
    let f = last.index_failures;
    backoff::remaining(f.counted + f.ignored + 1, last.finished()?, now)
}
