//! What the controller knows about a Deployment and its ReplicaSets, as
//! plain data: read once from the request's JSON (only the fields it uses),
//! then changed in place while a reconcile plans its writes.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use windlass_sdk::{Error, Object};

use crate::conditions::{Condition, DeploymentStatus, REPLICA_FAILURE};
use crate::surge::IntOrPercent;
use crate::template::{Template, TemplateView};

/// The revision a ReplicaSet serves (and the Deployment's latest).
pub(crate) const REVISION: &str = "deployment.kubernetes.io/revision";
/// Earlier revisions a ReplicaSet served, comma-separated.
pub(crate) const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
/// The Deployment's replicas when this ReplicaSet was last sized.
pub(crate) const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
/// `replicas + maxSurge` when this ReplicaSet was last sized.
pub(crate) const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// The label telling one pod template's ReplicaSet and pods from another's.
pub(crate) const TEMPLATE_HASH: &str = "pod-template-hash";

/// How a Deployment replaces pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Strategy {
    /// Scale the old ReplicaSets to zero, wait for their pods to go, then
    /// scale the new one up.
    Recreate,
    /// Replace pods a few at a time.
    RollingUpdate {
        max_surge: IntOrPercent,
        max_unavailable: IntOrPercent,
    },
}

/// A Deployment, as far as this controller reads it.
#[derive(Debug, Clone)]
pub(crate) struct Deployment {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub generation: i64,
    pub resource_version: Option<String>,
    pub deleting: bool,
    pub annotations: BTreeMap<String, String>,
    pub replicas: i64,
    /// `spec.selector` as written (`{}` if absent).
    pub selector: Value,
    pub template: Template,
    pub strategy: Strategy,
    pub min_ready_seconds: i64,
    pub revision_history_limit: Option<i64>,
    pub progress_deadline_seconds: Option<i64>,
    pub paused: bool,
    pub status: DeploymentStatus,
}

/// The largest `int32`: upstream reads a limit or deadline of this value
/// as "none".
const MAX_INT32: i64 = i32::MAX as i64;

impl Deployment {
    pub fn is_rolling(&self) -> bool {
        matches!(self.strategy, Strategy::RollingUpdate { .. })
    }

    /// Whether a stalled rollout is reported (`HasProgressDeadline`).
    pub fn has_progress_deadline(&self) -> bool {
        self.progress_deadline_seconds
            .is_some_and(|s| s != MAX_INT32)
    }

    /// How many old ReplicaSets are kept, if not all (`HasRevisionHistoryLimit`).
    pub fn history_limit(&self) -> Option<i64> {
        self.revision_history_limit.filter(|&l| l != MAX_INT32)
    }

    /// Whether the selector is empty: it would select every pod.
    pub fn selects_everything(&self) -> bool {
        windlass_sdk::selects_everything(&self.selector)
    }
}

/// A ReplicaSet the Deployment owns, as far as this controller reads it.
#[derive(Debug, Clone)]
pub(crate) struct ReplicaSet {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub created: String,
    pub generation: i64,
    pub deleting: bool,
    /// `spec.replicas`, as this reconcile plans it.
    pub replicas: i64,
    /// `spec.replicas`, as read.
    pub listed_replicas: i64,
    pub min_ready_seconds: i64,
    /// `spec.minReadySeconds`, as read.
    pub listed_min_ready_seconds: i64,
    pub annotations: BTreeMap<String, String>,
    pub labels: BTreeMap<String, String>,
    /// The annotations this reconcile changed.
    pub changed_annotations: BTreeSet<String>,
    pub template: Template,
    pub status: RsStatus,
    /// Created by this reconcile.
    pub created_now: bool,
}

/// The counts of a ReplicaSet's status, and its `ReplicaFailure` condition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RsStatus {
    pub replicas: i64,
    pub ready: i64,
    pub available: i64,
    /// `None` when the ReplicaSet controller does not report it.
    pub terminating: Option<i64>,
    pub observed_generation: i64,
    pub failure: Option<Condition>,
}

impl ReplicaSet {
    /// The revision annotation: 0 when absent, an error when not a number.
    pub fn revision(&self) -> Result<i64, ()> {
        match self.annotations.get(REVISION) {
            None => Ok(0),
            Some(v) => v.parse().map_err(|_| ()),
        }
    }

    /// Sets an annotation; returns whether it changed.
    pub fn set_annotation(&mut self, key: &str, value: &str) -> bool {
        if self.annotations.get(key).is_some_and(|v| v == value) {
            return false;
        }
        self.annotations.insert(key.to_owned(), value.to_owned());
        self.changed_annotations.insert(key.to_owned());
        true
    }

    /// Whether this reconcile changed the ReplicaSet's spec or annotations.
    pub fn is_changed(&self) -> bool {
        self.replicas != self.listed_replicas
            || self.min_ready_seconds != self.listed_min_ready_seconds
            || !self.changed_annotations.is_empty()
    }

    /// An integer annotation, if present and a number.
    pub fn int_annotation(&self, key: &str) -> Option<i64> {
        self.annotations.get(key)?.parse().ok()
    }

    /// Older first, then by name (`ReplicaSetsByCreationTimestamp`; RFC 3339
    /// timestamps in one format compare as strings).
    pub fn by_creation(a: &Self, b: &Self) -> Ordering {
        a.created.cmp(&b.created).then_with(|| a.name.cmp(&b.name))
    }
}

// ---- reading ------------------------------------------------------------

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct MetaView<'a> {
    #[serde(borrow, default)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uid: Option<Cow<'a, str>>,
    #[serde(default)]
    generation: Option<i64>,
    #[serde(borrow, default)]
    resource_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    creation_timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    deletion_timestamp: Option<Cow<'a, str>>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
struct DeploymentView<'a> {
    #[serde(borrow, default)]
    metadata: MetaView<'a>,
    #[serde(borrow, default)]
    spec: DeploymentSpecView<'a>,
    #[serde(default)]
    status: Option<DeploymentStatus>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DeploymentSpecView<'a> {
    #[serde(default)]
    replicas: Option<Value>,
    #[serde(borrow, default)]
    selector: Option<&'a RawValue>,
    #[serde(borrow, default)]
    template: Option<TemplateView<'a>>,
    #[serde(default)]
    strategy: Option<StrategyView>,
    #[serde(default)]
    min_ready_seconds: Option<Value>,
    #[serde(default)]
    revision_history_limit: Option<Value>,
    #[serde(default)]
    progress_deadline_seconds: Option<Value>,
    #[serde(default)]
    paused: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct StrategyView {
    #[serde(rename = "type", default)]
    type_: Option<String>,
    #[serde(default)]
    rolling_update: Option<RollingView>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RollingView {
    #[serde(default)]
    max_surge: Option<Value>,
    #[serde(default)]
    max_unavailable: Option<Value>,
}

#[derive(Deserialize)]
struct RsView<'a> {
    #[serde(borrow, default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    metadata: MetaView<'a>,
    #[serde(borrow, default)]
    spec: RsSpecView<'a>,
    #[serde(default)]
    status: RsStatusView,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RsSpecView<'a> {
    #[serde(default)]
    replicas: Option<Value>,
    #[serde(default)]
    min_ready_seconds: Option<Value>,
    #[serde(borrow, default)]
    template: Option<TemplateView<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RsStatusView {
    #[serde(default)]
    replicas: i64,
    #[serde(default)]
    ready_replicas: i64,
    #[serde(default)]
    available_replicas: i64,
    #[serde(default)]
    terminating_replicas: Option<i64>,
    #[serde(default)]
    observed_generation: i64,
    #[serde(default)]
    conditions: Vec<Condition>,
}

/// An integer field: `default` when absent or null.
fn int(field: &str, v: Option<&Value>, default: Option<i64>) -> Result<Option<i64>, Error> {
    match v {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| Error::permanent(format!("{field} is not an integer: {v}"))),
    }
}

fn parse_raw(field: &str, raw: Option<&RawValue>) -> Result<Value, Error> {
    match raw {
        None => Ok(Value::Object(Default::default())),
        Some(r) => serde_json::from_str(r.get())
            .map_err(|e| Error::permanent(format!("{field} is not valid JSON: {e}"))),
    }
}

impl Deployment {
    /// Reads a Deployment. Fields the API server defaults are defaulted
    /// the same way when absent (one replica, a 25%/25% rolling update).
    pub fn read(object: &Object) -> Result<Self, Error> {
        let v: DeploymentView<'_> = object.deserialize()?;
        let spec = v.spec;
        let strategy = match spec.strategy.unwrap_or_default() {
            StrategyView { type_: Some(t), .. } if t == "Recreate" => Strategy::Recreate,
            StrategyView {
                type_: None,
                rolling_update,
            } => rolling(rolling_update)?,
            StrategyView {
                type_: Some(t),
                rolling_update,
            } if t == "RollingUpdate" => rolling(rolling_update)?,
            StrategyView { type_: Some(t), .. } => {
                return Err(Error::permanent(format!(
                    "unexpected deployment strategy type: {t}"
                )));
            }
        };
        let meta = v.metadata;
        Ok(Self {
            name: meta.name.into_owned(),
            namespace: meta
                .namespace
                .map_or_else(|| "default".to_owned(), Cow::into_owned),
            uid: meta.uid.map(Cow::into_owned).unwrap_or_default(),
            generation: meta.generation.unwrap_or(0),
            resource_version: meta.resource_version.map(Cow::into_owned),
            deleting: meta.deletion_timestamp.is_some(),
            annotations: meta.annotations.unwrap_or_default(),
            replicas: int("spec.replicas", spec.replicas.as_ref(), Some(1))?.unwrap_or(1),
            selector: parse_raw("spec.selector", spec.selector)?,
            template: Template::read(spec.template),
            strategy,
            min_ready_seconds: int(
                "spec.minReadySeconds",
                spec.min_ready_seconds.as_ref(),
                Some(0),
            )?
            .unwrap_or(0),
            revision_history_limit: int(
                "spec.revisionHistoryLimit",
                spec.revision_history_limit.as_ref(),
                None,
            )?,
            progress_deadline_seconds: int(
                "spec.progressDeadlineSeconds",
                spec.progress_deadline_seconds.as_ref(),
                None,
            )?,
            paused: spec.paused.unwrap_or(false),
            status: v.status.unwrap_or_default(),
        })
    }
}

fn rolling(r: Option<RollingView>) -> Result<Strategy, Error> {
    let r = r.unwrap_or_default();
    let quarter = || IntOrPercent::Percent(25);
    let read = |field: &str, v: Option<Value>| match v {
        None | Some(Value::Null) => Ok(quarter()),
        Some(v) => IntOrPercent::from_json(&v)
            .map_err(|e| Error::permanent(format!("spec.strategy.rollingUpdate.{field}: {e}"))),
    };
    Ok(Strategy::RollingUpdate {
        max_surge: read("maxSurge", r.max_surge)?,
        max_unavailable: read("maxUnavailable", r.max_unavailable)?,
    })
}

impl ReplicaSet {
    /// Reads an owned ReplicaSet; `None` for an object of another kind.
    pub fn read(object: &Object) -> Result<Option<Self>, Error> {
        let v: RsView<'_> = object.deserialize()?;
        if v.kind != "ReplicaSet" {
            return Ok(None);
        }
        let meta = v.metadata;
        let replicas = int("spec.replicas", v.spec.replicas.as_ref(), Some(1))?.unwrap_or(1);
        let min_ready = int(
            "spec.minReadySeconds",
            v.spec.min_ready_seconds.as_ref(),
            Some(0),
        )?
        .unwrap_or(0);
        let status = v.status;
        Ok(Some(Self {
            name: meta.name.into_owned(),
            namespace: meta
                .namespace
                .map_or_else(|| "default".to_owned(), Cow::into_owned),
            uid: meta.uid.map(Cow::into_owned).unwrap_or_default(),
            created: meta
                .creation_timestamp
                .map(Cow::into_owned)
                .unwrap_or_default(),
            generation: meta.generation.unwrap_or(0),
            deleting: meta.deletion_timestamp.is_some(),
            replicas,
            listed_replicas: replicas,
            min_ready_seconds: min_ready,
            listed_min_ready_seconds: min_ready,
            annotations: meta.annotations.unwrap_or_default(),
            labels: meta.labels.unwrap_or_default(),
            changed_annotations: BTreeSet::new(),
            template: Template::read(v.spec.template),
            status: RsStatus {
                replicas: status.replicas,
                ready: status.ready_replicas,
                available: status.available_replicas,
                terminating: status.terminating_replicas,
                observed_generation: status.observed_generation,
                failure: status
                    .conditions
                    .into_iter()
                    .find(|c| c.type_ == REPLICA_FAILURE),
            },
            created_now: false,
        }))
    }

    /// Reads a ReplicaSet found in the cache under the new ReplicaSet's
    /// name, with the uid of its controller, if any.
    pub fn read_with_controller(object: &Object) -> Result<Option<(Self, Option<String>)>, Error> {
        let controller = object.controller_ref().map(|r| r.uid.to_owned());
        Ok(Self::read(object)?.map(|rs| (rs, controller)))
    }
}
