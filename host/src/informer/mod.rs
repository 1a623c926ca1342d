//! A shared list-watch informer: one per (resource, namespace, label
//! selector, field selector), feeding one [`Cache`] and any number of
//! handlers.
//!
//! Strategy, as client-go's reflector: get the full state and a
//! resourceVersion, then watch from that version with bookmarks; after a
//! disconnect resume from the last version seen; on `410 Gone` get the full
//! state again (which reports objects deleted meanwhile, so no delete is
//! missed); treat a watch that sends nothing for `idle_timeout` as dead;
//! back off with jitter on errors; hold relists of all informers to a shared
//! bound.
//!
//! The full state comes from a *streaming list* where the server offers one
//! (a watch with `sendInitialEvents=true`: every object as an ADDED event,
//! then a bookmark marked `k8s.io/initial-events-end`, then the watch goes
//! on over the same connection), so that no list response is ever held
//! whole in memory. A server that refuses it (older API servers answer 4xx)
//! or ignores it (a bookmark without the mark) gets paged LISTs instead.
//!
//! The rooms: `decode.rs` turns bytes into typed events and pages;
//! `machine.rs` is the list / stream / watch state machine, a pure `step`
//! from what arrived to what to do; `task.rs` is the thin task that does
//! the I/O and owns the only writer of the cache. This file is the handle
//! the rest of the host holds: read-only [`Cache`], subscriptions, sync
//! state and counters.
//!
//! Handlers run synchronously on the informer's task after the cache has
//! been updated, and must only do cheap, non-blocking work (enqueue a key).

mod decode;
mod machine;
mod task;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::{Semaphore, watch};
use tokio_util::sync::CancellationToken;

use crate::cache::{Cache, CacheWriter, Change};
use crate::client::ApiClient;
use crate::discovery::ApiResource;

/// What one informer watches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InformerSpec {
    pub resource: ApiResource,
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
}

impl std::fmt::Display for InformerSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.resource.plural)?;
        if let Some(ns) = &self.namespace {
            write!(f, " in {ns}")?;
        }
        if let Some(l) = &self.label_selector {
            write!(f, " labels {l:?}")?;
        }
        if let Some(s) = &self.field_selector {
            write!(f, " fields {s:?}")?;
        }
        Ok(())
    }
}

/// Timing of list and watch.
#[derive(Debug, Clone)]
pub struct InformerConfig {
    /// Objects per list page.
    pub page_size: u32,
    /// A watch silent this long (not even a bookmark) is dropped and resumed.
    pub idle_timeout: Duration,
    /// Each watch asks the server to end it after about this long (jittered
    /// up to twice), so connections are renewed regularly.
    pub watch_timeout: Duration,
    /// First delay after an error; doubles up to `max_backoff`.
    pub base_backoff: Duration,
    pub max_backoff: Duration,
    /// Try streaming lists before paged LISTs.
    pub streaming_lists: bool,
}

impl Default for InformerConfig {
    fn default() -> Self {
        Self {
            page_size: 500,
            idle_timeout: Duration::from_secs(120),
            watch_timeout: Duration::from_secs(300),
            base_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(30),
            streaming_lists: true,
        }
    }
}

/// Counters an operator watches.
#[derive(Debug, Default)]
pub struct InformerStats {
    /// Full states fetched (paged LISTs and streaming lists).
    pub lists: AtomicU64,
    /// Of those, the ones streamed.
    pub streamed_lists: AtomicU64,
    /// Full states fetched after the first one.
    pub relists: AtomicU64,
    pub watch_restarts: AtomicU64,
    pub events: AtomicU64,
    pub errors: AtomicU64,
    /// Objects skipped because they could not be parsed or were larger
    /// than the informer accepts (each logged with its key when known).
    pub skipped: AtomicU64,
    /// The last list or watch failure, until a list or watch works again.
    last_error: std::sync::Mutex<Option<String>>,
    /// Per watch event: decoding its line into an object (`decode`), and
    /// applying it to the cache and handing the change to every subscriber
    /// (`fanout`: queue adds, index tasks, `map` channels).
    pub decode_time: crate::histogram::Histogram,
    pub fanout_time: crate::histogram::Histogram,
}

impl InformerStats {
    /// Why the informer cannot list or watch right now, if it cannot.
    pub fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn failed(&self, error: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
    }

    fn recovered(&self) {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }
}

/// Called with every change, after the cache has it.
pub type Handler = Arc<dyn Fn(&Change) + Send + Sync>;

type Handlers = Arc<RwLock<Vec<(u64, Handler)>>>;

/// A running informer. Dropping it stops it.
pub struct Informer {
    spec: InformerSpec,
    cache: Cache,
    handlers: Handlers,
    next_id: AtomicU64,
    synced: watch::Receiver<bool>,
    stats: Arc<InformerStats>,
    stop: CancellationToken,
}

impl std::fmt::Debug for Informer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informer")
            .field("spec", &self.spec)
            .finish()
    }
}

impl Informer {
    /// Starts listing and watching in a background task.
    pub fn start(
        client: ApiClient,
        spec: InformerSpec,
        config: InformerConfig,
        relists: Arc<Semaphore>,
    ) -> Self {
        let writer = CacheWriter::new();
        let cache = writer.reader();
        let handlers: Handlers = Arc::default();
        let (synced_tx, synced) = watch::channel(false);
        let stats = Arc::new(InformerStats::default());
        let stop = CancellationToken::new();
        let task = task::Task {
            client,
            spec: spec.clone(),
            config,
            cache: writer,
            handlers: handlers.clone(),
            synced: synced_tx,
            stats: stats.clone(),
            relists,
        };
        let token = stop.clone();
        tokio::spawn(async move {
            // Stopped first: a stopped informer whose connection also broke
            // must not try again.
            tokio::select! {
                biased;
                _ = token.cancelled() => {}
                _ = task.run() => {}
            }
        });
        Self {
            spec,
            cache,
            handlers,
            next_id: AtomicU64::new(0),
            synced,
            stats,
            stop,
        }
    }

    pub fn spec(&self) -> &InformerSpec {
        &self.spec
    }

    /// The informer's cache (read side).
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    pub fn stats(&self) -> &InformerStats {
        &self.stats
    }

    /// Adds a handler; returns its id for [`Informer::unsubscribe`]. Objects
    /// already cached are not replayed: list the cache after subscribing.
    pub fn subscribe(&self, handler: Handler) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.handlers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, handler));
        id
    }

    pub fn unsubscribe(&self, id: u64) {
        self.handlers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(i, _)| *i != id);
    }

    /// True once the first list has been applied.
    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits for the first list.
    pub async fn wait_synced(&self) {
        let mut synced = self.synced.clone();
        let _ = synced.wait_for(|s| *s).await;
    }

    /// Stops the background task.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Whether [`Informer::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.stop.is_cancelled()
    }
}

impl Drop for Informer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
