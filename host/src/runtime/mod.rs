//! The sandboxed wasm runtime: loads plugin components and calls them safely.
//!
//! Strategy (as in Kubewarden's policy evaluator): compile each component
//! once (or take it from the host-owned artifact cache), link it once into an
//! `InstancePre`, and give every call a **fresh `Store`** from the pooling
//! allocator, with an epoch deadline driven by one ticker thread and a
//! memory limiter. A trap, a timeout or memory exhaustion fails that one call
//! with a typed error naming the plugin; the host and other plugins go on.
//! Everything a call returns is capped while it is lifted and checked
//! against the plugin's manifest before anyone acts on it.
//!
//! The host implements two versions of the contract (`wit/controller@0.1.0`
//! and `@0.2.0`); a component's imports say which it was built against, and
//! both end in the same host types (`crate::contract`).
//!
//! The rooms:
//! - `load.rs`: reading, compiling, version detection, linking, `manifest()`;
//! - `plugin.rs`: [`Plugin`] and its calls (full, inline, kept sessions);
//! - `schedule.rs`: the async calls ([`Plugin::reconcile_async`] and the
//!   others), inline on the async worker while the plugin's calls are quick,
//!   else on a blocking thread;
//! - `bindings.rs`: the one `bindgen!` module and the typed export calls;
//! - `output.rs` and `lift.rs`: what exports return, lifted within caps;
//! - `outcome.rs`: the plugin boundary's checks of outcomes and `map` keys;
//! - `state.rs`: per-call state and the host side of the imports;
//! - `sandbox.rs`: WASI as a plugin sees it (frozen clock, bounded output,
//!   nothing that waits); `inline.rs`: the linking for inline calls;
//! - `warm.rs`: instances kept between a plugin's pure calls (`index`,
//!   `map`);
//! - `slots.rs`: instance slots and the epoch ticker; `artifacts.rs`: the
//!   precompiled-artifact cache; `errors.rs`: [`LoadError`], [`PluginError`].
//!
//! Calls are synchronous and CPU-bound; async callers use the `*_async`
//! calls, which decide where each one runs (`schedule.rs`).

mod artifacts;
mod bindings;
mod errors;
mod inline;
mod lift;
mod load;
mod outcome;
mod output;
mod plugin;
mod sandbox;
mod schedule;
mod slots;
mod state;
mod warm;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::Linker;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

pub use artifacts::hex;
pub use bindings::Contract;
pub use errors::{LoadError, PluginError};
pub use lift::OutputLimits;
pub use plugin::{Attempt, Plugin, Session};
// The cache reader lives on the ground floor; these names stay for callers.
pub use crate::model::{CacheReader, EmptyCache};

use slots::{EpochTicker, Slots};
use state::CallState;

/// Limits and settings for every plugin call.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Wall-clock deadline of one call, host calls included.
    pub call_timeout: Duration,
    /// Linear memory one call may hold.
    pub memory_limit: usize,
    /// What one call may return (checked before the host allocates it).
    pub output: OutputLimits,
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
            output: OutputLimits::default(),
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

/// The engine, linkers and shared limits every loaded plugin uses.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

struct RuntimeInner {
    engine: Engine,
    /// One linker per contract version, in `Contract::ALL` order.
    linkers: Vec<Linker<CallState>>,
    config: RuntimeConfig,
    artifacts: Option<artifacts::ArtifactCache>,
    slots: Arc<Slots>,
    /// Instances kept between pure calls, across every plugin (`warm.rs`).
    kept: warm::KeptCount,
    ticker: EpochTicker,
}

impl RuntimeInner {
    fn linker(&self, contract: Contract) -> &Linker<CallState> {
        &self.linkers[contract as usize]
    }
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
    /// and a linker per contract version with WASI (no ambient capabilities,
    /// nothing that waits) and the host imports.
    pub fn new(config: RuntimeConfig) -> anyhow::Result<Self> {
        let mut pool = PoolingAllocationConfig::default();
        let slots = config.max_instances.max(1);
        // Calls take up to `slots` instances; kept ones have their own.
        let instances = slots + warm::MAX_KEPT as u32;
        pool.total_component_instances(instances)
            .total_core_instances(instances * 8)
            .total_memories(instances * 2)
            .total_tables(instances * 8)
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
        // `WINDLASS_WASM_PROFILER=perfmap` names plugin code in `perf`
        // (through /tmp/perf-PID.map); `jitdump` for `perf inject`.
        match std::env::var("WINDLASS_WASM_PROFILER").as_deref() {
            Ok("perfmap") => {
                wasm.profiler(wasmtime::ProfilingStrategy::PerfMap);
            }
            Ok("jitdump") => {
                wasm.profiler(wasmtime::ProfilingStrategy::JitDump);
            }
            _ => {}
        }
        wasm.wasm_component_model(true)
            .epoch_interruption(true)
            .max_wasm_stack(1 << 20)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&wasm)?;

        let mut linkers = Vec::new();
        for contract in Contract::ALL {
            let mut linker = Linker::<CallState>::new(&engine);
            wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
            sandbox::add_no_wait_poll(&mut linker)?;
            state::add_imports(&mut linker, contract)?;
            linkers.push(linker);
        }

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
                linkers,
                artifacts,
                slots: Arc::new(Slots::new(slots as usize)),
                kept: Default::default(),
                ticker,
                config,
            }),
        })
    }

    /// The settings this runtime enforces.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }
}
