//! `TaintToleration`: a node's `NoSchedule` and `NoExecute` taints keep away
//! every pod that does not tolerate them; `PreferNoSchedule` taints only
//! lower the node's score (by how many of them the pod does not tolerate).

use super::{Reason, default_normalize};
use crate::node::{Effect, NodeInfo, Taint};
use crate::pod::PodInfo;

/// The reason for an untolerated taint, naming it as kube-scheduler did
/// through v1.34 (and as windlass's issue asks). Kubernetes v1.35 (and
/// v1.34.2) hide the key and value and say `node(s) had untolerated
/// taint(s)`, since taints may be sensitive; windlass shows them, as the
/// message is what tells a user which toleration is missing.
pub(crate) fn reason(t: &Taint<'_>) -> String {
    format!("node(s) had untolerated taint {{{}: {}}}", t.key, t.value)
}

/// The first `NoSchedule` or `NoExecute` taint the pod does not tolerate.
pub(crate) fn filter(pod: &PodInfo<'_>, node: &NodeInfo<'_>) -> Option<Reason> {
    if !node.has_taints() {
        return None;
    }
    node.taints()
        .position(|t| untolerated_do_not_schedule(pod, &t))
        .map(|i| Reason::Taint(u16::try_from(i).unwrap_or(u16::MAX)))
}

/// Whether `t` keeps the pod off the node (`DoNotScheduleTaintsFilterFunc`).
pub(crate) fn untolerated_do_not_schedule(pod: &PodInfo<'_>, t: &Taint<'_>) -> bool {
    matches!(t.effect, Effect::NoSchedule | Effect::NoExecute) && !pod.tolerates(t)
}

/// How many `PreferNoSchedule` taints the pod does not tolerate (only
/// tolerations for that effect, or for every effect, count).
pub(crate) fn score(pod: &PodInfo<'_>, node: &NodeInfo<'_>) -> i64 {
    if !node.has_taints() {
        return 0;
    }
    node.taints()
        .filter(|t| t.effect == Effect::PreferNoSchedule)
        .filter(|t| {
            !pod.tolerations.iter().any(|tol| {
                matches!(tol.effect, None | Some(Effect::PreferNoSchedule)) && tol.tolerates(t)
            })
        })
        .count() as i64
}

/// Fewer untolerated taints score higher.
pub(crate) fn normalize(scores: &mut [i64]) {
    default_normalize(scores, true);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{node, with_pod};

    type Taints<'a> = &'a [(&'a str, &'a str, &'a str)];
    const GPU: Taints<'static> = &[("dedicated", "gpu", "NoSchedule")];

    #[test]
    fn filter_keeps_pods_off_untolerated_taints() {
        // (node taints, pod spec, result)
        let table: &[(Taints<'_>, &str, Option<Reason>)] = &[
            (&[], r#"{}"#, None),
            (GPU, r#"{}"#, Some(Reason::Taint(0))),
            (
                GPU,
                r#"{"tolerations":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}"#,
                None,
            ),
            (
                GPU,
                r#"{"tolerations":[{"key":"dedicated","operator":"Exists"}]}"#,
                None,
            ),
            (GPU, r#"{"tolerations":[{"operator":"Exists"}]}"#, None),
            (
                GPU,
                r#"{"tolerations":[{"key":"dedicated","value":"cpu"}]}"#,
                Some(Reason::Taint(0)),
            ),
            (&[("a", "1", "PreferNoSchedule")], r#"{}"#, None),
            (&[("a", "1", "NoExecute")], r#"{}"#, Some(Reason::Taint(0))),
            // The first untolerated one is reported.
            (
                &[("a", "1", "NoSchedule"), ("b", "2", "NoSchedule")],
                r#"{"tolerations":[{"key":"a","operator":"Exists"}]}"#,
                Some(Reason::Taint(1)),
            ),
        ];
        for (taints, spec, want) in table {
            let n = node("n1", &[], taints);
            let got = with_pod("p", &[], spec, |p| filter(p, &n.info()));
            assert_eq!(got, *want, "{taints:?} {spec}");
        }
    }

    #[test]
    fn reason_names_the_taint() {
        let n = node("n1", &[], GPU);
        let mut texts = Vec::new();
        Reason::Taint(0).texts(&n.info(), &mut texts);
        assert_eq!(texts, ["node(s) had untolerated taint {dedicated: gpu}"]);
    }

    #[test]
    fn score_counts_untolerated_prefer_no_schedule_taints() {
        let taints: &[(&str, &str, &str)] = &[
            ("a", "1", "PreferNoSchedule"),
            ("b", "2", "PreferNoSchedule"),
            ("c", "3", "NoSchedule"),
        ];
        // (pod spec, raw score)
        let table: &[(&str, i64)] = &[
            (r#"{}"#, 2),
            (
                r#"{"tolerations":[{"key":"a","value":"1","effect":"PreferNoSchedule"}]}"#,
                1,
            ),
            (r#"{"tolerations":[{"key":"a","value":"1"}]}"#, 1),
            // A toleration for another effect does not count.
            (
                r#"{"tolerations":[{"key":"a","value":"1","effect":"NoSchedule"}]}"#,
                2,
            ),
            (r#"{"tolerations":[{"operator":"Exists"}]}"#, 0),
        ];
        let n = node("n1", &[], taints);
        for (spec, want) in table {
            let got = with_pod("p", &[], spec, |p| score(p, &n.info()));
            assert_eq!(got, *want, "{spec}");
        }
        let mut scores = [0, 1, 2];
        normalize(&mut scores);
        assert_eq!(scores, [100, 50, 0]);
    }
}
