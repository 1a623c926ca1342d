//! "The store has listed": a signal any number of tasks can wait on or
//! check, taken from the watch stream's `InitDone` after the reflector has
//! applied it.
//!
//! kube's `Store::wait_until_ready` sits on a oneshot receiver that keeps
//! only the last waker: when two tasks wait at once (the `Controller`'s
//! runner always does), one of them may never wake. Found when the
//! benchmark hung in `Probe::start` about one run in two.

use kube::runtime::watcher;
use tokio::sync::watch;

/// The waiting side; cheap to clone.
#[derive(Debug, Clone)]
pub struct Synced(watch::Receiver<bool>);

/// The stream side: call [`Signal::saw`] with each watcher event after the
/// reflector has applied it.
#[derive(Debug)]
pub struct Signal(watch::Sender<bool>);

pub fn synced() -> (Signal, Synced) {
    let (tx, rx) = watch::channel(false);
    (Signal(tx), Synced(rx))
}

impl Signal {
    pub fn saw<K>(&self, event: &watcher::Event<K>) {
        if matches!(event, watcher::Event::InitDone) {
            self.0.send_replace(true);
        }
    }
}

impl Synced {
    /// True once the first list is in the store.
    pub fn is_synced(&self) -> bool {
        *self.0.borrow()
    }

    /// Waits for the first list (or for the stream to end).
    pub async fn wait(&self) {
        let mut rx = self.0.clone();
        let _ = rx.wait_for(|s| *s).await;
    }
}
