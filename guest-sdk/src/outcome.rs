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
    /// object. Objects of `owns` kinds get a controller owner reference.
    Apply(Object),
    /// Replace the whole object; must carry `metadata.resourceVersion`.
    Replace(Object),
    /// Replace the object's status; should carry `metadata.resourceVersion`.
    UpdateStatus(Object),
    /// A JSON merge patch (RFC 7386) against one object.
    MergePatch {
        /// The object patched.
        target: ObjectRef,
        /// The patch.
        patch: Value,
    },
    /// Delete one object.
    Delete(ObjectRef),
}

impl Write {
    /// The object this write targets. For a new object with only
    /// `generateName`, the name is empty.
    pub fn target(&self) -> ObjectRef {
        match self {
            Write::Apply(o) | Write::Replace(o) | Write::UpdateStatus(o) => o.object_ref(),
            Write::MergePatch { target, .. } | Write::Delete(target) => target.clone(),
        }
    }

    /// `(apiVersion, kind)` of the target, without allocating.
    pub fn target_kind(&self) -> (&str, &str) {
        match self {
            Write::Apply(o) | Write::Replace(o) | Write::UpdateStatus(o) => {
                (o.api_version(), o.kind())
            }
            Write::MergePatch { target, .. } | Write::Delete(target) => {
                (&target.api_version, &target.kind)
            }
        }
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
        self.write(Write::MergePatch { target, patch })
    }

    /// Adds a delete.
    pub fn delete(self, target: ObjectRef) -> Self {
        self.write(Write::Delete(target))
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
            Write::Delete(r) => Some(r),
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
