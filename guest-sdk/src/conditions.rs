//! Status conditions as JSON values, set the way Kubernetes controllers set
//! them (`UpdatePodCondition`, `meta.SetStatusCondition`): found by `type`,
//! left alone when nothing but their times would change, and given a new
//! `lastTransitionTime` only when their `status` changes.
//!
//! ```
//! use windlass_sdk::{Time, conditions, json};
//! let t0 = Time::parse("2026-01-01T00:00:00Z").unwrap();
//! let t1 = Time::parse("2026-01-01T00:05:00Z").unwrap();
//! let mut list = Vec::new();
//! let ready = |status, reason| json!({"type": "Ready", "status": status, "reason": reason});
//! assert!(conditions::set(&mut list, ready("False", "Starting"), t0));
//! assert!(!conditions::set(&mut list, ready("False", "Starting"), t1));
//! // Another reason with the same status keeps the transition time...
//! assert!(conditions::set(&mut list, ready("False", "Pulling"), t1));
//! assert_eq!(list[0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
//! // ...and a new status moves it.
//! assert!(conditions::set(&mut list, ready("True", "Started"), t1));
//! assert_eq!(list[0]["lastTransitionTime"], "2026-01-01T00:05:00Z");
//! assert_eq!(conditions::status(&list, "Ready"), Some("True"));
//! ```

use serde_json::{Value, json};

use crate::Time;

/// The condition of `type_`.
pub fn find<'a>(conditions: &'a [Value], type_: &str) -> Option<&'a Value> {
    conditions.iter().find(|c| c["type"] == type_)
}

/// The `status` of the condition of `type_`.
pub fn status<'a>(conditions: &'a [Value], type_: &str) -> Option<&'a str> {
    find(conditions, type_)?["status"].as_str()
}

/// Sets `condition` (an object with at least `type` and `status`) in
/// `conditions`; whether anything changed.
///
/// A condition of that type whose fields, times aside, already say what
/// `condition` says is left as it is. Otherwise `condition` replaces it in
/// place (or is appended), with the old `lastTransitionTime` when the
/// status stays the same and `now` when it changes or the condition is new;
/// a `lastTransitionTime` in `condition` itself is used as given.
pub fn set(conditions: &mut Vec<Value>, mut condition: Value, now: Time) -> bool {
    let Some(type_) = condition["type"].as_str().map(str::to_owned) else {
        return false;
    };
    let existing = conditions.iter().position(|c| c["type"] == type_.as_str());
    if let Some(i) = existing
        && same_but_times(&conditions[i], &condition)
    {
        return false;
    }
    if condition
        .get("lastTransitionTime")
        .is_none_or(Value::is_null)
    {
        let kept = existing
            .map(|i| &conditions[i])
            .filter(|old| old["status"] == condition["status"])
            .and_then(|old| old.get("lastTransitionTime"))
            .filter(|t| !t.is_null())
            .cloned();
        condition["lastTransitionTime"] = kept.unwrap_or_else(|| json!(now.to_rfc3339()));
    }
    match existing {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
    true
}

/// Removes the condition of `type_`; whether there was one.
pub fn remove(conditions: &mut Vec<Value>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c["type"] != type_);
    conditions.len() != before
}

/// Whether `old` says what `new` says but for fields that are times
/// (`lastTransitionTime`, `lastProbeTime`, `lastHeartbeatTime`,
/// `lastUpdateTime`): the fields `new` sets agree and `old` has no other
/// non-empty one.
fn same_but_times(old: &Value, new: &Value) -> bool {
    let is_time = |k: &str| k.starts_with("last") && k.ends_with("Time");
    let (Some(old), Some(new)) = (old.as_object(), new.as_object()) else {
        return false;
    };
    let empty = |v: &Value| v.is_null() || v.as_str() == Some("");
    let agree = |k: &String, v: &Value| match old.get(k) {
        Some(o) => o == v || (empty(o) && empty(v)),
        None => empty(v),
    };
    new.iter()
        .filter(|(k, _)| !is_time(k))
        .all(|(k, v)| agree(k, v))
        && old
            .iter()
            .filter(|(k, _)| !is_time(k) && !new.contains_key(*k))
            .all(|(_, v)| empty(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Time {
        Time::parse(s).unwrap()
    }

    const T0: &str = "2026-01-01T00:00:00Z";
    const T1: &str = "2026-01-01T00:05:00Z";

    #[test]
    fn set_follows_upstream() {
        let old = json!({"type": "Ready", "status": "True", "reason": "A", "message": "m",
                         "lastTransitionTime": T0, "lastProbeTime": T0});
        for (what, new, changed, want_ltt) in [
            (
                "the same, times aside",
                json!({"type": "Ready", "status": "True", "reason": "A", "message": "m", "lastProbeTime": T1}),
                false,
                T0,
            ),
            (
                "an empty message is no message",
                json!({"type": "Ready", "status": "True", "reason": "A", "message": "m", "extra": ""}),
                false,
                T0,
            ),
            (
                "another reason, the same status",
                json!({"type": "Ready", "status": "True", "reason": "B", "message": "m"}),
                true,
                T0,
            ),
            (
                "a field dropped",
                json!({"type": "Ready", "status": "True", "reason": "A"}),
                true,
                T0,
            ),
            (
                "another status",
                json!({"type": "Ready", "status": "False", "reason": "A", "message": "m"}),
                true,
                T1,
            ),
            (
                "a transition time given",
                json!({"type": "Ready", "status": "False", "lastTransitionTime": "2025-12-31T00:00:00Z"}),
                true,
                "2025-12-31T00:00:00Z",
            ),
        ] {
            let other = json!({"type": "Other", "status": "True"});
            let mut list = vec![other.clone(), old.clone()];
            assert_eq!(set(&mut list, new.clone(), at(T1)), changed, "{what}");
            assert_eq!(list.len(), 2, "{what}: replaced in place");
            assert_eq!(list[0], other, "{what}: the others untouched");
            assert_eq!(list[1]["lastTransitionTime"], want_ltt, "{what}");
            if changed {
                assert_eq!(list[1]["reason"], new["reason"], "{what}");
                assert!(
                    list[1].get("lastProbeTime").is_none() || new.get("lastProbeTime").is_some()
                );
            } else {
                assert_eq!(list[1], old, "{what}: left as it was");
            }
        }
    }

    #[test]
    fn new_conditions_are_appended_with_now() {
        let mut list = vec![json!({"type": "A", "status": "True"})];
        assert!(set(
            &mut list,
            json!({"type": "B", "status": "False"}),
            at(T1)
        ));
        assert_eq!(list[1]["type"], "B");
        assert_eq!(list[1]["lastTransitionTime"], T1);
        assert!(
            !set(&mut list, json!({"status": "True"}), at(T1)),
            "no type: nothing set"
        );
        assert_eq!(status(&list, "B"), Some("False"));
        assert!(remove(&mut list, "B"));
        assert!(!remove(&mut list, "B"));
        assert_eq!(list.len(), 1);
    }
}
