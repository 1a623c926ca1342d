//! A kube-rs reflector store of Pods, the peer of one windlass informer:
//! list (pages of 500) then watch, typed objects in a `Store`, with
//! `managedFields` dropped as the host's cache drops them.

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt as _};
use tokio::task::JoinHandle;

use crate::synced::Synced;

/// A pod store kept current by a background watch.
pub struct PodStore {
    store: Store<Pod>,
    synced: Synced,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for PodStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodStore")
            .field("pods", &self.store.len())
            .finish()
    }
}

impl PodStore {
    /// Starts listing and watching pods (in `namespace`, or all); returns at
    /// once. [`PodStore::synced`] waits for the first list.
    pub fn start(client: Client, namespace: Option<&str>) -> Self {
        let api: Api<Pod> = match namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        };
        let (store, writer) = reflector::store::<Pod>();
        let (signal, synced) = crate::synced::synced();
        let stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .modify(|p| p.managed_fields_mut().clear())
            .reflect(writer)
            .for_each(move |e| {
                if let Ok(e) = &e {
                    signal.saw(e);
                }
                std::future::ready(())
            });
        Self {
            store,
            synced,
            task: tokio::spawn(stream),
        }
    }

    /// Waits until the first list is in the store.
    pub async fn synced(&self) {
        self.synced.wait().await;
    }

    /// The store (cheap to clone).
    pub fn store(&self) -> &Store<Pod> {
        &self.store
    }
}

impl Drop for PodStore {
    fn drop(&mut self) {
        self.task.abort();
    }
}
