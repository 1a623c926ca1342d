//! One plugin's controller: its informer subscriptions, its work queue and
//! its workers.
//!
//! Events only say which key to look at: the primary kind's events enqueue
//! the object, owned children's events enqueue their controller owner,
//! `reads` changes enqueue what the plugin's `map` says, and a resync
//! enqueues everything. A worker builds the request from the *current*
//! cache, calls the plugin on a blocking thread, and hands the outcome to
//! the writer.
//!
//! Expectations (as in client-go's ReplicaSet controller): after a reconcile
//! creates or deletes children, the key is not reconciled again until the
//! cache has seen those changes (or a timeout passes), so a plugin never
//! acts twice on a stale picture — e.g. creating pods twice.
//!
//! Like controller-runtime, workers start only once every informer the
//! plugin uses has listed and its indexes (`indexing.rs`) are built.

mod indexing;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use crate::cache::Change;
use crate::contract::{Manifest, Request, WriteFailure, now_ms};
use crate::discovery::DiscoveryError;
use crate::histogram::{Histogram, HistogramSnapshot};
use crate::index::SharedIndex;
use crate::informer::Informer;
use crate::informers::{Informers, PluginView};
use crate::model::{CacheReader, CachedObject, KindRef, ObjectKey, ObjectRef};
use crate::queue::{RateLimit, WorkQueue};
use crate::runtime::{Attempt, Plugin, PluginError};
use crate::writer::{Applied, Target, WriteError, Writer};
use indexing::{Binder, IndexedWatch};

/// How long a key waits for its own writes to show up in the cache.
const EXPECTATION_TIMEOUT: Duration = Duration::from_secs(30);
/// Delay before reconciling again after a conflict (the cache was behind).
const STALE_RETRY: Duration = Duration::from_millis(20);
/// After this many conflicts or not-founds in a row, a key is not the
/// cache being behind but a write that cannot succeed as it is (a namespace
/// that does not exist, say): it backs off like a failure and says so in an
/// event, instead of retrying every few milliseconds.
const STALE_STREAK: u32 = 5;

/// A plugin call first runs on the async worker itself, without the
/// hand-off to a blocking thread and back (which costs more than a typical
/// call), for at most this long (rounded up to the runtime's epoch tick);
/// one that runs out is repeated on a blocking thread with the full timeout.
const INLINE_BUDGET: Duration = Duration::from_millis(5);
/// Inline calls taking longer than this, several in a row (one alone may
/// just have been preempted) ...
const INLINE_SLOW: Duration = Duration::from_micros(500);
const SLOW_STREAK: u32 = 3;
/// ... or one that had to be repeated send the plugin's next this many
/// calls straight to a blocking thread, so a slow plugin (or one that
/// prints on every call) does not keep holding an async worker.
const CALLS_OFF_INLINE: u32 = 64;

/// Counters and timings for one plugin.
#[derive(Debug, Default)]
pub struct ControllerStats {
    pub reconciles: AtomicU64,
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
    /// Plugin calls made on a blocking thread rather than inline on the
    /// async worker (see [`INLINE_BUDGET`]).
    pub blocking_calls: AtomicU64,
}

/// A copy of [`ControllerStats`] at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub reconciles: u64,
    pub failures: u64,
    pub conflicts: u64,
    pub writes: u64,
    pub busy_micros: u64,
    pub blocking_calls: u64,
    pub queue_wait: HistogramSnapshot,
    pub reconcile_time: HistogramSnapshot,
}

impl ControllerStats {
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            reconciles: self.reconciles.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            conflicts: self.conflicts.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            busy_micros: self.busy_micros.load(Ordering::Relaxed),
            blocking_calls: self.blocking_calls.load(Ordering::Relaxed),
            queue_wait: self.queue_wait.snapshot(),
            reconcile_time: self.reconcile_time.snapshot(),
        }
    }
}

/// Writes of one reconcile the cache has yet to show.
struct Expectation {
    creates: Vec<ObjectRef>,
    /// The server's version of the newest create: a cache at or past it
    /// that lacks a created object saw it deleted (perhaps by a relist that
    /// never showed it at all), so there is nothing left to wait for.
    created_version: Option<u64>,
    deletes: Vec<ObjectRef>,
    deadline: Instant,
}

/// Everything a worker needs; shared by the workers of one plugin.
struct Shared {
    plugin: RwLock<Plugin>,
    manifest: Manifest,
    queue: WorkQueue<ObjectRef>,
    primary: Arc<Informer>,
    owns: Vec<(KindRef, Arc<Informer>)>,
    view: Arc<PluginView>,
    writer: Arc<Writer>,
    expectations: Mutex<HashMap<ObjectRef, Expectation>>,
    stats: ControllerStats,
    inline: InlinePolicy,
    /// The plugin's indexed watches and their indexes.
    indexed: Vec<IndexedWatch>,
    /// Informer syncs and index builds still awaited; workers start at 0.
    ready: tokio::sync::watch::Sender<usize>,
    /// Per key: why the last attempt's writes failed (for the next request),
    /// and how many conflicts in a row it has had.
    failed_writes: Mutex<HashMap<ObjectRef, WriteFailure>>,
    stale_streak: Mutex<HashMap<ObjectRef, u32>>,
}

/// Whether the plugin's next call runs inline on the async worker (see
/// [`INLINE_BUDGET`]).
#[derive(Default)]
struct InlinePolicy {
    /// Calls still to make on a blocking thread before trying inline again.
    off: AtomicU32,
    /// Slow inline calls in a row.
    slow_streak: AtomicU32,
}

impl InlinePolicy {
    /// Should this call be tried inline? Counts down the calls sent off.
    fn allows(&self) -> bool {
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

fn primary_ref(kind: &KindRef, key: &ObjectKey) -> ObjectRef {
    ObjectRef {
        api_version: kind.api_version.clone(),
        kind: kind.kind.clone(),
        namespace: key.namespace.as_deref().map(str::to_owned),
        name: key.name.to_string(),
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
            });
        }
        let indexes = indexed
            .iter()
            .map(|w| (w.kind.clone(), w.index.clone()))
            .collect();
        // Every informer's sync, and every index's build.
        let (ready, _) = tokio::sync::watch::channel(all.len() + indexed.len());
        let view = Arc::new(PluginView::new(all).with_indexes(indexes));

        let shared = Arc::new(Shared {
            plugin: RwLock::new(plugin),
            manifest: manifest.clone(),
            queue: WorkQueue::new(RateLimit::default()),
            primary: primary.clone(),
            owns: owns.clone(),
            view,
            writer,
            expectations: Mutex::new(HashMap::new()),
            stats: ControllerStats::default(),
            inline: InlinePolicy::default(),
            indexed,
            ready,
            failed_writes: Mutex::new(HashMap::new()),
            stale_streak: Mutex::new(HashMap::new()),
        });
        let mut subscriptions = Vec::new();
        let mut tasks = Vec::new();

        let kind = manifest.reconciles.kind.clone();
        let queue = shared.queue.clone();
        let id = primary.subscribe(Arc::new(move |change: &Change| {
            queue.add(primary_ref(&kind, &change.object().key().into()));
        }));
        subscriptions.push((primary.clone(), id));

        for (_, informer) in &owns {
            let kind = manifest.reconciles.kind.clone();
            let queue = shared.queue.clone();
            let id = informer.subscribe(Arc::new(move |change: &Change| {
                let mut owners = vec![change.object()];
                if let Change::Modified { old, .. } = change {
                    owners.push(old); // adopted away: the old owner looks too
                }
                for child in owners {
                    if let Some(c) = child.controller()
                        && c.kind == kind.kind
                        && group(c.api_version) == group(&kind.api_version)
                    {
                        queue.add(ObjectRef {
                            api_version: kind.api_version.clone(),
                            kind: kind.kind.clone(),
                            namespace: child.key().namespace.map(str::to_owned),
                            name: c.name.to_string(),
                        });
                    }
                }
            }));
            subscriptions.push((informer.clone(), id));
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
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Arc<str>>();
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
            enqueue_all(&resync_shared);
            let Some(period) = resync else { return };
            let mut tick = tokio::time::interval_at(Instant::now() + period, period);
            loop {
                tick.tick().await;
                enqueue_all(&resync_shared);
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
                        process(&shared, &key, queued).await;
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

    pub fn plugin(&self) -> Plugin {
        self.shared
            .plugin
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Swaps in a new version of the plugin: reconciles that start from now
    /// on use it; those in flight finish on the old one.
    pub fn replace_plugin(&self, plugin: Plugin) {
        *self
            .shared
            .plugin
            .write()
            .unwrap_or_else(|e| e.into_inner()) = plugin;
    }

    pub fn stats(&self) -> &ControllerStats {
        &self.shared.stats
    }

    /// (ready, delayed, in flight) keys.
    pub fn queue_depth(&self) -> (usize, usize, usize) {
        self.shared.queue.depth()
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

/// The API group of an apiVersion (`apps/v1` → `apps`, `v1` → ``).
fn group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

fn enqueue_all(shared: &Shared) {
    let kind = &shared.manifest.reconciles.kind;
    for key in shared.primary.cache().read(|s| s.keys()) {
        shared.queue.add(primary_ref(kind, &key));
    }
}

/// Turns changes of `reads` objects into primary keys through `map`.
async fn map_changes(shared: Arc<Shared>, mut rx: tokio::sync::mpsc::UnboundedReceiver<Arc<str>>) {
    while let Some(text) = rx.recv().await {
        map_one(&shared, text).await;
    }
}

/// Calls `map` for one changed object and enqueues the keys it returns.
async fn map_one(shared: &Arc<Shared>, text: Arc<str>) {
    let view: Arc<dyn CacheReader> = shared.view.clone();
    let (t, v) = (text.clone(), view.clone());
    let result = call_plugin_fn(
        shared,
        |plugin, budget| plugin.try_map(&text, view, budget),
        move |plugin| plugin.map(t.to_string(), v),
    )
    .await;
    match result {
        Ok(keys) => keys.into_iter().for_each(|k| shared.queue.add(k)),
        Err(e) => tracing::warn!(plugin = %shared.manifest.name, error = %e, "map failed"),
    }
}

/// Runs one plugin call the way every call runs: inline on the async worker
/// while the plugin's calls are quick (`inline` gets the budget and answers
/// `None` when it could not finish), else — or when the inline try had to
/// give up — on a blocking thread (`blocking`).
async fn call_plugin_fn<R: Send + 'static>(
    shared: &Shared,
    inline: impl FnOnce(&Plugin, Duration) -> Option<Result<R, PluginError>>,
    blocking: impl FnOnce(Plugin) -> Result<R, PluginError> + Send + 'static,
) -> Result<R, PluginError> {
    let plugin = shared
        .plugin
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    if shared.inline.allows() {
        let started = std::time::Instant::now();
        match inline(&plugin, INLINE_BUDGET) {
            Some(result) => {
                shared.inline.finished(started.elapsed());
                return result;
            }
            None => shared.inline.unfinished(),
        }
    }
    shared.stats.blocking_calls.fetch_add(1, Ordering::Relaxed);
    tokio::task::spawn_blocking(move || blocking(plugin))
        .await
        .unwrap_or_else(|e| {
            Err(PluginError::Failed {
                plugin: shared.manifest.name.clone(),
                export: "call",
                message: format!("the call's thread failed: {e}"),
                retry: true,
            })
        })
}

/// One reconcile of `key`, start to finish. Never fails: every problem ends
/// in a requeue decision and a log line naming the plugin and key.
async fn process(shared: &Arc<Shared>, key: &ObjectRef, queued: Instant) {
    let span = tracing::info_span!("reconcile", plugin = %shared.manifest.name, key = %key);
    async {
        if let Some(wait) = pending_expectation(shared, key) {
            // Our own last writes are not in the cache yet; their events will
            // enqueue the key again. The delayed add is the fallback.
            shared.queue.add_after(key.clone(), wait);
            return;
        }
        let stats = &shared.stats;
        stats
            .queue_wait
            .observe(Instant::now().saturating_duration_since(queued));
        let started = std::time::Instant::now();
        let result = reconcile(shared, key).await;
        let took = started.elapsed();
        stats.reconcile_time.observe(took);
        stats.reconciles.fetch_add(1, Ordering::Relaxed);
        stats
            .busy_micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
        if !matches!(result, Err(Failure::Stale(_))) {
            lock(&shared.stale_streak).remove(key);
        }
        match result {
            Ok(requeue) => {
                shared.queue.forget(key);
                if let Some(after) = requeue {
                    shared.queue.add_after(key.clone(), after);
                }
            }
            Err(Failure::Stale(e)) => {
                shared.stats.conflicts.fetch_add(1, Ordering::Relaxed);
                let streak = {
                    let mut streaks = lock(&shared.stale_streak);
                    let n = streaks.entry(key.clone()).or_default();
                    *n += 1;
                    *n
                };
                if streak < STALE_STREAK {
                    tracing::debug!(error = %e, "cache was behind; reconciling again");
                    shared.queue.add_after(key.clone(), STALE_RETRY);
                } else {
                    // Not the cache being behind: a write that keeps failing.
                    let delay = shared.queue.add_rate_limited(key.clone());
                    tracing::warn!(error = %e, retry_in = ?delay, "a write keeps failing with a conflict or not-found");
                    report(shared, key, format!("a write keeps failing: {e}")).await;
                }
            }
            Err(Failure::Race(e)) => {
                shared.stats.conflicts.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(error = %e, "another decision came first; reconciling again");
                shared.queue.add_after(key.clone(), STALE_RETRY);
            }
            Err(Failure::Retry(e)) => {
                shared.stats.failures.fetch_add(1, Ordering::Relaxed);
                let delay = shared.queue.add_rate_limited(key.clone());
                tracing::warn!(error = %e, retry_in = ?delay, "reconcile failed");
                // No delay in the message: repeats must aggregate.
                report(shared, key, e).await;
            }
            Err(Failure::GiveUp(e)) => {
                shared.stats.failures.fetch_add(1, Ordering::Relaxed);
                shared.queue.forget(key);
                tracing::warn!(error = %e, "reconcile failed; not retrying until the object changes");
                report(shared, key, format!("{e} (not retried until the object changes)")).await;
            }
        }
    }
    .instrument(span)
    .await
}

/// Tells the object's users why its reconcile failed: a Warning event on
/// it (when it still exists), which `kubectl describe` shows.
async fn report(shared: &Shared, key: &ObjectRef, message: String) {
    let object_key = ObjectKey::new(key.namespace.as_deref(), &key.name);
    let Some(object) = shared.primary.cache().read(|s| s.get(&object_key)) else {
        return;
    };
    // Keep events readable; the full error is in the log.
    const MAX: usize = 1024;
    let message = if message.len() > MAX {
        format!("{}…", &message[..message.floor_char_boundary(MAX)])
    } else {
        message
    };
    shared
        .writer
        .report_failure(&shared.manifest, key, Some(&object), message)
        .await;
}

enum Failure {
    Stale(String),
    /// Another decision came first (a binding's assumption was refused):
    /// reconcile again soon, however often it happens.
    Race(String),
    Retry(String),
    GiveUp(String),
}

impl From<WriteError> for Failure {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Stale(e) => Failure::Stale(e.to_string()),
            WriteError::Assumed(m) => Failure::Race(m),
            other => Failure::Retry(other.to_string()),
        }
    }
}

impl From<PluginError> for Failure {
    fn from(e: PluginError) -> Self {
        if e.retry() {
            Failure::Retry(e.to_string())
        } else {
            Failure::GiveUp(e.to_string())
        }
    }
}

/// How long `key` must still wait for its expectations, if at all.
fn pending_expectation(shared: &Shared, key: &ObjectRef) -> Option<Duration> {
    let mut expectations = shared
        .expectations
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let e = expectations.get(key)?;
    let now = Instant::now();
    let owned = |kind: KindRef| {
        shared
            .owns
            .iter()
            .filter(move |(owned, _)| *owned == kind)
            .map(|(_, i)| i)
    };
    let lookup = |r: &ObjectRef| -> Option<Arc<CachedObject>> {
        let k = ObjectKey::new(r.namespace.as_deref(), &r.name);
        owned(r.kind_ref()).find_map(|i| i.cache().read(|s| s.get(&k)))
    };
    // A cache at or past the newest create's version that lacks the object
    // saw it deleted since: nothing left to wait for.
    let caught_up = |r: &ObjectRef| {
        e.created_version.is_some_and(|want| {
            owned(r.kind_ref()).any(|i| {
                i.cache()
                    .read(|s| s.version())
                    .is_some_and(|have| have >= want)
            })
        })
    };
    let seen = e
        .creates
        .iter()
        .all(|r| lookup(r).is_some() || caught_up(r))
        && e.deletes
            .iter()
            .all(|r| lookup(r).is_none_or(|o| o.is_deleting()));
    if seen || now >= e.deadline {
        if !seen {
            tracing::warn!(key = %key, "the cache did not show this reconcile's writes in time; going on");
        }
        expectations.remove(key);
        return None;
    }
    Some(e.deadline - now)
}

fn expect(shared: &Shared, key: &ObjectRef, applied: &Applied) {
    let owned = |r: &&ObjectRef| shared.owns.iter().any(|(k, _)| *k == r.kind_ref());
    let creates: Vec<ObjectRef> = applied.created.iter().filter(owned).cloned().collect();
    let deletes: Vec<ObjectRef> = applied.deleted.iter().filter(owned).cloned().collect();
    if creates.is_empty() && deletes.is_empty() {
        return;
    }
    shared
        .expectations
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(
            key.clone(),
            Expectation {
                creates,
                created_version: applied.created_version,
                deletes,
                deadline: Instant::now() + EXPECTATION_TIMEOUT,
            },
        );
}

/// Builds the request, calls the plugin, carries out the outcome. Returns
/// the requested requeue delay.
async fn reconcile(shared: &Arc<Shared>, key: &ObjectRef) -> Result<Option<Duration>, Failure> {
    let manifest = &shared.manifest;
    let object_key = ObjectKey::new(key.namespace.as_deref(), &key.name);
    let object = shared.primary.cache().read(|s| s.get(&object_key));

    let mut finalize = false;
    if let (Some(finalizer), Some(obj)) = (&manifest.finalizer, &object) {
        if obj.is_deleting() {
            if !obj.has_finalizer(finalizer) {
                return Ok(None); // ours is done; others' finalizers are theirs
            }
            finalize = true;
        } else if !obj.has_finalizer(finalizer) {
            shared
                .writer
                .add_finalizer(manifest, key, obj, finalizer)
                .await?;
            // The update comes back through the informer and requeues us.
            return Ok(None);
        }
    }

    let owned: Vec<(KindRef, Arc<CachedObject>)> = match &object {
        Some(obj) if !obj.uid().is_empty() => shared
            .owns
            .iter()
            .flat_map(|(kind, informer)| {
                informer
                    .cache()
                    .read(|s| s.controlled_by(obj.uid()))
                    .into_iter()
                    .filter(|child| {
                        child
                            .controller()
                            .is_some_and(|c| c.kind == manifest.reconciles.kind.kind)
                    })
                    .map(move |child| (kind.clone(), child))
            })
            .collect(),
        _ => Vec::new(),
    };
    let request = Request {
        key: key.clone(),
        object: object.as_ref().map(|o| o.text().to_string()),
        owned: owned.iter().map(|(_, o)| o.text().to_string()).collect(),
        attempt: shared.queue.failures(key),
        now_ms: now_ms(),
        last_failure: lock(&shared.failed_writes).get(key).cloned(),
    };
    let view: Arc<dyn CacheReader> = shared.view.clone();
    let request = Arc::new(request);
    let (r, v) = (request.clone(), view.clone());
    let outcome = call_plugin_fn(
        shared,
        |plugin, budget| match plugin.try_reconcile(finalize, &request, view, budget) {
            Attempt::Done(result) => Some(result),
            Attempt::Unfinished => None,
        },
        move |plugin| {
            if finalize {
                plugin.finalize(&r, v)
            } else {
                plugin.reconcile(&r, v)
            }
        },
    )
    .await?;

    let binder = Binder::prepare(shared, &outcome).await;
    let target = Target {
        manifest,
        key,
        primary: object.as_deref(),
        owned: &owned,
        live: shared.view.as_ref(),
        assume: binder.as_ref().map(|b| b as &dyn crate::writer::Assume),
    };
    let mut applied = Applied::default();
    let result = shared.writer.execute(&target, &outcome, &mut applied).await;
    remember_failure(shared, key, &applied, result.as_ref().err());
    shared
        .stats
        .writes
        .fetch_add(applied.requests as u64, Ordering::Relaxed);
    // Even when a later write failed, the next reconcile must wait for the
    // creates and deletes that did happen, or it would repeat them.
    expect(shared, key, &applied);
    result?;
    if finalize && let (Some(finalizer), Some(obj)) = (&manifest.finalizer, &object) {
        shared
            .writer
            .remove_finalizer(manifest, key, obj, finalizer)
            .await?;
    }
    Ok(outcome.requeue_after)
}

/// Remembers why a write of this attempt failed, for the next request's
/// `last-failure`; a clean attempt forgets it.
fn remember_failure(
    shared: &Shared,
    key: &ObjectRef,
    applied: &Applied,
    error: Option<&WriteError>,
) {
    let mut failed = lock(&shared.failed_writes);
    let api = match error {
        Some(WriteError::Api(e) | WriteError::Stale(e)) => Some(e),
        _ => None,
    };
    match (api, applied.failed_at) {
        (Some(e), Some(write)) => {
            failed.insert(
                key.clone(),
                WriteFailure {
                    write,
                    code: e.code,
                    reason: e.reason.clone(),
                    message: e.message.clone(),
                },
            );
        }
        (None, _) if error.is_none() => {
            failed.remove(key);
        }
        _ => {}
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
