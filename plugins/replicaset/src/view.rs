//! Borrowed views of the ReplicaSet and Pod JSON the controller reads.
//!
//! Only the fields the controller looks at are declared; serde skips the
//! rest of the text without building it. Strings borrow from the request's
//! JSON (`Cow` falls back to owned only for escaped strings), and the parts
//! copied verbatim into writes (the template, the status) stay `&RawValue`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

pub(crate) type Labels<'a> = BTreeMap<Cow<'a, str>, Cow<'a, str>>;

/// For fields that must be told apart from absent when they are `null`:
/// present (even as `null`) deserializes to `Some`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The parts of a ReplicaSet this controller looks at, borrowed from its JSON.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RsView<'a> {
    #[serde(borrow, default)]
    pub api_version: Cow<'a, str>,
    #[serde(borrow, default)]
    pub kind: Cow<'a, str>,
    #[serde(borrow, default)]
    pub metadata: RsMeta<'a>,
    #[serde(borrow, default)]
    pub spec: RsSpec<'a>,
    /// Kept as text: read for the counts, copied into a status write.
    #[serde(borrow, default, deserialize_with = "present")]
    pub status: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RsMeta<'a> {
    #[serde(borrow, default)]
    pub name: Cow<'a, str>,
    #[serde(borrow, default)]
    pub namespace: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub uid: Cow<'a, str>,
    #[serde(default)]
    pub generation: Option<i64>,
    #[serde(borrow, default)]
    pub resource_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub deletion_timestamp: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RsSpec<'a> {
    #[serde(default)]
    pub replicas: Option<Value>,
    #[serde(default)]
    pub min_ready_seconds: Option<Value>,
    /// Kept as text: parsed only when pods are claimed or released.
    #[serde(borrow, default)]
    pub selector: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub template: Option<RsTemplate<'a>>,
}

/// The pod template, as JSON text: new pods copy it verbatim.
#[derive(Deserialize)]
pub(crate) struct RsTemplate<'a> {
    #[serde(borrow, default)]
    pub metadata: RsTemplateMeta<'a>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub spec: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
pub(crate) struct RsTemplateMeta<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    pub labels: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub annotations: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub finalizers: Option<&'a RawValue>,
}

/// The status as the object has it (absent counts read as 0, as the API
/// server omits zero counts).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RsStatus<'a> {
    #[serde(default)]
    pub replicas: i64,
    #[serde(default)]
    pub fully_labeled_replicas: i64,
    #[serde(default)]
    pub ready_replicas: i64,
    #[serde(default)]
    pub available_replicas: i64,
    #[serde(default)]
    pub terminating_replicas: i64,
    #[serde(default)]
    pub observed_generation: i64,
    #[serde(borrow, default)]
    pub conditions: Vec<RsCondition<'a>>,
}

/// One status condition, as far as this controller compares them.
#[derive(Deserialize)]
pub(crate) struct RsCondition<'a> {
    #[serde(borrow, rename = "type", default)]
    pub type_: Cow<'a, str>,
    #[serde(borrow, default)]
    pub status: Cow<'a, str>,
    #[serde(borrow, default)]
    pub reason: Cow<'a, str>,
}

impl RsStatus<'_> {
    /// The `ReplicaFailure` condition, if the status has one.
    pub fn replica_failure(&self) -> Option<&RsCondition<'_>> {
        self.conditions.iter().find(|c| c.type_ == "ReplicaFailure")
    }
}

/// The parts of a pod this controller looks at, borrowed from its JSON.
#[derive(Deserialize)]
pub(crate) struct PodView<'a> {
    #[serde(borrow, default)]
    pub metadata: PodMeta<'a>,
    #[serde(borrow, default)]
    pub spec: PodSpec<'a>,
    #[serde(borrow, default)]
    pub status: PodStatus<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodMeta<'a> {
    #[serde(borrow, default)]
    pub name: Cow<'a, str>,
    #[serde(borrow, default)]
    pub namespace: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub creation_timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub deletion_timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub labels: Labels<'a>,
    #[serde(borrow, default)]
    pub owner_references: Vec<OwnerReference<'a>>,
}

/// An owner reference, as far as finding a pod's controller needs.
#[derive(Deserialize)]
pub(crate) struct OwnerReference<'a> {
    #[serde(borrow, default)]
    pub kind: Cow<'a, str>,
    #[serde(borrow, default)]
    pub uid: Cow<'a, str>,
    #[serde(default)]
    pub controller: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodSpec<'a> {
    #[serde(borrow, default)]
    pub node_name: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodStatus<'a> {
    #[serde(borrow, default)]
    pub phase: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub conditions: Vec<PodCondition<'a>>,
    #[serde(default)]
    pub container_statuses: Vec<ContainerStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodCondition<'a> {
    #[serde(borrow, rename = "type")]
    pub type_: Cow<'a, str>,
    #[serde(borrow)]
    pub status: Cow<'a, str>,
    #[serde(borrow, default)]
    pub last_transition_time: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContainerStatus {
    #[serde(default)]
    pub restart_count: i64,
}

impl PodView<'_> {
    /// Whether the pod has ended (`Succeeded` or `Failed`): it no longer
    /// counts, as upstream's `FilterActivePods` has it.
    pub fn has_ended(&self) -> bool {
        matches!(self.status.phase.as_deref(), Some("Succeeded" | "Failed"))
    }

    /// Whether the pod is being deleted.
    pub fn is_terminating(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    /// Whether no owner controls the pod: an orphan a ReplicaSet may adopt.
    pub fn is_orphan(&self) -> bool {
        !self
            .metadata
            .owner_references
            .iter()
            .any(|r| r.controller == Some(true))
    }

    /// The uid of the ReplicaSet that controls the pod, if one does.
    pub fn replicaset_uid(&self) -> Option<&str> {
        let owner = self
            .metadata
            .owner_references
            .iter()
            .find(|r| r.controller == Some(true))?;
        (owner.kind == "ReplicaSet").then_some(&*owner.uid)
    }
}

/// A non-negative integer field (`spec.replicas`, `spec.minReadySeconds`),
/// `default` when absent or null.
pub(crate) fn count(field: &str, v: Option<&Value>, default: i64) -> Result<i64, String> {
    match v {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_i64()
            .map(|n| n.max(0))
            .ok_or_else(|| format!("{field} is not an integer: {v}")),
    }
}
