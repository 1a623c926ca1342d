//! The state every request and task shares: the in-memory `State` behind
//! its lock, the server's settings, its credentials and its counters.

use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Mutex, MutexGuard};
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
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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
        match self.lock().get("/serviceaccounts", &sa.namespace, &sa.name) {
            Some(o) if crate::object::uid(&o.value) == sa.uid => Ok(sa),
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
