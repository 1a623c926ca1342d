//! `NoExecute` taints: which pods on a tainted node must go, and when
//! (what kube-controller-manager's taint eviction controller does,
//! `pkg/controller/tainteviction`).
//!
//! A pod that does not tolerate every `NoExecute` taint of its node is
//! evicted at once. One that tolerates them all stays for the least
//! `tolerationSeconds` among the first toleration matching each taint
//! (forever if none sets it, at once if one is zero or less). Upstream keeps
//! that countdown in memory; a plugin keeps nothing, so it is measured from
//! each taint's `timeAdded`, which the kubelet stamps on taints that lack it.

use std::time::Duration;

use windlass_sdk::{Time, taints};

use crate::view::{Taint, Toleration};

/// What the taints of a node mean for one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No `NoExecute` taint applies, or the pod tolerates them forever.
    Stays,
    /// Evict now.
    Evict,
    /// Evict at this time.
    EvictAt(Time),
    /// A tolerated taint has no `timeAdded` to count from yet.
    NeedsTimeAdded,
}

/// `ToleratesTaint` of `k8s.io/api/core/v1`.
pub(crate) fn tolerates(t: &Toleration<'_>, taint: &Taint<'_>) -> bool {
    fn s<T: AsRef<str>>(v: &Option<T>) -> &str {
        v.as_ref().map_or("", AsRef::as_ref)
    }
    let toleration = taints::Toleration {
        key: s(&t.key),
        operator: s(&t.operator),
        value: s(&t.value),
        effect: s(&t.effect),
    };
    toleration.tolerates(&taints::Taint {
        key: &taint.key,
        value: s(&taint.value),
        effect: &taint.effect,
    })
}

/// The verdict for a pod with `tolerations` on a node with `taints`.
pub(crate) fn verdict(taints: &[Taint<'_>], tolerations: &[Toleration<'_>]) -> Verdict {
    let mut evict_at: Option<Time> = None;
    let mut missing_time = false;
    for taint in taints.iter().filter(|t| t.effect == "NoExecute") {
        let Some(used) = tolerations.iter().find(|t| tolerates(t, taint)) else {
            return Verdict::Evict;
        };
        let Some(seconds) = used.toleration_seconds else {
            continue;
        };
        if seconds <= 0 {
            return Verdict::Evict;
        }
        match taint.time_added.as_deref().and_then(Time::parse) {
            Some(added) => {
                let at = added + Duration::from_secs(seconds.unsigned_abs());
                evict_at = Some(evict_at.map_or(at, |e| e.min(at)));
            }
            None => missing_time = true,
        }
    }
    match (evict_at, missing_time) {
        (_, true) => Verdict::NeedsTimeAdded,
        (Some(at), false) => Verdict::EvictAt(at),
        (None, false) => Verdict::Stays,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(json: &str) -> Taint<'_> {
        serde_json::from_str(json).unwrap()
    }

    fn tolerations(json: &str) -> Vec<Toleration<'_>> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn verdicts() {
        let added = r#""timeAdded":"2026-01-01T00:00:00Z""#;
        let a = format!(r#"{{"key":"a","effect":"NoExecute",{added}}}"#);
        let b = r#"{"key":"b","effect":"NoExecute"}"#;
        let soft = r#"{"key":"s","effect":"NoSchedule"}"#;
        let at = |s| Verdict::EvictAt(Time::parse(s).unwrap());
        for (taints, tols, want) in [
            (vec![soft], "[]", Verdict::Stays),
            (vec![a.as_str()], "[]", Verdict::Evict),
            (
                vec![a.as_str()],
                r#"[{"key":"a","operator":"Exists"}]"#,
                Verdict::Stays,
            ),
            (
                vec![a.as_str()],
                r#"[{"key":"a","operator":"Exists","tolerationSeconds":60}]"#,
                at("2026-01-01T00:01:00Z"),
            ),
            (
                vec![a.as_str()],
                r#"[{"key":"a","operator":"Exists","tolerationSeconds":0}]"#,
                Verdict::Evict,
            ),
            (
                vec![a.as_str(), b],
                r#"[{"key":"a","operator":"Exists","tolerationSeconds":60}]"#,
                Verdict::Evict,
            ),
            (
                vec![a.as_str(), b],
                r#"[{"operator":"Exists","tolerationSeconds":60}]"#,
                Verdict::NeedsTimeAdded,
            ),
            (vec![b], r#"[{"operator":"Exists"}]"#, Verdict::Stays),
        ] {
            let taints: Vec<Taint<'_>> = taints.iter().map(|t| taint(t)).collect();
            assert_eq!(
                verdict(&taints, &tolerations(tols)),
                want,
                "{taints:?} {tols}"
            );
        }
    }
}
