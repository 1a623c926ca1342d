//! windlass: a Kubernetes controller host that runs reconcilers as sandboxed
//! WebAssembly components.
//!
//! - [`cache`]: an informer's objects as raw JSON text, indexed.
//! - [`contract`]: the plugin contract as plain host data.
//! - [`runtime`]: loads plugin components and calls them under limits.
//! - [`objects`]: reads Kubernetes objects from YAML/JSON files.
//! - [`offline`]: a fixed object set that stands in for the cluster cache.
//! - [`queue`]: the per-plugin work queue (client-go semantics).

pub mod cache;
pub mod contract;
pub mod objects;
pub mod offline;
pub mod queue;
pub mod runtime;
