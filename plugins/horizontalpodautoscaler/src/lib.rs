//! kube-controller-manager's HorizontalPodAutoscaler controller as a
//! windlass plugin, for a server with no metrics API (`metrics.k8s.io`,
//! `custom.metrics.k8s.io`, `external.metrics.k8s.io`): an HPA behaves as
//! upstream's does on a kind cluster without metrics-server, so after
//! `kubectl autoscale deployment web --min=2 --max=5 --cpu-percent=80`,
//! `kubectl get hpa` shows the replicas and `cpu: <unknown>/80%`, and
//! `kubectl describe hpa` the conditions and events that say why.
//!
//! Every 15 seconds (upstream's sync period), and whenever it or its
//! target changes, each `autoscaling/v2` HorizontalPodAutoscaler is synced
//! as upstream's `reconcileAutoscaler` does (`autoscale.rs`):
//! - the target's scale is read (`target.rs`): the Deployment, ReplicaSet,
//!   StatefulSet or ReplicationController `spec.scaleTargetRef` names, by
//!   group, kind and name. If it cannot be, `AbleToScale=False`
//!   `FailedGetScale` with the error upstream would get (`deployments.apps
//!   "web" not found`, `no matches for kind "Widget" in group
//!   "example.com"`) and a Warning event `FailedGetScale`; nothing else
//!   changes. Otherwise `AbleToScale=True` `SucceededGetScale`, and the
//!   current count is the scale's `spec.replicas`;
//! - a target scaled to zero (with `minReplicas` not zero) is left alone:
//!   `ScalingActive=False` `ScalingDisabled`;
//! - a count above `maxReplicas` or below `minReplicas` (default 1) is
//!   brought to the bound through the target's `scale` subresource, with a
//!   Normal `SuccessfulRescale` event (`New size: 2; reason: Current number
//!   of replicas below Spec.MinReplicas`), `AbleToScale=True`
//!   `SucceededRescale`, `desiredReplicas` and `lastScaleTime`;
//! - otherwise the metrics decide (`spec.metrics`, or CPU at 80 % when
//!   there are none, as upstream defaults them), and none can be fetched
//!   (`metrics.rs`): each metric records a Warning event with upstream's
//!   error (`FailedGetResourceMetric`, `FailedGetContainerResourceMetric`,
//!   `FailedGetPodsMetric`, `FailedGetObjectMetric`,
//!   `FailedGetExternalMetric`), the first sets `ScalingActive=False` with
//!   `the HPA was unable to compute the replica count: <error>`, and a
//!   Warning `FailedComputeMetricsReplicas` sums up (`invalid metrics (1
//!   invalid out of 1), first error is: ...`). The status gets the
//!   current count and each metric, with no current value (`type: ""`, as
//!   upstream leaves a metric it could not read); the target is not
//!   scaled. A target whose scale has no selector gets `SelectorRequired`
//!   and `InvalidSelector` instead;
//! - the status (`currentReplicas`, `desiredReplicas`, `currentMetrics`,
//!   `lastScaleTime`, `observedGeneration`, `conditions`, whose
//!   `lastTransitionTime` moves only when their status does) is written
//!   with one merge patch, only when it changes (`status.rs`).
//!
//! A change to a Deployment, ReplicaSet, StatefulSet or
//! ReplicationController wakes the HPAs of its namespace that name it.
//!
//! How it differs from upstream:
//! - since no metric can ever be read, `ScalingLimited` is never set
//!   (upstream sets it only after a successful metric computation) and
//!   there is no stabilization window, behavior or scale-up limit to
//!   apply;
//! - the scale is read from the informer cache, not from the `scale`
//!   subresource, so only the four built-in scalable kinds can be targets
//!   (a custom resource with a scale subresource gets `no matches for
//!   kind`); a built-in kind with no scale (DaemonSet, Job, CronJob, Pod)
//!   gets the 404 client-go would report;
//! - `observedGeneration` is always written (upstream only with its
//!   `HPAGeneration` feature gate), except when the scale cannot be read;
//! - no `AmbiguousSelector` check (two HPAs over the same pods), and a
//!   failed scale write is retried by the host rather than reported as
//!   `FailedRescale` / `FailedUpdateScale`;
//! - upstream's alpha scale-to-zero (`HPAScaleToZero`) is not there: as
//!   upstream with that gate off, a `ScaledToZero` condition is removed.

mod autoscale;
mod metrics;
mod status;
mod target;

use windlass_sdk::{
    Controller, Error, Grant, KindRef, Manifest, Object, ObjectRef, Outcome, Request, Watch, cache,
};

/// The HorizontalPodAutoscaler controller.
pub struct HorizontalPodAutoscalerController;

/// The version of HorizontalPodAutoscaler the plugin reads and writes.
const HPA_API_VERSION: &str = "autoscaling/v2";
const HPA_KIND: &str = "HorizontalPodAutoscaler";

impl Controller for HorizontalPodAutoscalerController {
    fn manifest() -> Manifest {
        let mut m = Manifest::new(
            "horizontalpodautoscaler",
            Watch::kind(HPA_API_VERSION, HPA_KIND),
        )
        .version(env!("CARGO_PKG_VERSION"));
        for s in &target::SCALABLE {
            m = m
                .reads(Watch::kind(s.api_version, s.kind))
                .writes(Grant::kind(s.api_version, s.kind).subresource("scale"));
        }
        m
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        autoscale::reconcile(&req)
    }

    /// A scalable object's change wakes the HPAs of its namespace that
    /// name it.
    fn map(changed: &Object) -> Vec<ObjectRef> {
        if target::scalable(changed.api_version(), changed.kind()).is_none() {
            return Vec::new();
        }
        let hpas = KindRef::new(HPA_API_VERSION, HPA_KIND);
        let Ok(hpas) = cache::list(&hpas, changed.namespace(), None) else {
            return Vec::new();
        };
        hpas.iter()
            .filter(|hpa| target::names(hpa, changed))
            .map(Object::object_ref)
            .collect()
    }
}

windlass_sdk::export!(HorizontalPodAutoscalerController);

#[cfg(test)]
mod tests;
