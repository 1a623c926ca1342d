//! The endpoints and endpointslice controllers as a windlass plugin: every
//! Service with a selector gets an Endpoints object of its name and
//! EndpointSlices labelled with it, listing the pods it selects, as
//! kube-controller-manager keeps them, so `kubectl describe service`,
//! `kubectl get endpoints` and anything that discovers backends through
//! the API see the pods the chain runs.
//!
//! A pod is an endpoint while it has an IP and has not ended. A ready one
//! is under `addresses` (an endpoint `ready: true`); one that is not yet
//! ready, or is terminating, under `notReadyAddresses` (`ready: false`,
//! `serving` as its readiness, `terminating`), and a terminating pod is in
//! the slices only, as upstream (`publishNotReadyAddresses` makes every
//! such pod ready, and keeps terminating pods in the Endpoints too). A
//! named `targetPort` is looked up among each pod's container ports, so
//! pods serving a port under different numbers get a subset (and a slice)
//! each. A slice holds at most 100 endpoints.
//!
//! Files: `build.rs` (the objects, a pure function of the Service and its
//! pods), `view.rs` (what is read of them). Differences from upstream:
//! the objects carry a controller reference to their Service (so the host
//! prunes and collects them; upstream's Endpoints carry none), endpoints
//! have no `zone` (Nodes are not read), and slice names are derived from
//! the Service's uid rather than random.

mod build;
mod view;

use windlass_sdk::{
    Controller, Error, KindRef, Manifest, Object, ObjectRef, Outcome, Request, Watch, cache,
};

use view::{Pod, Service};

/// The endpoints controller.
pub struct EndpointsController;

impl Controller for EndpointsController {
    fn manifest() -> Manifest {
        Manifest::new("endpoints", Watch::kind("v1", "Service"))
            .version(env!("CARGO_PKG_VERSION"))
            .owns(Watch::kind("v1", "Endpoints"))
            .owns(Watch::kind("discovery.k8s.io/v1", "EndpointSlice"))
            .reads(Watch::kind("v1", "Pod"))
            .max_concurrency(4)
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        reconcile(&req)
    }

    /// A pod's change wakes the Services of its namespace that select it.
    fn map(changed: &Object) -> Vec<ObjectRef> {
        let Ok(pod) = changed.deserialize::<Pod>() else {
            return Vec::new();
        };
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let Ok(services) = cache::list(&KindRef::new("v1", "Service"), Some(namespace), None)
        else {
            return Vec::new();
        };
        services
            .iter()
            .filter(|s| {
                s.deserialize::<Service>().is_ok_and(|svc| {
                    selector(&svc)
                        .is_some_and(|sel| view::selects(sel, pod.metadata.labels.as_ref()))
                })
            })
            .map(Object::object_ref)
            .collect()
    }
}

windlass_sdk::export!(EndpointsController);

/// The selector this controller serves `svc` by: none for a Service without
/// one (its endpoints are someone else's to write) or of type ExternalName.
fn selector(svc: &Service) -> Option<&std::collections::BTreeMap<String, String>> {
    if svc.spec.type_.as_deref() == Some("ExternalName") {
        return None;
    }
    svc.spec.selector.as_ref().filter(|s| !s.is_empty())
}

fn reconcile(req: &Request) -> Result<Outcome, Error> {
    // Gone, or being deleted: what it owns is garbage-collected.
    let Some(object) = req.live_object() else {
        return Ok(Outcome::new());
    };
    let svc: Service = object.deserialize()?;
    // Declarative: what is not applied below is deleted, so a Service that
    // loses its selector loses the objects this controller wrote for it.
    let mut out = Outcome::new().prune_owned();
    let Some(sel) = selector(&svc) else {
        return Ok(out);
    };
    let text: Vec<String> = sel.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let namespace = object.namespace().unwrap_or("default");
    let pods: Vec<Pod> = cache::list(
        &KindRef::new("v1", "Pod"),
        Some(namespace),
        Some(&text.join(",")),
    )?
    .iter()
    .filter_map(|p| p.deserialize().ok())
    .collect();
    let headless = svc.spec.cluster_ip.as_deref() == Some("None");
    out = out.apply(Object::from_value(build::endpoints(&svc, &pods, headless))?);
    for slice in build::slices(&svc, &pods, headless) {
        out = out.apply(Object::from_value(slice)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
