//! Instances kept warm between one plugin's pure calls (`index`, `map`).
//!
//! `index` and `map` are pure functions of their argument: the contract
//! says so, and that a plugin may be given a fresh instance for any call
//! and must keep no state between calls. They run on every change of an
//! indexed or read object — several times for each pod the chain starts —
//! and for calls that small, making an instance from the pool and resetting
//! it afterwards was most of the cost (about a tenth of the host's CPU in
//! the chain benchmark). So after a pure call that ended cleanly, its
//! instance may be kept for the plugin's next pure call, on these terms:
//!
//! - only `index` and `map`: `reconcile` and `finalize` always get a fresh
//!   instance, so nothing a plugin computes reaches its next reconcile;
//! - a call that failed in any way (trap, deadline, memory, a refused read,
//!   output past its caps or refused by the boundary's checks), that used
//!   WASI (whose clock is frozen at the call's start) or that holds
//!   resources is not kept;
//! - an instance is retired after [`MAX_CALLS`] calls, or once its memory
//!   passes [`MAX_MEMORY`], so one that leaks does not carry on;
//! - each loaded plugin keeps at most [`PER_PLUGIN`], and the runtime at
//!   most [`MAX_KEPT`]: kept instances hold pool slots reserved beyond the
//!   slots calls use, so they never make a call wait.
//!
//! A new version of a plugin (hot reload) starts with none; the old
//! version's go with it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use wasmtime::Store;
use wasmtime::component::Instance;

use super::state::CallState;

/// Instances the whole runtime may keep; the pooling allocator has this
/// many slots beyond the calls' own.
pub(super) const MAX_KEPT: usize = 32;
/// Instances one loaded plugin may keep (its indexed watches are followed
/// at once, each by its own task).
const PER_PLUGIN: usize = 2;
/// Calls after which a kept instance is retired.
const MAX_CALLS: u32 = 1_000;
/// Linear memory past which a kept instance is retired.
const MAX_MEMORY: usize = 4 << 20;

/// The instances kept by one loaded plugin.
#[derive(Default)]
pub(super) struct Warm {
    kept: Mutex<Vec<Kept>>,
}

/// An instance between two pure calls.
pub(super) struct Kept {
    store: Store<CallState>,
    instance: Instance,
    calls: u32,
    hold: Hold,
}

/// The runtime-wide count of kept instances.
#[derive(Debug, Default)]
pub(super) struct KeptCount(Arc<AtomicUsize>);

/// One place in [`KeptCount`], given back when dropped; carried through a
/// call of a kept instance, so that keeping it again needs no new place.
pub(super) struct Hold(Arc<AtomicUsize>);

impl Drop for Hold {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl KeptCount {
    /// A place for one more kept instance, if the runtime has room.
    fn hold(&self) -> Option<Hold> {
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < MAX_KEPT).then_some(n + 1)
            })
            .ok()
            .map(|_| Hold(self.0.clone()))
    }

    /// Instances kept now, across every plugin.
    #[cfg(test)]
    fn now(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

impl Warm {
    /// A kept instance for the next pure call, if there is one.
    pub(super) fn take(&self) -> Option<Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    /// Keeps `store` and `instance` after a pure call that ended cleanly,
    /// if they may be kept (see the module docs); otherwise they are
    /// dropped. `was_kept` is what [`Warm::take`] gave this call, if
    /// anything.
    pub(super) fn keep(
        &self,
        count: &KeptCount,
        store: Store<CallState>,
        instance: Instance,
        was_kept: Option<(u32, Hold)>,
    ) {
        let (calls, hold) = match was_kept {
            Some((calls, hold)) => (calls + 1, Some(hold)),
            None => (1, None),
        };
        if calls >= MAX_CALLS || !store.data().reusable(MAX_MEMORY) {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= PER_PLUGIN {
            return;
        }
        let Some(hold) = hold.or_else(|| count.hold()) else {
            return;
        };
        kept.push(Kept {
            store,
            instance,
            calls,
            hold,
        });
    }
}

impl Kept {
    /// Takes the instance apart for a call: its store, its instance, and
    /// what [`Warm::keep`] needs to keep it again.
    pub(super) fn into_parts(self) -> (Store<CallState>, Instance, (u32, Hold)) {
        (self.store, self.instance, (self.calls, self.hold))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_keeps_at_most_max_kept() {
        let count = KeptCount::default();
        let holds: Vec<Hold> = (0..MAX_KEPT).map_while(|_| count.hold()).collect();
        assert_eq!(holds.len(), MAX_KEPT);
        assert!(count.hold().is_none(), "no place past MAX_KEPT");
        drop(holds);
        assert_eq!(count.now(), 0, "every place given back");
        assert!(count.hold().is_some());
    }
}
