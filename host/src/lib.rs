//! windlass: a Kubernetes controller host that runs reconcilers as sandboxed
//! WebAssembly components.
//!
//! - [`contract`]: the plugin contract as plain host data.
//! - [`runtime`]: loads plugin components and calls them under limits.
//! - [`objects`]: reads Kubernetes objects from YAML/JSON files.
//! - [`offline`]: a fixed object set that stands in for the cluster cache.

pub mod contract;
pub mod objects;
pub mod offline;
pub mod runtime;
