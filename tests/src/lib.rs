//! Helpers for windlass's end-to-end tests: built plugins and sample objects,
//! a TCP proxy that injects connection failures, an HTTP proxy that records
//! requests, RBAC checks of requests as a cluster makes them, and a
//! one-machine cluster (the real binary with the real kubectl).

pub mod authz;
pub mod cluster;
mod plugins;
pub mod proxy;
pub mod recorder;

pub use cluster::{Cluster, Server};
pub use plugins::{configmap, owned_pod, plugin, replicaset};
pub use proxy::Proxy;
pub use recorder::Recorder;
