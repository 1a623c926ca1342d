//! kube-controller-manager's ephemeral volume controller: a pod's generic
//! ephemeral volume (`volumes[].ephemeral.volumeClaimTemplate`) gets its
//! claim, named `<pod>-<volume>`, made from the template and owned by the
//! pod, so the garbage collector deletes it with the pod. From there the
//! claim is like any other: the scheduler waits for it, the binder binds
//! it.
//!
//! The claim key stands for the volume: a pod's change wakes the keys of
//! its ephemeral claims (`keys`), and the reconcile of a key with no claim
//! looks for the pod that needs it (`create`). A claim of that name that
//! the pod does not own is left alone, as upstream leaves it (the scheduler
//! then refuses the pod: not implemented here, the pod waits instead).

use serde_json::{Value, json};
use windlass_sdk::{Error, KindRef, Object, ObjectRef, Outcome, cache};

use crate::fields::claim_key;

/// The pods' kind.
pub(crate) fn pod_kind() -> KindRef {
    KindRef::new("v1", "Pod")
}

/// A pod's ephemeral volumes: their names and claim templates.
fn ephemeral_volumes(pod: &Object) -> impl Iterator<Item = (&str, &Value)> {
    pod.get("spec.volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            let template = v.get("ephemeral")?.get("volumeClaimTemplate")?;
            Some((v.get("name")?.as_str()?, template))
        })
}

/// The name of the claim of `pod`'s ephemeral volume `volume`.
fn claim_name(pod: &Object, volume: &str) -> String {
    format!("{}-{volume}", pod.name())
}

/// The claim keys of `pod`'s ephemeral volumes, while it may still need
/// them (not being deleted).
pub(crate) fn keys(pod: &Object) -> Vec<ObjectRef> {
    if pod.is_being_deleted() {
        return Vec::new();
    }
    let namespace = pod.namespace().unwrap_or("default");
    ephemeral_volumes(pod)
        .map(|(volume, _)| claim_key(namespace, &claim_name(pod, volume)))
        .collect()
}

/// For `key`, a claim that does not exist: the claim a pod of its
/// namespace needs under that name, made from the volume's template.
pub(crate) fn create(key: &ObjectRef) -> Result<Outcome, Error> {
    let namespace = key.namespace.as_deref().unwrap_or("default");
    let pods = cache::list(&pod_kind(), Some(namespace), None)?;
    for pod in pods.iter().filter(|p| !p.is_being_deleted()) {
        for (volume, template) in ephemeral_volumes(pod) {
            if claim_name(pod, volume) == key.name {
                return Ok(claim_for(pod, &key.name, template));
            }
        }
    }
    Ok(Outcome::new())
}

/// The claim `name` of `pod`, from `template`: its labels, annotations and
/// spec, owned by the pod as upstream's controller makes it.
fn claim_for(pod: &Object, name: &str, template: &Value) -> Outcome {
    let mut claim = Object::new("v1", "PersistentVolumeClaim")
        .with_name(name)
        .with("spec", template.get("spec").cloned().unwrap_or(json!({})));
    if let Some(ns) = pod.namespace() {
        claim = claim.with_namespace(ns);
    }
    for field in ["labels", "annotations"] {
        if let Some(m) = template.get("metadata").and_then(|m| m.get(field)) {
            claim = claim.with(&format!("metadata.{field}"), m.clone());
        }
    }
    let owner = json!([{
        "apiVersion": "v1", "kind": "Pod", "name": pod.name(),
        "uid": pod.uid().unwrap_or(""), "controller": true, "blockOwnerDeletion": true,
    }]);
    Outcome::new().apply(claim.with("metadata.ownerReferences", owner))
}
