//! The node's heartbeat: a Lease `kube-node-lease/<node>` held by the node
//! and renewed every 10 s (kubelet's renew interval, a quarter of its
//! 40 s `leaseDurationSeconds`), owned by the Node so it goes with it.

use std::time::Duration;

use serde_json::json;
use windlass_sdk::{Error, Object, ObjectRef, Time, cache};

use crate::view::{Lease, Node};

pub(crate) const NAMESPACE: &str = "kube-node-lease";
const DURATION_SECS: i64 = 40;
pub(crate) const RENEW_EVERY: Duration = Duration::from_secs(10);

/// The Lease to apply now (if it is absent, not the node's, or due for
/// renewal), and when it is next due.
pub(crate) fn renew(node: &Node<'_>, now: Time) -> Result<(Option<Object>, Time), Error> {
    let name = &*node.metadata.name;
    let stored = cache::get(&ObjectRef::new(
        "coordination.k8s.io/v1",
        "Lease",
        NAMESPACE,
        name,
    ))?;
    if let Some(stored) = &stored {
        let lease: Lease<'_> = stored.deserialize()?;
        let spec = &lease.spec;
        let renewed = spec.renew_time.as_deref().and_then(Time::parse);
        if spec.holder_identity.as_deref() == Some(name)
            && spec.lease_duration_seconds == Some(DURATION_SECS)
            && let Some(renewed) = renewed
            && now < renewed + RENEW_EVERY
        {
            return Ok((None, renewed + RENEW_EVERY));
        }
    }
    let mut lease = Object::new("coordination.k8s.io/v1", "Lease")
        .with_name(name)
        .with_namespace(NAMESPACE)
        .with(
            "spec",
            json!({
                "holderIdentity": name,
                "leaseDurationSeconds": DURATION_SECS,
                "renewTime": micro_time(now),
            }),
        );
    if let Some(uid) = node.metadata.uid.as_deref() {
        lease.set(
            "metadata.ownerReferences",
            json!([{"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}]),
        );
    }
    Ok((Some(lease), now + RENEW_EVERY))
}

/// A `metav1.MicroTime`: RFC 3339 in UTC with microseconds.
pub(crate) fn micro_time(t: Time) -> String {
    let seconds = t.to_rfc3339();
    let micros = t.millis().rem_euclid(1000) * 1000;
    format!("{}.{micros:06}Z", seconds.trim_end_matches('Z'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_times() {
        let t = Time::parse("2026-01-01T00:00:05.25Z").unwrap();
        assert_eq!(micro_time(t), "2026-01-01T00:00:05.250000Z");
        assert_eq!(Time::parse(&micro_time(t)), Some(t));
    }
}
