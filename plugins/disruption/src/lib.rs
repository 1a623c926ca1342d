//! The disruption controller as a windlass plugin: the status of every
//! PodDisruptionBudget, as kube-controller-manager's disruption controller
//! writes it, so `kubectl drain` (the API server's eviction subresource
//! reads that status) evicts what a budget allows and waits for the rest,
//! and `kubectl get pdb` shows `ALLOWED DISRUPTIONS`.
//!
//! For each budget, from the pods its selector picks in its namespace:
//! - `expectedPods`: with `minAvailable` as a number, the pods there are;
//!   with a percentage or `maxUnavailable`, the replicas their controllers
//!   ask for (a ReplicaSet, or the Deployment above it, a StatefulSet, a
//!   ReplicationController), as upstream's `getExpectedPodCount`;
//! - `desiredHealthy`: `minAvailable` (a percentage rounded up), or
//!   `expectedPods - maxUnavailable`;
//! - `currentHealthy`: the ready pods not being deleted, less those the
//!   API server recorded in `disruptedPods` for an eviction not yet seen
//!   through (kept there two minutes at most, as upstream);
//! - `disruptionsAllowed`: `currentHealthy - desiredHealthy`, at least 0;
//! - the `DisruptionAllowed` condition (`SufficientPods` /
//!   `InsufficientPods`) and `observedGeneration`.
//!
//! A pod's change wakes the budgets of its namespace that select it; the
//! status is written only when it changes.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Map, Value, json};
use windlass_sdk::conditions;
use windlass_sdk::{
    Controller, Error, KindRef, Manifest, Object, ObjectRef, Outcome, Request, Time, Watch, cache,
};

/// The disruption controller.
pub struct DisruptionController;

/// How long an eviction recorded in `disruptedPods` counts against the
/// budget before the pod's deletion is seen (upstream's `DeletionTimeout`).
const DELETION_TIMEOUT: Duration = Duration::from_secs(120);

impl Controller for DisruptionController {
    fn manifest() -> Manifest {
        Manifest::new(
            "disruption",
            Watch::kind("policy/v1", "PodDisruptionBudget"),
        )
        .version(env!("CARGO_PKG_VERSION"))
        .reads(Watch::kind("v1", "Pod"))
        // The controllers whose replicas a percentage is of.
        .reads(Watch::kind("apps/v1", "ReplicaSet"))
        .reads(Watch::kind("apps/v1", "Deployment"))
        .reads(Watch::kind("apps/v1", "StatefulSet"))
        .reads(Watch::kind("v1", "ReplicationController"))
        .max_concurrency(4)
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        reconcile(&req)
    }

    /// A pod's change wakes the budgets of its namespace that select it.
    fn map(changed: &Object) -> Vec<ObjectRef> {
        if !changed.is("v1", "Pod") {
            return Vec::new();
        }
        let ns = changed.namespace().unwrap_or("default");
        let Ok(budgets) = cache::list(
            &KindRef::new("policy/v1", "PodDisruptionBudget"),
            Some(ns),
            None,
        ) else {
            return Vec::new();
        };
        budgets
            .iter()
            .filter(|b| selects(b.get("spec.selector"), changed))
            .map(Object::object_ref)
            .collect()
    }
}

windlass_sdk::export!(DisruptionController);

/// Whether the label selector `selector` picks `pod`. As `policy/v1`: no
/// selector picks nothing, an empty one every pod.
fn selects(selector: Option<&Value>, pod: &Object) -> bool {
    selector
        .filter(|s| s.is_object())
        .is_some_and(|s| pod.selected_by(s))
}

/// An int-or-percent against `total`, a percentage rounded up.
fn scaled(v: &Value, total: i64) -> Result<i64, Error> {
    if let Some(n) = v.as_i64() {
        return Ok(n);
    }
    v.as_str()
        .and_then(|s| s.strip_suffix('%'))
        .and_then(|p| p.parse::<i64>().ok())
        .map(|p| (total * p + 99).div_euclid(100))
        .ok_or_else(|| Error::permanent(format!("{v} is not a number or a percentage")))
}

fn is_ready(pod: &Object) -> bool {
    pod.condition("Ready")
        .is_some_and(|c| c["status"] == "True")
}

/// The replicas the pods' controllers ask for, each controller once: a
/// ReplicaSet's (or its Deployment's), a StatefulSet's, a
/// ReplicationController's. A pod with no such controller is an error, as
/// upstream refuses to compute a percentage of it.
fn expected_by_controllers(pods: &[Object], ns: &str) -> Result<i64, Error> {
    let mut seen = BTreeSet::new();
    let mut total = 0;
    for pod in pods {
        let Some(owner) = pod.controller_ref() else {
            return Err(Error::permanent(format!(
                "found no controller for pod {}: a percentage or maxUnavailable needs one",
                pod.name()
            )));
        };
        let (api_version, kind, name) = (owner.api_version, owner.kind, owner.name);
        let get =
            |api: &str, kind: &str, name: &str| cache::get(&ObjectRef::new(api, kind, ns, name));
        let mut scale = match kind {
            "ReplicaSet" | "StatefulSet" | "ReplicationController" => get(api_version, kind, name)?,
            other => {
                return Err(Error::permanent(format!(
                    "pod {}'s controller is a {other}: its scale is not known here",
                    pod.name()
                )));
            }
        };
        // A Deployment's ReplicaSet counts as the Deployment.
        if let Some(rs) = &scale
            && kind == "ReplicaSet"
            && let Some(dep) = rs.controller_ref().filter(|o| o.kind == "Deployment")
        {
            scale = get("apps/v1", "Deployment", dep.name)?;
        }
        let Some(scale) = scale else { continue };
        if seen.insert(scale.object_ref()) {
            total += scale.get_i64("spec.replicas").unwrap_or(1);
        }
    }
    Ok(total)
}

fn reconcile(req: &Request) -> Result<Outcome, Error> {
    let Some(pdb) = req.live_object() else {
        return Ok(Outcome::new());
    };
    let ns = pdb.namespace().unwrap_or("default");
    let pods: Vec<Object> = cache::list(&KindRef::new("v1", "Pod"), Some(ns), None)?
        .into_iter()
        .filter(|p| selects(pdb.get("spec.selector"), p))
        .collect();
    let min_available = pdb.get("spec.minAvailable").filter(|v| !v.is_null());
    let max_unavailable = pdb.get("spec.maxUnavailable").filter(|v| !v.is_null());
    let (expected, desired) = match (min_available, max_unavailable) {
        (Some(m), _) if m.is_i64() => (pods.len() as i64, m.as_i64().unwrap_or(0)),
        (Some(m), _) => {
            let expected = expected_by_controllers(&pods, ns)?;
            (expected, scaled(m, expected)?)
        }
        (None, Some(m)) => {
            let expected = expected_by_controllers(&pods, ns)?;
            (expected, (expected - scaled(m, expected)?).max(0))
        }
        (None, None) => (pods.len() as i64, pods.len() as i64),
    };

    // Evictions the API server recorded, kept while their pods are still
    // here, not yet being deleted, and not past the timeout.
    let now = req.now;
    let mut disrupted = Map::new();
    let mut due: Option<Time> = None;
    if let Some(recorded) = pdb.get("status.disruptedPods").and_then(Value::as_object) {
        for (name, at) in recorded {
            let Some(at) = at.as_str().and_then(Time::parse) else {
                continue;
            };
            let pending = pods
                .iter()
                .any(|p| p.name() == name && !p.is_being_deleted());
            let expires = at + DELETION_TIMEOUT;
            if pending && expires > now {
                disrupted.insert(name.clone(), json!(at.to_rfc3339()));
                due = Some(due.map_or(expires, |d| d.min(expires)));
            }
        }
    }
    let healthy = pods
        .iter()
        .filter(|p| !p.is_being_deleted() && is_ready(p) && !disrupted.contains_key(p.name()))
        .count() as i64;
    let allowed = (healthy - desired).max(0);

    let mut status: Map<String, Value> = pdb
        .get("status")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    status.insert(
        "observedGeneration".into(),
        json!(pdb.generation().unwrap_or(0)),
    );
    status.insert("expectedPods".into(), json!(expected));
    status.insert("desiredHealthy".into(), json!(desired));
    status.insert("currentHealthy".into(), json!(healthy));
    status.insert("disruptionsAllowed".into(), json!(allowed));
    if disrupted.is_empty() {
        status.remove("disruptedPods");
    } else {
        status.insert("disruptedPods".into(), Value::Object(disrupted));
    }
    let (cond_status, reason) = if allowed > 0 {
        ("True", "SufficientPods")
    } else {
        ("False", "InsufficientPods")
    };
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let condition = json!({
        "type": "DisruptionAllowed",
        "status": cond_status,
        "reason": reason,
        "message": "",
        "observedGeneration": pdb.generation().unwrap_or(0),
    });
    conditions::set(&mut conditions, condition, now);
    status.insert("conditions".into(), Value::Array(conditions));

    let status = Value::Object(status);
    let mut out = Outcome::new();
    if pdb.get("status") != Some(&status) {
        let mut updated = pdb.clone();
        updated.value_mut()["status"] = status;
        out = out.update_status(updated);
    }
    if let Some(at) = due {
        out = out.requeue_after(now.until(at).max(Duration::from_millis(10)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
