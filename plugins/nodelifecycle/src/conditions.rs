//! Conditions of nodes and pods as JSON values, read from their text and
//! set through `windlass_sdk::conditions` (the transition time moves only
//! when the status does, as `UpdatePodCondition` of `k8s.io/kubernetes`).

use serde_json::json;
use serde_json::value::RawValue;
use windlass_sdk::{Error, Time, Value};

pub(crate) use windlass_sdk::conditions::{find, status};

/// The conditions, parsed to be rewritten.
pub(crate) fn parse(raw: &[&RawValue]) -> Result<Vec<Value>, Error> {
    raw.iter()
        .map(|c| serde_json::from_str(c.get()).map_err(Error::from))
        .collect()
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
    let wanted = json!({"type": type_, "status": status, "reason": reason, "message": message});
    windlass_sdk::conditions::set(conditions, wanted, now)
}
