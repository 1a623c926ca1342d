//! The two shared mechanisms every call relies on: [`Slots`] keeps calls in
//! flight within the pooling allocator's instances (a caller past the limit
//! waits rather than failing), and [`EpochTicker`] advances the engine's
//! epoch so that a store's deadline, a number of ticks, means wall-clock time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use wasmtime::Engine;

/// How often the epoch ticker advances; deadlines are this precise.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Counts calls in flight so they never exceed the pooling allocator's slots.
pub(crate) struct Slots {
    state: Mutex<SlotCount>,
    freed: Condvar,
}

struct SlotCount {
    free: usize,
    /// Callers blocked in `acquire`; a release wakes one only if there are
    /// any, so the uncontended path makes no futex call.
    waiting: usize,
}

/// One slot, given back when dropped.
pub(crate) struct Slot<'a>(&'a Slots);

impl Slots {
    pub(crate) fn new(n: usize) -> Self {
        Self {
            state: Mutex::new(SlotCount {
                free: n,
                waiting: 0,
            }),
            freed: Condvar::new(),
        }
    }

    /// A slot, waiting for one if none is free.
    pub(crate) fn acquire(&self) -> Slot<'_> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while state.free == 0 {
            state.waiting += 1;
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
            state.waiting -= 1;
        }
        state.free -= 1;
        Slot(self)
    }

    /// A slot if one is free now.
    pub(crate) fn try_acquire(&self) -> Option<Slot<'_>> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.free = state.free.checked_sub(1)?;
        Some(Slot(self))
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        state.free += 1;
        if state.waiting > 0 {
            drop(state);
            self.0.freed.notify_one();
        }
    }
}

/// One thread advancing the engine's epoch; a store's deadline is a number
/// of ticks. Stops when dropped.
pub(crate) struct EpochTicker {
    stop: Arc<AtomicBool>,
}

impl EpochTicker {
    pub(crate) fn start(engine: Engine) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let spawned = std::thread::Builder::new()
            .name("windlass-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            });
        if let Err(e) = spawned {
            // Without a ticker deadlines never fire; say so loudly.
            tracing::error!(error = %e, "could not start the epoch ticker: plugin deadlines are not enforced");
        }
        Self { stop }
    }

    pub(crate) fn ticks_for(&self, timeout: Duration) -> u64 {
        // +1: the current tick may be almost over.
        (timeout.as_nanos() / EPOCH_TICK.as_nanos()) as u64 + 1
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_never_exceed_their_count() {
        let slots = Slots::new(2);
        let a = slots.try_acquire().expect("one");
        let _b = slots.acquire();
        assert!(slots.try_acquire().is_none());
        drop(a);
        assert!(slots.try_acquire().is_some());
    }
}
