//! Per-call store state and the host side of the plugin's imports (`cache`,
//! `log`, and 0.2's `instance`), for both contract versions.
//!
//! Every call gets a fresh `CallState`, so nothing a plugin does in one call
//! can be seen in the next. Every import checks the call's wall-clock
//! deadline and the plugin's manifest, and validates the names it is given
//! before they reach the caches: a refused read fails the call afterwards
//! even if the plugin ignores the error it got.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{ResourceLimiter, StoreContextMut};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use windlass_selector::{LabelSelector, names};

use super::bindings::{Contract, v1, v2};
use super::lift::LogText;
use super::sandbox::{self, GuestOutput};
use crate::contract::Manifest;
use crate::model::{CacheReader, IndexRead, KindRef, ObjectRef};

/// Keys one `totals` read may ask for.
const MAX_TOTALS_KEYS: usize = 100_000;
/// Bytes of one index key a read may name.
const MAX_KEY_BYTES: usize = 4 << 10;

/// The call went past its deadline inside a host function.
#[derive(Debug, thiserror::Error)]
#[error("the call's deadline passed during a host call")]
pub(crate) struct DeadlinePassed;

pub(crate) struct CallState {
    /// Built on the first WASI call: most calls make none, and building
    /// one (streams, clocks, a seeded RNG) is a good part of a small call.
    wasi: Option<WasiCtx>,
    /// The instant the call started, which is all the clock ever reads.
    started: SystemTime,
    /// When the call must be over, host functions included.
    deadline: Instant,
    table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) plugin: Arc<str>,
    /// None while `manifest()` runs: nothing is declared yet, so no reads.
    manifest: Option<Arc<Manifest>>,
    cache: Arc<dyn CacheReader>,
    settings: Option<Arc<str>>,
    /// Refused reads: each fails the call after it returns.
    pub(crate) violations: Vec<String>,
    pub(crate) output: GuestOutput,
    /// The index keys read, with their versions.
    pub(crate) index_reads: Vec<IndexRead>,
}

/// What a call's state is made from.
pub(crate) struct CallSetup {
    pub plugin: Arc<str>,
    pub manifest: Option<Arc<Manifest>>,
    pub cache: Arc<dyn CacheReader>,
    pub settings: Option<Arc<str>>,
    pub memory_limit: usize,
}

impl CallState {
    pub(crate) fn new(setup: CallSetup, now: SystemTime, deadline: Instant) -> Self {
        Self {
            wasi: None,
            started: now,
            deadline,
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(setup.memory_limit),
            plugin: setup.plugin,
            manifest: setup.manifest,
            cache: setup.cache,
            settings: setup.settings,
            violations: Vec::new(),
            output: GuestOutput::default(),
            index_reads: Vec::new(),
        }
    }

    /// A new deadline, for an instance kept for another call.
    pub(crate) fn reset_deadline(&mut self, deadline: Instant) {
        self.deadline = deadline;
    }

    /// Readies a kept instance's state for its next call (see `warm.rs`):
    /// that call's caches, clock and deadline, and nothing of the last
    /// call's reads.
    pub(crate) fn reuse(
        &mut self,
        cache: Arc<dyn CacheReader>,
        now: SystemTime,
        deadline: Instant,
    ) {
        self.cache = cache;
        self.started = now;
        self.deadline = deadline;
        self.violations.clear();
        self.index_reads.clear();
    }

    /// Whether an instance whose call ended cleanly may be kept for
    /// another: it made no WASI call (its clock would stay frozen at this
    /// call's start), holds no resources, refused nothing, and its memory
    /// is within `max_memory`.
    pub(crate) fn reusable(&self, max_memory: usize) -> bool {
        self.wasi.is_none()
            && self.table.is_empty()
            && self.violations.is_empty()
            && !self.limiter.exceeded
            && self.limiter.used <= max_memory
    }

    pub(crate) fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }

    fn check_deadline(&self) -> wasmtime::Result<()> {
        if Instant::now() > self.deadline {
            return Err(DeadlinePassed.into());
        }
        Ok(())
    }

    /// Records a refused read and returns its message.
    fn refuse(&mut self, message: String) -> String {
        self.violations.push(message.clone());
        message
    }

    fn check_read(&mut self, kind: &KindRef) -> Result<(), Refusal> {
        let declared = self
            .manifest
            .as_ref()
            .is_some_and(|m| m.may_read(&kind.api_version, &kind.kind));
        if declared {
            return Ok(());
        }
        let message = match &self.manifest {
            Some(_) => format!(
                "read {kind}, which its manifest does not declare in reconciles, owns or reads"
            ),
            None => format!("read {kind} during manifest(), before declaring anything"),
        };
        Err(Refusal::Undeclared(self.refuse(message)))
    }

    fn check_names(&mut self, r: &ObjectRef) -> Result<(), Refusal> {
        r.validate().map_err(|e| {
            Refusal::Invalid(self.refuse(format!("read with an invalid reference: {e}")))
        })
    }

    fn check_namespace(&mut self, namespace: Option<&str>) -> Result<(), Refusal> {
        match namespace {
            Some(ns) => names::dns_label(ns).map_err(|e| {
                Refusal::Invalid(self.refuse(format!("read with an invalid namespace: {e}")))
            }),
            None => Ok(()),
        }
    }

    fn check_indexed(&mut self, kind: &KindRef) -> Result<(), Refusal> {
        self.check_read(kind)?;
        let indexed = self
            .manifest
            .as_ref()
            .is_some_and(|m| m.indexed_watch(kind).is_some());
        if indexed {
            return Ok(());
        }
        Err(Refusal::Undeclared(self.refuse(format!(
            "read the index of {kind}, but no watch of that kind is indexed"
        ))))
    }

    fn check_key(&mut self, key: &str) -> Result<(), Refusal> {
        if key.len() > MAX_KEY_BYTES {
            return Err(Refusal::Invalid(self.refuse(format!(
                "read an index key of {} bytes, more than {MAX_KEY_BYTES}",
                key.len()
            ))));
        }
        Ok(())
    }

    fn get(&mut self, r: ObjectRef) -> wasmtime::Result<Result<Option<String>, Refusal>> {
        self.check_deadline()?;
        if let Err(e) = self
            .check_read(&r.kind_ref())
            .and_then(|()| self.check_names(&r))
        {
            return Ok(Err(e));
        }
        Ok(Ok(self.cache.get(&r).map(|o| o.to_string())))
    }

    fn list(
        &mut self,
        kind: KindRef,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> wasmtime::Result<Result<Vec<String>, Refusal>> {
        self.check_deadline()?;
        let namespace = namespace.filter(|ns| !ns.is_empty());
        if let Err(e) = self
            .check_read(&kind)
            .and_then(|()| self.check_namespace(namespace.as_deref()))
        {
            return Ok(Err(e));
        }
        let selector = match label_selector.as_deref().map(str::trim) {
            None | Some("") => LabelSelector::everything(),
            Some(s) => match LabelSelector::parse(s) {
                Ok(sel) => sel,
                Err(e) => return Ok(Err(Refusal::Selector(e.to_string()))),
            },
        };
        let objects = self.cache.list(&kind, namespace.as_deref(), &selector);
        self.check_deadline()?;
        Ok(Ok(objects.into_iter().map(|o| o.to_string()).collect()))
    }

    fn lookup(
        &mut self,
        kind: KindRef,
        key: String,
    ) -> wasmtime::Result<Result<Vec<Vec<u8>>, Refusal>> {
        self.check_deadline()?;
        if let Err(e) = self
            .check_indexed(&kind)
            .and_then(|()| self.check_key(&key))
        {
            return Ok(Err(e));
        }
        let Some(index) = self.cache.index(&kind) else {
            return Ok(Ok(Vec::new()));
        };
        let (summaries, version) = index.lookup(&key);
        let kind = Arc::new(kind);
        self.index_reads.push(IndexRead { kind, key, version });
        Ok(Ok(summaries.iter().map(|s| s.to_vec()).collect()))
    }

    fn lookup_objects(
        &mut self,
        kind: KindRef,
        key: String,
    ) -> wasmtime::Result<Result<Vec<String>, Refusal>> {
        self.check_deadline()?;
        if let Err(e) = self
            .check_indexed(&kind)
            .and_then(|()| self.check_key(&key))
        {
            return Ok(Err(e));
        }
        let Some(index) = self.cache.index(&kind) else {
            return Ok(Ok(Vec::new()));
        };
        let (objects, version) = index.lookup_objects(&key);
        let kind = Arc::new(kind);
        self.index_reads.push(IndexRead { kind, key, version });
        Ok(Ok(objects.iter().map(|o| o.to_string()).collect()))
    }

    fn totals(
        &mut self,
        kind: KindRef,
        keys: Vec<String>,
    ) -> wasmtime::Result<Result<Vec<Vec<i64>>, Refusal>> {
        self.check_deadline()?;
        if let Err(e) = self.check_indexed(&kind) {
            return Ok(Err(e));
        }
        if keys.len() > MAX_TOTALS_KEYS {
            let m = format!(
                "asked for the totals of {} keys, more than {MAX_TOTALS_KEYS}",
                keys.len()
            );
            return Ok(Err(Refusal::Invalid(self.refuse(m))));
        }
        for key in &keys {
            if let Err(e) = self.check_key(key) {
                return Ok(Err(e));
            }
        }
        let Some(index) = self.cache.index(&kind) else {
            return Ok(Ok(vec![Vec::new(); keys.len()]));
        };
        let read = index.totals(&keys);
        let kind = Arc::new(kind);
        let mut sums = Vec::with_capacity(keys.len());
        self.index_reads.reserve(keys.len());
        for (key, (total, version)) in keys.into_iter().zip(read) {
            sums.push(total);
            let kind = kind.clone();
            self.index_reads.push(IndexRead { kind, key, version });
        }
        Ok(Ok(sums))
    }

    fn log(&mut self, level: Level, message: LogText) -> wasmtime::Result<()> {
        self.check_deadline()?;
        let Some(message) = message.0 else {
            return Ok(()); // over the call's log budget: counted, not kept
        };
        let plugin = &*self.plugin;
        match level {
            Level::Trace => tracing::trace!(plugin, "{message}"),
            Level::Debug => tracing::debug!(plugin, "{message}"),
            Level::Info => tracing::info!(plugin, "{message}"),
            Level::Warn => tracing::warn!(plugin, "{message}"),
            Level::Error => tracing::error!(plugin, "{message}"),
        }
        Ok(())
    }
}

/// Why a read was refused, in either version's terms.
enum Refusal {
    Undeclared(String),
    Selector(String),
    Invalid(String),
}

#[derive(Clone, Copy)]
enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let (output, started) = (&self.output, self.started);
        WasiCtxView {
            ctx: self
                .wasi
                .get_or_insert_with(|| sandbox::wasi(output, started)),
            table: &mut self.table,
        }
    }
}

/// Adds the host's imports of `contract` (its `cache`, `log` and, for 0.2,
/// `instance` interfaces, and the type-only `types` interface) to `linker`.
pub(crate) fn add_imports(
    linker: &mut Linker<CallState>,
    contract: Contract,
) -> wasmtime::Result<()> {
    // `log` is linked by hand (its message is lifted capped, as `LogText`);
    // each contract version has its own `Level` type, alike in all but name.
    macro_rules! log_fn {
        ($log:ident) => {
            |mut store: StoreContextMut<'_, CallState>, (level, message): ($log::Level, LogText)| {
                let level = match level {
                    $log::Level::Trace => Level::Trace,
                    $log::Level::Debug => Level::Debug,
                    $log::Level::Info => Level::Info,
                    $log::Level::Warn => Level::Warn,
                    $log::Level::Error => Level::Error,
                };
                store.data_mut().log(level, message)
            }
        };
    }
    match contract {
        Contract::V1 => {
            use v1::windlass::controller::{cache, log};
            cache::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)?;
            v1::windlass::controller::types::add_to_linker::<CallState, HasSelf<CallState>>(
                linker,
                |s| s,
            )?;
            linker
                .instance("windlass:controller/log@0.1.0")?
                .func_wrap("log", log_fn!(log))?;
        }
        Contract::V2 => {
            use v2::windlass::controller::{cache, instance, log};
            cache::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)?;
            instance::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)?;
            v2::windlass::controller::types::add_to_linker::<CallState, HasSelf<CallState>>(
                linker,
                |s| s,
            )?;
            linker
                .instance("windlass:controller/log@0.2.0")?
                .func_wrap("log", log_fn!(log))?;
        }
    }
    Ok(())
}

// ---- 0.1 imports -------------------------------------------------------------

mod imports_v1 {
    use super::*;
    use v1::windlass::controller::cache::{self, CacheError};
    use v1::windlass::controller::types as wit;

    fn refusal(r: Refusal) -> CacheError {
        match r {
            Refusal::Undeclared(m) | Refusal::Invalid(m) => CacheError::Undeclared(m),
            Refusal::Selector(m) => CacheError::InvalidSelector(m),
        }
    }

    impl wit::Host for CallState {}

    impl cache::Host for CallState {
        fn get(
            &mut self,
            r: wit::ObjectRef,
        ) -> wasmtime::Result<Result<Option<String>, CacheError>> {
            let r = ObjectRef {
                api_version: r.api_version,
                kind: r.kind,
                namespace: r.namespace.filter(|ns| !ns.is_empty()),
                name: r.name,
            };
            Ok(CallState::get(self, r)?.map_err(refusal))
        }

        fn list(
            &mut self,
            kind: wit::KindRef,
            namespace: Option<String>,
            label_selector: Option<String>,
        ) -> wasmtime::Result<Result<Vec<String>, CacheError>> {
            let kind = KindRef::new(kind.api_version, kind.kind);
            Ok(CallState::list(self, kind, namespace, label_selector)?.map_err(refusal))
        }
    }
}

// ---- 0.2 imports -------------------------------------------------------------

mod imports_v2 {
    use super::*;
    use v2::windlass::controller::cache::{self, CacheError};
    use v2::windlass::controller::instance;
    use v2::windlass::controller::types as wit;

    fn refusal(r: Refusal) -> CacheError {
        match r {
            Refusal::Undeclared(m) => CacheError::Undeclared(m),
            Refusal::Selector(m) => CacheError::InvalidSelector(m),
            Refusal::Invalid(m) => CacheError::Invalid(m),
        }
    }

    fn kind(k: wit::KindRef) -> KindRef {
        KindRef::new(k.api_version, k.kind)
    }

    impl wit::Host for CallState {}

    impl cache::Host for CallState {
        fn get(
            &mut self,
            r: wit::ObjectRef,
        ) -> wasmtime::Result<Result<Option<String>, CacheError>> {
            let r = ObjectRef {
                api_version: r.api_version,
                kind: r.kind,
                namespace: r.namespace.filter(|ns| !ns.is_empty()),
                name: r.name,
            };
            Ok(CallState::get(self, r)?.map_err(refusal))
        }

        fn list(
            &mut self,
            k: wit::KindRef,
            namespace: Option<String>,
            label_selector: Option<String>,
        ) -> wasmtime::Result<Result<Vec<String>, CacheError>> {
            Ok(CallState::list(self, kind(k), namespace, label_selector)?.map_err(refusal))
        }

        fn lookup(
            &mut self,
            k: wit::KindRef,
            key: String,
        ) -> wasmtime::Result<Result<Vec<Vec<u8>>, CacheError>> {
            Ok(CallState::lookup(self, kind(k), key)?.map_err(refusal))
        }

        fn lookup_objects(
            &mut self,
            k: wit::KindRef,
            key: String,
        ) -> wasmtime::Result<Result<Vec<String>, CacheError>> {
            Ok(CallState::lookup_objects(self, kind(k), key)?.map_err(refusal))
        }

        fn totals(
            &mut self,
            k: wit::KindRef,
            keys: Vec<String>,
        ) -> wasmtime::Result<Result<Vec<Vec<i64>>, CacheError>> {
            Ok(CallState::totals(self, kind(k), keys)?.map_err(refusal))
        }
    }

    impl instance::Host for CallState {
        fn settings(&mut self) -> wasmtime::Result<Option<String>> {
            self.check_deadline()?;
            Ok(self.settings.as_deref().map(str::to_owned))
        }
    }
}

/// Caps the linear memory a plugin may hold, and remembers when it tried to
/// go over, so the resulting trap can be reported as memory exhaustion.
pub(crate) struct MemoryLimiter {
    limit: usize,
    used: usize,
    pub(crate) exceeded: bool,
}

impl MemoryLimiter {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            used: 0,
            exceeded: false,
        }
    }
}

/// The error a refused memory growth traps with.
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {0} bytes exceeded")]
pub(crate) struct MemoryLimitExceeded(pub usize);

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let grow = desired.saturating_sub(current);
        if self.used.saturating_add(grow) > self.limit {
            self.exceeded = true;
            // An error (rather than `Ok(false)`) traps at once: a Rust guest
            // would otherwise abort in its allocator with a vaguer message.
            return Err(MemoryLimitExceeded(self.limit).into());
        }
        self.used += grow;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}
