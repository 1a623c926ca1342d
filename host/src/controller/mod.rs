//! One plugin's controller: its informer subscriptions, its work queue and
//! its workers.
//!
//! Events only say which key to look at (`keys.rs`, plain functions of the
//! change): the primary kind's events enqueue the object, owned children's
//! events enqueue their controller owner, `reads` changes enqueue what the
//! plugin's `map` says, and a resync enqueues everything. A worker runs one
//! reconcile at a time (`reconcile.rs`): it waits for the key's
//! expectations (`expectations.rs`), builds the request from the *current*
//! cache, calls the plugin (the runtime decides where the call runs),
//! hands the outcome to the writer, and decides what happens to the key
//! next (`retry.rs`).
//!
//! Like controller-runtime, workers start only once every informer the
//! plugin uses has listed and its indexes (`indexing.rs`) are built.

mod expectations;
mod indexing;
mod keys;
mod reconcile;
mod retry;
mod stats;

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use crate::cache::Change;
use crate::contract::Manifest;
use crate::discovery::DiscoveryError;
use crate::index::SharedIndex;
use crate::informer::Informer;
use crate::informers::{Informers, PluginView};
use crate::model::{CacheReader, KindRef, ObjectKey, ObjectRef, Text};
use crate::queue::{RateLimit, WorkQueue};
use crate::runtime::Plugin;
use crate::writer::Writer;
use expectations::Expectations;
use indexing::IndexedWatch;
use retry::Retries;
pub use stats::{ControllerStats, StatsSnapshot};

/// How long a key waits for its own writes to show up in the cache.
const EXPECTATION_TIMEOUT: Duration = Duration::from_secs(30);

/// Keys of one queue by state: waiting to run, scheduled for later, running.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueDepth {
    pub ready: usize,
    pub delayed: usize,
    pub in_flight: usize,
}

/// One `owns` watch of the plugin.
struct Owned {
    kind: KindRef,
    informer: Arc<Informer>,
    /// The plugin's index of it, when the watch is indexed: its children
    /// are read there, not handed over in the request.
    index: Option<Arc<SharedIndex>>,
}

/// Everything a worker needs; shared by the workers of one plugin.
struct Shared {
    /// The running version; reloads with the same manifest swap it.
    plugin: RwLock<Plugin>,
    manifest: Manifest,
    queue: WorkQueue<ObjectKey>,
    primary: Arc<Informer>,
    owns: Vec<Owned>,
    view: Arc<PluginView>,
    writer: Arc<Writer>,
    expectations: Mutex<Expectations>,
    retries: Mutex<Retries>,
    stats: ControllerStats,
    /// The plugin's indexed watches and their indexes.
    indexed: Vec<IndexedWatch>,
    /// Informer syncs and index builds still awaited; workers start at 0.
    ready: tokio::sync::watch::Sender<usize>,
}

impl Shared {
    /// The running version of the plugin.
    fn plugin(&self) -> Plugin {
        self.plugin
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The plugin's view of the caches, as its calls get it.
    fn view(&self) -> Arc<dyn CacheReader> {
        self.view.clone()
    }

    /// The reference of the primary object `key`.
    fn primary_ref(&self, key: &ObjectKey) -> ObjectRef {
        ObjectRef::of(&self.manifest.reconciles.kind, key)
    }

    /// Enqueues every primary object (a resync).
    fn enqueue_all(&self) {
        for key in self.primary.cache().read(|s| s.keys()) {
            self.queue.add(key);
        }
    }
}

/// A running controller. [`Controller::shutdown`] stops it gracefully.
pub struct Controller {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
    subscriptions: Vec<(Arc<Informer>, u64)>,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("plugin", &self.shared.manifest.name)
            .finish()
    }
}

impl Controller {
    /// Subscribes to the plugin's informers and starts its workers.
    pub async fn start(
        plugin: Plugin,
        informers: &Informers,
        writer: Arc<Writer>,
    ) -> Result<Self, DiscoveryError> {
        let manifest = plugin.manifest().clone();
        let primary = informers.get(&manifest.reconciles).await?;
        let mut owns = Vec::new();
        for watch in &manifest.owns {
            owns.push((watch.kind.clone(), informers.get(watch).await?));
        }
        let mut reads = Vec::new();
        for watch in &manifest.reads {
            reads.push((watch.kind.clone(), informers.get(watch).await?));
        }
        let mut all = vec![(manifest.reconciles.kind.clone(), primary.clone())];
        all.extend(owns.iter().cloned());
        all.extend(reads.iter().cloned());
        let mut indexed = Vec::new();
        for (role, watch) in manifest.watches().filter(|(_, w)| w.indexed) {
            indexed.push(IndexedWatch {
                kind: watch.kind.clone(),
                informer: informers.get(watch).await?,
                index: Arc::new(SharedIndex::new()),
                reads: role == "reads",
                owns: role == "owns",
                skipped: Mutex::default(),
            });
        }
        let indexes = indexed
            .iter()
            .map(|w| (w.kind.clone(), w.index.clone()))
            .collect();
        // Every informer's sync, and every index's build.
        let (ready, _) = tokio::sync::watch::channel(all.len() + indexed.len());
        let view = Arc::new(PluginView::new(all).with_indexes(indexes));
        let owned: Vec<Owned> = owns
            .into_iter()
            .map(|(kind, informer)| Owned {
                index: (indexed.iter())
                    .find(|w| w.owns && w.kind == kind)
                    .map(|w| w.index.clone()),
                kind,
                informer,
            })
            .collect();

        let shared = Arc::new(Shared {
            plugin: RwLock::new(plugin),
            manifest: manifest.clone(),
            queue: WorkQueue::new(RateLimit::default()),
            primary: primary.clone(),
            owns: owned,
            view,
            writer,
            expectations: Mutex::new(Expectations::new(EXPECTATION_TIMEOUT)),
            retries: Mutex::default(),
            stats: ControllerStats::default(),
            indexed,
            ready,
        });
        let mut subscriptions = Vec::new();
        let mut tasks = Vec::new();

        let queue = shared.queue.clone();
        let id = primary.subscribe(Arc::new(move |change: &Change| {
            queue.add(keys::primary(change));
        }));
        subscriptions.push((primary.clone(), id));

        // An indexed `owns` watch requeues owners (and an orphan's would-be
        // adopters) from its index task, once the change is filed: the
        // reconcile reads the children there.
        for owned in shared.owns.iter().filter(|o| o.index.is_none()) {
            let kind = manifest.reconciles.kind.clone();
            let queue = shared.queue.clone();
            let primary = primary.clone();
            let id = owned.informer.subscribe(Arc::new(move |change: &Change| {
                for owner in keys::cached_owners(&kind, &primary, change) {
                    queue.add(owner);
                }
                for adopter in keys::adopters(&primary, change) {
                    queue.add(adopter);
                }
            }));
            subscriptions.push((owned.informer.clone(), id));
        }

        // `reads` watches that are indexed go through their index (which
        // calls `map` when an entry changes); the others straight to `map`.
        let plain_reads: Vec<&Arc<Informer>> = manifest
            .reads
            .iter()
            .zip(&reads)
            .filter(|(w, _)| !w.indexed)
            .map(|(_, (_, informer))| informer)
            .collect();
        if !plain_reads.is_empty() {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Text>();
            for informer in plain_reads {
                let tx = tx.clone();
                let id = informer.subscribe(Arc::new(move |change: &Change| {
                    let _ = tx.send(change.object().text().clone());
                }));
                subscriptions.push((informer.clone(), id));
            }
            tasks.push(tokio::spawn(map_changes(shared.clone(), rx)));
        }
        for (which, watch) in shared.indexed.iter().enumerate() {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Change>();
            let id = watch.informer.subscribe(Arc::new(move |change: &Change| {
                let _ = tx.send(change.clone());
            }));
            subscriptions.push((watch.informer.clone(), id));
            tasks.push(tokio::spawn(indexing::follow(shared.clone(), which, rx)));
        }
        for informer in shared.view.informers().cloned().collect::<Vec<_>>() {
            let shared = shared.clone();
            tasks.push(tokio::spawn(async move {
                informer.wait_synced().await;
                shared
                    .ready
                    .send_modify(|pending| *pending = pending.saturating_sub(1));
            }));
        }

        // The primary informer may have synced before we subscribed.
        let resync_shared = shared.clone();
        let resync = manifest
            .resync_seconds
            .map(|s| Duration::from_secs(u64::from(s)));
        tasks.push(tokio::spawn(async move {
            resync_shared.primary.wait_synced().await;
            resync_shared.enqueue_all();
            let Some(period) = resync else { return };
            let mut tick = tokio::time::interval_at(Instant::now() + period, period);
            loop {
                tick.tick().await;
                resync_shared.enqueue_all();
            }
        }));

        for worker in 0..manifest.max_concurrency {
            let shared = shared.clone();
            let span = tracing::info_span!("worker", plugin = %manifest.name, worker);
            tasks.push(tokio::spawn(
                async move {
                    // As controller-runtime: no reconcile before every
                    // informer has listed and every index is built.
                    let mut ready = shared.ready.subscribe();
                    let _ = ready.wait_for(|pending| *pending == 0).await;
                    while let Some((key, queued)) = shared.queue.get().await {
                        reconcile::process(&shared, &key, queued).await;
                        shared.queue.done(&key);
                    }
                }
                .instrument(span),
            ));
        }
        tracing::info!(plugin = %manifest.name, version = %manifest.version, "controller started");
        Ok(Self {
            shared,
            tasks,
            subscriptions,
        })
    }

    pub fn manifest(&self) -> &Manifest {
        &self.shared.manifest
    }

    /// The running version of the plugin.
    pub fn plugin(&self) -> Plugin {
        self.shared.plugin()
    }

    /// Swaps in a new version of the plugin: reconciles that start from now
    /// on use it; those in flight finish on the old one.
    pub fn replace_plugin(&self, plugin: Plugin) {
        let old = std::mem::replace(
            &mut *self
                .shared
                .plugin
                .write()
                .unwrap_or_else(|e| e.into_inner()),
            plugin,
        );
        self.shared
            .stats
            .replaced_blocking_calls
            .fetch_add(old.blocking_calls(), std::sync::atomic::Ordering::Relaxed);
    }

    /// The controller's counters and timings now.
    pub fn stats(&self) -> StatsSnapshot {
        self.shared
            .stats
            .snapshot(self.shared.plugin().blocking_calls())
    }

    /// The objects filed in each of the plugin's indexes, by kind.
    pub fn index_sizes(&self) -> Vec<(String, usize)> {
        self.shared
            .indexed
            .iter()
            .map(|w| (w.kind.to_string(), w.index.read(|i| i.len())))
            .collect()
    }

    /// Keys waiting, scheduled and in flight.
    /// The work queue's numbers, as client-go's workqueue metrics have them.
    pub fn queue_metrics(&self) -> crate::queue::QueueMetrics {
        self.shared.queue.metrics()
    }

    pub fn queue_depth(&self) -> QueueDepth {
        let (ready, delayed, in_flight) = self.shared.queue.depth();
        QueueDepth {
            ready,
            delayed,
            in_flight,
        }
    }

    /// True once every informer this plugin uses has listed and its
    /// indexes are built.
    pub fn is_synced(&self) -> bool {
        self.shared.view.informers().all(|i| i.is_synced()) && *self.shared.ready.borrow() == 0
    }

    /// Why informers this plugin uses have not listed yet, one line each
    /// (e.g. the API server refuses access).
    pub fn sync_problems(&self) -> Vec<String> {
        self.shared
            .view
            .informers()
            .filter(|i| !i.is_synced())
            .filter_map(|i| Some(format!("{}: {}", i.spec(), i.stats().last_error()?)))
            .collect()
    }

    /// Stops taking work, lets in-flight reconciles finish within `grace`,
    /// and releases the informers.
    pub async fn shutdown(self, grace: Duration) {
        self.shared.queue.shut_down();
        if tokio::time::timeout(grace, self.shared.queue.drained())
            .await
            .is_err()
        {
            tracing::warn!(plugin = %self.shared.manifest.name, "reconciles still running after the grace period; abandoning them");
        }
        for task in &self.tasks {
            task.abort();
        }
        for (informer, id) in &self.subscriptions {
            informer.unsubscribe(*id);
        }
        tracing::info!(plugin = %self.shared.manifest.name, "controller stopped");
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.shared.queue.shut_down();
        for task in &self.tasks {
            task.abort();
        }
        for (informer, id) in &self.subscriptions {
            informer.unsubscribe(*id);
        }
    }
}

/// Turns changes of `reads` objects into primary keys through `map`.
async fn map_changes(shared: Arc<Shared>, mut rx: tokio::sync::mpsc::UnboundedReceiver<Text>) {
    while let Some(text) = rx.recv().await {
        map_one(&shared, text).await;
    }
}

/// Calls `map` for one changed object and enqueues the keys it returns
/// (the runtime checked each is of the kind the plugin reconciles).
async fn map_one(shared: &Arc<Shared>, text: Text) {
    match shared.plugin().map_async(text, shared.view()).await {
        Ok(refs) => {
            for r in &refs {
                shared.queue.add(r.key().into());
            }
        }
        Err(e) => tracing::warn!(plugin = %shared.manifest.name, error = %e, "map failed"),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
