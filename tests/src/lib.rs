//! Helpers for windlass's end-to-end tests: built plugins and sample objects,
//! the example manifests and the objects kubectl returns,
//! a TCP proxy that injects connection failures, an HTTP proxy that records
//! requests, RBAC checks of requests as a cluster makes them, a
//! one-machine cluster (the real binary with the real kubectl), the
//! small process helpers of tests that start the binary themselves, and
//! the import graph of a crate's modules.

pub mod authz;
pub mod cluster;
pub mod forward;
pub mod modules;
pub mod objects;
mod plugins;
pub mod process;
pub mod proxy;
pub mod recorder;

pub use cluster::{Cluster, Server};
pub use objects::{condition, condition_status, example, name, running_and_ready};
pub use plugins::{EXAMPLE_PLUGINS, configmap, owned_pod, plugin, replicaset};
pub use process::{Running, free_port, http_get, kubectl, kubectl_ok};
pub use proxy::Proxy;
pub use recorder::Recorder;

/// A count with its thousands separated, as the bench tables print sizes
/// (`10000` → `10,000`).
pub fn thousands(n: impl std::fmt::Display) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_are_separated() {
        assert_eq!(super::thousands(0u64), "0");
        assert_eq!(super::thousands(999usize), "999");
        assert_eq!(super::thousands(1000u64), "1,000");
        assert_eq!(super::thousands(1_234_567usize), "1,234,567");
    }
}
