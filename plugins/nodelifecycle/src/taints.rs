//! A node's conditions as taints, as the node lifecycle controller writes
//! them: `NoSchedule` taints for the scheduler (`TaintNodesByCondition`,
//! with no `timeAdded`) and the `not-ready`/`unreachable` `NoExecute` taints
//! that evict (taint-based eviction, with `timeAdded`, from which
//! `tolerationSeconds` are counted). Taints of other keys or effects are
//! kept as they are.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use windlass_sdk::taints::StoredTaint;
use windlass_sdk::{Error, Time};

use crate::conditions;
use crate::health::Ready;

pub(crate) const NOT_READY: &str = "node.kubernetes.io/not-ready";
pub(crate) const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
pub(crate) const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
pub(crate) const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

/// `NoSchedule` taints by condition: the condition, the status that
/// taints, the taint's key.
const BY_CONDITION: [(&str, &str, &str); 6] = [
    ("Ready", "False", NOT_READY),
    ("Ready", "Unknown", UNREACHABLE),
    (
        "MemoryPressure",
        "True",
        "node.kubernetes.io/memory-pressure",
    ),
    ("DiskPressure", "True", "node.kubernetes.io/disk-pressure"),
    ("PIDPressure", "True", "node.kubernetes.io/pid-pressure"),
    (
        "NetworkUnavailable",
        "True",
        "node.kubernetes.io/network-unavailable",
    ),
];

/// One taint this controller manages: its key and effect, and whether the
/// node should have it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Managed {
    pub key: &'static str,
    pub effect: &'static str,
    pub wanted: bool,
}

/// The taints the node's conditions (and `spec.unschedulable`) call for.
/// The `NoExecute` ones are left alone while the node has never posted
/// `Ready`, as upstream leaves them.
pub(crate) fn managed(conditions: &[Value], unschedulable: bool) -> Vec<Managed> {
    let mut out: Vec<Managed> = BY_CONDITION
        .iter()
        .map(|&(type_, status, key)| Managed {
            key,
            effect: "NoSchedule",
            wanted: conditions::status(conditions, type_) == Some(status),
        })
        .collect();
    out.push(Managed {
        key: UNSCHEDULABLE,
        effect: "NoSchedule",
        wanted: unschedulable,
    });
    let ready = Ready::of(conditions);
    if ready != Ready::Absent {
        for (key, when) in [(NOT_READY, Ready::False), (UNREACHABLE, Ready::Unknown)] {
            out.push(Managed {
                key,
                effect: "NoExecute",
                wanted: ready == when,
            });
        }
    }
    out
}

/// The node's taints, as they should be.
#[derive(Debug)]
pub(crate) struct Taints {
    pub list: Vec<Value>,
    pub changed: bool,
}

impl Taints {
    /// `current` with the `managed` taints added or removed; a `NoExecute`
    /// one added now gets `timeAdded`.
    pub(crate) fn new(
        current: &[&RawValue],
        managed: &[Managed],
        now: Time,
    ) -> Result<Self, Error> {
        let mut changed = false;
        let mut list = Vec::with_capacity(current.len() + 1);
        let mut present: Vec<&Managed> = Vec::new();
        for raw in current {
            let taint: Value = serde_json::from_str(raw.get())?;
            let m = managed
                .iter()
                .find(|m| taint["key"] == m.key && taint["effect"] == m.effect);
            match m {
                Some(m) if !m.wanted => changed = true,
                Some(m) => {
                    present.push(m);
                    list.push(taint);
                }
                None => list.push(taint),
            }
        }
        for m in managed.iter().filter(|m| m.wanted && !present.contains(m)) {
            let mut taint = json!({"key": m.key, "effect": m.effect});
            if m.effect == "NoExecute" {
                taint["timeAdded"] = json!(now.to_rfc3339());
            }
            list.push(taint);
            changed = true;
        }
        Ok(Taints { list, changed })
    }

    /// The taints, typed.
    pub(crate) fn typed(&self) -> Vec<StoredTaint<'_>> {
        (self.list.iter())
            .filter_map(|t| StoredTaint::deserialize(t).ok())
            .collect()
    }

    /// Whether some taint has `key` (any effect).
    pub(crate) fn has_key(&self, key: &str) -> bool {
        self.list.iter().any(|t| t["key"] == key)
    }

    /// Stamps `timeAdded` on the `NoExecute` taints that lack one, so that
    /// a pod's `tolerationSeconds` count from a time that stays put.
    pub(crate) fn stamp(&mut self, now: Time) {
        for t in &mut self.list {
            if t["effect"] == "NoExecute" && t.get("timeAdded").is_none_or(Value::is_null) {
                t["timeAdded"] = json!(now.to_rfc3339());
                self.changed = true;
            }
        }
    }
}
