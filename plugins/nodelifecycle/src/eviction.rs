//! `NoExecute` taints and tolerations: which pods of a tainted node must
//! go, and when (kube-controller-manager's taint eviction controller,
//! `pkg/controller/tainteviction`).
//!
//! A pod that does not tolerate every `NoExecute` taint of its node is
//! evicted at once. One that tolerates them all stays for the least
//! `tolerationSeconds` among the first toleration matching each taint
//! (forever if none sets it, at once if one is zero or less). Upstream keeps
//! that countdown in memory; a plugin keeps nothing, so it counts from each
//! taint's `timeAdded` (stamped on a taint that lacks one).

use std::time::Duration;

use windlass_sdk::{Time, taints};

use crate::view::{Taint, Toleration};

/// What the taints of a node mean for one pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No `NoExecute` taint applies, or the pod tolerates them forever.
    Stays,
    /// Evict now.
    Evict,
    /// Evict at this time; `unstamped` when it was counted from now for a
    /// taint without `timeAdded`.
    EvictAt { at: Time, unstamped: bool },
}

/// `ToleratesTaint` of `k8s.io/api/core/v1`: an empty key with `Exists`
/// matches every taint, an empty effect every effect.
pub(crate) fn tolerates(t: &Toleration<'_>, taint: &Taint) -> bool {
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

/// The verdict at `now` for a pod with `tolerations` on a node with
/// `taints`.
pub(crate) fn verdict(taints: &[Taint], tolerations: &[Toleration<'_>], now: Time) -> Verdict {
    let mut due: Option<(Time, bool)> = None;
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
        let added = taint.time_added.as_deref().and_then(Time::parse);
        let at = added.unwrap_or(now) + Duration::from_secs(seconds.unsigned_abs());
        let unstamped = added.is_none();
        due = Some(match due {
            Some((d, u)) => (d.min(at), u || unstamped),
            None => (at, unstamped),
        });
    }
    match due {
        Some((at, _)) if at <= now => Verdict::Evict,
        Some((at, unstamped)) => Verdict::EvictAt { at, unstamped },
        None => Verdict::Stays,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(json: &str) -> Taint {
        serde_json::from_str(json).unwrap()
    }

    fn tolerations(json: &str) -> Vec<Toleration<'_>> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn verdicts() {
        let now = Time::parse("2026-01-01T00:00:30Z").unwrap();
        let at = |s| Time::parse(s).unwrap();
        let a = r#"{"key":"a","effect":"NoExecute","timeAdded":"2026-01-01T00:00:00Z"}"#;
        let b = r#"{"key":"b","effect":"NoExecute"}"#;
        let soft = r#"{"key":"s","effect":"NoSchedule"}"#;
        let evict_at = |s, unstamped| Verdict::EvictAt {
            at: at(s),
            unstamped,
        };
        for (taints, tols, want) in [
            (vec![soft], "[]", Verdict::Stays),
            (vec![a], "[]", Verdict::Evict),
            (
                vec![a],
                r#"[{"key":"a","operator":"Exists"}]"#,
                Verdict::Stays,
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
                Verdict::Evict,
            ),
            (
                vec![a],
                r#"[{"key":"a","operator":"Exists","tolerationSeconds":0}]"#,
                Verdict::Evict,
            ),
            (
                vec![a, b],
                r#"[{"key":"a","operator":"Exists","tolerationSeconds":60}]"#,
                Verdict::Evict,
            ),
            (
                // The earliest of the two; b counts from now.
                vec![a, b],
                r#"[{"key":"a","operator":"Exists","tolerationSeconds":60},
                    {"key":"b","operator":"Exists","tolerationSeconds":10}]"#,
                evict_at("2026-01-01T00:00:40Z", true),
            ),
            (
                // The first matching toleration is the one used.
                vec![a],
                r#"[{"operator":"Exists"},
                    {"key":"a","operator":"Exists","tolerationSeconds":1}]"#,
                Verdict::Stays,
            ),
            (vec![b], r#"[{"operator":"Exists"}]"#, Verdict::Stays),
        ] {
            let taints: Vec<Taint> = taints.iter().map(|t| taint(t)).collect();
            assert_eq!(
                verdict(&taints, &tolerations(tols), now),
                want,
                "{taints:?} {tols}"
            );
        }
    }
}
