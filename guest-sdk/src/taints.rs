//! Taints and tolerations matched as `k8s.io/api/core/v1` matches them
//! (`Toleration.ToleratesTaint`), for plugins that schedule, run or evict
//! pods. [`Toleration`] and [`Taint`] borrow their fields as written (an
//! absent one is `""`); [`StoredTaint`] and [`StoredToleration`] read them
//! from an object, with the times a `NoExecute` eviction counts from, and
//! [`no_execute`] says when a pod must leave its node.

use std::borrow::Cow;
use std::time::Duration;

use serde::Deserialize;

use crate::Time;

/// A pod's toleration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Toleration<'a> {
    pub key: &'a str,
    /// `Equal` (also when empty) or `Exists`; any other operator
    /// tolerates nothing.
    pub operator: &'a str,
    pub value: &'a str,
    /// Empty: every effect.
    pub effect: &'a str,
}

/// A node's taint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Taint<'a> {
    pub key: &'a str,
    pub value: &'a str,
    pub effect: &'a str,
}

impl Toleration<'_> {
    /// Whether this toleration tolerates `taint`: the effects agree (or
    /// the toleration names none), the keys agree (or an empty key, which
    /// with `Exists` tolerates every taint), and the values are equal
    /// unless the operator is `Exists`.
    ///
    /// ```
    /// use windlass_sdk::taints::{Taint, Toleration};
    /// let gpu = Taint { key: "dedicated", value: "gpu", effect: "NoSchedule" };
    /// let all = Toleration { operator: "Exists", ..Default::default() };
    /// assert!(all.tolerates(&gpu));
    /// ```
    pub fn tolerates(&self, taint: &Taint<'_>) -> bool {
        if !self.effect.is_empty() && self.effect != taint.effect {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            "" | "Equal" => self.value == taint.value,
            "Exists" => true,
            _ => false,
        }
    }
}

/// A taint as a Node's `spec.taints` stores it, borrowed from the
/// object's text where it can be.
#[derive(Deserialize, Debug, Clone, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct StoredTaint<'a> {
    #[serde(borrow, default)]
    pub key: Cow<'a, str>,
    #[serde(borrow, default)]
    pub value: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub effect: Cow<'a, str>,
    /// When a `NoExecute` taint was added (RFC 3339).
    #[serde(borrow, default)]
    pub time_added: Option<Cow<'a, str>>,
}

impl StoredTaint<'_> {
    pub fn as_taint(&self) -> Taint<'_> {
        Taint {
            key: &self.key,
            value: self.value.as_deref().unwrap_or(""),
            effect: &self.effect,
        }
    }
}

/// A toleration as a Pod's `spec.tolerations` stores it.
#[derive(Deserialize, Debug, Clone, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct StoredToleration<'a> {
    #[serde(borrow, default)]
    pub key: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub operator: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub value: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub effect: Option<Cow<'a, str>>,
    /// How long a `NoExecute` taint is tolerated; absent: forever.
    #[serde(default)]
    pub toleration_seconds: Option<i64>,
}

impl StoredToleration<'_> {
    pub fn as_toleration(&self) -> Toleration<'_> {
        Toleration {
            key: self.key.as_deref().unwrap_or(""),
            operator: self.operator.as_deref().unwrap_or(""),
            value: self.value.as_deref().unwrap_or(""),
            effect: self.effect.as_deref().unwrap_or(""),
        }
    }
}

/// What the `NoExecute` taints of a node mean for one pod on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eviction {
    /// No `NoExecute` taint applies, or the pod tolerates them forever.
    Stays,
    /// Evict now.
    Now,
    /// Evict at `at`. `unstamped`: some taint had no `timeAdded`, and its
    /// `tolerationSeconds` were counted from now; stamp it, or the time
    /// moves with every reconcile.
    At { at: Time, unstamped: bool },
}

/// When a pod with `tolerations` must leave a node with `taints`, as
/// kube-controller-manager's taint eviction controller decides
/// (`pkg/controller/tainteviction`): at once for a `NoExecute` taint it
/// does not tolerate; otherwise after the least `tolerationSeconds` among
/// the first toleration matching each taint (never if none sets it, at
/// once if one is zero or less). Upstream counts that time in memory from
/// when it saw the taint; a stateless plugin counts it from the taint's
/// `timeAdded`.
///
/// ```
/// use windlass_sdk::Time;
/// use windlass_sdk::taints::{Eviction, StoredTaint, StoredToleration, no_execute};
/// let taint: StoredTaint = serde_json::from_str(
///     r#"{"key":"node.kubernetes.io/unreachable","effect":"NoExecute",
///         "timeAdded":"2026-01-01T00:00:00Z"}"#).unwrap();
/// let tolerates_5m: StoredToleration = serde_json::from_str(
///     r#"{"key":"node.kubernetes.io/unreachable","operator":"Exists",
///         "effect":"NoExecute","tolerationSeconds":300}"#).unwrap();
/// let now = Time::parse("2026-01-01T00:01:00Z").unwrap();
/// let at = Time::parse("2026-01-01T00:05:00Z").unwrap();
/// assert_eq!(no_execute(&[taint.clone()], &[tolerates_5m], now),
///            Eviction::At { at, unstamped: false });
/// assert_eq!(no_execute(&[taint], &[], now), Eviction::Now);
/// ```
pub fn no_execute(
    taints: &[StoredTaint<'_>],
    tolerations: &[StoredToleration<'_>],
    now: Time,
) -> Eviction {
    let mut due: Option<(Time, bool)> = None;
    for taint in taints.iter().filter(|t| t.effect == "NoExecute") {
        let Some(used) = tolerations
            .iter()
            .find(|t| t.as_toleration().tolerates(&taint.as_taint()))
        else {
            return Eviction::Now;
        };
        let Some(seconds) = used.toleration_seconds else {
            continue;
        };
        if seconds <= 0 {
            return Eviction::Now;
        }
        let added = taint.time_added.as_deref().and_then(Time::parse);
        let at = added.unwrap_or(now) + Duration::from_secs(seconds.unsigned_abs());
        let unstamped = added.is_none();
        due = Some(match due {
            Some((d, u)) => (d.min(at), u || unstamped),
            None => (at, unstamped),
        });
    }
    match due {
        Some((at, _)) if at <= now => Eviction::Now,
        Some((at, unstamped)) => Eviction::At { at, unstamped },
        None => Eviction::Stays,
    }
}

/// The `DisruptionTarget` condition the taint eviction controller sets on
/// a pod before it deletes it (for `conditions::set`).
pub fn eviction_condition() -> serde_json::Value {
    serde_json::json!({
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "DeletionByTaintManager",
        "message": "Taint manager: deleting due to NoExecute taint",
    })
}

/// The `TaintManagerEviction` event about `pod`, as upstream records it.
pub fn eviction_event(pod: crate::ObjectRef) -> crate::Event {
    let ns = pod.namespace.as_deref().unwrap_or_default();
    let message = format!("Marking for deletion Pod {ns}/{}", pod.name);
    crate::Event::normal("TaintManagerEviction", message).regarding(pod)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toleration(json: &str) -> serde_json::Value {
        serde_json::from_str(json).unwrap()
    }

    fn of(v: &serde_json::Value) -> Toleration<'_> {
        let s = |k: &str| v[k].as_str().unwrap_or("");
        Toleration {
            key: s("key"),
            operator: s("operator"),
            value: s("value"),
            effect: s("effect"),
        }
    }

    #[test]
    fn toleration_matching() {
        let t = Taint {
            key: "dedicated",
            value: "gpu",
            effect: "NoExecute",
        };
        let bare = Taint {
            key: "dedicated",
            value: "",
            effect: "NoExecute",
        };
        for (json, on_t, on_bare) in [
            (
                r#"{"key":"dedicated","value":"gpu","effect":"NoExecute"}"#,
                true,
                false,
            ),
            (
                r#"{"key":"dedicated","operator":"Equal","value":"gpu"}"#,
                true,
                false,
            ),
            (r#"{"key":"dedicated","operator":"Equal"}"#, false, true),
            (r#"{"key":"dedicated","operator":"Exists"}"#, true, true),
            (
                r#"{"key":"dedicated","operator":"Exists","effect":"NoExecute"}"#,
                true,
                true,
            ),
            (
                r#"{"key":"dedicated","operator":"Exists","effect":"NoSchedule"}"#,
                false,
                false,
            ),
            (r#"{"operator":"Exists"}"#, true, true),
            (r#"{"operator":"Exists","effect":"NoExecute"}"#, true, true),
            (r#"{"operator":"Equal","value":"gpu"}"#, true, false),
            (r#"{"key":"dedicated","value":"cpu"}"#, false, false),
            (r#"{"key":"other","operator":"Exists"}"#, false, false),
            (
                r#"{"key":"dedicated","operator":"Gt","value":"gpu"}"#,
                false,
                false,
            ),
        ] {
            let v = toleration(json);
            assert_eq!(of(&v).tolerates(&t), on_t, "{json} on dedicated=gpu");
            assert_eq!(of(&v).tolerates(&bare), on_bare, "{json} on dedicated");
        }
    }

    #[test]
    fn no_execute_verdicts() {
        let now = Time::parse("2026-01-01T00:00:30Z").unwrap();
        let at = |s| Time::parse(s).unwrap();
        let a = r#"{"key":"a","effect":"NoExecute","timeAdded":"2026-01-01T00:00:00Z"}"#;
        let b = r#"{"key":"b","effect":"NoExecute"}"#;
        let soft = r#"{"key":"s","effect":"NoSchedule"}"#;
        let evict_at = |s, unstamped| Eviction::At {
            at: at(s),
            unstamped,
        };
        for (taints, tols, want) in [
            (vec![soft], "[]", Eviction::Stays),
            (vec![a], "[]", Eviction::Now),
            (
                vec![a],
                r#"[{"key":"a","operator":"Exists"}]"#,
                Eviction::Stays,
            ),
            (
                vec![a],
                r#"[{"key":"a","operator":"Exists","tolerationSeconds":60}]"#,
                evict_at("2026-01-01T00:01:00Z", false),
            ),
            (
                // Run out already.
                vec![a],
                r#"[{"key":"a","operator":"Exists","tolerationSeconds":20}]"#,
                Eviction::Now,
            ),
            (
                vec![a],
                r#"[{"key":"a","operator":"Exists","tolerationSeconds":0}]"#,
                Eviction::Now,
            ),
            (
                vec![a],
                r#"[{"key":"a","operator":"Exists","tolerationSeconds":-5}]"#,
                Eviction::Now,
            ),
            (
                // b is not tolerated.
                vec![a, b],
                r#"[{"key":"a","operator":"Exists","tolerationSeconds":60}]"#,
                Eviction::Now,
            ),
            (
                // The earliest of the two; b counts from now.
                vec![a, b],
                r#"[{"key":"a","operator":"Exists","tolerationSeconds":60},
                    {"key":"b","operator":"Exists","tolerationSeconds":10}]"#,
                evict_at("2026-01-01T00:00:40Z", true),
            ),
            (
                vec![a, b],
                r#"[{"operator":"Exists","tolerationSeconds":60}]"#,
                evict_at("2026-01-01T00:01:00Z", true),
            ),
            (
                // The first matching toleration is the one used.
                vec![a],
                r#"[{"operator":"Exists"},
                    {"key":"a","operator":"Exists","tolerationSeconds":1}]"#,
                Eviction::Stays,
            ),
            (vec![b], r#"[{"operator":"Exists"}]"#, Eviction::Stays),
        ] {
            let taints: Vec<StoredTaint<'_>> = taints
                .iter()
                .map(|t| serde_json::from_str(t).unwrap())
                .collect();
            let tolerations: Vec<StoredToleration<'_>> = serde_json::from_str(tols).unwrap();
            assert_eq!(
                no_execute(&taints, &tolerations, now),
                want,
                "{taints:?} {tols}"
            );
        }
    }
}
