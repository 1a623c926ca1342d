//! windlass: a Kubernetes controller host that runs reconcilers as sandboxed
//! WebAssembly components.
//!
//! The house, from the ground floor up (each floor uses only those below):
//!
//! - ground: `model` — identities ([`KindRef`], [`ObjectRef`],
//!   [`ObjectKey`]), the object texts ([`CachedObject`], [`ObjectText`]) and
//!   the cache reader trait ([`CacheReader`]); [`histogram`]; [`client`]
//!   (requests to the Kubernetes API, with typed errors); [`discovery`]
//!   (kinds to REST resources); [`contract`] (the plugin contract as plain
//!   host data).
//! - the runtime: [`runtime`] loads plugin components and calls them under
//!   limits, and decides where a call from async code runs.
//! - the middle floor: [`cache`] (an informer's objects as raw JSON text,
//!   indexed); [`informer`] (a decoder, a state machine and the task that
//!   owns the cache's one writer); [`informers`] (shared between plugins;
//!   each plugin's view); `index` (a plugin's index of one kind); `queue`
//!   (the per-plugin work queue, client-go semantics); `writer` (carries out
//!   outcomes); `controller` (one plugin's keys, expectations, retries and
//!   reconcile step).
//! - the top: [`host`] (a controller per plugin, loads and reloads),
//!   [`instances`] (one component run under several names),
//!   [`admin`] (`/healthz`, `/readyz`, `/plugins`, `/metrics`),
//!   [`conventions`] (the metric names of controller-runtime and client-go),
//!   [`plugin_dir`] (hot reload), [`leader`] (leader election over a
//!   Lease); and for the CLI [`objects`] (objects from YAML/JSON files),
//!   [`offline`] (a fixed object set standing in for the cluster cache),
//!   [`rbac`] (least-privilege RBAC derived from plugin manifests),
//!   [`scaffold`] (`windlass plugin new`), [`units`] (durations and sizes
//!   as Kubernetes writes them: `10s`, `64Mi`) and [`shutdown`] (the one
//!   Ctrl-C / SIGTERM signal).
//!
//! The `pub use`s below are the table of contents: what a program embedding
//! the host needs. The modules named in the list with links stay reachable
//! by path for the binary, the tests and the benchmarks; those without
//! (`model`, `controller`, `index`, `queue`, `writer`) are the host's own.

pub mod admin;
mod bucket;
pub mod cache;
pub mod client;
pub mod contract;
mod controller;
pub mod conventions;
pub mod discovery;
pub mod histogram;
pub mod host;
mod index;
pub mod informer;
pub mod informers;
pub mod instances;
pub mod leader;
mod model;
pub mod objects;
pub mod offline;
pub mod plugin_dir;
mod queue;
pub mod rbac;
pub mod runtime;
pub mod scaffold;
pub mod shutdown;
pub mod units;
mod writer;

// Running the host: plugins in, controllers out.
pub use controller::{QueueDepth, StatsSnapshot};
pub use host::{ControllerStats, Host, HostConfig, PluginStatus};
pub use plugin_dir::PluginDir;
pub use writer::{ThrottleStats, WriteLimit};

// The runtime on its own: load a plugin, call it.
pub use offline::{StaticCache, request_for};
pub use runtime::{LoadError, Plugin, PluginError, Runtime, RuntimeConfig};

// The plugin contract as host data.
pub use contract::{Manifest, Outcome, Request, Watch, Write};

// The ground floor: identities, object texts, reading caches.
pub use model::{CacheReader, CachedObject, EmptyCache, KindRef, ObjectKey, ObjectRef, ObjectText};

// Talking to an API server, and watching it.
pub use cache::{Cache, Change};
pub use client::{ApiClient, ApiError};
pub use informer::{Informer, InformerConfig, InformerSpec};
pub use informers::Informers;
pub use leader::{Elector, LeaseConfig};
