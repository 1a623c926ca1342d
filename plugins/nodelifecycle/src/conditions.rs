//! Conditions of nodes and pods as JSON values: found by type, and set
//! the way `UpdatePodCondition` of `k8s.io/kubernetes` sets them (the
//! transition time moves only when the status does).

use serde_json::value::RawValue;
use serde_json::{Value, json};
use windlass_sdk::{Error, Time};

/// The conditions, parsed to be rewritten.
pub(crate) fn parse(raw: &[&RawValue]) -> Result<Vec<Value>, Error> {
    raw.iter()
        .map(|c| serde_json::from_str(c.get()).map_err(Error::from))
        .collect()
}

/// The condition of `type_`.
pub(crate) fn find<'a>(conditions: &'a [Value], type_: &str) -> Option<&'a Value> {
    conditions.iter().find(|c| c["type"] == type_)
}

/// The status of the condition of `type_`.
pub(crate) fn status<'a>(conditions: &'a [Value], type_: &str) -> Option<&'a str> {
    find(conditions, type_)?["status"].as_str()
}

/// Sets the condition of `type_` to `status`, `reason` and `message`;
/// whether anything changed.
pub(crate) fn set(
    conditions: &mut Vec<Value>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Time,
) -> bool {
    let wanted = json!({
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": now.to_rfc3339(),
    });
    let Some(c) = conditions.iter_mut().find(|c| c["type"] == type_) else {
        conditions.push(wanted);
        return true;
    };
    if c["status"] != status {
        *c = wanted;
        return true;
    }
    if c["reason"] == reason && c["message"] == message {
        return false;
    }
    c["reason"] = json!(reason);
    c["message"] = json!(message);
    true
}
