//! windlass-peer: a native kube-rs controller with the same ReplicaSet logic
//! as the `replicaset` plugin, so `cargo xtask bench` can run windlass and a
//! conventional `kube::runtime` controller side by side on the same server.
//!
//! ```no_run
//! # async fn run(client: kube::Client) {
//! let peer = windlass_peer::replicaset::start(client, windlass_peer::replicaset::Config::default()).await;
//! // ... create ReplicaSets; the peer creates their pods and writes their status ...
//! peer.shutdown().await;
//! # }
//! ```
//!
//! - [`plan`]: what one reconcile should do (pure; the plugin's rules).
//! - [`replicaset`]: the controller: `kube::runtime::Controller`, slow-start creates, expectations.
//! - [`owned`]: pods by the uid of the ReplicaSet that controls them.
//! - [`probe`]: a no-op ConfigMap controller timing event → reconcile start.
//! - [`reflect`]: a reflector store of pods, for the initial-sync comparison.
//! - [`synced`]: a store's first-list signal that many tasks can wait on.
//!
//! This is the only crate in the workspace that uses `kube::runtime`.

pub mod owned;
pub mod plan;
pub mod probe;
pub mod reflect;
pub mod replicaset;
pub mod synced;

/// A client for the kubeconfig text `yaml` (e.g. the embedded server's).
pub async fn client_from_kubeconfig_yaml(yaml: &str) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(yaml)?;
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await?;
    Ok(kube::Client::try_from(config)?)
}
