//! Helpers for windlass's end-to-end tests: built plugins and sample objects,
//! and a TCP proxy that injects connection failures.

mod plugins;
pub mod proxy;

pub use plugins::{configmap, owned_pod, plugin, replicaset};
pub use proxy::Proxy;
