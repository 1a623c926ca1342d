//! How a plugin call is run from async code: one async call per export
//! ([`Plugin::reconcile_async`], [`Plugin::finalize_async`],
//! [`Plugin::map_async`], [`Plugin::index_async`]), so that callers never
//! decide where a call runs.
//!
//! Strategy: handing a call to a blocking thread and back costs more than a
//! typical call, so a call first runs inline on the async worker itself,
//! within [`INLINE_BUDGET`] and only if an instance slot is free at once
//! (`Plugin::try_*`). One that cannot finish there (out of budget, or it
//! reached an import that needs a thread) is thrown away — nothing was
//! written, and the caller's request is only borrowed — and repeated on a
//! blocking thread with the full timeout. A plugin whose inline calls keep
//! being slow, or had to be repeated, sends its next [`CALLS_OFF_INLINE`]
//! calls straight to a blocking thread, so a slow plugin (or one that
//! prints on every call) does not keep holding an async worker.
//!
//! [`Schedule`] is that per-plugin policy: a few atomics, shared by every
//! clone of one loaded plugin.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::errors::PluginError;
use super::plugin::{Attempt, Plugin};
use crate::contract::{IndexEntry, Outcome, Request};
use crate::model::{CacheReader, ObjectRef, Text};

/// How long a call may run inline (rounded up to the runtime's epoch tick)
/// before it is repeated on a blocking thread with the full timeout.
const INLINE_BUDGET: Duration = Duration::from_millis(5);
/// Inline calls taking longer than this, [`SLOW_STREAK`] in a row (one
/// alone may just have been preempted) ...
const INLINE_SLOW: Duration = Duration::from_micros(500);
const SLOW_STREAK: u32 = 3;
/// ... or one that had to be repeated send the plugin's next this many
/// calls straight to a blocking thread.
const CALLS_OFF_INLINE: u32 = 64;

/// Where one plugin's next call runs, and how many ran on a thread.
#[derive(Debug, Default)]
pub(super) struct Schedule {
    /// Calls still to make on a blocking thread before trying inline again.
    off: AtomicU32,
    /// Slow inline calls in a row.
    slow_streak: AtomicU32,
    /// Calls made on a blocking thread.
    blocking_calls: AtomicU64,
}

impl Schedule {
    /// Should this call be tried inline? Counts down the calls sent off.
    fn allows_inline(&self) -> bool {
        self.off
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_err()
    }

    /// An inline call finished after `took`.
    fn finished(&self, took: Duration) {
        if took <= INLINE_SLOW {
            self.slow_streak.store(0, Ordering::Relaxed);
        } else if self.slow_streak.fetch_add(1, Ordering::Relaxed) + 1 >= SLOW_STREAK {
            self.slow_streak.store(0, Ordering::Relaxed);
            self.off.store(CALLS_OFF_INLINE, Ordering::Relaxed);
        }
    }

    /// An inline call had to be handed back.
    fn unfinished(&self) {
        self.off.store(CALLS_OFF_INLINE, Ordering::Relaxed);
    }
}

impl Plugin {
    /// Calls `reconcile` from async code (see the module docs for where it
    /// runs) and checks the outcome.
    pub async fn reconcile_async(
        &self,
        request: Request,
        cache: Arc<dyn CacheReader>,
    ) -> Result<Outcome, PluginError> {
        self.reconcile_like_async(false, request, cache).await
    }

    /// Calls `finalize` from async code, as [`Plugin::reconcile_async`].
    pub async fn finalize_async(
        &self,
        request: Request,
        cache: Arc<dyn CacheReader>,
    ) -> Result<Outcome, PluginError> {
        self.reconcile_like_async(true, request, cache).await
    }

    async fn reconcile_like_async(
        &self,
        finalize: bool,
        request: Request,
        cache: Arc<dyn CacheReader>,
    ) -> Result<Outcome, PluginError> {
        let inline = self.inline(|plugin| {
            match plugin.try_reconcile(finalize, &request, cache.clone(), INLINE_BUDGET) {
                Attempt::Done(result) => Some(result),
                Attempt::Unfinished => None,
            }
        });
        if let Some(result) = inline {
            return result;
        }
        let export = if finalize { "finalize" } else { "reconcile" };
        self.on_thread(export, move |plugin| {
            if finalize {
                plugin.finalize(&request, cache)
            } else {
                plugin.reconcile(&request, cache)
            }
        })
        .await
    }

    /// Calls `map` from async code for a changed `reads` object; returns
    /// the primary keys to requeue.
    pub async fn map_async(
        &self,
        changed: Text,
        cache: Arc<dyn CacheReader>,
    ) -> Result<Vec<ObjectRef>, PluginError> {
        if let Some(result) =
            self.inline(|plugin| plugin.try_map(&changed, cache.clone(), INLINE_BUDGET))
        {
            return result;
        }
        self.on_thread("map", move |plugin| plugin.map(changed.to_string(), cache))
            .await
    }

    /// Calls `index` (0.2) from async code for an object of an indexed watch.
    pub async fn index_async(
        &self,
        object: Text,
        cache: Arc<dyn CacheReader>,
    ) -> Result<Option<IndexEntry>, PluginError> {
        if let Some(result) =
            self.inline(|plugin| plugin.try_index(&object, cache.clone(), INLINE_BUDGET))
        {
            return result;
        }
        self.on_thread("index", move |plugin| plugin.index(&object, cache))
            .await
    }

    /// Calls this version of the plugin has made on a blocking thread rather
    /// than inline on an async worker.
    pub fn blocking_calls(&self) -> u64 {
        self.inner.schedule.blocking_calls.load(Ordering::Relaxed)
    }

    /// Runs `call` inline when the schedule allows it; `None` when it did
    /// not, or the call could not finish there.
    fn inline<R>(
        &self,
        call: impl FnOnce(&Plugin) -> Option<Result<R, PluginError>>,
    ) -> Option<Result<R, PluginError>> {
        let schedule = &self.inner.schedule;
        if !schedule.allows_inline() {
            return None;
        }
        let started = Instant::now();
        match call(self) {
            Some(result) => {
                schedule.finished(started.elapsed());
                Some(result)
            }
            None => {
                schedule.unfinished();
                None
            }
        }
    }

    /// Runs `call` on a blocking thread, with the full timeout. The call's
    /// instance slot is waited for here, as a task, so a thread is taken
    /// only once the call can run (`slots.rs`).
    async fn on_thread<R: Send + 'static>(
        &self,
        export: &'static str,
        call: impl FnOnce(Plugin) -> Result<R, PluginError> + Send + 'static,
    ) -> Result<R, PluginError> {
        self.inner
            .schedule
            .blocking_calls
            .fetch_add(1, Ordering::Relaxed);
        let slot = self.inner.runtime.slots.acquire_owned(self.name()).await;
        let plugin = self.clone();
        tokio::task::spawn_blocking(move || slot.run(|| call(plugin)))
            .await
            .unwrap_or_else(|e| {
                Err(PluginError::Failed {
                    plugin: self.name().to_owned(),
                    export,
                    message: format!("the call's thread failed: {e}"),
                    retry: true,
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_inline_calls_in_a_row_send_the_next_calls_to_a_thread() {
        let s = Schedule::default();
        assert!(s.allows_inline());
        s.finished(Duration::from_millis(1));
        s.finished(Duration::from_micros(10)); // a quick one breaks the streak
        s.finished(Duration::from_millis(1));
        s.finished(Duration::from_millis(1));
        assert!(s.allows_inline());
        s.finished(Duration::from_millis(1));
        for _ in 0..CALLS_OFF_INLINE {
            assert!(!s.allows_inline());
        }
        assert!(s.allows_inline(), "inline again after the calls sent off");
    }

    #[test]
    fn a_call_handed_back_sends_the_next_calls_to_a_thread() {
        let s = Schedule::default();
        s.unfinished();
        assert!(!s.allows_inline());
        let off = s.off.load(Ordering::Relaxed);
        assert_eq!(off, CALLS_OFF_INLINE - 1);
    }
}
