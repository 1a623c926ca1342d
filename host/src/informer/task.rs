//! The task behind an informer: the I/O around the state machine. It makes
//! the request [`Machine::request`] names, feeds what comes back through
//! the decoder into [`Machine::step`], and carries out the actions — and it
//! owns the only [`CacheWriter`] of the informer's store, so nothing else
//! can change the cache.
//!
//! Handlers run synchronously here, after the cache has the change.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use super::decode::{self, LineBuffer, MAX_LINE};
use super::machine::{Action, End, Input, Machine, Request, Restart};
use super::{Handlers, InformerConfig, InformerSpec, InformerStats};
use crate::cache::{CacheWriter, Change};
use crate::client::{ApiClient, ApiError};
use crate::model::ObjectKey;

/// The task behind one informer.
pub(super) struct Task {
    pub client: ApiClient,
    pub spec: InformerSpec,
    pub config: InformerConfig,
    pub cache: CacheWriter,
    pub handlers: Handlers,
    pub synced: watch::Sender<bool>,
    pub stats: Arc<InformerStats>,
    /// Bounds the full-state fetches of every informer at once.
    pub relists: Arc<Semaphore>,
}

impl Task {
    /// Lists and watches until the informer is dropped.
    pub async fn run(mut self) {
        let mut machine = Machine::new(self.config.streaming_lists);
        // Held while a full state is being fetched.
        let mut permit: Option<OwnedSemaphorePermit> = None;
        let mut actions = Vec::new();
        loop {
            let request = machine.request();
            if machine.fetching() && permit.is_none() {
                permit = self.relists.clone().acquire_owned().await.ok();
            }
            let backoff = match request {
                Request::List { continue_token } => {
                    let input = self.list_page(continue_token).await;
                    machine.step(input, &mut actions);
                    self.carry_out(&mut actions)
                }
                Request::Watch { from } => {
                    self.watch(&mut machine, &mut permit, &mut actions, from)
                        .await
                }
            };
            if !machine.fetching() {
                permit = None;
            }
            if let Some(failures) = backoff {
                // Not holding a permit: others fetch while this one waits.
                permit = None;
                tokio::time::sleep(self.backoff(failures)).await;
            }
        }
    }

    /// One page of a paged LIST, as the machine's input.
    async fn list_page(&self, continue_token: Option<String>) -> Input {
        let mut params = vec![("limit".to_owned(), self.config.page_size.to_string())];
        if let Some(t) = continue_token {
            params.push(("continue".into(), t));
        }
        match self.client.get(&self.query(&mut params)).await {
            Ok(body) => match decode::page(&body, &self.spec.resource) {
                Ok(page) => Input::Page(page),
                Err(message) => Input::ListFailed {
                    error: malformed(message).to_string(),
                    gone: false,
                },
            },
            Err(e) => Input::ListFailed {
                gone: e.is_gone(),
                error: e.to_string(),
            },
        }
    }

    /// One watch connection: from `from`, or — with `None` — a streaming
    /// list that fetches the full state first. Returns the failures in a
    /// row to back off for, when it ended in one.
    async fn watch(
        &mut self,
        machine: &mut Machine,
        permit: &mut Option<OwnedSemaphorePermit>,
        actions: &mut Vec<Action>,
        from: Option<String>,
    ) -> Option<u32> {
        let timeout = self
            .config
            .watch_timeout
            .mul_f64(1.0 + fastrand::f64())
            .as_secs()
            .max(1);
        let mut params = vec![
            ("watch".to_owned(), "true".to_owned()),
            ("allowWatchBookmarks".into(), "true".into()),
            ("timeoutSeconds".into(), timeout.to_string()),
        ];
        match from {
            Some(from) => params.push(("resourceVersion".into(), from)),
            None => {
                params.push(("sendInitialEvents".into(), "true".into()));
                params.push(("resourceVersionMatch".into(), "NotOlderThan".into()));
            }
        }
        let path = self.query(&mut params);
        let opened = self.client.stream(&path).await;
        let mut stream = match opened {
            Ok(s) => {
                machine.step(Input::Opened, actions);
                self.carry_out(actions);
                Box::pin(s)
            }
            Err(e) => {
                let input = Input::Refused {
                    code: e.code,
                    error: e.to_string(),
                };
                machine.step(input, actions);
                return self.carry_out(actions);
            }
        };
        let mut lines = LineBuffer::default();
        loop {
            let chunk = match tokio::time::timeout(self.config.idle_timeout, stream.next()).await {
                Err(_) => Err(End::Idle),
                Ok(None) => Err(End::Closed),
                Ok(Some(Err(e))) => Err(End::Broken(e.to_string())),
                Ok(Some(Ok(chunk))) => Ok(chunk),
            };
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(end) => {
                    machine.step(Input::Ended(end), actions);
                    return self.carry_out(actions);
                }
            };
            let skipped = lines.push(&chunk);
            if skipped > 0 {
                self.stats
                    .skipped
                    .fetch_add(skipped as u64, Ordering::Relaxed);
                tracing::warn!(informer = %self.spec, "skipping a watch event longer than {MAX_LINE} bytes");
            }
            while let Some(line) = lines.next_line() {
                let started = std::time::Instant::now();
                let event = decode::event(&line);
                let decoded = std::time::Instant::now();
                self.stats.decode_time.observe(decoded - started);
                machine.step(Input::Event(event), actions);
                let restart = actions.iter().any(|a| matches!(a, Action::Restart(_)));
                let backoff = self.carry_out(actions);
                self.stats.fanout_time.observe(decoded.elapsed());
                if !machine.fetching() {
                    // The full state is in: others may fetch theirs.
                    *permit = None;
                }
                if restart {
                    return backoff;
                }
            }
        }
    }

    /// Carries out (and drains) the machine's actions; returns the failures
    /// in a row to back off for, when one failed.
    fn carry_out(&mut self, actions: &mut Vec<Action>) -> Option<u32> {
        let mut backoff = None;
        for action in actions.drain(..) {
            match action {
                Action::Replace {
                    objects,
                    version,
                    streamed,
                    relist,
                } => {
                    let changes = self.cache.write(|s| {
                        s.set_version(&version);
                        s.replace_all(objects)
                    });
                    self.stats.recovered();
                    notify(&self.handlers, &changes);
                    self.stats.lists.fetch_add(1, Ordering::Relaxed);
                    if streamed {
                        self.stats.streamed_lists.fetch_add(1, Ordering::Relaxed);
                    }
                    if relist {
                        self.stats.relists.fetch_add(1, Ordering::Relaxed);
                    }
                    let _ = self.synced.send(true);
                    tracing::debug!(informer = %self.spec, %version, objects = self.cache.reader().read(|s| s.len()), "full state applied");
                }
                Action::Upsert(object) => {
                    self.stats.events.fetch_add(1, Ordering::Relaxed);
                    let changes = self.cache.write(|s| {
                        s.set_version(object.resource_version());
                        s.upsert(object)
                    });
                    notify(&self.handlers, &changes);
                }
                Action::Remove(object) => {
                    self.stats.events.fetch_add(1, Ordering::Relaxed);
                    let key = ObjectKey::from(object.key());
                    let change = self.cache.write(|s| {
                        s.set_version(object.resource_version());
                        s.remove(&key, Some(object))
                    });
                    if let Some(change) = change {
                        notify(&self.handlers, std::slice::from_ref(&change));
                    }
                }
                Action::Version(version) => self.cache.write(|s| s.set_version(&version)),
                Action::Skip { skipped, during } => {
                    self.stats.skipped.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(informer = %self.spec, key = %skipped.key, error = %skipped.error, "skipping an object in {during}");
                }
                Action::Recovered => self.stats.recovered(),
                Action::Restart(restart) => {
                    self.stats.watch_restarts.fetch_add(1, Ordering::Relaxed);
                    match restart {
                        Restart::Resume | Restart::Failed => {}
                        Restart::Relist { from } => {
                            tracing::info!(informer = %self.spec, version = ?from, "resourceVersion expired (410); listing again");
                        }
                        Restart::Idle => {
                            tracing::warn!(informer = %self.spec, timeout = ?self.config.idle_timeout, "watch sent nothing; reconnecting");
                        }
                        Restart::PagedLists(why) => {
                            tracing::info!(informer = %self.spec, reason = %why, "the server does not stream lists; listing in pages");
                        }
                    }
                }
                Action::Failed { error, failures } => {
                    tracing::warn!(informer = %self.spec, %error, attempt = failures, "retrying");
                    self.stats.failed(error);
                    backoff = Some(failures);
                }
            }
        }
        backoff
    }

    fn backoff(&self, failures: u32) -> Duration {
        let exp = self
            .config
            .base_backoff
            .saturating_mul(1 << failures.saturating_sub(1).min(16));
        let capped = exp.min(self.config.max_backoff);
        // ±50% jitter so many informers do not retry in lockstep.
        capped.mul_f64(0.5 + fastrand::f64())
    }

    fn query(&self, params: &mut Vec<(String, String)>) -> String {
        if let Some(l) = &self.spec.label_selector {
            params.push(("labelSelector".into(), l.clone()));
        }
        if let Some(f) = &self.spec.field_selector {
            params.push(("fieldSelector".into(), f.clone()));
        }
        let query = params
            .iter()
            .map(|(k, v)| format!("{k}={}", percent_encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        format!(
            "{}?{query}",
            self.spec
                .resource
                .collection_path(self.spec.namespace.as_deref())
        )
    }
}

/// Tells every handler about every change, in order.
fn notify(handlers: &Handlers, changes: &[Change]) {
    if changes.is_empty() {
        return;
    }
    let handlers = handlers.read().unwrap_or_else(|e| e.into_inner());
    for change in changes {
        for (_, handler) in handlers.iter() {
            handler(change);
        }
    }
}

fn malformed(message: String) -> ApiError {
    ApiError {
        method: http::Method::GET,
        path: String::new(),
        code: 0,
        reason: "Malformed".into(),
        message,
    }
}

/// Percent-encodes a query value (RFC 3986 unreserved characters pass).
fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_are_encoded_into_the_query() {
        assert_eq!(percent_encode("app in (a,b)"), "app%20in%20%28a%2Cb%29");
        assert_eq!(percent_encode("x=y"), "x%3Dy");
    }
}
