//! windlass: a Kubernetes controller host that runs reconcilers as sandboxed
//! WebAssembly components.
//!
//! - [`cache`]: an informer's objects as raw JSON text, indexed.
//! - [`client`]: requests to the Kubernetes API, with typed errors.
//! - [`contract`]: the plugin contract as plain host data.
//! - [`discovery`]: kinds to REST resources.
//! - [`informer`]: shared list-watch informers feeding caches and handlers.
//! - [`runtime`]: loads plugin components and calls them under limits.
//! - [`objects`]: reads Kubernetes objects from YAML/JSON files.
//! - [`offline`]: a fixed object set that stands in for the cluster cache.
//! - [`queue`]: the per-plugin work queue (client-go semantics).
//! - [`shutdown`]: the one Ctrl-C / SIGTERM signal.

pub mod cache;
pub mod client;
pub mod contract;
pub mod discovery;
pub mod informer;
pub mod objects;
pub mod offline;
pub mod queue;
pub mod runtime;
pub mod shutdown;
