//! The state every request and task shares: the in-memory `State` behind
//! its lock, the server's settings, its credentials and its counters.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, watch};

use crate::state::State;

/// State shared by every request and task.
pub(crate) struct Shared {
    /// Reached through [`Shared::lock`].
    pub(crate) state: Mutex<State>,
    pub(crate) gc: Notify,
    pub(crate) shutdown: watch::Receiver<bool>,
    /// Set when the [`RunningServer`] is dropped: open connections close at once.
    pub(crate) killed: watch::Receiver<bool>,
    pub(crate) token: Option<crate::token::Expected>,
    /// Signs and checks service account tokens.
    pub(crate) sa_key: crate::satoken::SigningKey,
    pub(crate) bookmark_interval: Duration,
    pub(crate) streaming_lists: bool,
    pub(crate) server_addr: String,
    pub(crate) request_timeout: Duration,
    /// Connections being served now.
    pub(crate) connections: AtomicUsize,
    /// Times accepting a connection failed (out of file descriptors, say).
    pub(crate) accept_failures: AtomicU64,
    /// A flush of the quota charges creates left in memory is scheduled.
    pub(crate) charges_pending: AtomicBool,
}

impl Shared {
    /// The state, with every quota charge written: whoever reads or changes
    /// it sees quotas that count every object stored.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        let mut st = self.peek();
        st.charges_deferrable = false;
        crate::admission::Charges::flush(&mut st);
        st
    }

    /// The state, for what is neither an object nor a quota: the registry,
    /// the storage's health. Quota charges stay in memory.
    pub(crate) fn peek(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state for one create, which may leave its quota charges in
    /// memory (so that creates arriving together write each quota once);
    /// the caller then calls [`Shared::schedule_charge_flush`].
    pub(crate) fn lock_for_create(&self) -> MutexGuard<'_, State> {
        let mut st = self.peek();
        st.charges_deferrable = true;
        st
    }

    /// The service account `token` speaks for, if this server signed it for
    /// `audience`, it has not expired, and the account still exists (with
    /// the uid it was signed for).
    pub(crate) fn service_account(
        &self,
        token: &str,
        audience: &str,
    ) -> Result<crate::satoken::ServiceAccount, String> {
        let claims = self
            .sa_key
            .verify(token)
            .ok_or("invalid bearer token: not signed by this server")?;
        let sa = crate::satoken::check(&claims, crate::time::now_secs(), audience)?;
        match self.peek().get("/serviceaccounts", &sa.namespace, &sa.name) {
            Some(o) if *o.attrs.uid == *sa.uid => Ok(sa),
            Some(_) => Err(format!(
                "service account {}/{} has been deleted and recreated since the token was made",
                sa.namespace, sa.name
            )),
            None => Err(format!(
                "service account {}/{} does not exist",
                sa.namespace, sa.name
            )),
        }
    }
}

/// How long quota charges left in memory by creates wait to be written:
/// long enough that the creates of many group commits share one write of
/// each quota, short enough that a watcher of quotas sees `status.used`
/// follow the objects at once. (Reads and other writes flush at once, see
/// [`Shared::lock`].)
const CHARGE_FLUSH_DELAY: Duration = Duration::from_millis(10);

impl Shared {
    /// Call after a create, with the state lock released: if it left quota
    /// charges in memory and no flush is due, schedules one.
    pub(crate) fn schedule_charge_flush(self: &Arc<Self>, pending: bool) {
        if !pending || self.charges_pending.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(CHARGE_FLUSH_DELAY).await;
            // Cleared before the flush: a charge the flush misses sets it
            // again and schedules the next one.
            shared.charges_pending.store(false, Ordering::Release);
            drop(shared.lock());
        });
    }
}
