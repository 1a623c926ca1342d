//! Native tests of the Deployment controller, through `windlass_sdk::testing`.
//!
//! `World` runs this controller beside the real `replicaset` plugin, each in
//! its own harness with the same objects, and plays the kubelet in between
//! (pods become Running and Ready when a test says so), so a rollout can be
//! followed round by round as it happens in a cluster.

mod claim;
mod math;
mod progress;
mod rollout;

use std::collections::BTreeSet;
use std::time::Duration;

use replicaset::ReplicaSetController;
use serde_json::json;
use windlass_sdk::testing::Harness;
use windlass_sdk::{Controller, Object, ObjectRef, Outcome, Time};

use super::DeploymentController;

pub(crate) type H = Harness<DeploymentController>;

/// A Deployment `web` in `default`, with `replicas`, the given strategy
/// (YAML flow mapping) and image `nginx:1`.
pub(crate) fn deployment(replicas: i64, strategy: &str) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  uid: dep-uid
  generation: 1
  resourceVersion: "1"
  annotations: {{kubernetes.io/change-cause: first}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  strategy: {strategy}
  revisionHistoryLimit: 10
  progressDeadlineSeconds: 600
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers: [{{name: nginx, image: "nginx:1"}}]
"#
    )
}

pub(crate) const ROLLING: &str =
    "{type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}";

pub(crate) fn key() -> ObjectRef {
    ObjectRef::new("apps/v1", "Deployment", "default", "web")
}

pub(crate) fn t0() -> Time {
    Time::parse("2026-03-01T12:00:00Z").unwrap()
}

/// The deployment controller and the ReplicaSet controller over the same
/// objects, and a kubelet.
pub(crate) struct World {
    pub dep: H,
    pub rs: Harness<ReplicaSetController>,
    pub now: Time,
    /// Every outcome of the deployment controller so far.
    pub outcomes: Vec<Outcome>,
}

impl World {
    pub fn new(text: &str) -> Self {
        let mut w = Self {
            dep: H::new().with_objects(text).unwrap(),
            rs: Harness::new(),
            now: t0(),
            outcomes: Vec::new(),
        };
        w.set_now(t0());
        w.mirror_to_rs();
        w
    }

    pub fn set_now(&mut self, now: Time) {
        self.now = now;
        self.dep.set_now(now);
        self.rs.set_now(now);
    }

    pub fn advance(&mut self, d: Duration) {
        self.set_now(self.now + d);
    }

    fn mirror_to_rs(&mut self) {
        mirror(&self.dep, &mut self.rs);
    }

    fn mirror_to_dep(&mut self) {
        mirror(&self.rs, &mut self.dep);
    }

    /// The Deployment as cached.
    pub fn deployment(&self) -> Object {
        self.dep.get(&key()).unwrap()
    }

    /// Changes the Deployment as a user would (a spec change bumps the
    /// generation).
    pub fn edit(&mut self, f: impl FnOnce(&mut Object)) {
        let mut d = self.deployment();
        let before = d.get("spec").cloned();
        f(&mut d);
        if d.get("spec").cloned() != before {
            let g = d.generation().unwrap_or(0) + 1;
            d.set("metadata.generation", g);
        }
        self.dep.insert(d);
        self.mirror_to_rs();
    }

    /// One reconcile of the Deployment, applied.
    pub fn reconcile_deployment(&mut self) -> Outcome {
        let out = self.dep.reconcile_key(&key()).unwrap();
        self.dep.apply_outcome(&key(), &out).unwrap();
        self.mirror_to_rs();
        self.outcomes.push(out.clone());
        out
    }

    /// One reconcile of every ReplicaSet, applied; whether one asked to be
    /// requeued.
    pub fn reconcile_replica_sets(&mut self) -> bool {
        let mut requeue = false;
        for rs in self.rs.list("apps/v1", "ReplicaSet") {
            let r = rs.object_ref();
            let out = self.rs.reconcile_key(&r).unwrap();
            self.rs.apply_outcome(&r, &out).unwrap();
            requeue |= out.requeue_after.is_some();
        }
        self.mirror_to_dep();
        requeue
    }

    /// The kubelet: pods being deleted go; up to `ready` pods that are not
    /// ready yet become Running and Ready now.
    pub fn kubelet(&mut self, ready: usize) {
        let mut made_ready = 0;
        for mut pod in self.rs.list("v1", "Pod") {
            if pod.is_being_deleted() {
                self.rs.remove(&pod.object_ref());
                continue;
            }
            if is_ready(&pod) || made_ready >= ready {
                continue;
            }
            made_ready += 1;
            pod.set("spec.nodeName", "node-1");
            pod.set("status.phase", "Running");
            pod.set(
                "status.conditions",
                json!([{"type": "Ready", "status": "True", "lastTransitionTime": self.now.to_rfc3339()}]),
            );
            self.rs.insert(pod);
        }
        self.mirror_to_dep();
    }

    /// Pods that are ready and not being deleted.
    pub fn available_pods(&self) -> usize {
        self.available_pods_after(Duration::ZERO)
    }

    /// Pods that have been ready for longer than `min_ready`, and are not
    /// being deleted.
    pub fn available_pods_after(&self, min_ready: Duration) -> usize {
        self.rs
            .list("v1", "Pod")
            .iter()
            .filter(|p| !p.is_being_deleted() && is_ready(p))
            .filter(|p| {
                min_ready.is_zero()
                    || p.get_str("status.conditions.0.lastTransitionTime")
                        .and_then(Time::parse)
                        .is_some_and(|t| t + min_ready < self.now)
            })
            .count()
    }

    pub fn pods(&self) -> Vec<Object> {
        self.rs.list("v1", "Pod")
    }

    pub fn replica_sets(&self) -> Vec<Object> {
        self.dep.list("apps/v1", "ReplicaSet")
    }

    /// `(name, spec.replicas)` of every ReplicaSet, by name.
    pub fn sizes(&self) -> Vec<(String, i64)> {
        self.replica_sets()
            .iter()
            .map(|r| (r.name().to_owned(), r.get_i64("spec.replicas").unwrap_or(1)))
            .collect()
    }

    /// The ReplicaSet whose template has `image`.
    pub fn replica_set_with(&self, image: &str) -> Option<Object> {
        self.replica_sets()
            .into_iter()
            .find(|r| r.get_str("spec.template.spec.containers.0.image") == Some(image))
    }

    /// Rounds of deployment, ReplicaSets, kubelet (making up to `ready` pods
    /// ready a round) and ReplicaSets again, a second apart, calling `check`
    /// after each stage, until a whole round changes nothing and no
    /// controller waits for time to pass. Returns the rounds taken.
    pub fn run(&mut self, ready: usize, max_rounds: usize, mut check: impl FnMut(&World)) -> usize {
        for round in 1..=max_rounds {
            let before = self.dep.objects();
            let mut waiting = self.reconcile_deployment().requeue_after.is_some();
            check(self);
            waiting |= self.reconcile_replica_sets();
            check(self);
            self.kubelet(ready);
            check(self);
            waiting |= self.reconcile_replica_sets();
            check(self);
            self.advance(Duration::from_secs(1));
            if self.dep.objects() == before && !waiting {
                return round;
            }
        }
        panic!("did not settle in {max_rounds} rounds: {:?}", self.sizes());
    }
}

/// Makes `to` hold what `from` holds.
fn mirror<A: Controller, B: Controller>(from: &Harness<A>, to: &mut Harness<B>) {
    let objects = from.objects();
    let wanted: BTreeSet<ObjectRef> = objects.iter().map(Object::object_ref).collect();
    for o in to.objects() {
        if !wanted.contains(&o.object_ref()) {
            to.remove(&o.object_ref());
        }
    }
    for o in objects {
        to.insert(o);
    }
}

pub(crate) fn is_ready(pod: &Object) -> bool {
    pod.get("status.conditions")
        .and_then(|c| c.as_array())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// The messages of the events of every outcome, in order.
pub(crate) fn event_messages(outcomes: &[Outcome]) -> Vec<String> {
    outcomes
        .iter()
        .flat_map(|o| o.events.iter().map(|e| e.message.clone()))
        .collect()
}

/// The cached Deployment's `spec.template`.
pub(crate) fn template_of(h: &H) -> crate::template::Template {
    let t = h.get(&key()).unwrap().get("spec.template").unwrap().clone();
    crate::template::Template::from_value(t)
}
