//! The pod's `PodScheduled` condition when it is not scheduled, written as
//! kube-scheduler's `updatePod` writes it: only when status, reason or
//! message change (so that reconciling the same state again writes
//! nothing), keeping `lastTransitionTime` while the status stays `False`.

use serde_json::{Map, Value, json};
use windlass_sdk::{Time, conditions};

use crate::api::PodView;

/// Why a pod is not scheduled (the condition's `reason`).
pub(crate) const UNSCHEDULABLE: &str = "Unschedulable";
pub(crate) const SCHEDULER_ERROR: &str = "SchedulerError";
pub(crate) const SCHEDULING_GATED: &str = "SchedulingGated";
/// The message of a gated pod (`SchedulingGated` condition).
pub(crate) const GATED_MESSAGE: &str = "Scheduling is blocked due to non-empty scheduling gates";

const TYPE: &str = "PodScheduled";

/// The status patch that sets `PodScheduled=False` with `reason` and
/// `message`, or `None` if the pod already says exactly that. Conditions are
/// a list, which a merge patch replaces whole: the others are copied as they
/// are, and the pod's `resourceVersion` makes a stale patch conflict.
pub(crate) fn not_scheduled_patch(
    pod: &PodView<'_>,
    reason: &str,
    message: &str,
    now: Time,
) -> Option<Value> {
    let mut conditions: Vec<Value> = (pod.status.conditions.iter())
        .map(|raw| serde_json::from_str(raw.get()).unwrap_or(Value::Null))
        .collect();
    let wanted = json!({"type": TYPE, "status": "False", "reason": reason, "message": message});
    if !conditions::set(&mut conditions, wanted, now) {
        return None;
    }
    let mut metadata = Map::new();
    if let Some(rv) = &pod.metadata.resource_version {
        metadata.insert("resourceVersion".into(), Value::from(rv.as_ref()));
    }
    Some(json!({
        "metadata": metadata,
        "status": {"conditions": conditions},
    }))
}

/// The status patch that marks a victim of preemption as upstream does
/// before deleting it: the `DisruptionTarget` condition (reason
/// `PreemptionByScheduler`), the victim's other conditions kept, and its
/// `resourceVersion`, so that a patch of a stale copy conflicts.
pub(crate) fn disruption_target_patch(victim: &windlass_sdk::Object, now: Time) -> Value {
    let mut conditions: Vec<Value> = victim
        .get("status.conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let target = json!({
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": format!("{}: preempting to accommodate a higher priority pod", crate::pod::SCHEDULER_NAME),
    });
    conditions::set(&mut conditions, target, now);
    json!({
        "metadata": {"resourceVersion": victim.resource_version().unwrap_or("")},
        "status": {"conditions": conditions},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(json: &str) -> PodView<'_> {
        serde_json::from_str(json).unwrap()
    }

    const NOW: &str = "2026-03-01T10:00:00Z";

    fn now() -> Time {
        Time::parse(NOW).unwrap()
    }

    #[test]
    fn writes_the_condition_only_when_it_changes() {
        // (conditions, reason, message, expected conditions after the patch or None)
        let table: &[(&str, &str, &str, Option<Value>)] = &[
            (
                "[]",
                UNSCHEDULABLE,
                "m1",
                Some(
                    json!([{"type":"PodScheduled","status":"False","reason":"Unschedulable",
                             "message":"m1","lastTransitionTime":NOW}]),
                ),
            ),
            (
                r#"[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"m1",
                     "lastTransitionTime":"2026-01-01T00:00:00Z"}]"#,
                UNSCHEDULABLE,
                "m1",
                None,
            ),
            // A new message keeps the transition time: the status is still False.
            (
                r#"[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"m1",
                     "lastTransitionTime":"2026-01-01T00:00:00Z"}]"#,
                UNSCHEDULABLE,
                "m2",
                Some(
                    json!([{"type":"PodScheduled","status":"False","reason":"Unschedulable",
                             "message":"m2","lastTransitionTime":"2026-01-01T00:00:00Z"}]),
                ),
            ),
            // Other conditions are kept, in place.
            (
                r#"[{"type":"Custom","status":"True"},
                    {"type":"PodScheduled","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]"#,
                SCHEDULING_GATED,
                GATED_MESSAGE,
                Some(json!([{"type":"Custom","status":"True"},
                            {"type":"PodScheduled","status":"False","reason":"SchedulingGated",
                             "message":GATED_MESSAGE,"lastTransitionTime":NOW}])),
            ),
        ];
        for (conditions, reason, message, want) in table {
            let json = format!(
                r#"{{"metadata":{{"name":"p","resourceVersion":"7"}},"status":{{"conditions":{conditions}}}}}"#
            );
            let v = view(&json);
            let got = not_scheduled_patch(&v, reason, message, now());
            match (got, want) {
                (None, None) => {}
                (Some(p), Some(want)) => {
                    assert_eq!(p["status"]["conditions"], *want, "{conditions}");
                    assert_eq!(p["metadata"]["resourceVersion"], "7");
                }
                (got, want) => panic!("{conditions}: got {got:?}, want {want:?}"),
            }
        }
    }
}
