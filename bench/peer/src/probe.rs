//! A no-op ConfigMap controller on `kube::runtime` that times each event's
//! arrival to the start of the reconcile it causes: the peer of the host's
//! `windlass_queue_wait_seconds` histogram with the `test-noop` plugin.
//!
//! The watch stream is the controller's own (`Controller::for_stream`), with
//! one step added: when an object comes out of the reflector, the time is
//! noted for its key (the first time since its last reconcile, as the
//! host's queue counts from a key's first add). The reconcile takes the
//! note and reports the wait.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Told how long each reconcile waited after its event arrived.
pub type OnWait = Arc<dyn Fn(Duration) + Send + Sync>;

type Arrivals = Mutex<HashMap<(String, String), Instant>>;

struct Context {
    arrivals: Arrivals,
    on_wait: OnWait,
}

/// The running probe; [`Probe::shutdown`] stops it.
pub struct Probe {
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
    ready: reflector::Store<ConfigMap>,
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probe").finish_non_exhaustive()
    }
}

impl Probe {
    /// Starts watching ConfigMaps (in `namespace`, or all) with
    /// `concurrency` reconciles at once; returns once the store has listed.
    pub async fn start(
        client: Client,
        namespace: Option<&str>,
        concurrency: u16,
        on_wait: OnWait,
    ) -> Self {
        let api: Api<ConfigMap> = match namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        };
        let context = Arc::new(Context {
            arrivals: Mutex::new(HashMap::new()),
            on_wait,
        });
        let (store, writer) = reflector::store::<ConfigMap>();
        let (signal, synced) = crate::synced::synced();
        let stamps = context.clone();
        let events = watcher(api, watcher::Config::default())
            .default_backoff()
            .reflect(writer)
            .inspect_ok(move |e| signal.saw(e))
            .applied_objects()
            .inspect_ok(move |cm| {
                let key = (cm.namespace().unwrap_or_default(), cm.name_any());
                stamps
                    .arrivals
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(key)
                    .or_insert_with(Instant::now);
            });
        let (stop, stopped) = oneshot::channel::<()>();
        let controller = Controller::for_stream(events, store.clone())
            .with_config(ControllerConfig::default().concurrency(concurrency))
            .graceful_shutdown_on(stopped.map(|_| ()))
            .run(reconcile, error_policy, context)
            .for_each(|_| std::future::ready(()));
        let task = tokio::spawn(controller);
        synced.wait().await;
        Self {
            stop: Some(stop),
            task,
            ready: store,
        }
    }

    /// ConfigMaps in the probe's store.
    pub fn cached(&self) -> usize {
        self.ready.len()
    }

    /// Stops taking work and waits (up to 10 s) for running reconciles to
    /// finish.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), &mut self.task).await;
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Context>) -> Result<Action, kube::Error> {
    let now = Instant::now();
    let key = (cm.namespace().unwrap_or_default(), cm.name_any());
    let arrived = ctx
        .arrivals
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&key);
    if let Some(at) = arrived {
        (ctx.on_wait)(now.saturating_duration_since(at));
    }
    Ok(Action::await_change())
}

fn error_policy(_cm: Arc<ConfigMap>, _error: &kube::Error, _ctx: Arc<Context>) -> Action {
    Action::requeue(Duration::from_secs(1))
}
