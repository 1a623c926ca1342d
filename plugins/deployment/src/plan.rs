//! `Plan`: one reconcile's working state and how it becomes an `Outcome`.
//!
//! Upstream's controller makes its API calls one after another within one
//! sync, each step seeing the result of the one before. A plugin returns
//! all its writes at once, so a `Plan` keeps the Deployment's status and
//! its ReplicaSets as the steps change them (the same steps, in the same
//! order, in `sync.rs`, `rolling.rs`, `recreate.rs` and `progress.rs`), and
//! writes each changed ReplicaSet once, in the order it was first changed:
//!
//! 1. ReplicaSets: a create (always the first write when there is one), a
//!    scale or annotation change (an `apply` of just those fields, carrying
//!    the cached resourceVersion), a delete (with a uid precondition);
//! 2. the Deployment's status, with its resourceVersion, when it changed;
//! 3. the Deployment's `revision` annotation, when it changed (a merge patch
//!    of the object itself: the status subresource cannot set it).

use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value, json};
use windlass_sdk::{DeleteOptions, Error, Event, Object, ObjectRef, Outcome, Time, WriteFailure};

use crate::conditions::DeploymentStatus;
use crate::model::{Deployment, REVISION, ReplicaSet, TEMPLATE_HASH};
use crate::revision::{replicas_annotations_need_update, set_replicas_annotations};
use crate::surge::max_surge;

/// Finds a ReplicaSet in the cache by name, with its controller's uid.
pub(crate) type Lookup<'a> =
    dyn Fn(&str) -> Result<Option<(ReplicaSet, Option<String>)>, Error> + 'a;

/// One reconcile's working state.
pub(crate) struct Plan<'a> {
    pub d: &'a Deployment,
    pub now: Time,
    pub last_failure: Option<&'a WriteFailure>,
    /// The Deployment's status as the steps change it (upstream's
    /// in-memory `d.Status`).
    pub status: DeploymentStatus,
    /// The status computed at the end of the steps, to be written.
    pub new_status: Option<DeploymentStatus>,
    /// The Deployment's `revision` annotation as it should be.
    pub revision: Option<String>,
    /// The owned ReplicaSets, oldest first, then any this reconcile creates.
    pub rss: Vec<ReplicaSet>,
    /// Which of `rss` runs the Deployment's template, once looked for.
    pub found_new: Option<Option<usize>>,
    pub ops: Vec<Op>,
    pub events: Vec<Event>,
    pub requeue: Option<Duration>,
    pub lookup: &'a Lookup<'a>,
}

/// A write to a ReplicaSet, by its index in `Plan::rss`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// Create it; its pod-template-hash.
    Create(usize, String),
    /// Write its changed replicas, minReadySeconds and annotations.
    Update(usize),
    Delete(usize),
}

/// Why the steps stopped early.
pub(crate) enum Stop {
    /// Write the status as it is now, and nothing after (upstream updates
    /// the status and returns an error, to be requeued).
    WriteStatus,
    Fail(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Fail(e)
    }
}

impl<'a> Plan<'a> {
    pub fn new(
        d: &'a Deployment,
        rss: Vec<ReplicaSet>,
        now: Time,
        last_failure: Option<&'a WriteFailure>,
        lookup: &'a Lookup<'a>,
    ) -> Self {
        Self {
            d,
            now,
            last_failure,
            status: d.status.clone(),
            new_status: None,
            revision: None,
            rss,
            found_new: None,
            ops: Vec::new(),
            events: Vec::new(),
            requeue: None,
            lookup,
        }
    }

    /// Notes that ReplicaSet `i` changed (written once, at its first change).
    pub fn mark_update(&mut self, i: usize) {
        let known = self.ops.iter().any(|op| match op {
            Op::Create(j, _) | Op::Update(j) => *j == i,
            Op::Delete(_) => false,
        });
        if !known {
            self.ops.push(Op::Update(i));
        }
    }

    /// Sets the Deployment's revision annotation (`SetDeploymentRevision`).
    pub fn set_deployment_revision(&mut self, revision: String) {
        self.revision = Some(revision);
    }

    /// Indices of the ReplicaSets other than `new`, oldest first.
    pub fn olds(&self, new: Option<usize>) -> Vec<usize> {
        (0..self.rss.len()).filter(|&i| Some(i) != new).collect()
    }

    /// Scales ReplicaSet `i` to `new_scale` and sets its replica
    /// annotations (`scaleReplicaSet`); records `ScalingReplicaSet` when
    /// the size changed. Returns whether it did.
    pub fn scale_replica_set(&mut self, i: usize, new_scale: i64, operation: &str) -> bool {
        let d = self.d;
        let max = d.replicas + max_surge(d);
        let rs = &mut self.rss[i];
        let size_changes = rs.replicas != new_scale;
        if !size_changes && !replicas_annotations_need_update(rs, d.replicas, max) {
            return false;
        }
        let old = rs.replicas;
        rs.replicas = new_scale;
        set_replicas_annotations(rs, d.replicas, max);
        let name = rs.name.clone();
        self.mark_update(i);
        if size_changes {
            self.events.push(Event::normal(
                "ScalingReplicaSet",
                scaled_message(operation, &name, new_scale, old),
            ));
        }
        size_changes
    }

    /// Scales ReplicaSet `i` unless it already has that size
    /// (`scaleReplicaSetAndRecordEvent`).
    pub fn scale_and_record(&mut self, i: usize, new_scale: i64) -> bool {
        let current = self.rss[i].replicas;
        if current == new_scale {
            return false;
        }
        let operation = if current < new_scale { "up" } else { "down" };
        self.scale_replica_set(i, new_scale, operation)
    }

    /// The outcome: the ReplicaSet writes, the status, the revision.
    pub fn finish(self) -> Result<Outcome, Error> {
        let d = self.d;
        let mut out = Outcome::new();
        for op in &self.ops {
            out = match op {
                Op::Create(i, hash) => out.apply(create_body(d, &self.rss[*i], hash)?),
                Op::Update(i) if self.rss[*i].is_changed() => out.apply(update_body(&self.rss[*i])),
                Op::Update(_) => out,
                Op::Delete(i) => {
                    let rs = &self.rss[*i];
                    out.delete_with(
                        ObjectRef::new(
                            "apps/v1",
                            "ReplicaSet",
                            rs.namespace.clone(),
                            rs.name.clone(),
                        ),
                        DeleteOptions::new().uid(&rs.uid),
                    )
                }
            };
        }
        let status = self.new_status.unwrap_or(self.status);
        if status != d.status {
            out = out.update_status(status_body(d, &status)?);
        }
        if let Some(revision) = self.revision
            && d.annotations.get(REVISION) != Some(&revision)
        {
            out = out.merge_patch(
                ObjectRef::new("apps/v1", "Deployment", d.namespace.clone(), d.name.clone()),
                json!({"metadata": {"annotations": {REVISION: revision}}}),
            );
        }
        for e in self.events {
            out = out.event(e);
        }
        if let Some(after) = self.requeue {
            out = out.requeue_after(after);
        }
        Ok(out)
    }
}

/// Upstream's `ScalingReplicaSet` message.
pub(crate) fn scaled_message(operation: &str, name: &str, to: i64, from: i64) -> String {
    format!("Scaled {operation} replica set {name} to {to} from {from}")
}

/// A new ReplicaSet: the Deployment's selector and template with the
/// pod-template-hash label added (the owner reference is the host's).
fn create_body(d: &Deployment, rs: &ReplicaSet, hash: &str) -> Result<Object, Error> {
    let mut selector = d.selector.clone();
    if !selector.is_object() {
        selector = Value::Object(Map::new());
    }
    let match_labels = selector.as_object_mut().map(|s| {
        s.entry("matchLabels")
            .or_insert_with(|| Value::Object(Map::new()))
    });
    if let Some(Value::Object(m)) = match_labels {
        m.insert(TEMPLATE_HASH.into(), hash.into());
    }
    let template = rs.template.value();
    let labels = template
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or_else(|| json!({TEMPLATE_HASH: hash}));
    let mut spec = json!({
        "replicas": rs.replicas,
        "selector": selector,
        "template": template,
    });
    if rs.min_ready_seconds != 0 {
        spec["minReadySeconds"] = rs.min_ready_seconds.into();
    }
    Object::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": rs.name,
            "namespace": rs.namespace,
            "labels": labels,
            "annotations": rs.annotations,
        },
        "spec": spec,
    }))
}

/// The changed fields of an existing ReplicaSet.
fn update_body(rs: &ReplicaSet) -> Object {
    let mut metadata = json!({"name": rs.name, "namespace": rs.namespace});
    if !rs.changed_annotations.is_empty() {
        let changed: Map<String, Value> = rs
            .changed_annotations
            .iter()
            .map(|k| (k.clone(), rs.annotations[k].clone().into()))
            .collect();
        metadata["annotations"] = Value::Object(changed);
    }
    let mut spec = Map::new();
    if rs.replicas != rs.listed_replicas {
        spec.insert("replicas".into(), rs.replicas.into());
    }
    if rs.min_ready_seconds != rs.listed_min_ready_seconds {
        spec.insert("minReadySeconds".into(), rs.min_ready_seconds.into());
    }
    let mut body = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": metadata});
    if !spec.is_empty() {
        body["spec"] = Value::Object(spec);
    }
    // A JSON object by construction.
    Object::from_value(body).unwrap_or_default()
}

/// A status write carrying the resourceVersion it was computed from.
fn status_body(d: &Deployment, status: &DeploymentStatus) -> Result<Object, Error> {
    #[derive(Serialize)]
    struct StatusWrite<'a> {
        #[serde(rename = "apiVersion")]
        api_version: &'static str,
        kind: &'static str,
        metadata: Meta<'a>,
        status: &'a DeploymentStatus,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Meta<'a> {
        name: &'a str,
        namespace: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        resource_version: Option<&'a str>,
    }
    Object::from_serialize(&StatusWrite {
        api_version: "apps/v1",
        kind: "Deployment",
        metadata: Meta {
            name: &d.name,
            namespace: &d.namespace,
            resource_version: d.resource_version.as_deref(),
        },
        status,
    })
}
