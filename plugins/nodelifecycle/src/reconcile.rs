//! One reconcile of a Node: its health, then its taints, then its pods.
//!
//! A node that is gone has its pods collected (`podgc.rs`). A node being
//! deleted is left alone. Otherwise, in order:
//! 1. its conditions become `Unknown` when its kubelet has not been heard
//!    from (`health.rs`); that status patch goes alone, as the taint patch
//!    after it is guarded by the same resourceVersion (the node's update
//!    brings the next reconcile, which reads the new conditions);
//! 2. its taints follow its conditions (`taints.rs`);
//! 3. its pods are marked not ready, evicted or force-deleted as the node
//!    calls for (`pods.rs`). A healthy node's pods are not read at all.
//!
//! The outcome asks to be called again when the next thing falls due.

use std::time::Duration;

use serde_json::{Value, json};
use windlass_sdk::{Error, Event, ObjectRef, Outcome, Request, Time, cache};

use crate::health::{self, Ready};
use crate::podgc;
use crate::pods::{self, NodeFacts, PodWrites};
use crate::settings::Settings;
use crate::taints::{self, Taints};
use crate::view::{Lease, Node};

/// The shortest wait the outcome asks for, so that a due time in the past
/// cannot spin the key.
const MIN_REQUEUE: Duration = Duration::from_millis(10);

pub(crate) fn reconcile(req: &Request) -> Result<Outcome, Error> {
    let settings = Settings::get()?;
    let now = req.now;
    let Some(object) = &req.object else {
        return podgc::orphans(
            &req.key.name,
            now,
            settings.orphaned_pod_quarantine,
            req.attempt,
        );
    };
    let node: Node<'_> = object.deserialize()?;
    if node.metadata.deletion_timestamp.is_some() {
        return Ok(Outcome::new());
    }
    let name = &*node.metadata.name;
    let node_ref = ObjectRef::cluster("v1", "Node", name);
    let rv = node.metadata.resource_version.as_deref();

    let health = health::assess(
        &node,
        lease_renewed(name)?,
        now,
        settings.node_monitor_grace_period,
        settings.node_startup_grace_period,
    )?;
    if health.changed {
        let mut out = Outcome::new().patch_status(
            node_ref,
            json!({
                "metadata": {"resourceVersion": rv},
                "status": {"conditions": health.conditions},
            }),
        );
        if health.lost {
            out = out.event(Event::normal(
                "NodeNotReady",
                format!("Node {name} status is now: NodeNotReady"),
            ));
        }
        return Ok(out);
    }

    let ready = Ready::of(&health.conditions);
    let managed = taints::managed(&health.conditions, node.spec.unschedulable);
    let mut taints = Taints::new(&node.spec.taints, &managed, now)?;
    let typed = taints.typed();
    let simulated = node.metadata.labels.simulated.as_deref() == Some("true");
    let facts = NodeFacts {
        name,
        ready,
        taints: &typed,
        evicts: !(simulated && ready == Ready::True)
            && typed.iter().any(|t| t.effect == "NoExecute"),
        out_of_service: taints.has_key(taints::OUT_OF_SERVICE),
        now,
    };
    let mut pods = if facts.ready != Ready::True || facts.evicts {
        pods::sync(&facts, req.attempt)?
    } else {
        PodWrites::default()
    };
    if let Some(due) = health.due {
        pods.due_at(due);
    }
    if pods.stamp_taints {
        taints.stamp(now);
    }
    let mut out = Outcome::new();
    if taints.changed {
        // No taints left: the field goes, as the real server drops an empty
        // list (`omitempty`), rather than staying as `taints: []`.
        let list = match taints.list.is_empty() {
            true => Value::Null,
            false => Value::Array(taints.list),
        };
        out = out.merge_patch(
            node_ref,
            json!({
                "metadata": {"resourceVersion": rv},
                "spec": {"taints": list},
            }),
        );
    }
    Ok(finish(out, pods, now))
}

/// `out` with the pods' writes and events, and the requeue.
pub(crate) fn finish(mut out: Outcome, pods: PodWrites, now: Time) -> Outcome {
    for w in pods.writes {
        out = out.write(w);
    }
    for e in pods.events {
        out = out.event(e);
    }
    if let Some(at) = pods.due {
        out = out.requeue_after(now.until(at).max(MIN_REQUEUE));
    }
    out
}

/// When the node's Lease was last renewed.
fn lease_renewed(node: &str) -> Result<Option<Time>, Error> {
    let lease = ObjectRef::new(
        "coordination.k8s.io/v1",
        "Lease",
        crate::LEASE_NAMESPACE,
        node,
    );
    let Some(object) = cache::get(&lease)? else {
        return Ok(None);
    };
    let lease: Lease<'_> = object.deserialize()?;
    Ok(lease.spec.renew_time.as_deref().and_then(Time::parse))
}
