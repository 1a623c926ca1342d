//! A StatefulSet's pods: their ordinals and state, and new ones (with
//! their stable identity and claims) from a template.

use serde_json::{Value, json};
use windlass_sdk::{Error, Object, ObjectRef, Time, cache, template};

use crate::HASH_LABEL;

/// One pod of the set, as the controller weighs it.
#[derive(Debug, Clone)]
pub(crate) struct SetPod {
    pub name: String,
    pub namespace: String,
    /// Its ordinal, if its name is `<set>-<ordinal>`.
    pub ordinal: Option<u32>,
    pub terminating: bool,
    /// `Succeeded` or `Failed`: to be replaced.
    pub ended: bool,
    pub running_ready: bool,
    /// Ready for `minReadySeconds`.
    pub available: bool,
    /// When it becomes available, if it is ready but not yet.
    pub available_at: Option<Time>,
    /// The revision it was made from (`controller-revision-hash`).
    pub revision: Option<String>,
    /// It has a phase (the API server has taken it in).
    pub created: bool,
}

impl SetPod {
    pub(crate) fn of(o: &Object, set: &str, min_ready: std::time::Duration, now: Time) -> Self {
        let phase = o.get_str("status.phase").unwrap_or_default();
        let ready_since = o.true_since("Ready", now);
        let terminating = o.is_being_deleted();
        let running_ready = phase == "Running" && ready_since.is_some() && !terminating;
        let available_at = ready_since.filter(|_| running_ready).map(|t| t + min_ready);
        SetPod {
            name: o.name().to_owned(),
            namespace: o.namespace().unwrap_or("default").to_owned(),
            ordinal: ordinal_of(o.name(), set),
            terminating,
            ended: matches!(phase, "Succeeded" | "Failed"),
            running_ready,
            available: available_at.is_some_and(|at| at <= now),
            available_at: available_at.filter(|&at| at > now),
            revision: o.label(HASH_LABEL).map(str::to_owned),
            created: !phase.is_empty(),
        }
    }

    pub(crate) fn object_ref(&self) -> ObjectRef {
        ObjectRef::new("v1", "Pod", &self.namespace, &self.name)
    }
}

/// The ordinal in `<set>-<ordinal>`, as upstream's `getParentNameAndOrdinal`.
pub(crate) fn ordinal_of(name: &str, set: &str) -> Option<u32> {
    let digits = name.strip_prefix(set)?.strip_prefix('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The name of the claim of template `claim` for the pod at `ordinal`.
pub(crate) fn claim_name(claim: &str, set: &str, ordinal: u32) -> String {
    format!("{claim}-{set}-{ordinal}")
}

/// The identity of the pod at `ordinal` to adopt, when the cache holds one
/// that no controller owns, that is not being deleted and that the set's
/// selector selects: the writer's `apply` of it adds the controller
/// reference and nothing else.
pub(crate) fn adoptable(set: &Object, ordinal: u32) -> Result<Option<Object>, Error> {
    let name = format!("{}-{ordinal}", set.name());
    let target = ObjectRef::new("v1", "Pod", set.namespace().unwrap_or("default"), &name);
    let Some(pod) = cache::get(&target)? else {
        return Ok(None);
    };
    let selected = set
        .get("spec.selector")
        .is_some_and(|s| s.is_object() && pod.selected_by(s));
    let orphan = pod.controller_ref().is_none() && pod.deletion_timestamp().is_none();
    Ok((orphan && selected).then(|| Object::identity(&target)))
}

/// The pod at `ordinal` from `template` (of revision `revision`), with
/// upstream's identity: its name, `hostname` and `subdomain` (the
/// governing Service), the pod-name, pod-index and revision labels, and a
/// volume for each claim template.
pub(crate) fn new_pod(
    set: &Object,
    template: &Value,
    revision: &str,
    ordinal: u32,
) -> Result<Object, Error> {
    let set_name = set.name();
    let name = format!("{set_name}-{ordinal}");
    let mut pod = template::pod(template, set.namespace().unwrap_or("default"), &name);
    let labels = &mut pod["metadata"]["labels"];
    labels[HASH_LABEL] = json!(revision);
    labels["statefulset.kubernetes.io/pod-name"] = json!(name);
    labels["apps.kubernetes.io/pod-index"] = json!(ordinal.to_string());
    let spec = &mut pod["spec"];
    spec["hostname"] = json!(name);
    if let Some(service) = set.get_str("spec.serviceName").filter(|s| !s.is_empty()) {
        spec["subdomain"] = json!(service);
    }
    for claim in claims(set) {
        let claim_name_ = claim["metadata"]["name"].as_str().unwrap_or_default();
        let volume = json!({
            "name": claim_name_,
            "persistentVolumeClaim": {"claimName": claim_name(claim_name_, set_name, ordinal)},
        });
        if !spec["volumes"].is_array() {
            spec["volumes"] = json!([]);
        }
        if let Some(volumes) = spec["volumes"].as_array_mut() {
            volumes.retain(|v| v["name"] != claim_name_);
            volumes.push(volume);
        }
    }
    Object::from_value(pod)
}

/// The set's `volumeClaimTemplates`.
pub(crate) fn claims(set: &Object) -> Vec<Value> {
    set.get("spec.volumeClaimTemplates")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The claims the pod at `ordinal` mounts, labelled with the set's
/// selector as upstream labels them. They are not owned by the set
/// (`persistentVolumeClaimRetentionPolicy` Retain, the default), so they
/// outlive its pods and the set itself, and a pod that comes back finds
/// its data.
pub(crate) fn new_claims(set: &Object, ordinal: u32) -> Result<Vec<Object>, Error> {
    let selector = set
        .get("spec.selector.matchLabels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    claims(set)
        .into_iter()
        .map(|claim| {
            let template_name = claim["metadata"]["name"].as_str().unwrap_or_default();
            let mut labels = claim["metadata"]["labels"].clone();
            if !labels.is_object() {
                labels = json!({});
            }
            if let Some(m) = selector.as_object() {
                for (k, v) in m {
                    labels[k] = v.clone();
                }
            }
            let mut metadata = json!({
                "name": claim_name(template_name, set.name(), ordinal),
                "namespace": set.namespace().unwrap_or("default"),
                "labels": labels,
            });
            if !claim["metadata"]["annotations"].is_null() {
                metadata["annotations"] = claim["metadata"]["annotations"].clone();
            }
            Object::from_value(json!({
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": metadata,
                "spec": claim["spec"].clone(),
            }))
        })
        .collect()
}
