//! One reconcile of one key, start to finish: wait for the key's
//! expectations, build the request from the current caches, call the
//! plugin, carry out the outcome, and decide what happens to the key next.
//!
//! With a manifest finalizer, the plugin's finalizer protocol wraps it
//! (see [`Phase`]): the finalizer is added first, `finalize` is called
//! instead of `reconcile` once the object is being deleted, and the
//! finalizer is removed after a successful finalize.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use super::expectations::{Cached, Pending, Sighting};
use super::indexing::Binder;
use super::retry::{Failure, Next, STALE_RETRY};
use super::{Owned, Shared, keys, lock};
use crate::contract::{Request, WriteFailure, now_ms};
use crate::model::{CachedObject, KindRef, ObjectKey, ObjectRef};
use crate::writer::{Applied, Target, WriteError};

/// One reconcile of `key`. Never fails: every problem ends in a requeue
/// decision and a log line naming the plugin and key.
pub(super) async fn process(shared: &Arc<Shared>, key: &ObjectKey, queued: Instant) {
    let span = tracing::info_span!("reconcile", plugin = %shared.manifest.name, key = %key);
    async {
        match pending_expectation(shared, key) {
            Pending::Clear => {}
            Pending::TimedOut => {
                tracing::warn!("the cache did not show this reconcile's writes in time; going on");
            }
            Pending::Wait(wait) => {
                // Our own last writes are not in the cache yet; their events
                // will enqueue the key again. The delayed add is the fallback.
                shared.queue.add_after(key.clone(), wait);
                return;
            }
        }
        let stats = &shared.stats;
        stats
            .queue_wait
            .observe(Instant::now().saturating_duration_since(queued));
        let started = std::time::Instant::now();
        let result = reconcile(shared, key).await;
        let took = started.elapsed();
        stats.reconcile_time.observe(took);
        stats.reconciles.fetch_add(1, Ordering::Relaxed);
        stats
            .busy_micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
        let next = lock(&shared.retries).next(key, result);
        match next {
            Next::Done { requeue_after } => {
                shared.queue.forget(key);
                if let Some(after) = requeue_after {
                    stats.requeues_after.fetch_add(1, Ordering::Relaxed);
                    shared.queue.add_after(key.clone(), after);
                } else {
                    stats.successes.fetch_add(1, Ordering::Relaxed);
                }
            }
            Next::Soon { why } => {
                stats.conflicts.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(error = %why, "the cache was behind, or another decision came first; reconciling again");
                shared.queue.add_after(key.clone(), STALE_RETRY);
            }
            Next::StaleBackoff { report: message } => {
                stats.conflicts.fetch_add(1, Ordering::Relaxed);
                let delay = shared.queue.add_rate_limited(key.clone());
                tracing::warn!(error = %message, retry_in = ?delay, "a write keeps failing with a conflict or not-found");
                report(shared, key, message).await;
            }
            Next::Backoff { report: message } => {
                stats.failures.fetch_add(1, Ordering::Relaxed);
                let delay = shared.queue.add_rate_limited(key.clone());
                tracing::warn!(error = %message, retry_in = ?delay, "reconcile failed");
                report(shared, key, message).await;
            }
            Next::GiveUp { report: message } => {
                stats.failures.fetch_add(1, Ordering::Relaxed);
                shared.queue.forget(key);
                tracing::warn!(error = %message, "reconcile failed; not retrying until the object changes");
                report(shared, key, message).await;
            }
        }
    }
    .instrument(span)
    .await
}

/// Where an object stands in the finalizer protocol of the plugin's
/// manifest finalizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No finalizer (or no object): reconcile.
    Reconcile,
    /// The object lacks the finalizer: add it first (the update comes back
    /// through the informer and enqueues the key again).
    AddFinalizer,
    /// Being deleted, our finalizer still on it: call `finalize`.
    Finalize,
    /// Being deleted and our finalizer gone: ours is done; other
    /// finalizers are theirs.
    Finished,
}

fn phase(finalizer: Option<&str>, object: Option<&CachedObject>) -> Phase {
    let (Some(finalizer), Some(object)) = (finalizer, object) else {
        return Phase::Reconcile;
    };
    match (object.is_deleting(), object.has_finalizer(finalizer)) {
        (true, true) => Phase::Finalize,
        (true, false) => Phase::Finished,
        (false, false) => Phase::AddFinalizer,
        (false, true) => Phase::Reconcile,
    }
}

/// Builds the request, calls the plugin, carries out the outcome. Returns
/// the requested requeue delay.
async fn reconcile(shared: &Arc<Shared>, key: &ObjectKey) -> Result<Option<Duration>, Failure> {
    let manifest = &shared.manifest;
    let object = shared.primary.cache().read(|s| s.get(key));
    let primary = shared.primary_ref(key);
    let finalizer = manifest.finalizer.as_deref();
    let finalize = match phase(finalizer, object.as_deref()) {
        Phase::Reconcile => false,
        Phase::Finalize => true,
        Phase::Finished => return Ok(None),
        Phase::AddFinalizer => {
            if let (Some(finalizer), Some(object)) = (finalizer, &object) {
                shared
                    .writer
                    .add_finalizer(manifest, &primary, object, finalizer)
                    .await?;
            }
            return Ok(None);
        }
    };

    // Children of an indexed `owns` watch are read through the plugin's
    // index (`cache.lookup`, `totals`), not copied into every request: a
    // ReplicaSet of 10,000 pods would otherwise get all of them, as JSON
    // text, on each of its reconciles. Those passed over while the object
    // was not ours are filed now, before the plugin reads the index.
    if let Some(object) = &object {
        super::indexing::file_skipped_children(shared, object).await;
    }
    let mut owned = owned_children(shared, object.as_deref(), |o| o.index.is_none());
    let request = Request {
        key: primary.clone(),
        object: object.as_ref().map(|o| o.text().clone()),
        owned: owned.iter().map(|(_, o)| o.text().clone()).collect(),
        attempt: shared.queue.failures(key),
        now_ms: now_ms(),
        last_failure: lock(&shared.retries).last_failure(key),
    };
    let plugin = shared.plugin();
    let called = std::time::Instant::now();
    let outcome = if finalize {
        plugin.finalize_async(request, shared.view()).await
    } else {
        plugin.reconcile_async(request, shared.view()).await
    };
    shared.stats.call_time.observe(called.elapsed());
    let outcome = outcome?;

    if outcome.prune_owned {
        // The writer prunes among all children, those left out too.
        owned.extend(owned_children(shared, object.as_deref(), |o| {
            o.index.is_some()
        }));
    }
    let binder = Binder::prepare(shared, &outcome).await;
    let target = Target {
        manifest,
        key: &primary,
        primary: object.as_deref(),
        owned: &owned,
        live: shared.view.as_ref(),
        assume: binder.as_ref().map(|b| b as &dyn crate::writer::Assume),
    };
    let mut applied = Applied::default();
    let writing = std::time::Instant::now();
    let result = shared.writer.execute(&target, &outcome, &mut applied).await;
    shared.stats.write_time.observe(writing.elapsed());
    let writes = match &result {
        Ok(()) => Ok(()),
        Err(e) => Err(failed_write(e, applied.failed_at)),
    };
    lock(&shared.retries).writes(key, writes);
    shared
        .stats
        .writes
        .fetch_add(applied.requests as u64, Ordering::Relaxed);
    // Even when a later write failed, the next reconcile must wait for the
    // creates and deletes that did happen, or it would repeat them.
    expect(shared, key, applied);
    result?;
    if finalize && let (Some(finalizer), Some(object)) = (finalizer, &object) {
        shared
            .writer
            .remove_finalizer(manifest, &primary, object, finalizer)
            .await?;
    }
    Ok(outcome.requeue_after)
}

/// The children of `object` in the caches of the plugin's `owns` watches
/// that `which` picks: those whose controller owner reference has its uid.
fn owned_children(
    shared: &Shared,
    object: Option<&CachedObject>,
    which: impl Fn(&Owned) -> bool,
) -> Vec<(KindRef, Arc<CachedObject>)> {
    let Some(uid) = object.map(CachedObject::uid).filter(|uid| !uid.is_empty()) else {
        return Vec::new();
    };
    let primary = &shared.manifest.reconciles.kind;
    shared
        .owns
        .iter()
        .filter(|o| which(o))
        .flat_map(|o| {
            o.informer
                .cache()
                .read(|s| s.controlled_by(uid))
                .into_iter()
                .filter(|child| keys::controlled_by_kind(primary, child))
                .map(move |child| (o.kind.clone(), child))
        })
        .collect()
}

/// What the next request tells the plugin about a failed write: the API
/// server's answer to it, when the failure was one.
fn failed_write(error: &WriteError, failed_at: Option<u32>) -> Option<WriteFailure> {
    match (error, failed_at) {
        (WriteError::Api(e) | WriteError::Stale(e), Some(write)) => Some(WriteFailure {
            write,
            code: e.code,
            reason: e.reason.clone(),
            message: e.message.clone(),
        }),
        _ => None,
    }
}

/// Expects the creates and deletes of owned kinds a reconcile of `key` did.
fn expect(shared: &Shared, key: &ObjectKey, applied: Applied) {
    let owned = |r: &ObjectRef| shared.owns.iter().any(|o| r.is_of(&o.kind));
    let creates: Vec<ObjectRef> = applied.created.into_iter().filter(|r| owned(r)).collect();
    let deletes: Vec<ObjectRef> = applied.deleted.into_iter().filter(|r| owned(r)).collect();
    lock(&shared.expectations).expect(
        key,
        creates,
        applied.created_version,
        deletes,
        Instant::now(),
    );
}

/// Whether `key` must still wait for its expectations, judged by the
/// caches of the plugin's `owns` kinds.
fn pending_expectation(shared: &Shared, key: &ObjectKey) -> Pending {
    let lookup = |r: &ObjectRef| {
        let mut sighting = Sighting {
            cached: Cached::Absent,
            cache_version: None,
        };
        for o in shared.owns.iter().filter(|o| r.is_of(&o.kind)) {
            let filed = (o.index.as_ref())
                .map(|index| index.read(|i| i.version_of(&ObjectKey::from(r.key()))));
            let seen = o.informer.cache().read(|s| {
                let cached = s.get(r.key()).map(|o| {
                    let state = if o.is_deleting() {
                        Cached::Deleting
                    } else {
                        Cached::Present
                    };
                    (state, o.resource_version().parse().unwrap_or(0))
                });
                Sighting::of(cached, filed, s.version())
            });
            if sighting.cached == Cached::Absent {
                sighting.cached = seen.cached;
            }
            sighting.cache_version = sighting.cache_version.max(seen.cache_version);
        }
        sighting
    };
    lock(&shared.expectations).pending(key, Instant::now(), lookup)
}

/// Tells the object's users why its reconcile failed: a Warning event on
/// it (when it still exists), which `kubectl describe` shows.
async fn report(shared: &Shared, key: &ObjectKey, message: String) {
    let Some(object) = shared.primary.cache().read(|s| s.get(key)) else {
        return;
    };
    // Keep events readable; the full error is in the log.
    const MAX: usize = 1024;
    let message = if message.len() > MAX {
        format!("{}…", &message[..message.floor_char_boundary(MAX)])
    } else {
        message
    };
    shared
        .writer
        .report_failure(
            &shared.manifest,
            &shared.primary_ref(key),
            Some(&object),
            message,
        )
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(deleting: bool, finalizers: &[&str]) -> CachedObject {
        let mut meta = serde_json::json!({"name": "a", "uid": "u", "finalizers": finalizers});
        if deleting {
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
        }
        CachedObject::parse(&serde_json::json!({"metadata": meta}).to_string()).unwrap()
    }

    #[test]
    fn the_finalizer_protocol_goes_add_reconcile_finalize_finished() {
        let ours = "example.com/cleanup";
        let theirs = "example.com/other";
        let table = [
            (None, Some(object(true, &[ours])), Phase::Reconcile),
            (Some(ours), None, Phase::Reconcile),
            (Some(ours), Some(object(false, &[])), Phase::AddFinalizer),
            (
                Some(ours),
                Some(object(false, &[theirs])),
                Phase::AddFinalizer,
            ),
            (
                Some(ours),
                Some(object(false, &[theirs, ours])),
                Phase::Reconcile,
            ),
            (
                Some(ours),
                Some(object(true, &[ours, theirs])),
                Phase::Finalize,
            ),
            (Some(ours), Some(object(true, &[theirs])), Phase::Finished),
        ];
        for (finalizer, object, want) in table {
            assert_eq!(phase(finalizer, object.as_ref()), want, "{object:?}");
        }
    }
}
