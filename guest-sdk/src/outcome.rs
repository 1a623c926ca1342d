//! `Outcome`, `Write` and `Event`: what a reconcile asks the host to do.

use std::time::Duration;

use serde_json::Value;

use crate::{Object, ObjectRef};

/// A change the plugin wants made. The host applies the writes of one outcome
/// in order, each with optimistic concurrency.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Create if absent (by name, or a new object if it only has
    /// `metadata.generateName`), else converge the given fields onto the live
    /// object. Objects of `owns` kinds get a controller owner reference. A
    /// kind the plugin only writes (not cached) is applied with server-side
    /// apply.
    Apply(Object),
    /// Replace the whole object; must carry `metadata.resourceVersion`.
    Replace(Object),
    /// Replace the object's status; should carry `metadata.resourceVersion`.
    UpdateStatus(Object),
    /// A JSON merge patch (RFC 7386) against one object, or its status.
    MergePatch {
        /// The object patched.
        target: ObjectRef,
        /// `status` to patch the status subresource; none for the object.
        subresource: Option<String>,
        /// The patch.
        patch: Value,
    },
    /// Delete one object.
    Delete {
        /// The object deleted.
        target: ObjectRef,
        /// Grace period, preconditions, propagation.
        options: DeleteOptions,
    },
    /// Create `body` at a subresource of `target`: a `v1` `Binding` at
    /// `binding`, a `policy/v1` `Eviction` at `eviction`. Needs a
    /// [`Grant`](crate::Grant) for the subresource.
    CreateSubresource {
        /// The object whose subresource is written.
        target: ObjectRef,
        /// The subresource, e.g. `binding`.
        subresource: String,
        /// What is created there.
        body: Object,
    },
}

impl Write {
    /// The object this write targets. For a new object with only
    /// `generateName`, the name is empty.
    pub fn target(&self) -> ObjectRef {
        match self {
            Write::Apply(o) | Write::Replace(o) | Write::UpdateStatus(o) => o.object_ref(),
            Write::MergePatch { target, .. }
            | Write::Delete { target, .. }
            | Write::CreateSubresource { target, .. } => target.clone(),
        }
    }

    /// `(apiVersion, kind)` of the target, without allocating.
    pub fn target_kind(&self) -> (&str, &str) {
        match self {
            Write::Apply(o) | Write::Replace(o) | Write::UpdateStatus(o) => {
                (o.api_version(), o.kind())
            }
            Write::MergePatch { target, .. }
            | Write::Delete { target, .. }
            | Write::CreateSubresource { target, .. } => (&target.api_version, &target.kind),
        }
    }

    /// The subresource written, if any (`status` for status writes).
    pub fn subresource(&self) -> Option<&str> {
        match self {
            Write::UpdateStatus(_) => Some("status"),
            Write::MergePatch { subresource, .. } => subresource.as_deref(),
            Write::CreateSubresource { subresource, .. } => Some(subresource),
            _ => None,
        }
    }

    /// The write's verb, as the host prints it.
    pub fn verb(&self) -> &'static str {
        match self {
            Write::Apply(_) => "apply",
            Write::Replace(_) => "replace",
            Write::UpdateStatus(_) => "updateStatus",
            Write::MergePatch { .. } => "mergePatch",
            Write::Delete { .. } => "delete",
            Write::CreateSubresource { .. } => "createSubresource",
        }
    }
}

/// How a delete propagates to the object's dependents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Delete now; dependents are collected in the background (the default).
    Background,
    /// Delete dependents that block their owner's deletion first.
    Foreground,
    /// Leave dependents, removing their owner references.
    Orphan,
}

impl Propagation {
    /// The name Kubernetes uses: `Background`, `Foreground` or `Orphan`.
    pub fn as_str(self) -> &'static str {
        match self {
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
            Propagation::Orphan => "Orphan",
        }
    }
}

/// Options of a delete, as Kubernetes `DeleteOptions`.
///
/// ```
/// use windlass_sdk::DeleteOptions;
/// let now = DeleteOptions::new().grace_period_seconds(0).uid("4f9a");
/// assert_eq!(now.grace_period_seconds, Some(0));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Seconds before the object is removed (pods); 0 removes it at once.
    pub grace_period_seconds: Option<i64>,
    /// Only if the object still has this uid.
    pub uid: Option<String>,
    /// Only if the object is still at this resourceVersion.
    pub resource_version: Option<String>,
    /// Background unless set.
    pub propagation: Option<Propagation>,
}

impl DeleteOptions {
    /// No options: background propagation, the object's own grace period.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the grace period.
    pub fn grace_period_seconds(mut self, seconds: i64) -> Self {
        self.grace_period_seconds = Some(seconds);
        self
    }

    /// Only if the object still has `uid`.
    pub fn uid(mut self, uid: &str) -> Self {
        self.uid = Some(uid.to_owned());
        self
    }

    /// Only if the object is still at `resource_version`.
    pub fn resource_version(mut self, resource_version: &str) -> Self {
        self.resource_version = Some(resource_version.to_owned());
        self
    }

    /// Sets the propagation policy.
    pub fn propagation(mut self, propagation: Propagation) -> Self {
        self.propagation = Some(propagation);
        self
    }
}

/// How serious an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something may need attention.
    Warning,
}

/// A Kubernetes Event the host records, by default about the primary object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Normal or Warning.
    pub type_: EventType,
    /// UpperCamelCase machine-readable reason, e.g. `SuccessfulCreate`.
    pub reason: String,
    /// A sentence for humans.
    pub message: String,
    /// The object the event is about, when it is not the primary object.
    pub regarding: Option<ObjectRef>,
}

/// `Reason: message`, as a test or a log line reads an event.
impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.reason, self.message)
    }
}

impl Event {
    /// A `Normal` event.
    pub fn normal(reason: &str, message: impl Into<String>) -> Self {
        Self {
            type_: EventType::Normal,
            reason: reason.to_owned(),
            message: message.into(),
            regarding: None,
        }
    }

    /// A `Warning` event.
    pub fn warning(reason: &str, message: impl Into<String>) -> Self {
        Self {
            type_: EventType::Warning,
            reason: reason.to_owned(),
            message: message.into(),
            regarding: None,
        }
    }

    /// Makes the event about `object` instead of the primary object.
    pub fn regarding(mut self, object: ObjectRef) -> Self {
        self.regarding = Some(object);
        self
    }
}

/// What a successful reconcile asks for; build it with the chained methods.
///
/// ```
/// use std::time::Duration;
/// use windlass_sdk::{Event, Object, ObjectRef, Outcome};
/// let out = Outcome::new()
///     .apply(Object::new("v1", "ConfigMap").with_name("cfg").with_namespace("default"))
///     .delete(ObjectRef::new("v1", "ConfigMap", "default", "old"))
///     .requeue_after(Duration::from_secs(30))
///     .event(Event::normal("Synced", "config written"));
/// assert_eq!(out.writes.len(), 2);
/// assert_eq!(out.requeue_after, Some(Duration::from_secs(30)));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outcome {
    /// The writes, applied in order.
    pub writes: Vec<Write>,
    /// Declarative mode: owned children not targeted by an `apply` or
    /// `replace` in `writes` are deleted by the host.
    pub prune_owned: bool,
    /// Reconcile this key again after this long.
    pub requeue_after: Option<Duration>,
    /// Events to record.
    pub events: Vec<Event>,
}

impl Outcome {
    /// An empty outcome: nothing to do.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a write.
    pub fn write(mut self, write: Write) -> Self {
        self.writes.push(write);
        self
    }

    /// Adds an `apply` (create or converge).
    pub fn apply(self, object: Object) -> Self {
        self.write(Write::Apply(object))
    }

    /// Adds a `replace` (full update; carry `metadata.resourceVersion`).
    pub fn replace(self, object: Object) -> Self {
        self.write(Write::Replace(object))
    }

    /// Adds an `update-status` (the object with its new `status`).
    pub fn update_status(self, object: Object) -> Self {
        self.write(Write::UpdateStatus(object))
    }

    /// Adds a JSON merge patch against `target`.
    pub fn merge_patch(self, target: ObjectRef, patch: Value) -> Self {
        self.write(Write::MergePatch {
            target,
            subresource: None,
            patch,
        })
    }

    /// Adds a JSON merge patch of `target`'s status subresource; `patch` is
    /// the whole patch, e.g. `{"status": {"phase": "Running"}}`.
    pub fn patch_status(self, target: ObjectRef, patch: Value) -> Self {
        self.write(Write::MergePatch {
            target,
            subresource: Some("status".to_owned()),
            patch,
        })
    }

    /// Adds a delete (background propagation, the object's own grace period).
    pub fn delete(self, target: ObjectRef) -> Self {
        self.delete_with(target, DeleteOptions::new())
    }

    /// Adds a delete with options.
    pub fn delete_with(self, target: ObjectRef, options: DeleteOptions) -> Self {
        self.write(Write::Delete { target, options })
    }

    /// Adds a create at a subresource of `target` (see [`Write::CreateSubresource`]).
    pub fn create_subresource(self, target: ObjectRef, subresource: &str, body: Object) -> Self {
        self.write(Write::CreateSubresource {
            target,
            subresource: subresource.to_owned(),
            body,
        })
    }

    /// Binds the pod `pod` to the node `node`, as the scheduler does: a `v1`
    /// `Binding` at `pods/<name>/binding` (needs
    /// `Grant::kind("v1", "Pod").subresource("binding")`).
    pub fn bind(self, pod: &ObjectRef, node: &str) -> Self {
        let mut body = Object::new("v1", "Binding").with_name(&pod.name);
        if let Some(ns) = &pod.namespace {
            body = body.with_namespace(ns);
        }
        let body = body.with(
            "target",
            serde_json::json!({"apiVersion": "v1", "kind": "Node", "name": node}),
        );
        self.create_subresource(pod.clone(), "binding", body)
    }

    /// Evicts the pod `pod` through `pods/<name>/eviction`, which honours
    /// PodDisruptionBudgets (needs `Grant::kind("v1", "Pod").subresource("eviction")`).
    pub fn evict(self, pod: &ObjectRef, options: DeleteOptions) -> Self {
        let mut body = Object::new("policy/v1", "Eviction").with_name(&pod.name);
        if let Some(ns) = &pod.namespace {
            body = body.with_namespace(ns);
        }
        let mut opts = serde_json::Map::new();
        if let Some(g) = options.grace_period_seconds {
            opts.insert("gracePeriodSeconds".into(), g.into());
        }
        let mut pre = serde_json::Map::new();
        if let Some(uid) = &options.uid {
            pre.insert("uid".into(), uid.as_str().into());
        }
        if let Some(rv) = &options.resource_version {
            pre.insert("resourceVersion".into(), rv.as_str().into());
        }
        if !pre.is_empty() {
            opts.insert("preconditions".into(), Value::Object(pre));
        }
        if let Some(p) = options.propagation {
            opts.insert("propagationPolicy".into(), p.as_str().into());
        }
        if !opts.is_empty() {
            body.set("deleteOptions", Value::Object(opts));
        }
        self.create_subresource(pod.clone(), "eviction", body)
    }

    /// Declarative mode: owned children not applied here are deleted.
    pub fn prune_owned(mut self) -> Self {
        self.prune_owned = true;
        self
    }

    /// Reconcile again after `after`.
    pub fn requeue_after(mut self, after: Duration) -> Self {
        self.requeue_after = Some(after);
        self
    }

    /// Adds an event.
    pub fn event(mut self, event: Event) -> Self {
        self.events.push(event);
        self
    }

    /// The objects of every `apply` write.
    pub fn applies(&self) -> impl Iterator<Item = &Object> {
        self.writes.iter().filter_map(|w| match w {
            Write::Apply(o) => Some(o),
            _ => None,
        })
    }

    /// The objects of every `update-status` write.
    pub fn status_updates(&self) -> impl Iterator<Item = &Object> {
        self.writes.iter().filter_map(|w| match w {
            Write::UpdateStatus(o) => Some(o),
            _ => None,
        })
    }

    /// The targets of every `delete` write.
    pub fn deletes(&self) -> impl Iterator<Item = &ObjectRef> {
        self.writes.iter().filter_map(|w| match w {
            Write::Delete { target, .. } => Some(target),
            _ => None,
        })
    }

    /// The targets and options of every `delete` write.
    pub fn deletes_with(&self) -> impl Iterator<Item = (&ObjectRef, &DeleteOptions)> {
        self.writes.iter().filter_map(|w| match w {
            Write::Delete { target, options } => Some((target, options)),
            _ => None,
        })
    }

    /// Every merge patch: its target, its subresource (`status` or none)
    /// and the patch.
    pub fn merge_patches(&self) -> impl Iterator<Item = (&ObjectRef, Option<&str>, &Value)> {
        self.writes.iter().filter_map(|w| match w {
            Write::MergePatch {
                target,
                subresource,
                patch,
            } => Some((target, subresource.as_deref(), patch)),
            _ => None,
        })
    }

    /// Whether the outcome asks for nothing at all.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
            && !self.prune_owned
            && self.requeue_after.is_none()
            && self.events.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_outcome_lists_its_patches_and_deletes_in_order() {
        let a = ObjectRef::new("v1", "Pod", "ns", "a");
        let b = ObjectRef::new("v1", "Pod", "ns", "b");
        let out = Outcome::new()
            .patch_status(a.clone(), json!({"status": {"phase": "Failed"}}))
            .delete_with(b.clone(), DeleteOptions::new().uid("u-b"))
            .merge_patch(b.clone(), json!({"metadata": {"labels": {"x": "y"}}}))
            .delete(a.clone());
        let patches: Vec<_> = out.merge_patches().collect();
        assert_eq!(patches.len(), 2);
        assert_eq!(
            (patches[0].0, patches[0].1, &patches[0].2["status"]["phase"]),
            (&a, Some("status"), &json!("Failed"))
        );
        assert_eq!((patches[1].0, patches[1].1), (&b, None));
        let deletes: Vec<_> = out.deletes_with().collect();
        assert_eq!(
            deletes,
            [
                (&b, &DeleteOptions::new().uid("u-b")),
                (&a, &DeleteOptions::new())
            ]
        );
        assert_eq!(out.deletes().collect::<Vec<_>>(), [&b, &a]);
    }

    #[test]
    fn an_event_reads_as_reason_and_message() {
        let e = Event::warning("FailedCreate", "Error creating: quota exceeded");
        assert_eq!(
            e.to_string(),
            "FailedCreate: Error creating: quota exceeded"
        );
    }
}
