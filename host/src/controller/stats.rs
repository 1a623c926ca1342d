//! What one plugin's controller counts and times, for `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::histogram::{Histogram, HistogramSnapshot};

/// Counters and timings for one plugin.
#[derive(Debug, Default)]
pub struct ControllerStats {
    pub reconciles: AtomicU64,
    /// Reconciles that succeeded with nothing to revisit ...
    pub successes: AtomicU64,
    /// ... or that asked for a later visit (`requeue-after`).
    pub requeues_after: AtomicU64,
    pub failures: AtomicU64,
    pub conflicts: AtomicU64,
    pub writes: AtomicU64,
    /// Total reconcile time, microseconds.
    pub busy_micros: AtomicU64,
    /// From a key's enqueue (the informer event, or a requeue falling due)
    /// to the start of its reconcile.
    pub queue_wait: Histogram,
    /// How long each reconcile took: building the request, the plugin call
    /// and the writes.
    pub reconcile_time: Histogram,
    /// Of a reconcile: the plugin call (a fresh instance, the export, the
    /// instance's teardown, the outcome's checks) ...
    pub call_time: Histogram,
    /// ... and carrying out its outcome (the writes, in order and batches).
    pub write_time: Histogram,
    /// Plugin calls on a blocking thread rather than inline on the async
    /// worker, made by versions of the plugin replaced since (the running
    /// version counts its own; see `runtime/schedule.rs`).
    pub(super) replaced_blocking_calls: AtomicU64,
}

/// A copy of the controller's counters and timings at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub reconciles: u64,
    pub successes: u64,
    pub requeues_after: u64,
    pub failures: u64,
    pub conflicts: u64,
    pub writes: u64,
    pub busy_micros: u64,
    pub blocking_calls: u64,
    pub queue_wait: HistogramSnapshot,
    pub reconcile_time: HistogramSnapshot,
    pub call_time: HistogramSnapshot,
    pub write_time: HistogramSnapshot,
}

impl ControllerStats {
    /// The counters now; `blocking_calls` are the running version's.
    pub(super) fn snapshot(&self, blocking_calls: u64) -> StatsSnapshot {
        StatsSnapshot {
            reconciles: self.reconciles.load(Ordering::Relaxed),
            successes: self.successes.load(Ordering::Relaxed),
            requeues_after: self.requeues_after.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            conflicts: self.conflicts.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            busy_micros: self.busy_micros.load(Ordering::Relaxed),
            blocking_calls: self.replaced_blocking_calls.load(Ordering::Relaxed) + blocking_calls,
            queue_wait: self.queue_wait.snapshot(),
            reconcile_time: self.reconcile_time.snapshot(),
            call_time: self.call_time.snapshot(),
            write_time: self.write_time.snapshot(),
        }
    }
}
