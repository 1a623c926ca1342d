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
//! Handlers run synchronously on the informer's task after the cache has
//! been updated, and must only do cheap, non-blocking work (enqueue a key).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{Semaphore, watch};
use tokio_util::sync::CancellationToken;

use crate::cache::{Cache, Change};
use crate::client::{ApiClient, ApiError};
use crate::discovery::ApiResource;
use crate::model::{CachedObject, ObjectKey};

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
        let cache = Cache::new();
        let handlers: Handlers = Arc::default();
        let (synced_tx, synced) = watch::channel(false);
        let stats = Arc::new(InformerStats::default());
        let stop = CancellationToken::new();
        let task = Reflector {
            client,
            spec: spec.clone(),
            config,
            cache: cache.clone(),
            handlers: handlers.clone(),
            synced: synced_tx,
            stats: stats.clone(),
            relists,
            listed_once: AtomicBool::new(false),
        };
        let token = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
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
}

impl Drop for Informer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// How one watch connection ended.
enum WatchEnd {
    /// The server closed it (timeoutSeconds): resume.
    Closed,
    /// 410: the version is too old; list again.
    Gone,
    /// Nothing arrived for the idle timeout.
    Idle,
    Failed(String),
    /// The server does not do streaming lists: use paged LISTs.
    NoStreaming(String),
}

/// The task behind an informer.
struct Reflector {
    client: ApiClient,
    spec: InformerSpec,
    config: InformerConfig,
    cache: Cache,
    handlers: Handlers,
    synced: watch::Sender<bool>,
    stats: Arc<InformerStats>,
    relists: Arc<Semaphore>,
    listed_once: AtomicBool,
}

impl Reflector {
    async fn run(self) {
        let mut version: Option<String> = None;
        let mut failures = 0u32;
        let mut streaming = self.config.streaming_lists;
        loop {
            let from = match &version {
                Some(v) => Some(v.clone()),
                None if streaming => None,
                None => {
                    match self.list().await {
                        Ok(rv) => {
                            version = Some(rv);
                            failures = 0;
                        }
                        Err(e) => {
                            self.stats.failed(format!("list failed: {e}"));
                            failures += 1;
                            tracing::warn!(informer = %self.spec, error = %e, attempt = failures, "list failed; retrying");
                            tokio::time::sleep(self.backoff(failures)).await;
                        }
                    }
                    continue;
                }
            };
            let end = self.watch(from.as_deref(), &mut version).await;
            self.stats.watch_restarts.fetch_add(1, Ordering::Relaxed);
            match end {
                WatchEnd::Closed => failures = 0,
                WatchEnd::Gone => {
                    tracing::info!(informer = %self.spec, version = ?from, "resourceVersion expired (410); listing again");
                    version = None;
                }
                WatchEnd::Idle => {
                    tracing::warn!(informer = %self.spec, timeout = ?self.config.idle_timeout, "watch sent nothing; reconnecting");
                }
                WatchEnd::NoStreaming(why) => {
                    tracing::info!(informer = %self.spec, reason = %why, "the server does not stream lists; listing in pages");
                    streaming = false;
                }
                WatchEnd::Failed(e) => {
                    self.stats.failed(format!("watch failed: {e}"));
                    failures += 1;
                    tracing::warn!(informer = %self.spec, error = %e, attempt = failures, "watch failed; resuming");
                    tokio::time::sleep(self.backoff(failures)).await;
                }
            }
        }
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

    /// Lists everything (paged), replaces the cache, notifies; returns the
    /// list's resourceVersion.
    async fn list(&self) -> Result<String, ApiError> {
        let _permit = self.relists.acquire().await;
        let resource = &self.spec.resource;
        'restart: loop {
            let mut objects = Vec::new();
            let mut token: Option<String> = None;
            loop {
                let mut params = vec![("limit".to_owned(), self.config.page_size.to_string())];
                if let Some(t) = &token {
                    params.push(("continue".into(), t.clone()));
                }
                let body = match self.client.get(&self.query(&mut params)).await {
                    Ok(body) => body,
                    // The continue token expired mid-list: start over.
                    Err(e) if e.is_gone() && token.is_some() => continue 'restart,
                    Err(e) => return Err(e),
                };
                let page: ListPage<'_> =
                    serde_json::from_slice(&body).map_err(|e| malformed(e.to_string()))?;
                for item in page.items {
                    let text = with_type_meta(item.get(), &resource.api_version, &resource.kind);
                    if let Some(o) = self.accept(&text, "list") {
                        objects.push(o);
                    }
                }
                match page.metadata.continue_token.filter(|t| !t.is_empty()) {
                    Some(next) => token = Some(next),
                    None => {
                        let version = page.metadata.resource_version.unwrap_or_default();
                        self.replace_all(objects, &version);
                        return Ok(version);
                    }
                }
            }
        }
    }

    /// `text` as a cached object, unless it is larger than the informer
    /// accepts or cannot be parsed: then it is skipped — counted, and logged
    /// with its key when that can be read — so that one bad object never
    /// stops the informer (failing the watch would only bring it back).
    fn accept(&self, text: &str, what: &str) -> Option<CachedObject> {
        let refused = if text.len() > MAX_OBJECT {
            Err(format!(
                "{} bytes, more than the {MAX_OBJECT} an informer accepts",
                text.len()
            ))
        } else {
            CachedObject::parse(text).map_err(|e| e.to_string())
        };
        match refused {
            Ok(o) => Some(o),
            Err(error) => {
                self.stats.skipped.fetch_add(1, Ordering::Relaxed);
                let key = key_of(text);
                tracing::warn!(informer = %self.spec, key = %key, %error, "skipping an object in {what}");
                None
            }
        }
    }

    /// Replaces the cache with a full state at `version` and tells the
    /// handlers what changed (deletes missed meanwhile included).
    fn replace_all(&self, objects: Vec<CachedObject>, version: &str) {
        let changes = self.cache.write(|s| {
            s.set_version(version);
            s.replace_all(objects)
        });
        self.stats.recovered();
        self.notify(&changes);
        self.stats.lists.fetch_add(1, Ordering::Relaxed);
        if self.listed_once.swap(true, Ordering::Relaxed) {
            self.stats.relists.fetch_add(1, Ordering::Relaxed);
        }
        let _ = self.synced.send(true);
        tracing::debug!(informer = %self.spec, %version, objects = self.cache.read(|s| s.len()), "full state applied");
    }

    /// One watch connection: from `from`, or — with `None` — a streaming
    /// list that fetches the full state first. Keeps `version` at the last
    /// version seen (it stays `None` until a streaming list is complete).
    async fn watch(&self, from: Option<&str>, version: &mut Option<String>) -> WatchEnd {
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
        // A streaming list holds a relist permit until its state is complete.
        let mut initial: Option<(Vec<CachedObject>, _)> = None;
        match from {
            Some(from) => params.push(("resourceVersion".into(), from.to_owned())),
            None => {
                params.push(("sendInitialEvents".into(), "true".into()));
                params.push(("resourceVersionMatch".into(), "NotOlderThan".into()));
                initial = Some((Vec::new(), self.relists.acquire().await));
            }
        }
        let path = self.query(&mut params);
        let mut stream = match self.client.stream(&path).await {
            Ok(s) => {
                self.stats.recovered();
                Box::pin(s)
            }
            Err(e) if e.is_gone() => return WatchEnd::Gone,
            Err(e) if from.is_none() && matches!(e.code, 400 | 405 | 422) => {
                return WatchEnd::NoStreaming(e.to_string());
            }
            Err(e) => return WatchEnd::Failed(e.to_string()),
        };
        let mut lines = LineBuffer::default();
        loop {
            let chunk = match tokio::time::timeout(self.config.idle_timeout, stream.next()).await {
                Err(_) => return WatchEnd::Idle,
                Ok(None) => return WatchEnd::Closed,
                Ok(Some(Err(e))) => return WatchEnd::Failed(e.to_string()),
                Ok(Some(Ok(chunk))) => chunk,
            };
            let skipped = lines.push(&chunk);
            if skipped > 0 {
                self.stats
                    .skipped
                    .fetch_add(skipped as u64, Ordering::Relaxed);
                tracing::warn!(informer = %self.spec, "skipping a watch event longer than {MAX_LINE} bytes");
            }
            while let Some(line) = lines.next_line() {
                let event: WatchEvent<'_> = match serde_json::from_slice(&line) {
                    Ok(event) => event,
                    Err(e) => return WatchEnd::Failed(format!("malformed watch event: {e}")),
                };
                let applied = match &mut initial {
                    Some((objects, _)) => self.initial_event(&event, objects),
                    None => self.apply_event(&event),
                };
                match applied {
                    Ok(Some(rv)) => {
                        if let Some((objects, _permit)) = initial.take() {
                            self.replace_all(objects, &rv);
                            self.stats.streamed_lists.fetch_add(1, Ordering::Relaxed);
                        }
                        *version = Some(rv);
                    }
                    Ok(None) => {}
                    Err(end) => return end,
                }
            }
        }
    }

    /// One event of a streaming list's initial state: objects are collected;
    /// the end bookmark returns the state's resourceVersion.
    fn initial_event(
        &self,
        event: &WatchEvent<'_>,
        objects: &mut Vec<CachedObject>,
    ) -> Result<Option<String>, WatchEnd> {
        match event.kind {
            "ADDED" => {
                if let Some(o) = self.accept(event.object.get(), "streaming list") {
                    objects.push(o);
                }
                Ok(None)
            }
            "BOOKMARK" => {
                let b: Bookmark = serde_json::from_str(event.object.get())
                    .map_err(|e| WatchEnd::Failed(format!("malformed bookmark: {e}")))?;
                let end = b
                    .metadata
                    .annotations
                    .get("k8s.io/initial-events-end")
                    .is_some_and(|v| v == "true");
                if end {
                    Ok(Some(b.metadata.resource_version))
                } else {
                    Err(WatchEnd::NoStreaming(
                        "a bookmark came before the end of the initial events".into(),
                    ))
                }
            }
            "ERROR" => self.apply_event(event).map(|_| None),
            other => Err(WatchEnd::Failed(format!(
                "{other} event before the initial events ended"
            ))),
        }
    }

    /// Applies one watch event; returns the resourceVersion it carried.
    fn apply_event(&self, event: &WatchEvent<'_>) -> Result<Option<String>, WatchEnd> {
        let object = event.object.get();
        match event.kind {
            "ADDED" | "MODIFIED" | "DELETED" => {
                let Some(object) = self.accept(object, event.kind) else {
                    // Skipped; its version still counts as seen, so a
                    // resumed watch does not bring it back.
                    return Ok(version_of(object));
                };
                let rv = object.resource_version().to_owned();
                self.stats.events.fetch_add(1, Ordering::Relaxed);
                if event.kind == "DELETED" {
                    let key = ObjectKey::from(object.key());
                    let change = self.cache.write(|s| {
                        s.set_version(&rv);
                        s.remove(&key, Some(object))
                    });
                    if let Some(change) = change {
                        self.notify(std::slice::from_ref(&change));
                    }
                } else {
                    self.notify(&self.cache.write(|s| {
                        s.set_version(&rv);
                        s.upsert(object)
                    }));
                }
                Ok(Some(rv).filter(|rv| !rv.is_empty()))
            }
            "BOOKMARK" => {
                let b: Bookmark = serde_json::from_str(object)
                    .map_err(|e| WatchEnd::Failed(format!("malformed bookmark: {e}")))?;
                self.cache
                    .write(|s| s.set_version(&b.metadata.resource_version));
                Ok(Some(b.metadata.resource_version))
            }
            "ERROR" => {
                #[derive(Deserialize, Default)]
                struct Status {
                    #[serde(default)]
                    code: u16,
                    #[serde(default)]
                    message: String,
                }
                let status: Status = serde_json::from_str(object).unwrap_or_default();
                if status.code == 410 {
                    Err(WatchEnd::Gone)
                } else {
                    Err(WatchEnd::Failed(format!(
                        "watch error {}: {}",
                        status.code, status.message
                    )))
                }
            }
            other => Err(WatchEnd::Failed(format!(
                "unknown watch event type {other:?}"
            ))),
        }
    }

    fn notify(&self, changes: &[Change]) {
        if changes.is_empty() {
            return;
        }
        let handlers = self.handlers.read().unwrap_or_else(|e| e.into_inner());
        for change in changes {
            for (_, handler) in handlers.iter() {
                handler(change);
            }
        }
    }
}

fn malformed(message: String) -> ApiError {
    ApiError {
        method: http::Method::GET,
        path: String::new(),
        code: 0,
        reason: "Malformed".into(),
        message: format!("malformed list response: {message}"),
    }
}

#[derive(Deserialize)]
struct ListPage<'a> {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(borrow, default)]
    items: Vec<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ListMeta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

#[derive(Deserialize)]
struct Bookmark {
    metadata: BookmarkMeta,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BookmarkMeta {
    resource_version: String,
    #[serde(default)]
    annotations: std::collections::HashMap<String, String>,
}

#[derive(Deserialize)]
struct WatchEvent<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    object: &'a RawValue,
}

/// List items come without `apiVersion`/`kind`; plugins get whole objects.
fn with_type_meta<'a>(item: &'a str, api_version: &str, kind: &str) -> std::borrow::Cow<'a, str> {
    #[derive(Deserialize)]
    struct TypeMeta {
        #[serde(default)]
        kind: Option<serde::de::IgnoredAny>,
    }
    let has_kind = serde_json::from_str::<TypeMeta>(item).is_ok_and(|t| t.kind.is_some());
    if has_kind {
        return item.into();
    }
    let rest = item
        .trim_start()
        .strip_prefix('{')
        .unwrap_or(item)
        .trim_start();
    let sep = if rest.starts_with('}') { "" } else { "," };
    format!(
        "{{\"apiVersion\":{},\"kind\":{}{sep}{rest}",
        serde_json::Value::from(api_version),
        serde_json::Value::from(kind)
    )
    .into()
}

/// The largest object an informer caches: the API server's own request
/// limit (3 MiB), with room for what it adds.
const MAX_OBJECT: usize = 4 << 20;
/// The longest watch event kept whole; a longer one is skipped as it
/// streams by, never buffered.
const MAX_LINE: usize = MAX_OBJECT + (64 << 10);

/// Splits a watch stream into events. An event longer than [`MAX_LINE`] is
/// dropped as its bytes arrive (and counted), so neither memory nor the
/// watch is held by it.
#[derive(Default)]
struct LineBuffer {
    buf: Vec<u8>,
    /// Inside an event too long to keep: drop bytes up to its newline.
    skipping: bool,
}

impl LineBuffer {
    /// Adds a chunk; returns how many over-long events began being skipped.
    fn push(&mut self, mut chunk: &[u8]) -> usize {
        if self.skipping {
            match chunk.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    self.skipping = false;
                    chunk = &chunk[end + 1..];
                }
                None => return 0,
            }
        }
        self.buf.extend_from_slice(chunk);
        // What follows the last newline is the event still arriving.
        let complete = self
            .buf
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |n| n + 1);
        if self.buf.len() - complete <= MAX_LINE {
            return 0;
        }
        self.buf.truncate(complete);
        self.skipping = true;
        1
    }

    fn next_line(&mut self) -> Option<Vec<u8>> {
        loop {
            let end = self.buf.iter().position(|&b| b == b'\n')?;
            let line: Vec<u8> = self.buf.drain(..=end).collect();
            let trimmed = line.trim_ascii();
            if !trimmed.is_empty() {
                return Some(trimmed.to_vec());
            }
        }
    }
}

/// What an object's text says of its identity, read leniently: for logs of
/// objects that are skipped.
#[derive(serde::Deserialize, Default)]
struct Identity {
    #[serde(default)]
    metadata: IdentityMeta,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct IdentityMeta {
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
}

fn identity(text: &str) -> IdentityMeta {
    serde_json::from_str::<Identity>(text)
        .unwrap_or_default()
        .metadata
}

/// `namespace/name` of an object, or `?` when even that cannot be read.
fn key_of(text: &str) -> String {
    let id = identity(text);
    match (id.namespace, id.name) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        (None, Some(name)) => name,
        _ => "?".into(),
    }
}

/// The resourceVersion an object's text carries, if it can be read.
fn version_of(text: &str) -> Option<String> {
    identity(text).resource_version.filter(|rv| !rv.is_empty())
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
    fn list_items_get_their_type_meta() {
        let item = r#"{"metadata":{"name":"a"}}"#;
        let full = with_type_meta(item, "v1", "Pod");
        let v: serde_json::Value = serde_json::from_str(&full).unwrap();
        assert_eq!(
            (v["apiVersion"].as_str(), v["kind"].as_str()),
            (Some("v1"), Some("Pod"))
        );
        assert_eq!(v["metadata"]["name"], "a");
        let typed = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}"#;
        assert!(matches!(
            with_type_meta(typed, "v1", "Pod"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            with_type_meta("{}", "v1", "Pod"),
            r#"{"apiVersion":"v1","kind":"Pod"}"#
        );
    }

    #[test]
    fn lines_are_split_across_chunks() {
        let mut lines = LineBuffer::default();
        assert_eq!(lines.push(b"{\"a\":1}\n{\"b\""), 0);
        assert_eq!(lines.next_line().unwrap(), b"{\"a\":1}");
        assert_eq!(lines.next_line(), None);
        lines.push(b":2}\n\n");
        assert_eq!(lines.next_line().unwrap(), b"{\"b\":2}");
        assert_eq!(lines.next_line(), None);
    }

    /// Limit: a watch event over `MAX_LINE` is skipped as it streams by
    /// (never buffered whole), and the events around it still arrive.
    #[test]
    fn an_over_long_event_is_skipped_not_fatal() {
        let mut lines = LineBuffer::default();
        let big = vec![b'x'; MAX_LINE / 2];
        assert_eq!(lines.push(b"{\"before\":1}\n"), 0);
        assert_eq!(lines.push(&big), 0);
        assert_eq!(lines.push(&big), 0);
        assert_eq!(lines.push(&big), 1, "the third piece passes the limit");
        assert!(lines.buf.len() < 64, "nothing of it is kept");
        assert_eq!(lines.push(&big), 0);
        assert_eq!(lines.push(b"xx\n{\"after\":2}\n"), 0);
        assert_eq!(lines.next_line().unwrap(), b"{\"before\":1}");
        assert_eq!(lines.next_line().unwrap(), b"{\"after\":2}");
        assert_eq!(lines.next_line(), None);
    }

    #[test]
    fn skipped_objects_are_known_by_their_key_and_version() {
        let text =
            r#"{"metadata":{"name":"p","namespace":"ns","resourceVersion":"42","labels":7}}"#;
        assert_eq!(key_of(text), "ns/p");
        assert_eq!(version_of(text).as_deref(), Some("42"));
        assert_eq!(key_of("not json"), "?");
        assert_eq!(version_of("[]"), None);
    }

    #[test]
    fn selectors_are_encoded_into_the_query() {
        assert_eq!(percent_encode("app in (a,b)"), "app%20in%20%28a%2Cb%29");
        assert_eq!(percent_encode("x=y"), "x%3Dy");
    }
}
