//! The host: one API client, shared informers, one writer, one wasm runtime,
//! and a controller for each loaded plugin.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::client::ApiClient;
use crate::controller::{Controller, QueueDepth, StatsSnapshot};
use crate::discovery::{Discovery, DiscoveryError};
use crate::informer::InformerConfig;
use crate::informers::Informers;
use crate::runtime::{Plugin, Runtime, RuntimeConfig};
use crate::writer::{ThrottleStats, WriteLimit, Writer};

/// Settings of a host.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub runtime: RuntimeConfig,
    pub informer: InformerConfig,
    /// How many informers may list at once.
    pub max_relists: usize,
    /// How long shutdown waits for in-flight reconciles.
    pub grace: Duration,
    /// Each plugin's write rate limit unless its instance sets its own.
    pub write_limit: WriteLimit,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            runtime: RuntimeConfig::default(),
            informer: InformerConfig::default(),
            max_relists: 4,
            grace: Duration::from_secs(10),
            write_limit: WriteLimit::default(),
        }
    }
}

/// What `/plugins` and `windlass plugins` show for one plugin file.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginStatus {
    pub file: String,
    pub name: Option<String>,
    pub version: Option<String>,
    pub digest: Option<String>,
    /// The contract version the plugin was built against, e.g. `0.2.0`.
    pub contract: Option<String>,
    pub reconciles: Option<String>,
    pub synced: bool,
    pub queue_ready: usize,
    pub queue_delayed: usize,
    pub in_flight: usize,
    pub reconciles_total: u64,
    pub failures_total: u64,
    pub error: Option<String>,
}

/// One running plugin's counters and queue depth, for `/metrics` and tests.
#[derive(Debug, Clone)]
pub struct ControllerStats {
    /// The plugin's name.
    pub name: String,
    /// The file it was loaded from.
    pub file: PathBuf,
    pub stats: StatsSnapshot,
    /// Keys ready, delayed and in flight.
    pub depth: QueueDepth,
    /// Objects filed in each of its indexes, by kind.
    pub indexes: Vec<(String, usize)>,
}

/// One running plugin's numbers, for the metrics Kubernetes dashboards
/// know (see `conventions.rs`).
#[derive(Debug, Clone)]
pub struct ControllerMetrics {
    pub name: String,
    pub max_concurrency: u32,
    pub stats: StatsSnapshot,
    pub queue: crate::queue::QueueMetrics,
}

/// A loaded plugin: running, or waiting for the API server to serve its
/// kinds (a CustomResourceDefinition not installed yet, or the server not
/// reachable), which is retried until it works.
enum Slot {
    Running(Controller),
    Waiting {
        plugin: Plugin,
        reason: Arc<Mutex<String>>,
        retry: tokio::task::JoinHandle<()>,
    },
}

impl Slot {
    fn plugin(&self) -> Plugin {
        match self {
            Slot::Running(c) => c.plugin(),
            Slot::Waiting { plugin, .. } => plugin.clone(),
        }
    }

    /// Stops it: a running controller drains within `grace`; a wait ends.
    async fn stop(self, grace: Duration) {
        match self {
            Slot::Running(c) => c.shutdown(grace).await,
            Slot::Waiting { retry, .. } => retry.abort(),
        }
    }
}

/// Loaded plugins by name, with the file each came from.
type SlotMap = BTreeMap<String, (PathBuf, Slot)>;

/// The loaded plugins, and the order in which they may be touched.
///
/// A change (install, retire, shutdown, a waiting plugin starting) can wait
/// for a controller to drain, so changes are serialised by one lock held
/// for the whole change, and the map itself is behind a second lock held
/// only for moments. The types fix that discipline: the map is reached
/// only inside a synchronous closure (so its lock is never held across an
/// `.await`, a drain included), and only a [`Change`] — which holds the
/// first lock — may alter it. Readers never wait for a change to finish.
#[derive(Clone, Default)]
struct Slots(Arc<SlotsInner>);

#[derive(Default)]
struct SlotsInner {
    /// Held for the whole of a change.
    changing: tokio::sync::Mutex<()>,
    /// Held only inside [`Slots::read`] and [`Change::with`].
    map: Mutex<SlotMap>,
}

impl Slots {
    /// Looks at the loaded plugins.
    fn read<R>(&self, f: impl FnOnce(&SlotMap) -> R) -> R {
        f(&self.0.map.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Begins a change, once every earlier change has finished.
    async fn change(&self) -> Change<'_> {
        Change {
            _changing: self.0.changing.lock().await,
            slots: &self.0,
        }
    }
}

/// The right to alter the loaded plugins, held for one change.
struct Change<'a> {
    _changing: tokio::sync::MutexGuard<'a, ()>,
    slots: &'a SlotsInner,
}

impl Change<'_> {
    fn with<R>(&self, f: impl FnOnce(&mut SlotMap) -> R) -> R {
        f(&mut self.slots.map.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// First and longest pause between attempts to start a waiting plugin.
const WAIT_RETRY: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(30));

/// The running host.
pub struct Host {
    client: ApiClient,
    /// With leader election: the Lease's name, and whether this replica
    /// holds it.
    leadership: Mutex<Option<(String, bool)>>,
    runtime: Runtime,
    informers: Arc<Informers>,
    writer: Arc<Writer>,
    grace: Duration,
    /// Loaded plugins (see [`Slots`] for how they are changed).
    slots: Slots,
    /// Files that failed to load, with the reason.
    errors: Mutex<BTreeMap<PathBuf, String>>,
    /// What each loaded file runs (see [`Source`]).
    origins: Mutex<BTreeMap<PathBuf, String>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").finish_non_exhaustive()
    }
}

impl Host {
    pub fn new(client: ApiClient, config: HostConfig) -> anyhow::Result<Self> {
        let discovery = Arc::new(Discovery::new(client.clone()));
        Ok(Self {
            client: client.clone(),
            leadership: Mutex::new(None),
            runtime: Runtime::new(config.runtime)?,
            informers: Arc::new(Informers::new(
                client.clone(),
                discovery.clone(),
                config.informer,
                config.max_relists,
            )),
            writer: Arc::new(Writer::new(client, discovery, config.write_limit)),
            grace: config.grace,
            slots: Slots::default(),
            errors: Mutex::new(BTreeMap::new()),
            origins: Mutex::new(BTreeMap::new()),
        })
    }

    /// The client every informer and write goes through.
    pub fn client(&self) -> &ApiClient {
        &self.client
    }

    /// Records whether this replica holds the leader-election Lease `lease`.
    pub fn set_leadership(&self, lease: &str, leading: bool) {
        *self.leadership.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((lease.to_owned(), leading));
    }

    /// The Lease and whether this replica holds it; `None` without leader
    /// election.
    pub fn leadership(&self) -> Option<(String, bool)> {
        self.leadership
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    pub fn informers(&self) -> &Informers {
        &self.informers
    }

    /// Loads a plugin file and runs it: once under its manifest's name, or,
    /// when a `<stem>.instances.yaml` sits beside it, once per instance
    /// declared there (see [`crate::instances`]). Every instance is loaded
    /// and checked before any is installed, so a broken file or instances
    /// file leaves the running version alone. Returns the names that run.
    pub async fn load_file(&self, path: &Path) -> anyhow::Result<Vec<String>> {
        let root = path.parent().unwrap_or(Path::new("/"));
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let source = match read_source(&root, path) {
            Ok(source) => source,
            Err(e) => {
                self.record_error(path, e.clone());
                anyhow::bail!("{}: {e}", path.display());
            }
        };
        self.load_source(path, source).await
    }

    /// Loads one instance of a plugin file with these settings (the text of
    /// a JSON object, which the plugin reads through its `instance` import),
    /// under its manifest's name; any instances file is not read.
    pub async fn load_file_with(
        &self,
        path: &Path,
        settings: Option<String>,
    ) -> anyhow::Result<String> {
        let (runtime, file) = (self.runtime.clone(), path.to_path_buf());
        let loaded =
            tokio::task::spawn_blocking(move || runtime.load_file_with(&file, settings.as_deref()))
                .await?;
        let plugin = loaded.inspect_err(|e| self.record_error(path, e.to_string()))?;
        let mut names = self.run(path, vec![(plugin, None)]).await?;
        Ok(names.remove(0))
    }

    async fn load_source(&self, path: &Path, source: Source) -> anyhow::Result<Vec<String>> {
        let plugins = self
            .prepare(path, &source)
            .await
            .inspect_err(|e| self.record_error(path, format!("{e:#}")))?;
        let names = self.run(path, plugins).await?;
        self.origins
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_path_buf(), source.origin);
        Ok(names)
    }

    /// Installs the plugins `path` runs as now, each with its write limit
    /// (`None`: the host's default), and stops those it ran before under
    /// other names. A failure is recorded against the file (the others
    /// still run); success clears what was recorded.
    async fn run(
        &self,
        path: &Path,
        plugins: Vec<(Plugin, Option<WriteLimit>)>,
    ) -> anyhow::Result<Vec<String>> {
        let wanted: Vec<String> = plugins.iter().map(|(p, _)| p.name().to_owned()).collect();
        let mut names = Vec::new();
        let mut failed = Vec::new();
        for (plugin, limit) in plugins {
            match self.install(path, plugin, limit).await {
                Ok(name) => names.push(name),
                Err(e) => failed.push(format!("{e:#}")),
            }
        }
        self.retire(path, &wanted).await;
        if !failed.is_empty() {
            let error = failed.join("; ");
            self.record_error(path, error.clone());
            anyhow::bail!(error);
        }
        self.clear_error(path);
        Ok(names)
    }

    /// The plugins a file runs as, loaded and reshaped, with their write
    /// limits; nothing installed.
    async fn prepare(
        &self,
        path: &Path,
        source: &Source,
    ) -> anyhow::Result<Vec<(Plugin, Option<WriteLimit>)>> {
        let Some(instances) = &source.instances else {
            let (runtime, file) = (self.runtime.clone(), path.to_path_buf());
            return Ok(vec![(
                tokio::task::spawn_blocking(move || runtime.load_file(&file)).await??,
                None,
            )]);
        };
        let default = self.writer.default_limit();
        // The component is compiled once; each instance asks its manifest
        // again with its own settings (the first with the first's).
        let (runtime, file) = (self.runtime.clone(), path.to_path_buf());
        let first = instances[0].settings_text();
        let base =
            tokio::task::spawn_blocking(move || runtime.load_file_with(&file, first.as_deref()))
                .await??;
        let instances = instances.clone();
        tokio::task::spawn_blocking(move || {
            instances
                .iter()
                .enumerate()
                .map(|(i, instance)| {
                    let plugin = if i == 0 {
                        base.clone()
                    } else {
                        base.instance(instance.settings_text().as_deref())?
                    };
                    let manifest = crate::instances::reshape(plugin.manifest(), instance)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", base.file()))?;
                    let limit = instance.write_limit(default).map_err(|e| {
                        anyhow::anyhow!("{}: instance {:?}: {e}", base.file(), instance.name)
                    })?;
                    Ok((plugin.with_manifest(manifest)?, limit))
                })
                .collect()
        })
        .await?
    }

    fn clear_error(&self, path: &Path) {
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(path);
    }

    fn record_error(&self, path: &Path, error: String) {
        tracing::error!(file = %path.display(), %error, "plugin not loaded");
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_path_buf(), error);
    }

    async fn install(
        &self,
        path: &Path,
        plugin: Plugin,
        limit: Option<WriteLimit>,
    ) -> anyhow::Result<String> {
        let name = plugin.name().to_owned();
        let change = self.slots.change().await;
        // `None`: updated in place; else the slot it replaces, if any.
        let replaced = change.with(|controllers| {
            if let Some(finalizer) = &plugin.manifest().finalizer
                && let Some((other, (other_path, _))) = controllers.iter().find(|(n, (_, slot))| {
                    **n != name && slot.plugin().manifest().finalizer.as_ref() == Some(finalizer)
                })
            {
                anyhow::bail!(
                    "{}: finalizer {finalizer:?} is already used by plugin {other:?} (from {}); each plugin needs its own",
                    path.display(),
                    other_path.display()
                );
            }
            if let Some((old_path, slot)) = controllers.get(&name) {
                // A file renamed (or moved by a directory swap) takes its
                // plugin over; two files cannot both hold one name.
                if old_path != path && is_plugin_file(old_path) && old_path.is_file() {
                    anyhow::bail!(
                        "{}: a plugin named {name:?} is already loaded from {}",
                        path.display(),
                        old_path.display()
                    );
                }
                // Same watches and no index to rebuild: swap the code under
                // the running queue.
                if let Slot::Running(running) = slot
                    && old_path == path
                    && running.manifest() == plugin.manifest()
                    && !plugin.manifest().watches().any(|(_, w)| w.indexed)
                {
                    // Same watches: swap the code under the running queue.
                    running.replace_plugin(plugin.clone());
                    tracing::info!(plugin = %name, "plugin updated in place");
                    return Ok(None);
                }
            }
            Ok(Some(controllers.remove(&name)))
        })?;
        // Before the first write of the new version (a limit changed alone
        // takes effect at once, under the running queue).
        self.writer.set_limit(&name, limit);
        let Some(old) = replaced else {
            return Ok(name);
        };
        // New, or its manifest changed: start it afresh. The old controller
        // drains first so no key is processed by both; every key is
        // enqueued again by the new one, so no work is lost.
        if let Some((_, old)) = old {
            old.stop(self.grace).await;
        }
        let slot =
            match Controller::start(plugin.clone(), &self.informers, self.writer.clone()).await {
                Ok(controller) => Slot::Running(controller),
                Err(e) => self.wait(path, plugin, e),
            };
        change.with(|controllers| controllers.insert(name.clone(), (path.to_path_buf(), slot)));
        Ok(name)
    }

    /// Stops the plugins loaded from `path` whose names are not in `keep`
    /// (the file's content, or its instances file, names others now).
    async fn retire(&self, path: &Path, keep: &[String]) {
        let change = self.slots.change().await;
        let stale: Vec<(PathBuf, Slot)> = change.with(|controllers| {
            let names: Vec<String> = controllers
                .iter()
                .filter(|(n, (p, _))| p == path && !keep.contains(n))
                .map(|(n, _)| n.clone())
                .collect();
            names
                .into_iter()
                .filter_map(|n| controllers.remove(&n))
                .collect()
        });
        for (_, old) in stale {
            let name = old.plugin().name().to_owned();
            old.stop(self.grace).await;
            self.writer.forget(&name);
        }
    }

    /// A slot for a plugin whose kinds are not served yet, with a task that
    /// keeps trying to start it (backing off up to 30 s) and swaps it in.
    fn wait(&self, path: &Path, plugin: Plugin, error: DiscoveryError) -> Slot {
        let name = plugin.name().to_owned();
        let reason = Arc::new(Mutex::new(error.to_string()));
        tracing::warn!(plugin = %name, file = %path.display(), %error, "plugin waits for its kinds to be served; retrying");
        let slots = self.slots.clone();
        let (informers, writer) = (self.informers.clone(), self.writer.clone());
        let (p, r) = (plugin.clone(), reason.clone());
        let retry = tokio::spawn(async move {
            let mut pause = WAIT_RETRY.0;
            loop {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(WAIT_RETRY.1);
                match Controller::start(p.clone(), &informers, writer.clone()).await {
                    Ok(controller) => {
                        // Installs and unloads abort this task within their
                        // change, so once this change begins the waiting
                        // slot is still ours.
                        slots.change().await.with(|controllers| {
                            if let Some((_, slot)) = controllers.get_mut(&name) {
                                tracing::info!(plugin = %name, "its kinds are served now; plugin started");
                                *slot = Slot::Running(controller);
                            }
                        });
                        return;
                    }
                    Err(e) => {
                        tracing::debug!(plugin = %name, error = %e, retry_in = ?pause, "plugin still waiting");
                        *r.lock().unwrap_or_else(|e| e.into_inner()) = e.to_string();
                    }
                }
            }
        });
        Slot::Waiting {
            plugin,
            reason,
            retry,
        }
    }

    /// True when `path` runs exactly this source (the digest of the file,
    /// and of its instances file if any; see [`read_source`]). Then any
    /// error recorded for a later, broken version no longer applies and is
    /// cleared.
    async fn is_running(&self, path: &Path, origin: &str) -> bool {
        let same = self
            .origins
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
            .is_some_and(|o| o == origin);
        let running = same
            && self
                .slots
                .read(|controllers| controllers.values().any(|(p, _)| p == path));
        if running {
            self.clear_error(path);
        }
        running
    }

    /// Stops the plugins loaded from `path`, after in-flight work drains.
    pub async fn unload_file(&self, path: &Path) {
        self.clear_error(path);
        self.origins
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(path);
        self.retire(path, &[]).await;
    }

    /// Loads every `*.wasm` in `dir`; failures are recorded and logged.
    pub async fn load_dir(&self, dir: &Path) -> usize {
        self.sync_dir(dir).await
    }

    /// Brings the loaded plugins in step with `dir`: every plugin file in it
    /// runs its current content (loaded when new or changed; a file whose
    /// new content fails keeps its old version running), and plugins whose
    /// file is gone stop. New versions load before anything stops, so a
    /// rename, or a ConfigMap volume's `..data` swap, never leaves a plugin
    /// with no version running. Returns how many files run.
    ///
    /// A file is refused (and reported) when it is a symlink leading out of
    /// `dir`, or not a regular file (a FIFO or device could block a read).
    pub async fn sync_dir(&self, dir: &Path) -> usize {
        let scan = match scan_dir(dir) {
            Ok(scan) => scan,
            Err(e) => {
                tracing::error!(dir = %dir.display(), error = %e, "cannot read the plugins directory");
                return 0;
            }
        };
        let mut running = 0;
        for (path, found) in &scan {
            match found {
                Err(reason) => self.record_error(path, reason.clone()),
                Ok(source) => {
                    if self.is_running(path, &source.origin).await {
                        running += 1;
                        continue;
                    }
                    // A failure is recorded and logged by `load_source`;
                    // an older version, if any, keeps running.
                    if let Ok(names) = self.load_source(path, source.clone()).await {
                        running += 1;
                        tracing::info!(plugins = ?names, file = %path.display(), "plugin loaded");
                    }
                }
            }
        }
        let present: std::collections::BTreeSet<&Path> =
            scan.iter().map(|(p, _)| p.as_path()).collect();
        let gone: Vec<PathBuf> = self.slots.read(|controllers| {
            controllers
                .values()
                .map(|(p, _)| p.clone())
                .filter(|p| p.starts_with(dir) && !present.contains(p.as_path()))
                .collect()
        });
        for path in gone {
            tracing::info!(file = %path.display(), "plugin file removed; stopping it");
            self.unload_file(&path).await;
        }
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|p, _| !p.starts_with(dir) || present.contains(p.as_path()));
        running
    }

    /// True once every loaded plugin runs and its informers have listed (a
    /// plugin waiting for its kinds is not ready).
    pub async fn is_ready(&self) -> bool {
        self.slots.read(|controllers| {
            controllers
                .values()
                .all(|(_, slot)| matches!(slot, Slot::Running(c) if c.is_synced()))
        })
    }

    /// The numbers of every running controller.
    pub async fn controller_metrics(&self) -> Vec<ControllerMetrics> {
        self.slots.read(|controllers| {
            controllers
                .iter()
                .filter_map(|(name, (_, slot))| match slot {
                    Slot::Running(c) => Some(ControllerMetrics {
                        name: name.clone(),
                        max_concurrency: c.manifest().max_concurrency,
                        stats: c.stats(),
                        queue: c.queue_metrics(),
                    }),
                    Slot::Waiting { .. } => None,
                })
                .collect()
        })
    }

    /// Every loaded plugin's write limit and the time its requests waited
    /// for it.
    pub fn write_throttles(&self) -> Vec<ThrottleStats> {
        let loaded: std::collections::BTreeSet<String> = self
            .slots
            .read(|controllers| controllers.keys().cloned().collect());
        self.writer
            .throttle_stats()
            .into_iter()
            .filter(|t| loaded.contains(&t.plugin))
            .collect()
    }

    /// Counters and queue depth of every running controller, with its
    /// plugin name and file.
    pub async fn controller_stats(&self) -> Vec<ControllerStats> {
        self.slots.read(|controllers| {
            controllers
                .iter()
                .filter_map(|(name, (path, slot))| match slot {
                    Slot::Running(c) => Some(ControllerStats {
                        name: name.clone(),
                        file: path.clone(),
                        stats: c.stats(),
                        depth: c.queue_depth(),
                        indexes: c.index_sizes(),
                    }),
                    Slot::Waiting { .. } => None,
                })
                .collect()
        })
    }

    /// One row per plugin file, loaded or failed.
    pub async fn status(&self) -> Vec<PluginStatus> {
        let mut rows: Vec<PluginStatus> = self.slots.read(|controllers| {
            controllers
                .values()
                .map(|(path, slot)| slot_status(path, slot))
                .collect()
        });
        for (path, error) in self.errors.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let file = path.display().to_string();
            match rows.iter_mut().find(|r| r.file == file) {
                // A newer version failed; the old one still runs (or waits).
                Some(row) => row.error = Some(error.clone()),
                None => rows.push(PluginStatus {
                    file,
                    error: Some(error.clone()),
                    ..PluginStatus::default()
                }),
            }
        }
        rows.sort_by(|a, b| a.file.cmp(&b.file));
        rows
    }

    /// Stops every controller: no new work, in-flight reconciles get the
    /// grace period.
    pub async fn shutdown(&self) {
        self.shutdown_within(self.grace).await;
    }

    /// Stops every controller at once, abandoning reconciles in flight: for
    /// a leader that lost its lease, which must not write any more.
    pub async fn abandon(&self) {
        self.shutdown_within(Duration::ZERO).await;
    }

    async fn shutdown_within(&self, grace: Duration) {
        let change = self.slots.change().await;
        let controllers = change.with(std::mem::take);
        futures::future::join_all(controllers.into_values().map(|(_, slot)| slot.stop(grace)))
            .await;
        self.informers.stop_all();
    }
}

/// The `/plugins` row of a loaded plugin.
fn slot_status(path: &Path, slot: &Slot) -> PluginStatus {
    let plugin = slot.plugin();
    let m = plugin.manifest();
    let mut row = PluginStatus {
        file: path.display().to_string(),
        name: Some(m.name.clone()),
        version: Some(m.version.clone()),
        digest: Some(plugin.digest().to_owned()),
        contract: Some(plugin.contract().version().to_owned()),
        reconciles: Some(m.reconciles.kind.to_string()),
        ..PluginStatus::default()
    };
    match slot {
        Slot::Running(controller) => {
            let depth = controller.queue_depth();
            let stats = controller.stats();
            row.synced = controller.is_synced();
            if !row.synced {
                let problems = controller.sync_problems();
                if !problems.is_empty() {
                    row.error = Some(format!("not synced: {}", problems.join("; ")));
                }
            }
            (row.queue_ready, row.queue_delayed, row.in_flight) =
                (depth.ready, depth.delayed, depth.in_flight);
            (row.reconciles_total, row.failures_total) = (stats.reconciles, stats.failures);
        }
        Slot::Waiting { reason, .. } => {
            let reason = reason.lock().unwrap_or_else(|e| e.into_inner());
            row.error = Some(format!("not started: {reason}; retrying"));
        }
    }
    row
}

/// What a plugin file runs as: the instances beside it (none: once, under
/// its manifest's name) and an `origin` that changes whenever the file or
/// its instances file does (their SHA-256 digests).
#[derive(Debug, Clone)]
struct Source {
    origin: String,
    instances: Option<Vec<crate::instances::Instance>>,
}

/// The plugin files of `dir`, each with its source, or why it is refused.
fn scan_dir(dir: &Path) -> std::io::Result<Vec<(PathBuf, Result<Source, String>)>> {
    let root = dir.canonicalize()?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| is_plugin_file(p))
        .collect();
    files.sort();
    Ok(files
        .into_iter()
        .map(|path| {
            let found = read_source(&root, &path);
            (path, found)
        })
        .collect())
}

/// A plugin file's source, unless it or its instances file must be refused
/// or does not parse. `root` is the plugins directory, canonical.
fn read_source(root: &Path, path: &Path) -> Result<Source, String> {
    let digest = crate::runtime::hex(&Sha256::digest(read_inside(root, path, None)?));
    let sidecar = crate::instances::file_for(path);
    if std::fs::symlink_metadata(&sidecar).is_err() {
        return Ok(Source {
            origin: digest,
            instances: None,
        });
    }
    let named = |e: String| format!("{}: {e}", sidecar.display());
    let bytes =
        read_inside(root, &sidecar, Some(crate::instances::MAX_FILE_BYTES)).map_err(named)?;
    let text = std::str::from_utf8(&bytes).map_err(|_| named("not UTF-8 text".into()))?;
    let instances = crate::instances::parse(text).map_err(named)?;
    Ok(Source {
        origin: format!("{digest}+{}", crate::runtime::hex(&Sha256::digest(&bytes))),
        instances: Some(instances),
    })
}

/// The content of a file in the plugins directory, unless it must be
/// refused: a symlink leading out of the directory, something other than a
/// regular file (a FIFO or device could block the read), or past `max`.
fn read_inside(root: &Path, path: &Path, max: Option<u64>) -> Result<Vec<u8>, String> {
    let target = path
        .canonicalize()
        .map_err(|e| format!("cannot resolve it: {e}"))?;
    if !target.starts_with(root) {
        return Err(format!(
            "it leads to {}, outside the plugins directory; only files inside it are loaded",
            target.display()
        ));
    }
    let meta = std::fs::metadata(&target).map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err(
            "not a regular file (a directory, FIFO, socket or device); only regular files are loaded"
                .into(),
        );
    }
    if let Some(max) = max
        && meta.len() > max
    {
        return Err(format!("{} bytes; at most {max} are read", meta.len()));
    }
    std::fs::read(&target).map_err(|e| format!("cannot read it: {e}"))
}

/// A file the host treats as a plugin: `*.wasm`, not hidden (editors and
/// copy tools write hidden temporaries).
pub fn is_plugin_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "wasm")
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| !n.starts_with('.'))
}
