//! A loaded plugin and its calls: each call gets a fresh instance from the
//! pooling allocator, a deadline and a memory cap; whatever went wrong comes
//! back as a [`PluginError`] naming the plugin, and whatever it returned is
//! checked against the manifest (`outcome.rs`) before anyone acts on it.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use wasmtime::component::{Instance, InstancePre};
use wasmtime::{Store, Trap};

use super::bindings::{Contract, Exports};
use super::errors::PluginError;
use super::lift::{self, OutputLimit};
use super::outcome::{OutcomeError, check_index_entry, check_map_keys, check_outcome};
use super::output::RawResult;
use super::sandbox::WouldWait;
use super::state::{CallSetup, CallState, DeadlinePassed, MemoryLimitExceeded};
use super::{RuntimeInner, inline};
use crate::contract::{IndexEntry, Manifest, Outcome, Request};
use crate::model::{CacheReader, ObjectRef};

/// The result of [`Plugin::try_reconcile`].
#[derive(Debug)]
pub enum Attempt {
    /// The call ran to its end (successfully or not).
    Done(Result<Outcome, PluginError>),
    /// The call could not start at once or ran out of its budget; repeat it.
    Unfinished,
}

/// A loaded, validated plugin. Cheap to clone; safe to call from many
/// threads at once (each call gets its own instance).
#[derive(Clone)]
pub struct Plugin {
    pub(super) inner: Arc<PluginInner>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.inner.manifest.name)
            .field("file", &self.inner.file)
            .field("digest", &self.inner.digest)
            .field("contract", &self.inner.exports.contract())
            .finish()
    }
}

pub(super) struct PluginInner {
    pub(super) runtime: Arc<RuntimeInner>,
    pub(super) pre: InstancePre<CallState>,
    /// The same component linked for inline calls (see `inline.rs`); `None`
    /// if that failed, and then every call runs with the full linker.
    pub(super) inline: Option<InstancePre<CallState>>,
    pub(super) exports: Exports,
    pub(super) manifest: Arc<Manifest>,
    pub(super) settings: Option<Arc<str>>,
    pub(super) digest: String,
    pub(super) file: String,
    /// Where the next call from async code runs (`schedule.rs`).
    pub(super) schedule: super::schedule::Schedule,
    /// Instances kept between pure calls (`warm.rs`).
    pub(super) warm: super::warm::Warm,
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

    /// The contract version the plugin was built against.
    pub fn contract(&self) -> Contract {
        self.inner.exports.contract()
    }

    /// SHA-256 of the component's bytes, lowercase hex.
    pub fn digest(&self) -> &str {
        &self.inner.digest
    }

    /// The file the plugin was loaded from.
    pub fn file(&self) -> &str {
        &self.inner.file
    }

    /// The settings the plugin was loaded with, as JSON text.
    pub fn settings(&self) -> Option<&str> {
        self.inner.settings.as_deref()
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
        let result = inner.try_call(export, true, cache, budget, |e, i, s| {
            let raw = e.call_reconcile(&mut *s, i, finalize, request)?;
            Ok((raw, std::mem::take(&mut s.data_mut().index_reads)))
        });
        match result {
            None => Attempt::Unfinished,
            Some(result) => Attempt::Done(
                result.and_then(|(raw, reads)| inner.checked(export, raw, reads, &request.key)),
            ),
        }
    }

    /// Calls `map` for a changed `reads` object; returns the primary keys to
    /// requeue.
    pub fn map(
        &self,
        changed: String,
        cache: Arc<dyn CacheReader>,
    ) -> Result<Vec<ObjectRef>, PluginError> {
        let refs = self
            .inner
            .call("map", true, cache, |e, i, s| e.call_map(s, i, &changed))?;
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
        self.inner.try_pure_call(
            "map",
            cache,
            budget,
            |e, i, s| e.call_map(s, i, changed),
            |refs| self.primary_refs(refs),
        )
    }

    /// Calls `index` (0.2) for an object of an indexed watch.
    pub fn index(
        &self,
        object: &str,
        cache: Arc<dyn CacheReader>,
    ) -> Result<Option<IndexEntry>, PluginError> {
        let entry = self
            .inner
            .call("index", true, cache, |e, i, s| e.call_index(s, i, object))?;
        self.checked_entry(entry)
    }

    /// Calls `index` like [`Plugin::index`], within `budget` and on the terms
    /// of [`Plugin::try_reconcile`]; `None` means the call must be repeated.
    pub fn try_index(
        &self,
        object: &str,
        cache: Arc<dyn CacheReader>,
        budget: Duration,
    ) -> Option<Result<Option<IndexEntry>, PluginError>> {
        self.inner.try_pure_call(
            "index",
            cache,
            budget,
            |e, i, s| e.call_index(s, i, object),
            |entry| self.checked_entry(entry),
        )
    }

    fn checked_entry(&self, entry: Option<IndexEntry>) -> Result<Option<IndexEntry>, PluginError> {
        if let Some(e) = &entry {
            check_index_entry(e).map_err(|reason| PluginError::InvalidOutcome {
                plugin: self.name().to_owned(),
                export: "index",
                reason,
            })?;
        }
        Ok(entry)
    }

    /// The keys `map` returned, each checked to be a key the plugin reconciles.
    fn primary_refs(&self, refs: Vec<ObjectRef>) -> Result<Vec<ObjectRef>, PluginError> {
        check_map_keys(&self.inner.manifest, &refs).map_err(|reason| {
            PluginError::InvalidOutcome {
                plugin: self.name().to_owned(),
                export: "map",
                reason,
            }
        })?;
        Ok(refs)
    }

    /// One instance kept for many calls: no isolation between them, so only
    /// for measurement and offline tools. A trap poisons the session.
    pub fn session(&self, cache: Arc<dyn CacheReader>) -> Result<Session, PluginError> {
        let inner = &self.inner;
        let mut store = inner.new_store(true, cache, inner.runtime.config.call_timeout);
        let instance = inner
            .pre
            .instantiate(&mut store)
            .map_err(|e| inner.classify("instantiate", e, &store))?;
        Ok(Session {
            plugin: self.clone(),
            store,
            instance,
        })
    }
}

/// The export a reconcile-shaped call runs, as errors name it.
fn reconcile_export(finalize: bool) -> &'static str {
    if finalize { "finalize" } else { "reconcile" }
}

/// Whether an inline attempt ended before the call did (its budget ran out,
/// or it reached an import that needs a thread): the call is repeated
/// where it may block, and nothing of this attempt counts.
fn cut_short(e: &wasmtime::Error) -> bool {
    matches!(e.downcast_ref::<Trap>(), Some(Trap::Interrupt))
        || e.downcast_ref::<DeadlinePassed>().is_some()
        || e.downcast_ref::<inline::NeedsThread>().is_some()
}

impl PluginInner {
    /// A fresh store; `declared`: whether the manifest's kinds may be read
    /// (not while `manifest()` itself runs).
    pub(super) fn new_store(
        &self,
        declared: bool,
        cache: Arc<dyn CacheReader>,
        limit: Duration,
    ) -> Store<CallState> {
        let rt = &self.runtime;
        let setup = CallSetup {
            plugin: self.manifest.name.as_str().into(),
            manifest: declared.then(|| self.manifest.clone()),
            cache,
            settings: self.settings.clone(),
            memory_limit: rt.config.memory_limit,
        };
        let state = CallState::new(setup, SystemTime::now(), Instant::now() + limit);
        let mut store = Store::new(&rt.engine, state);
        store.limiter(|s| &mut s.limiter);
        store.set_epoch_deadline(rt.ticker.ticks_for(limit));
        store.epoch_deadline_trap();
        store
    }

    /// Runs one export in a fresh instance, then turns whatever went wrong
    /// into a `PluginError` naming the plugin.
    pub(super) fn call<R>(
        &self,
        export: &'static str,
        declared: bool,
        cache: Arc<dyn CacheReader>,
        f: impl FnOnce(&Exports, &Instance, &mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        let _slot = self.runtime.slots.acquire(&self.manifest.name);
        let limit = self.runtime.config.call_timeout;
        lift::within(&self.runtime.config.output, || {
            let mut store = self.new_store(declared, cache, limit);
            let result = self
                .pre
                .instantiate(&mut store)
                .and_then(|instance| f(&self.exports, &instance, &mut store));
            self.finish(export, result, &store)
        })
    }

    /// [`PluginInner::call`] with the inline linker, within `budget`, and
    /// only if an instance slot is free at once; `None` if not, or if the
    /// call ran out of its budget or reached an import that needs a thread.
    fn try_call<R>(
        &self,
        export: &'static str,
        declared: bool,
        cache: Arc<dyn CacheReader>,
        budget: Duration,
        f: impl FnOnce(&Exports, &Instance, &mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> Option<Result<R, PluginError>> {
        let pre = self.inline.as_ref()?;
        let _slot = self.runtime.slots.try_acquire()?;
        lift::within(&self.runtime.config.output, || {
            let mut store = self.new_store(declared, cache, budget);
            let result = pre
                .instantiate(&mut store)
                .and_then(|instance| f(&self.exports, &instance, &mut store));
            if let Err(e) = &result
                && cut_short(e)
            {
                // Dropping the store drops the guest's buffered output too:
                // the repeated call prints it again.
                return None;
            }
            Some(self.finish(export, result, &store))
        })
    }

    /// [`PluginInner::try_call`] for a pure export (`index`, `map`): in an
    /// instance kept from an earlier pure call when there is one, and the
    /// instance kept afterwards if the call ended cleanly and `check`
    /// accepted what it returned (`warm.rs`).
    fn try_pure_call<R, C>(
        &self,
        export: &'static str,
        cache: Arc<dyn CacheReader>,
        budget: Duration,
        f: impl FnOnce(&Exports, &Instance, &mut Store<CallState>) -> wasmtime::Result<R>,
        check: impl FnOnce(R) -> Result<C, PluginError>,
    ) -> Option<Result<C, PluginError>> {
        let pre = self.inline.as_ref()?;
        let rt = &self.runtime;
        lift::within(&rt.config.output, || {
            // A kept instance needs no slot: the pool has its own for them.
            let mut _slot = None;
            let (mut store, instance, was_kept) = match self.warm.take() {
                Some(kept) => {
                    let (mut store, instance, was_kept) = kept.into_parts();
                    store
                        .data_mut()
                        .reuse(cache, SystemTime::now(), Instant::now() + budget);
                    store.set_epoch_deadline(rt.ticker.ticks_for(budget));
                    (store, Ok(instance), Some(was_kept))
                }
                None => {
                    _slot = Some(rt.slots.try_acquire()?);
                    let mut store = self.new_store(true, cache, budget);
                    let instance = pre.instantiate(&mut store);
                    (store, instance, None)
                }
            };
            let result = instance.and_then(|i| f(&self.exports, &i, &mut store).map(|r| (r, i)));
            if let Err(e) = &result
                && cut_short(e)
            {
                return None;
            }
            let result = self
                .finish(export, result, &store)
                .and_then(|(r, instance)| Ok((check(r)?, instance)));
            Some(result.map(|(checked, instance)| {
                self.warm.keep(&rt.kept, store, instance, was_kept);
                checked
            }))
        })
    }

    /// Turns a call's result into a `PluginError` naming the plugin if it
    /// failed, logs the guest's output, and refuses a call that made a
    /// refused read.
    pub(super) fn finish<R>(
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

    pub(super) fn classify(
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
        if let Some(limit) = e.downcast_ref::<OutputLimit>() {
            return PluginError::InvalidOutcome {
                plugin,
                export,
                reason: limit.0.clone(),
            };
        }
        if let Some(wait) = e.downcast_ref::<WouldWait>() {
            return PluginError::Trap {
                plugin,
                export,
                message: wait.to_string(),
            };
        }
        if e.downcast_ref::<DeadlinePassed>().is_some() {
            return PluginError::Timeout {
                plugin,
                export,
                limit: config.call_timeout,
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
        let (raw, reads) = self.call(export, true, cache, |e, i, s| {
            let raw = e.call_reconcile(&mut *s, i, finalize, request)?;
            Ok((raw, std::mem::take(&mut s.data_mut().index_reads)))
        })?;
        self.checked(export, raw, reads, &request.key)
    }

    /// The outcome of a finished reconcile-shaped call, checked.
    fn checked(
        &self,
        export: &'static str,
        raw: RawResult,
        index_reads: Vec<crate::model::IndexRead>,
        key: &ObjectRef,
    ) -> Result<Outcome, PluginError> {
        let plugin = &self.manifest.name;
        let outcome = raw.map_err(|(message, retry)| PluginError::Failed {
            plugin: plugin.clone(),
            export,
            message,
            retry,
        })?;
        let mut outcome = check_outcome(&self.manifest, outcome, key).map_err(|e| match e {
            OutcomeError::Undeclared(message) => PluginError::Undeclared {
                plugin: plugin.clone(),
                message,
            },
            OutcomeError::Invalid(reason) => PluginError::InvalidOutcome {
                plugin: plugin.clone(),
                export,
                reason,
            },
        })?;
        outcome.index_reads = index_reads;
        Ok(outcome)
    }
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
        let limit = rt.config.call_timeout;
        self.store.set_epoch_deadline(rt.ticker.ticks_for(limit));
        self.store.data_mut().reset_deadline(Instant::now() + limit);
        let (store, instance) = (&mut self.store, &self.instance);
        let raw = lift::within(&rt.config.output, || {
            inner
                .exports
                .call_reconcile(&mut *store, instance, false, request)
        })
        .map_err(|e| inner.classify("reconcile", e, &self.store))?;
        inner.checked("reconcile", raw, Vec::new(), &request.key)
    }
}
