//! A node's health, as the node lifecycle controller's `tryUpdateNodeHealth`
//! judges it: a node whose kubelet has not been heard from for a grace
//! period has its conditions set to `Unknown`.
//!
//! The kubelet is heard from through its `Ready` condition's
//! `lastHeartbeatTime` and its Lease's `renewTime`, whichever is later
//! (upstream keeps the time it last saw either change; a plugin keeps
//! nothing, so it reads the times themselves). A node that never posted a
//! `Ready` condition is given `nodeStartupGracePeriod` from its creation.
//! `Unknown` is never turned back: the kubelet does that when it posts.

use std::time::Duration;

use serde_json::{Value, json};
use windlass_sdk::{Error, Time};

use crate::conditions;
use crate::view::Node;

/// The conditions a kubelet posts and this controller turns `Unknown`.
pub(crate) const WATCHED: [&str; 4] = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

/// The node's `Ready` status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ready {
    True,
    False,
    Unknown,
    /// Never posted.
    Absent,
}

impl Ready {
    pub(crate) fn of(conditions: &[Value]) -> Ready {
        match conditions::status(conditions, "Ready") {
            Some("True") => Ready::True,
            Some("False") => Ready::False,
            Some(_) => Ready::Unknown,
            None => Ready::Absent,
        }
    }
}

/// The node's conditions after this reconcile.
#[derive(Debug)]
pub(crate) struct Health {
    pub conditions: Vec<Value>,
    /// The conditions were changed, to be written.
    pub changed: bool,
    /// `Ready` went from `True` or `False` to `Unknown` (a `NodeNotReady`
    /// event, as upstream records when it stops hearing from a kubelet).
    pub lost: bool,
    /// When the grace period runs out, if that will change something.
    pub due: Option<Time>,
}

/// Judges the node at `now`; `renewed` is its Lease's `renewTime`.
pub(crate) fn assess(
    node: &Node<'_>,
    renewed: Option<Time>,
    now: Time,
    monitor_grace: Duration,
    startup_grace: Duration,
) -> Result<Health, Error> {
    let mut conditions = conditions::parse(&node.status.conditions)?;
    let created = node.metadata.creation_timestamp.as_deref();
    let created_at = created.and_then(Time::parse).unwrap_or(now);
    let before = Ready::of(&conditions);
    let deadline = match conditions::find(&conditions, "Ready") {
        None => created_at + startup_grace,
        Some(ready) => {
            let posted = ready["lastHeartbeatTime"].as_str().and_then(Time::parse);
            posted.max(renewed).unwrap_or(created_at) + monitor_grace
        }
    };
    let all_unknown = WATCHED
        .iter()
        .all(|t| conditions::status(&conditions, t) == Some("Unknown"));
    if now < deadline || all_unknown {
        let due = (!all_unknown).then_some(deadline);
        return Ok(Health {
            conditions,
            changed: false,
            lost: false,
            due,
        });
    }
    let stamp = now.to_rfc3339();
    for type_ in WATCHED {
        match conditions.iter_mut().find(|c| c["type"] == type_) {
            None => conditions.push(json!({
                "type": type_,
                "status": "Unknown",
                "reason": "NodeStatusNeverUpdated",
                "message": "Kubelet never posted node status.",
                "lastHeartbeatTime": created,
                "lastTransitionTime": stamp,
            })),
            Some(c) if c["status"] != "Unknown" => {
                c["status"] = json!("Unknown");
                c["reason"] = json!("NodeStatusUnknown");
                c["message"] = json!("Kubelet stopped posting node status.");
                c["lastTransitionTime"] = json!(stamp);
            }
            Some(_) => {}
        }
    }
    Ok(Health {
        conditions,
        changed: true,
        lost: matches!(before, Ready::True | Ready::False),
        due: None,
    })
}
