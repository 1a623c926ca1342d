//! The sandboxed wasm runtime: loads plugin components and calls them safely.
//!
//! Strategy (as in Kubewarden's policy evaluator): compile each component
//! once (or take it from the host-owned artifact cache), link it once into an
//! `InstancePre`, and give every call a **fresh `Store`** from the pooling
//! allocator, with an epoch deadline driven by one ticker thread and a
//! memory limiter. A trap, a timeout or memory exhaustion fails that one call
//! with a typed error naming the plugin; the host and other plugins go on.
//! Everything a call returns is checked against the plugin's manifest before
//! anyone acts on it.
//!
//! Calls are synchronous and CPU-bound: async callers run them on blocking
//! threads (`tokio::task::spawn_blocking`).

mod artifacts;
mod bindings;
mod inline;
mod state;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use wasmtime::component::{
    Component, HasSelf, Instance, InstancePre, Linker, types::ComponentItem,
};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, Trap};
use windlass_selector::LabelSelector;

use crate::contract::{
    Event, KindRef, Manifest, ObjectRef, ObjectText, Outcome, Patch, Request, Write,
};
use bindings::{Controller, ControllerPre, Exports, wit};
use state::{CallState, MemoryLimitExceeded};

pub use artifacts::hex;

/// Read access to cached objects, as JSON text. The host's informer cache
/// implements it; so does the fixed object set of offline runs.
pub trait CacheReader: Send + Sync {
    /// One object by reference.
    fn get(&self, object: &ObjectRef) -> Option<Arc<str>>;
    /// Every object of `kind`, optionally in one namespace, matching `selector`,
    /// ordered by namespace then name.
    fn list(
        &self,
        kind: &KindRef,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Vec<Arc<str>>;
}

/// A cache with nothing in it.
#[derive(Debug, Default, Clone, Copy)]
pub struct EmptyCache;

impl CacheReader for EmptyCache {
    fn get(&self, _: &ObjectRef) -> Option<Arc<str>> {
        None
    }

    fn list(&self, _: &KindRef, _: Option<&str>, _: &LabelSelector) -> Vec<Arc<str>> {
        Vec::new()
    }
}

/// Limits and settings for every plugin call.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Wall-clock deadline of one call.
    pub call_timeout: Duration,
    /// Linear memory one call may hold.
    pub memory_limit: usize,
    /// Total JSON bytes one outcome may carry.
    pub max_output_bytes: usize,
    /// Writes one outcome may carry.
    pub max_writes: usize,
    /// How many calls may run at once (pooling allocator slots); more wait.
    pub max_instances: u32,
    /// Where precompiled artifacts are kept; `None` disables the cache.
    pub artifact_dir: Option<PathBuf>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(1),
            memory_limit: 64 << 20,
            max_output_bytes: 16 << 20,
            max_writes: 10_000,
            max_instances: 64,
            artifact_dir: Some(artifacts::default_dir()),
        }
    }
}

/// Linear-memory bytes a freed pool slot keeps resident, reset in place
/// rather than decommitted. Every page a slot ever dirtied (up to this much)
/// is reset on each free, so this bounds that cost as well as the memory an
/// idle warm slot holds; a typical call's stack, data and heap fit well.
const KEEP_RESIDENT: usize = 1 << 20;

/// The same for tables (a plugin's function tables are a few KiB).
const TABLE_KEEP_RESIDENT: usize = 64 << 10;

/// How often the epoch ticker advances; deadlines are this precise.
const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Why a plugin file could not be loaded. Each message is one line naming
/// the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{file}: cannot read: {error}")]
    Read { file: String, error: std::io::Error },
    #[error("{file}: not a WebAssembly file (it does not start with the `\\0asm` header)")]
    NotWasm { file: String },
    #[error(
        "{file}: a core WebAssembly module, not a component; build the plugin with `--target wasm32-wasip2`"
    )]
    CoreModule { file: String },
    #[error("{file}: not a valid WebAssembly component: {reason}")]
    Invalid { file: String, reason: String },
    #[error(
        "{file}: built for {found}, but this host supports {}",
        bindings::PACKAGE
    )]
    WrongVersion { file: String, found: String },
    #[error("{file}: not a windlass controller: {reason}")]
    WrongWorld { file: String, reason: String },
    #[error("{file}: manifest() failed: {error}")]
    Manifest { file: String, error: PluginError },
    #[error("{file}: invalid manifest: {reason}")]
    BadManifest { file: String, reason: String },
}

/// Why one call into a plugin failed. Every message names the plugin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    #[error("plugin {plugin} trapped in {export}: {message}")]
    Trap {
        plugin: String,
        export: &'static str,
        message: String,
    },
    #[error("plugin {plugin}: {export} did not finish within {limit:?} and was stopped")]
    Timeout {
        plugin: String,
        export: &'static str,
        limit: Duration,
    },
    #[error(
        "plugin {plugin}: {export} exceeded its memory limit of {limit_mib} MiB and was stopped"
    )]
    OutOfMemory {
        plugin: String,
        export: &'static str,
        limit_mib: usize,
    },
    #[error("plugin {plugin}: {message}; nothing was written")]
    Undeclared { plugin: String, message: String },
    #[error("plugin {plugin}: {export} returned an invalid outcome: {reason}; nothing was written")]
    InvalidOutcome {
        plugin: String,
        export: &'static str,
        reason: String,
    },
    #[error("plugin {plugin}: {export} failed: {message}")]
    Failed {
        plugin: String,
        export: &'static str,
        message: String,
        retry: bool,
    },
    #[error("plugin {plugin}: cannot start an instance: {message}")]
    Instantiate { plugin: String, message: String },
}

impl PluginError {
    /// Should the host retry the key with backoff? Everything but a plugin's
    /// own "do not retry" answer is retried: traps and timeouts may depend on
    /// the input, and the plugin may be replaced by a fixed version.
    pub fn retry(&self) -> bool {
        match self {
            PluginError::Failed { retry, .. } => *retry,
            _ => true,
        }
    }
}

/// The result of [`Plugin::try_reconcile`].
#[derive(Debug)]
pub enum Attempt {
    /// The call ran to its end (successfully or not).
    Done(Result<Outcome, PluginError>),
    /// The call could not start at once or ran out of its budget; repeat it.
    Unfinished,
}

/// The engine, linker and shared limits every loaded plugin uses.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

struct RuntimeInner {
    engine: Engine,
    linker: Linker<CallState>,
    config: RuntimeConfig,
    artifacts: Option<artifacts::ArtifactCache>,
    slots: Slots,
    ticker: EpochTicker,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.inner.config)
            .finish()
    }
}

impl Runtime {
    /// Builds the engine (Cranelift, pooling allocator, epoch interruption)
    /// and the linker with WASI (no ambient capabilities) and the host imports.
    pub fn new(config: RuntimeConfig) -> anyhow::Result<Self> {
        let mut pool = PoolingAllocationConfig::default();
        let slots = config.max_instances.max(1);
        pool.total_component_instances(slots)
            .total_core_instances(slots * 8)
            .total_memories(slots * 2)
            .total_tables(slots * 8)
            .max_memories_per_component(4)
            .max_memory_size(config.memory_limit.next_multiple_of(64 << 10).max(1 << 20));
        // A fresh instance per call makes slot recycling the hot path. By
        // default every freed slot is `madvise`d away and the next call
        // faults its pages back in. With `PAGEMAP_SCAN` (Linux 6.7+) the
        // resident pages are found and reset in place instead, up to
        // `KEEP_RESIDENT` per memory: one ioctl and no page faults per call.
        // Without the ioctl, keeping memory resident would mean a `memset`
        // of that whole range per call, which is slower than the default.
        if PoolingAllocationConfig::is_pagemap_scan_available() {
            pool.pagemap_scan(wasmtime::Enabled::Yes)
                .linear_memory_keep_resident(KEEP_RESIDENT)
                .table_keep_resident(TABLE_KEEP_RESIDENT);
        }
        let mut wasm = Config::new();
        wasm.wasm_component_model(true)
            .epoch_interruption(true)
            .max_wasm_stack(1 << 20)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&wasm)?;

        let mut linker = Linker::<CallState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        Controller::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s)?;

        let artifacts = match &config.artifact_dir {
            Some(dir) => match artifacts::ArtifactCache::new(dir.clone(), &engine) {
                Ok(cache) => Some(cache),
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "artifact cache disabled");
                    None
                }
            },
            None => None,
        };
        let ticker = EpochTicker::start(engine.clone());
        Ok(Self {
            inner: Arc::new(RuntimeInner {
                engine,
                linker,
                artifacts,
                slots: Slots::new(slots as usize),
                ticker,
                config,
            }),
        })
    }

    /// The settings this runtime enforces.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }

    /// Reads, compiles, links and validates a plugin file, and asks it for
    /// its manifest.
    pub fn load_file(&self, path: &Path) -> Result<Plugin, LoadError> {
        let file = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|error| LoadError::Read {
            file: file.clone(),
            error,
        })?;
        self.load(&file, &bytes)
    }

    /// Like [`Runtime::load_file`], for bytes already in memory; `file` names
    /// them in errors.
    pub fn load(&self, file: &str, bytes: &[u8]) -> Result<Plugin, LoadError> {
        let file = file.to_owned();
        match bytes {
            [0, b'a', b's', b'm', 1, 0, 0, 0, ..] => return Err(LoadError::CoreModule { file }),
            [0, b'a', b's', b'm', ..] => {}
            _ => return Err(LoadError::NotWasm { file }),
        }
        let digest = hex(&Sha256::digest(bytes));
        let component = self.compile(&file, bytes, &digest)?;
        check_world(&self.inner.engine, &file, &component)?;
        let pre =
            self.inner
                .linker
                .instantiate_pre(&component)
                .map_err(|e| LoadError::WrongWorld {
                    file: file.clone(),
                    reason: format!("{e:#}"),
                })?;
        let pre = ControllerPre::new(pre).map_err(|e| LoadError::WrongWorld {
            file: file.clone(),
            reason: format!("{e:#}"),
        })?;
        let exports = Exports::new(&component).ok_or_else(|| LoadError::WrongWorld {
            file: file.clone(),
            reason: "an export of the world is missing".into(),
        })?;
        let inline = inline::linker(&self.inner.engine, &component)
            .and_then(|linker| linker.instantiate_pre(&component))
            .map_err(|e| {
                tracing::warn!(%file, error = %format!("{e:#}"), "cannot link the plugin for inline calls; all its calls run on a blocking thread");
            })
            .ok();

        // Until it has told us its name, a plugin is known by its file.
        let stem = Path::new(&file)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.clone());
        let mut plugin = PluginInner {
            runtime: self.inner.clone(),
            pre,
            inline,
            exports,
            manifest: Arc::new(placeholder_manifest(&stem)),
            digest,
            file: file.clone(),
        };
        let manifest = plugin
            .call("manifest", None, Arc::new(EmptyCache), |e, i, s| {
                e.call_manifest(s, i)
            })
            .map_err(|error| LoadError::Manifest {
                file: file.clone(),
                error,
            })?;
        let manifest = Manifest::from(manifest);
        manifest
            .validate()
            .map_err(|reason| LoadError::BadManifest { file, reason })?;
        plugin.manifest = Arc::new(manifest);
        Ok(Plugin {
            inner: Arc::new(plugin),
        })
    }

    fn compile(&self, file: &str, bytes: &[u8], digest: &str) -> Result<Component, LoadError> {
        let engine = &self.inner.engine;
        if let Some(component) = self
            .inner
            .artifacts
            .as_ref()
            .and_then(|a| a.load(engine, digest))
        {
            return Ok(component);
        }
        let component = Component::new(engine, bytes).map_err(|e| LoadError::Invalid {
            file: file.to_owned(),
            reason: format!("{e:#}").replace('\n', " "),
        })?;
        if let Some(artifacts) = &self.inner.artifacts {
            artifacts.store(digest, &component);
        }
        Ok(component)
    }
}

/// Names the problem when a component was built against another version of
/// the contract or lacks an export, before the linker's generic message.
fn check_world(engine: &Engine, file: &str, component: &Component) -> Result<(), LoadError> {
    let ty = component.component_type();
    for (name, _) in ty.imports(engine) {
        if let Some(rest) = name.strip_prefix(bindings::PACKAGE_NAME)
            && let Some((_, version)) = rest.split_once('@')
            && format!("{}@{version}", bindings::PACKAGE_NAME) != bindings::PACKAGE
        {
            return Err(LoadError::WrongVersion {
                file: file.to_owned(),
                found: format!("{}@{version}", bindings::PACKAGE_NAME),
            });
        }
    }
    let exports: Vec<(String, bool)> = ty
        .exports(engine)
        .map(|(name, item)| {
            (
                name.to_owned(),
                matches!(item.ty, ComponentItem::ComponentFunc(_)),
            )
        })
        .collect();
    for wanted in bindings::EXPORTS {
        if !exports
            .iter()
            .any(|(name, is_func)| name == wanted && *is_func)
        {
            let has: Vec<&str> = exports.iter().map(|(n, _)| n.as_str()).collect();
            return Err(LoadError::WrongWorld {
                file: file.to_owned(),
                reason: format!(
                    "it does not export the function `{wanted}` of world {}/controller (its exports: {})",
                    bindings::PACKAGE,
                    if has.is_empty() {
                        "none".to_owned()
                    } else {
                        has.join(", ")
                    }
                ),
            });
        }
    }
    Ok(())
}

fn placeholder_manifest(name: &str) -> Manifest {
    let watch = crate::contract::Watch {
        kind: KindRef::new("", ""),
        namespace: None,
        label_selector: None,
        field_selector: None,
    };
    Manifest {
        name: name.to_owned(),
        version: String::new(),
        reconciles: watch,
        owns: Vec::new(),
        reads: Vec::new(),
        resync_seconds: None,
        finalizer: None,
        max_concurrency: 1,
    }
}

/// A loaded, validated plugin. Cheap to clone; safe to call from many
/// threads at once (each call gets its own instance).
#[derive(Clone)]
pub struct Plugin {
    inner: Arc<PluginInner>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.inner.manifest.name)
            .field("file", &self.inner.file)
            .field("digest", &self.inner.digest)
            .finish()
    }
}

struct PluginInner {
    runtime: Arc<RuntimeInner>,
    pre: ControllerPre<CallState>,
    /// The same component linked for inline calls (see `inline.rs`); `None`
    /// if that failed, and then every call runs with the full linker.
    inline: Option<InstancePre<CallState>>,
    exports: Exports,
    manifest: Arc<Manifest>,
    digest: String,
    file: String,
}

impl Plugin {
    /// The name from the plugin's manifest.
    pub fn name(&self) -> &str {
        &self.inner.manifest.name
    }

    /// The validated manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.inner.manifest
    }

    /// SHA-256 of the component's bytes, lowercase hex.
    pub fn digest(&self) -> &str {
        &self.inner.digest
    }

    /// The file the plugin was loaded from.
    pub fn file(&self) -> &str {
        &self.inner.file
    }

    /// Calls `reconcile` in a fresh instance and checks the outcome.
    pub fn reconcile(
        &self,
        request: &Request,
        cache: Arc<dyn CacheReader>,
    ) -> Result<Outcome, PluginError> {
        self.inner.reconcile_like(false, request, cache)
    }

    /// Calls `finalize` in a fresh instance and checks the outcome.
    pub fn finalize(
        &self,
        request: &Request,
        cache: Arc<dyn CacheReader>,
    ) -> Result<Outcome, PluginError> {
        self.inner.reconcile_like(true, request, cache)
    }

    /// Calls `reconcile` (or `finalize`) like [`Plugin::reconcile`], for a
    /// caller that must not be held up for long, such as an async worker:
    /// the call gets `budget` (rounded up to the epoch tick) instead of the
    /// configured timeout, and does not wait for a free instance slot.
    ///
    /// Returns [`Attempt::Unfinished`] when no slot was free
    /// or the call ran out of its budget: the instance is thrown away with
    /// everything it did, and nothing was written, so the caller repeats the
    /// call with the full timeout where blocking is fine. (What the plugin
    /// logged through the `log` import before it was cut short stays logged.)
    pub fn try_reconcile(
        &self,
        finalize: bool,
        request: &Request,
        cache: Arc<dyn CacheReader>,
        budget: Duration,
    ) -> Attempt {
        let export = reconcile_export(finalize);
        let inner = &self.inner;
        let result = inner.try_call(
            export,
            Some(inner.manifest.clone()),
            cache,
            budget,
            |e, i, s| e.call_reconcile(s, i, finalize, request),
        );
        match result {
            None => Attempt::Unfinished,
            Some(result) => Attempt::Done(result.and_then(|outcome| {
                inner.check_outcome(export, outcome, request.key.namespace.as_deref())
            })),
        }
    }

    /// Calls `map` for a changed `reads` object; returns the primary keys to
    /// requeue.
    pub fn map(
        &self,
        changed: String,
        cache: Arc<dyn CacheReader>,
    ) -> Result<Vec<ObjectRef>, PluginError> {
        let manifest = self.inner.manifest.clone();
        let refs = self.inner.call("map", Some(manifest), cache, |e, i, s| {
            e.call_map(s, i, &changed)
        })?;
        self.primary_refs(refs)
    }

    /// Calls `map` like [`Plugin::map`], within `budget` and on the terms of
    /// [`Plugin::try_reconcile`]; `None` means the call must be repeated.
    pub fn try_map(
        &self,
        changed: &str,
        cache: Arc<dyn CacheReader>,
        budget: Duration,
    ) -> Option<Result<Vec<ObjectRef>, PluginError>> {
        let manifest = self.inner.manifest.clone();
        let refs = self
            .inner
            .try_call("map", Some(manifest), cache, budget, |e, i, s| {
                e.call_map(s, i, changed)
            })?;
        Some(refs.and_then(|refs| self.primary_refs(refs)))
    }

    /// The keys `map` returned, each checked to be of the reconciled kind.
    fn primary_refs(&self, refs: Vec<wit::ObjectRef>) -> Result<Vec<ObjectRef>, PluginError> {
        let manifest = &self.inner.manifest;
        let primary = &manifest.reconciles.kind;
        refs.into_iter()
            .map(ObjectRef::from)
            .map(|r| {
                if r.api_version == primary.api_version && r.kind == primary.kind {
                    Ok(r)
                } else {
                    Err(PluginError::InvalidOutcome {
                        plugin: manifest.name.clone(),
                        export: "map",
                        reason: format!("{r} is not of the reconciled kind {primary}"),
                    })
                }
            })
            .collect()
    }

    /// One instance kept for many calls: no isolation between them, so only
    /// for measurement and offline tools. A trap poisons the session.
    pub fn session(&self, cache: Arc<dyn CacheReader>) -> Result<Session, PluginError> {
        let inner = &self.inner;
        let mut store = inner.new_store(
            Some(inner.manifest.clone()),
            cache,
            inner.runtime.config.call_timeout,
        );
        let instance = inner
            .pre
            .instance_pre()
            .instantiate(&mut store)
            .map_err(|e| inner.classify("instantiate", e, &store))?;
        Ok(Session {
            plugin: self.clone(),
            store,
            instance,
        })
    }
}

impl PluginInner {
    fn new_store(
        &self,
        manifest: Option<Arc<Manifest>>,
        cache: Arc<dyn CacheReader>,
        limit: Duration,
    ) -> Store<CallState> {
        let rt = &self.runtime;
        let state = CallState::new(
            self.manifest.name.as_str().into(),
            manifest,
            cache,
            rt.config.memory_limit,
            SystemTime::now(),
        );
        let mut store = Store::new(&rt.engine, state);
        store.limiter(|s| &mut s.limiter);
        store.set_epoch_deadline(rt.ticker.ticks_for(limit));
        store.epoch_deadline_trap();
        store
    }

    /// Runs one export in a fresh instance, then turns whatever went wrong
    /// into a `PluginError` naming the plugin.
    fn call<R>(
        &self,
        export: &'static str,
        manifest: Option<Arc<Manifest>>,
        cache: Arc<dyn CacheReader>,
        f: impl FnOnce(&Exports, &Instance, &mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        let _slot = self.runtime.slots.acquire();
        let limit = self.runtime.config.call_timeout;
        let mut store = self.new_store(manifest, cache, limit);
        let result = Self::instantiate_and(self.pre.instance_pre(), &self.exports, &mut store, f);
        self.finish(export, result, &store)
    }

    /// [`PluginInner::call`] with the inline linker, within `budget`, and
    /// only if an instance slot is free at once; `None` if not, or if the
    /// call ran out of its budget or reached an import that needs a thread.
    fn try_call<R>(
        &self,
        export: &'static str,
        manifest: Option<Arc<Manifest>>,
        cache: Arc<dyn CacheReader>,
        budget: Duration,
        f: impl FnOnce(&Exports, &Instance, &mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> Option<Result<R, PluginError>> {
        let pre = self.inline.as_ref()?;
        let _slot = self.runtime.slots.try_acquire()?;
        let mut store = self.new_store(manifest, cache, budget);
        let result = Self::instantiate_and(pre, &self.exports, &mut store, f);
        if let Err(e) = &result
            && (matches!(e.downcast_ref::<Trap>(), Some(Trap::Interrupt))
                || e.downcast_ref::<inline::NeedsThread>().is_some())
        {
            // Dropping the store drops the guest's buffered output too: the
            // repeated call prints it again.
            return None;
        }
        Some(self.finish(export, result, &store))
    }

    fn instantiate_and<R>(
        pre: &InstancePre<CallState>,
        exports: &Exports,
        store: &mut Store<CallState>,
        f: impl FnOnce(&Exports, &Instance, &mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> wasmtime::Result<R> {
        pre.instantiate(&mut *store)
            .and_then(|instance| f(exports, &instance, store))
    }

    /// Turns a call's result into a `PluginError` naming the plugin if it
    /// failed, logs the guest's output, and refuses a call that touched an
    /// undeclared kind.
    fn finish<R>(
        &self,
        export: &'static str,
        result: wasmtime::Result<R>,
        store: &Store<CallState>,
    ) -> Result<R, PluginError> {
        let result = result.map_err(|e| self.classify(export, e, store));
        let stderr_tail = store
            .data()
            .output
            .flush(&self.manifest.name, result.is_err());
        let result = result.map_err(|e| match e {
            PluginError::Trap {
                plugin,
                export,
                message,
            } if !stderr_tail.is_empty() => PluginError::Trap {
                plugin,
                export,
                message: format!("{message}; guest stderr: {stderr_tail}"),
            },
            e => e,
        })?;
        if let Some(message) = store.data().violations.first() {
            return Err(PluginError::Undeclared {
                plugin: self.manifest.name.clone(),
                message: message.clone(),
            });
        }
        Ok(result)
    }

    fn classify(
        &self,
        export: &'static str,
        e: wasmtime::Error,
        store: &Store<CallState>,
    ) -> PluginError {
        let plugin = self.manifest.name.clone();
        let config = &self.runtime.config;
        if store.data().limiter.exceeded || e.downcast_ref::<MemoryLimitExceeded>().is_some() {
            return PluginError::OutOfMemory {
                plugin,
                export,
                limit_mib: config.memory_limit >> 20,
            };
        }
        match e.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => PluginError::Timeout {
                plugin,
                export,
                limit: config.call_timeout,
            },
            Some(trap) => PluginError::Trap {
                plugin,
                export,
                message: trap.to_string(),
            },
            None if export == "instantiate" => PluginError::Instantiate {
                plugin,
                message: format!("{e:#}"),
            },
            None => PluginError::Trap {
                plugin,
                export,
                message: format!("{:#}", e)
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
            },
        }
    }

    fn reconcile_like(
        &self,
        finalize: bool,
        request: &Request,
        cache: Arc<dyn CacheReader>,
    ) -> Result<Outcome, PluginError> {
        let export = reconcile_export(finalize);
        let manifest = self.manifest.clone();
        let result = self.call(export, Some(manifest), cache, |e, i, s| {
            e.call_reconcile(s, i, finalize, request)
        })?;
        self.check_outcome(export, result, request.key.namespace.as_deref())
    }

    fn check_outcome(
        &self,
        export: &'static str,
        result: Result<wit::Outcome, wit::ReconcileError>,
        namespace: Option<&str>,
    ) -> Result<Outcome, PluginError> {
        let plugin = &self.manifest.name;
        let outcome = result.map_err(|e| PluginError::Failed {
            plugin: plugin.clone(),
            export,
            message: e.message,
            retry: e.retry,
        })?;
        check_outcome(&self.manifest, &self.runtime.config, outcome, namespace).map_err(|e| match e
        {
            OutcomeError::Undeclared(message) => PluginError::Undeclared {
                plugin: plugin.clone(),
                message,
            },
            OutcomeError::Invalid(reason) => PluginError::InvalidOutcome {
                plugin: plugin.clone(),
                export,
                reason,
            },
        })
    }
}

enum OutcomeError {
    Undeclared(String),
    Invalid(String),
}

/// Turns a raw outcome into the host's, refusing anything the manifest does
/// not allow or the host cannot act on. Pure: no wasm involved.
fn check_outcome(
    manifest: &Manifest,
    config: &RuntimeConfig,
    outcome: wit::Outcome,
    namespace: Option<&str>,
) -> Result<Outcome, OutcomeError> {
    use OutcomeError::{Invalid, Undeclared};
    if outcome.writes.len() > config.max_writes {
        return Err(Invalid(format!(
            "{} writes, more than the limit of {}",
            outcome.writes.len(),
            config.max_writes
        )));
    }
    let mut bytes = 0usize;
    let mut writes = Vec::with_capacity(outcome.writes.len());
    for (i, write) in outcome.writes.into_iter().enumerate() {
        // A plugin creating several children from one template writes the
        // same text several times in a row; it is checked once.
        let previous = writes.last().and_then(|w: &Write| match w {
            Write::Apply(o) => Some((true, o)),
            Write::Replace(o) | Write::UpdateStatus(o) => Some((false, o)),
            _ => None,
        });
        let object = |text: String, generate: bool| {
            match previous {
                Some((same, o)) if same == generate && o.text() == text => Ok(o.with_text(text)),
                _ => ObjectText::parse(text, generate),
            }
            .map_err(|e| Invalid(format!("write #{i}: {e}")))
        };
        let write = match write {
            wit::Write::Apply(t) => {
                bytes += t.len();
                Write::Apply(object(t, true)?)
            }
            wit::Write::Replace(t) => {
                bytes += t.len();
                let o = object(t, false)?;
                if o.header().resource_version.is_none() {
                    return Err(Invalid(format!(
                        "write #{i}: replace of {} carries no metadata.resourceVersion",
                        o.header().kind
                    )));
                }
                Write::Replace(o)
            }
            wit::Write::UpdateStatus(t) => {
                bytes += t.len();
                Write::UpdateStatus(object(t, false)?)
            }
            wit::Write::MergePatch(p) => {
                bytes += p.patch.len();
                let patch = serde_json::value::RawValue::from_string(p.patch)
                    .ok()
                    .filter(|raw| raw.get().trim_start().starts_with('{'))
                    .ok_or_else(|| {
                        Invalid(format!("write #{i}: merge patch is not a JSON object"))
                    })?;
                Write::MergePatch(Patch {
                    target: p.target.into(),
                    patch,
                })
            }
            wit::Write::Delete(r) => Write::Delete(r.into()),
        };
        if let Write::MergePatch(Patch { target: r, .. }) | Write::Delete(r) = &write
            && r.name.is_empty()
        {
            return Err(Invalid(format!(
                "write #{i}: {} target has no name",
                write.verb()
            )));
        }
        let (api_version, kind) = write.kind();
        if !manifest.may_write(api_version, kind) {
            let target = match &write {
                Write::Apply(o) | Write::Replace(o) | Write::UpdateStatus(o) => o
                    .object_ref(namespace)
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| format!("a new {kind}")),
                Write::MergePatch(p) => p.target.to_string(),
                Write::Delete(r) => r.to_string(),
            };
            return Err(Undeclared(format!(
                "wants to {} {target} ({api_version} {kind}), but its manifest does not declare {api_version} {kind} in reconciles or owns",
                write.verb()
            )));
        }
        writes.push(write);
    }
    let events = outcome
        .events
        .into_iter()
        .map(|e| {
            bytes += e.message.len() + e.reason.len();
            if e.reason.is_empty() {
                return Err(Invalid("an event has an empty reason".into()));
            }
            Ok(Event {
                type_: e.type_.into(),
                reason: e.reason,
                message: e.message,
                regarding: e.regarding.map(Into::into),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if bytes > config.max_output_bytes {
        return Err(Invalid(format!(
            "{bytes} bytes of output, more than the limit of {}",
            config.max_output_bytes
        )));
    }
    Ok(Outcome {
        writes,
        prune_owned: outcome.prune_owned,
        requeue_after: outcome.requeue_after_ms.map(Duration::from_millis),
        events,
    })
}

/// The export a reconcile-shaped call runs, as errors name it.
fn reconcile_export(finalize: bool) -> &'static str {
    if finalize { "finalize" } else { "reconcile" }
}

/// One instance reused for many calls (see [`Plugin::session`]).
pub struct Session {
    plugin: Plugin,
    store: Store<CallState>,
    instance: Instance,
}

impl Session {
    /// Calls `reconcile` on the kept instance, with a fresh deadline.
    pub fn reconcile(&mut self, request: &Request) -> Result<Outcome, PluginError> {
        let inner = &self.plugin.inner;
        let rt = &inner.runtime;
        self.store
            .set_epoch_deadline(rt.ticker.ticks_for(rt.config.call_timeout));
        let result = inner
            .exports
            .call_reconcile(&mut self.store, &self.instance, false, request)
            .map_err(|e| inner.classify("reconcile", e, &self.store))?;
        inner.check_outcome("reconcile", result, request.key.namespace.as_deref())
    }
}

/// Counts calls in flight so they never exceed the pooling allocator's slots:
/// a caller past the limit waits rather than failing.
struct Slots {
    state: Mutex<SlotCount>,
    freed: Condvar,
}

struct SlotCount {
    free: usize,
    /// Callers blocked in `acquire`; a release wakes one only if there are
    /// any, so the uncontended path makes no futex call.
    waiting: usize,
}

struct Slot<'a>(&'a Slots);

impl Slots {
    fn new(n: usize) -> Self {
        Self {
            state: Mutex::new(SlotCount {
                free: n,
                waiting: 0,
            }),
            freed: Condvar::new(),
        }
    }

    fn acquire(&self) -> Slot<'_> {
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
    fn try_acquire(&self) -> Option<Slot<'_>> {
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
/// of ticks. Stops when the runtime is dropped.
struct EpochTicker {
    stop: Arc<AtomicBool>,
}

impl EpochTicker {
    fn start(engine: Engine) -> Self {
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

    fn ticks_for(&self, timeout: Duration) -> u64 {
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
    use crate::contract::Watch;

    fn manifest() -> Manifest {
        let watch = |api_version: &str, kind: &str| Watch {
            kind: KindRef::new(api_version, kind),
            namespace: None,
            label_selector: None,
            field_selector: None,
        };
        Manifest {
            reconciles: watch("apps/v1", "ReplicaSet"),
            owns: vec![watch("v1", "Pod")],
            ..placeholder_manifest("rs")
        }
    }

    fn check(writes: Vec<wit::Write>) -> Result<Outcome, OutcomeError> {
        let outcome = wit::Outcome {
            writes,
            prune_owned: true,
            requeue_after_ms: None,
            events: Vec::new(),
        };
        check_outcome(
            &manifest(),
            &RuntimeConfig::default(),
            outcome,
            Some("default"),
        )
    }

    /// Repeated identical texts are checked once, but each write is still
    /// held to the rules of its own kind of write.
    #[test]
    fn repeated_writes_are_checked_as_if_parsed_again() {
        let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-"}}"#;
        let Ok(out) = check(vec![wit::Write::Apply(pod.into()); 3]) else {
            panic!("three identical applies are fine")
        };
        assert_eq!(out.writes.len(), 3);
        for w in &out.writes {
            let Write::Apply(o) = w else {
                panic!("not an apply")
            };
            assert_eq!(
                (o.text(), o.header().generate_name.as_deref()),
                (pod, Some("web-"))
            );
        }
        // The same text as a replace needs a name, which it lacks.
        let err = check(vec![
            wit::Write::Apply(pod.into()),
            wit::Write::Replace(pod.into()),
        ]);
        assert!(matches!(err, Err(OutcomeError::Invalid(m)) if m.contains("write #1")));
        // An undeclared kind is refused however often it repeats.
        let secret = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#;
        let err = check(vec![wit::Write::Apply(secret.into()); 2]);
        assert!(matches!(err, Err(OutcomeError::Undeclared(m)) if m.contains("v1 Secret")));
    }
}
