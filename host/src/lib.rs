//! windlass: a Kubernetes controller host that runs reconcilers as sandboxed
//! WebAssembly components.
//!
//! - [`admin`]: `/healthz`, `/readyz`, `/plugins` and `/metrics`.
//! - [`cache`]: an informer's objects as raw JSON text, indexed.
//! - [`client`]: requests to the Kubernetes API, with typed errors.
//! - [`contract`]: the plugin contract as plain host data.
//! - [`conventions`]: the metric names of controller-runtime and client-go.
//! - [`controller`]: one plugin's subscriptions, queue and workers.
//! - [`discovery`]: kinds to REST resources.
//! - [`histogram`]: lock-free latency histograms with quantiles.
//! - [`host`]: the host: informers, writer, runtime, a controller per plugin.
//! - [`informer`]: a list-watch informer feeding a cache and handlers.
//! - [`index`]: a plugin's index of one kind: keys, totals, assumptions.
//! - [`informers`]: informers shared between plugins; each plugin's view.
//! - [`leader`]: leader election over a Lease, for several replicas.
//! - [`model`]: the read side of the caches as plugins see them.
//! - [`runtime`]: loads plugin components and calls them under limits.
//! - [`scaffold`]: `windlass plugin new`: a plugin crate that builds out of the box.
//! - [`objects`]: reads Kubernetes objects from YAML/JSON files.
//! - [`offline`]: a fixed object set that stands in for the cluster cache.
//! - [`plugin_dir`]: watches the plugins directory; hot reload.
//! - [`rbac`]: least-privilege RBAC derived from plugin manifests.
//! - [`queue`]: the per-plugin work queue (client-go semantics).
//! - [`shutdown`]: the one Ctrl-C / SIGTERM signal.
//! - [`units`]: durations and sizes as Kubernetes writes them (`10s`, `64Mi`).
//! - [`writer`]: carries out outcomes against the API server.

pub mod admin;
pub mod cache;
pub mod client;
pub mod contract;
pub mod controller;
pub mod conventions;
pub mod discovery;
pub mod histogram;
pub mod host;
pub mod index;
pub mod informer;
pub mod informers;
pub mod instances;
pub mod leader;
pub mod model;
pub mod objects;
pub mod offline;
pub mod plugin_dir;
pub mod queue;
pub mod rbac;
pub mod runtime;
pub mod scaffold;
pub mod shutdown;
pub mod units;
pub mod writer;
