//! Helpers for windlass's end-to-end tests: built plugins and sample objects,
//! a TCP proxy that injects connection failures, an HTTP proxy that records
//! requests, RBAC checks of requests as a cluster makes them, a
//! one-machine cluster (the real binary with the real kubectl), the
//! small process helpers of tests that start the binary themselves, and
//! the import graph of a crate's modules.

pub mod authz;
pub mod cluster;
pub mod forward;
pub mod modules;
mod plugins;
pub mod process;
pub mod proxy;
pub mod recorder;

pub use cluster::{Cluster, Server};
pub use plugins::{configmap, owned_pod, plugin, replicaset};
pub use process::{Running, free_port, http_get, kubectl, kubectl_ok};
pub use proxy::Proxy;
pub use recorder::Recorder;
