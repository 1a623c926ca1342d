//! Helpers for windlass's end-to-end tests: built plugins and sample objects,
//! a TCP proxy that injects connection failures, and a one-machine cluster
//! (the real binary with the real kubectl).

pub mod cluster;
mod plugins;
pub mod proxy;

pub use cluster::{Cluster, Server};
pub use plugins::{configmap, owned_pod, plugin, replicaset};
pub use proxy::Proxy;
